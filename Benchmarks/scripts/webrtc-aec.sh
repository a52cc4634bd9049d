#!/bin/sh
# Runs WebRTC's echo canceller (GStreamer webrtcdsp + webrtcechoprobe) on a far-end / microphone WAV pair, exactly
# as `voice-bench aec` does (WebRTCEchoReference.swift): both files through one audiointerleave (10 ms buffers, one
# running time) and a deinterleave that pushes the far block into the probe, then the microphone block of the same
# running time into webrtcdsp, from one thread. Deterministic and faster than real time.
#
#   Benchmarks/scripts/webrtc-aec.sh FAR.wav MIC.wav OUT.wav [NS_LEVEL|off] [RATE]
#
# NS_LEVEL: low | moderate (default) | high | very-high | off. RATE: 8000/16000/32000/48000 (default 16000).
# OUT.wav lags MIC.wav by the element's latency (112 samples at 16 kHz without noise suppression, 208 with it,
# as voice-bench measures with a silent far end); shift it before comparing sample by sample.
# Needs gstreamer1.0-tools, -plugins-base, -plugins-good, -plugins-bad.
set -eu
[ $# -ge 3 ] || { sed -n '7p' "$0" >&2; exit 2; }
far=$1 mic=$2 out=$3 level=${4:-moderate} rate=${5:-16000}
caps="audio/x-raw,format=S16LE,rate=$rate,channels=1,layout=interleaved"
if [ "$level" = off ]; then ns="noise-suppression=false"; else ns="noise-suppression=true noise-suppression-level=$level"; fi
# shellcheck disable=SC2086  # $ns is two words on purpose
exec gst-launch-1.0 -q audiointerleave name=interleave output-buffer-duration=10000000 ! deinterleave name=split \
  filesrc location="$far" ! wavparse ! audioconvert ! audioresample ! "$caps" ! interleave.sink_0 \
  filesrc location="$mic" ! wavparse ! audioconvert ! audioresample ! "$caps" ! interleave.sink_1 \
  split.src_0 ! audioconvert ! "$caps" ! webrtcechoprobe name=farprobe ! fakesink sync=false async=false \
  split.src_1 ! audioconvert ! "$caps" ! webrtcdsp probe=farprobe echo-cancel=true extended-filter=true \
    delay-agnostic=true gain-control=false high-pass-filter=false experimental-agc=false $ns \
  ! wavenc ! filesink location="$out" sync=false async=false
