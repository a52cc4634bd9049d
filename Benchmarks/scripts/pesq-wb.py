#!/usr/bin/env python3
"""PESQ-WB (ITU-T P.862.2) of a degraded WAV against a reference WAV, through the `pesq` package from PyPI.

    Benchmarks/scripts/pesq-wb.py REFERENCE.wav DEGRADED.wav [--align] [--start S] [--end S] [--nb]

Prints one line: the MOS-LQO. Both files must be mono 16-bit; a 48 kHz or 8 kHz file is resampled to 16 kHz
(scipy's polyphase filter). --nb scores narrowband PESQ (ITU-T P.862, G.711's scale) at 8 kHz instead. --align first shifts DEGRADED by the lag of the cross-correlation peak (the overall
delay of a call), as the benchmarks' tables are scored. --start/--end score a time range of the reference (s).
Exit status: 0 scored, 2 usage, 3 `pesq` or `scipy` not installed (the caller reports the column as absent),
4 no utterance found (PESQ's own error, e.g. on silence).
"""
import sys
import wave

RATE = 8000 if "--nb" in sys.argv else 16000

def read(path):
    import numpy as np
    with wave.open(path, "rb") as w:
        if w.getnchannels() != 1 or w.getsampwidth() != 2:
            sys.exit(f"error: {path}: expected mono 16-bit PCM")
        rate = w.getframerate()
        samples = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype("float64") / 32768.0
    if rate != RATE:
        from scipy.signal import resample_poly
        from math import gcd
        g = gcd(RATE, rate)
        samples = resample_poly(samples, RATE // g, rate // g)
    return samples

def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    if len(args) < 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    def option(name):
        if name in argv:
            i = argv.index(name)
            return float(argv[i + 1])
        return None
    try:
        import numpy as np
        from pesq import pesq, NoUtterancesError
    except ImportError as error:
        print(f"error: {error.name} is not installed (pip install pesq)", file=sys.stderr)
        return 3
    ref, deg = read(args[0]), read(args[1])
    if "--align" in argv:
        from scipy.signal import fftconvolve
        n = min(len(ref), len(deg), RATE * 20)
        corr = fftconvolve(deg[:n], ref[:n][::-1], mode="full")
        lag = int(np.argmax(np.abs(corr))) - (n - 1)
        deg = deg[lag:] if lag > 0 else np.concatenate([np.zeros(-lag), deg])
    start, end = option("--start"), option("--end")
    lo = int((start or 0) * RATE)
    hi = int(end * RATE) if end is not None else min(len(ref), len(deg))
    n = min(hi, len(ref), len(deg))
    try:
        print(f"{pesq(RATE, ref[lo:n], deg[lo:n], 'nb' if RATE == 8000 else 'wb'):.3f}")
    except NoUtterancesError:
        print("error: no utterance found", file=sys.stderr)
        return 4
    return 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
