#!/bin/bash
# The two-process comparison of Benchmarks/README.md section 6: two `voice-engine call` processes on loopback
# (file microphone looping SPEECH, file speaker, SRTP with keys on the command line, Opus 16 kHz 32 kb/s c5), with
# and without voice processing, alternating; each process's CPU (every thread's schedstat) over 30 s of established
# call, and each side's report (received/expected, lost, concealment). Ports: one ephemeral port the kernel picks.
# Usage: VOICE_ENGINE=path/to/voice-engine Benchmarks/scripts/two-process-call.sh SPEECH_16K.wav [RUNS]
#   (build it with: swift build -c release --package-path Benchmarks --product voice-engine;
#    then VOICE_ENGINE=Benchmarks/.build/release/voice-engine)
VE=${VOICE_ENGINE:-.build/release/voice-engine}
S=${1:?usage: two-process-call.sh SPEECH_16K.wav [RUNS]}
cpu() { local t=0; for f in /proc/$1/task/*/schedstat; do read a b c < $f 2>/dev/null && t=$((t+a)); done; echo $t; }
RUNS=${2:-3}
# MODES (default "off on"): off = --no-voice-processing, on = defaults, noaec = --no-echo-canceller (NS and VAD only).
for mode in $(for _ in $(seq $RUNS); do echo ${MODES:-off on}; done); do
  KA=$(head -c 30 /dev/urandom | base64); KB=$(head -c 30 /dev/urandom | base64)
  P=$(python3 -c 'import socket;s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
  extra=""; [ $mode = off ] && extra="--no-voice-processing"; [ $mode = noaec ] && extra="--no-echo-canceller"
  D=$(mktemp -d)
  $VE call --listen $P --bind 127.0.0.1 --mic file:$S --loop-mic --speaker file:$D/a.wav --local-key $KA --remote-key $KB --duration 38 $extra --report $D/a.json > $D/a.log 2>&1 &
  A=$!
  sleep 0.5
  $VE call --connect 127.0.0.1:$P --bind 127.0.0.1 --mic file:$S --loop-mic --speaker file:$D/b.wav --local-key $KB --remote-key $KA --duration 37 $extra --report $D/b.json > $D/b.log 2>&1 &
  B=$!
  sleep 3.5
  a0=$(cpu $A); b0=$(cpu $B); na=$(ls /proc/$A/task | wc -l)
  sleep 30
  a1=$(cpu $A); b1=$(cpu $B)
  wait $A; ra=$?; wait $B; rb=$?
  python3 - "$mode" $a0 $a1 $b0 $b1 $ra $rb $na $D <<'PY'
import sys,json
mode,a0,a1,b0,b1,ra,rb,na,d=sys.argv[1:]
a=(int(a1)-int(a0))/1e9; b=(int(b1)-int(b0))/1e9
rep=[json.load(open(f"{d}/{x}.json")) for x in "ab"]
def r(j):
    rtp=j.get("rtp",{}); jb=j.get("jitterBuffer",{})
    return f"recv {rtp.get('received')}/{rtp.get('expected')} lost {rtp.get('lost')} concealed {jb.get('concealmentRatio',0):.4f}"
load=open("/proc/loadavg").read().split()[0]
print(f"{mode}: CPU s per 30 s  A {a:.3f}  B {b:.3f}  mean {(a+b)/2:.3f}  exit {ra}/{rb}  threads {na}  load {load}  | A {r(rep[0])} | B {r(rep[1])}")
PY
  rm -rf $D
done
