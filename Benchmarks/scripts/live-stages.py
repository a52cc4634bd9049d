#!/usr/bin/env python3
"""CPU per stage of a live call against the same work in fast time, from one `perf record` of `voice-bench live`.

`voice-bench live` runs the calls on its `voice-media` thread(s), then the same two streams in fast time on its main
thread. perf's cpu-clock samples carry their period (CPU nanoseconds), so each stage's CPU time is exact up to
sampling; dividing by the audio seconds each side processed gives milliseconds per call-second, a figure the machine's
load does not scale the way wall time would (it still moves with cache pressure — which is what it shows).

Usage:
  perf record -F 4000 -o live.data -- Benchmarks/.build/release/voice-bench live --speech S.wav --seconds 8 \
      --calls 1 --repeats 1 --voice-processing --no-baresip
  Benchmarks/scripts/live-stages.py live.data [--fast-seconds 12]
(`--fast-seconds`: audio seconds of the fast-time run, 2 s of warm-up plus its 10 s; the live side's are taken from
the media thread's first and last sample.)
"""
import argparse
import collections
import re
import subprocess
import sys

STAGES = [  # (substring of the symbol, stage); libraries are matched by file name first
    ("FFT", "FFT (suppressor, GCC-PHAT, drift segments)"),
    ("cdsp_fft", "FFT (suppressor, GCC-PHAT, drift segments)"),  # its butterflies, in C (Sources/CDSPKernels)
    ("ResidualEchoSuppressor", "residual-echo suppressor + NS"),
    ("NoiseSuppressionGain", "residual-echo suppressor + NS"),
    ("DriftSearch", "drift search"),
    ("EchoDelayEstimator", "GCC-PHAT delay estimator"),
    ("DelayJumpSearch", "canceller control"),
    ("EchoCanceller", "canceller control"),
    ("Resampler", "resampler"),
    ("Jitter", "jitter buffer"),
]


def stage(symbol, library):
    if "opus" in library:
        return "Opus"
    if "speexdsp" in library:
        if "preprocess" in symbol:
            return "speexdsp preprocess"
        if "echo" in symbol:
            return "speexdsp MDF"
        return "speexdsp internals (fft, products)"
    if "crypto" in library or "srtp" in symbol.lower():
        return "SRTP / OpenSSL"
    if "kernel" in library:
        return "kernel (syscalls, switches)"
    for key, name in STAGES:
        if key in symbol:
            return name
    return "other (runtime, ticker, devices, RTP)"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data")
    parser.add_argument("--fast-seconds", type=float, default=12.0)
    args = parser.parse_args()
    text = subprocess.run(
        ["perf", "script", "-i", args.data, "-F", "comm,time,period,ip,sym,dso"],
        capture_output=True, text=True, check=True).stdout
    samples = []
    for line in text.splitlines():
        m = re.match(r"\s*(.+?)\s+([\d.]+):\s+(\d+)\s+[0-9a-f]+\s+(.*?)\s+\((.*)\)\s*$", line)
        if m:
            samples.append((m.group(1), float(m.group(2)), int(m.group(3)), m.group(4), m.group(5).split("/")[-1]))
    media = [s for s in samples if s[0] == "voice-media"]
    if not media:
        sys.exit("no voice-media samples: record `voice-bench live` (see --help)")
    live_start, live_end = min(s[1] for s in media), max(s[1] for s in media)
    # The fast-time run follows the live runs on the main thread (named after the executable): the busiest thread
    # after the last live sample.
    after = [s for s in samples if s[1] > live_end + 0.05]
    main_thread = collections.Counter(s[0] for s in after).most_common(1)
    fast = [s for s in after if main_thread and s[0] == main_thread[0][0]]
    if not fast:
        sys.exit("no fast-time samples after the live runs")
    live_cpu = collections.Counter()
    fast_cpu = collections.Counter()
    for s in media:
        live_cpu[stage(s[3], s[4])] += s[2]
    for s in fast:
        fast_cpu[stage(s[3], s[4])] += s[2]
    live_seconds = live_end - live_start
    print(f"live: {live_seconds:.1f} s of calls on voice-media; fast time: {args.fast_seconds:.0f} s of audio")
    print(f"{'stage':40} {'live ms/call-s':>15} {'fast ms/call-s':>15} {'live/fast':>10}")
    for name in sorted(set(live_cpu) | set(fast_cpu), key=lambda k: -live_cpu[k]):
        live = live_cpu[name] / 1e6 / live_seconds
        quick = fast_cpu[name] / 1e6 / args.fast_seconds
        ratio = f"{live / quick:.2f}" if quick > 0 else "-"
        print(f"{name:40} {live:15.2f} {quick:15.2f} {ratio:>10}")
    live_total = sum(live_cpu.values()) / 1e6 / live_seconds
    fast_total = sum(fast_cpu.values()) / 1e6 / args.fast_seconds
    print(f"{'total':40} {live_total:15.2f} {fast_total:15.2f} {live_total / fast_total:10.2f}")


if __name__ == "__main__":
    main()
