#!/usr/bin/env python3
"""Acoustic lag of a call's output against its input: how late the listener hears the speech.

    Benchmarks/scripts/acoustic-lag.py INPUT.wav OUTPUT.wav

Both files mono 16-bit at the same rate. For every 1 s window of INPUT whose RMS is at least 300 (speech, not a
pause), the lag (0 to 500 ms) of the cross-correlation peak of that window in OUTPUT; prints the mean over those
windows in ms. Under jitter the playout delay moves, so this is the delay as heard, averaged over the speech,
unlike `simulate --report`'s E-model one-way figure (buffer level + packet time + codec look-ahead + network).
Exit status: 0, 2 usage, 3 numpy/scipy not installed.
"""
import sys


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    try:
        import numpy as np
        from scipy.io import wavfile
        from scipy.signal import fftconvolve
    except ImportError as error:
        print(f"error: {error.name} is not installed", file=sys.stderr)
        return 3
    rate, x = wavfile.read(argv[0])
    rate_out, y = wavfile.read(argv[1])
    if rate != rate_out or x.ndim != 1 or y.ndim != 1:
        sys.exit("error: both files must be mono at the same rate")
    x = x.astype("float64")
    y = y.astype("float64")
    window, longest = rate, rate // 2
    lags = []
    for start in range(0, len(x) - window, window):
        segment = x[start:start + window]
        if np.sqrt(np.mean(segment ** 2)) < 300:
            continue
        part = y[start:start + window + longest]
        if len(part) < window + longest:
            break
        correlation = fftconvolve(part, segment[::-1], mode="valid")
        lags.append(int(np.argmax(np.abs(correlation))))
    if not lags:
        sys.exit("error: no speech window in INPUT")
    print(f"{np.mean(lags) * 1000 / rate:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
