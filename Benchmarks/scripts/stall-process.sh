#!/bin/bash
# Runs a command and stops the whole process once, for a given time, as a stalled machine would:
#   Benchmarks/scripts/stall-process.sh MILLISECONDS AT_SECONDS command args...
# e.g. Benchmarks/scripts/stall-process.sh 40 6 Benchmarks/.build/release/voice-bench live --speech $S \
#        --seconds 8 --calls 10 --repeats 1 --no-baresip
# SIGSTOP at AT_SECONDS after the start, SIGCONT MILLISECONDS later; the timing runs under SCHED_FIFO 60 when
# allowed (root), so that a loaded machine does not lengthen the stall. Prints the stall's real length on stderr.
set -eu
usage() { echo "usage: stall-process.sh MILLISECONDS AT_SECONDS command [args...]: $1" >&2; exit 2; }
[ $# -ge 3 ] || usage "needs a stall length, a time and a command"
MS=$1; AT=$2; shift 2
[[ $MS =~ ^[0-9]+(\.[0-9]+)?$ ]] && [[ $MS != 0 && $MS != 0.0 ]] || usage "MILLISECONDS must be a positive number, not '$MS'"
[[ $AT =~ ^[0-9]+(\.[0-9]+)?$ ]] || usage "AT_SECONDS must be a number >= 0, not '$AT'"
command -v "$1" >/dev/null || usage "no such command: $1"
"$@" &
PID=$!
sleep "$AT"
STOP='
import os, sys, time, signal
pid, ms = int(sys.argv[1]), float(sys.argv[2])
t = time.monotonic(); os.kill(pid, signal.SIGSTOP); time.sleep(ms / 1000); os.kill(pid, signal.SIGCONT)
print(f"stalled {1000 * (time.monotonic() - t):.1f} ms", file=sys.stderr)
'
RT=""
if chrt -f 60 true 2>/dev/null; then RT="chrt -f 60"; fi
$RT python3 -c "$STOP" "$PID" "$MS"
wait "$PID"
