#!/bin/sh
# PESQ of the engine's G.711 and G.722 under loss, next to the same spandsp codec and PLC in a plain C loop that
# loses the same packets (the trace `voice-engine simulate --write-trace` wrote):
#
#   Benchmarks/scripts/codec-pesq.sh [VOICE_ENGINE] [SPEECH.wav ...]
#
# VOICE_ENGINE defaults to .build/release/voice-engine (run from the repository root); the speech defaults to
# ../shared/testdata/speech/jfk_16k_mono.wav and pystoi_clean_16k.wav (16 kHz; G.711 gets an 8 kHz copy).
# Narrowband PESQ (P.862) for G.711, wideband (P.862.2) for G.722, both after aligning the overall delay. One
# line per codec, input and loss: engine MOS, C-loop MOS, difference. Needs python3 with numpy, scipy and pesq.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
engine=${1:-.build/release/voice-engine}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || set -- ../shared/testdata/speech/jfk_16k_mono.wav ../shared/testdata/speech/pystoi_clean_16k.wav
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -o "$work/g7xx-plc-loop" "$here/g7xx-plc-loop.c" -lspandsp
printf '%-5s %-24s %5s %7s %7s %6s\n' codec input loss engine c-loop diff
for speech in "$@"; do
    name=$(basename "$speech" .wav)
    python3 - "$speech" "$work/$name-8k.wav" <<'PY'
import sys, wave
import numpy as np
from scipy.signal import resample_poly
with wave.open(sys.argv[1], "rb") as w:
    rate = w.getframerate()
    x = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype("float64")
y = np.clip(np.round(resample_poly(x, 8000, rate)), -32768, 32767).astype("<i2")
with wave.open(sys.argv[2], "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(8000); w.writeframes(y.tobytes())
PY
    for codec in pcmu pcma g722; do
        if [ "$codec" = g722 ]; then input=$speech; mode=""; else input=$work/$name-8k.wav; mode="--nb"; fi
        for loss in 0 5 10; do
            "$engine" simulate --input "$input" --out "$work/engine.wav" --codec "$codec" --loss "$loss" --seed 7 \
                --plain-rtp --no-voice-processing --write-trace "$work/trace.csv" > /dev/null
            "$work/g7xx-plc-loop" "$codec" "$input" "$work/trace.csv" "$work/c.wav" 2> /dev/null
            e=$(python3 "$here/pesq-wb.py" "$input" "$work/engine.wav" --align $mode)
            c=$(python3 "$here/pesq-wb.py" "$input" "$work/c.wav" --align $mode)
            printf '%-5s %-24s %4s%% %7s %7s %+6.2f\n' "$codec" "$name" "$loss" "$e" "$c" \
                "$(python3 -c "print($e - $c)")"
        done
    done
done
