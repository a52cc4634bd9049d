#!/usr/bin/env python3
"""What ERLE the real device double-talk clip allows.

    python3 Benchmarks/scripts/aec-device-clip.py AEC_REAL_DIR [name=OUTPUT.wav ...]

On the far-end single-talk part of `DMTgmZwtgUilp4omPK7-OQ_doubletalk` (blocks as `voice-bench aec --real` picks
them: far end within 35 dB of its loudest block, before 3.5 s; first 2 s from 0.5 s) it prints:
- the echo delay (GCC-PHAT of microphone against loopback) and the noise floor before the far end starts;
- the echo-to-noise ratio: a 1024-tap least-squares filter fitted on those very samples (an upper bound for any
  linear canceller) leaves the microphone's noise, so mic / residual is the ERLE of a canceller that removes the
  echo perfectly and leaves the noise;
- what a perfect echo removal plus a fixed noise attenuation per band would score (the engine's noise suppression
  attenuates at most 6 dB under 300 Hz and 15 dB above);
- the ERLE of DTLN-aec's output (`*_processed.wav`) and of any OUTPUT.wav given (e.g. `voice-engine aec` output).
"""
import sys

import numpy as np
import scipy.io.wavfile as wavfile
import scipy.signal as signal

folder = sys.argv[1]
stem = folder.rstrip("/") + "/DMTgmZwtgUilp4omPK7-OQ_doubletalk_"
_, lpb = wavfile.read(stem + "lpb.wav")
_, mic = wavfile.read(stem + "mic.wav")
_, dtln = wavfile.read(stem + "processed.wav")
n = min(len(lpb), len(mic)) // 160 * 160
lpb, mic = lpb[:n].astype(float), mic[:n].astype(float)
outputs = {"DTLN-aec (*_processed.wav)": dtln[:n].astype(float)}
for arg in sys.argv[2:]:
    name, path = arg.split("=", 1)
    outputs[name] = wavfile.read(path)[1][:n].astype(float)

FAR_FROM, FAR_UNTIL = 8000, 56000  # voice-bench: far onset 0.5 s, far-end single talk until 3.5 s


def dbfs(x):
    return 10 * np.log10(np.mean(x ** 2) / 32768 ** 2 + 1e-20)


# Blocks as RealisticAECScoring.singleTalkBlocks picks them (reference unshifted, as for every recording).
blocks = n // 160
power = np.array([np.mean(lpb[b * 160:(b + 1) * 160] ** 2) for b in range(blocks)])
mask = power > power.max() * 3.1623e-4
mask[(np.arange(blocks) + 1) * 160 > FAR_UNTIL] = False
first = FAR_FROM // 160


def erle(out, lo=0, hi=None):
    chosen = [b for b in range(lo, min(hi or blocks, blocks)) if mask[b]]
    m = sum(np.sum(mic[b * 160:(b + 1) * 160] ** 2) for b in chosen)
    o = sum(np.sum(out[b * 160:(b + 1) * 160] ** 2) for b in chosen)
    return 10 * np.log10(m / max(o, 1)), len(chosen)


# Delay: GCC-PHAT over the far-end part.
size = 1 << 17
cross = np.fft.rfft(mic[:FAR_UNTIL + 8000], size) * np.conj(np.fft.rfft(lpb[:FAR_UNTIL], size))
phat = np.fft.irfft(cross / (np.abs(cross) + 1e-12), size)
lags = np.arange(0, 8000)
delay = int(lags[np.argmax(np.abs(phat[lags]))])

# Least-squares linear echo over the far-end part (1024 taps from 4 ms before the delay).
start, taps = delay - 64, 1024
index = np.arange(FAR_FROM, FAR_UNTIL)
design = np.stack([lpb[index - start - k] for k in range(taps)], 1)
h = np.linalg.lstsq(design, mic[index], rcond=None)[0]
residual = np.zeros(n)
residual[index] = mic[index] - design @ h
energy = np.cumsum(h ** 2) / np.sum(h ** 2)

print(f"echo delay (GCC-PHAT): {delay} samples = {delay / 16:.1f} ms; "
      f"echo path: 90 % of the energy in {np.searchsorted(energy, 0.9) / 16:.1f} ms, 99 % in "
      f"{np.searchsorted(energy, 0.99) / 16:.1f} ms")
print(f"microphone before the far end (0-0.5 s): {dbfs(mic[:FAR_FROM]):.1f} dBFS; over 0.5-3.5 s: "
      f"{dbfs(mic[index]):.1f} dBFS, linear echo {dbfs(design @ h):.1f}, residual {dbfs(residual[index]):.1f}")
f, p_noise = signal.welch(mic[:FAR_FROM] / 32768, 16000, nperseg=512)
_, p_echo = signal.welch(design @ h / 32768, 16000, nperseg=512)
edges = [0, 150, 300, 600, 1000, 2000, 4000, 8001]
print("per band, noise (0-0.5 s) / linear echo (0.5-3.5 s), dBFS: " + ", ".join(
    f"{a}-{b} Hz {10 * np.log10(np.sum(p_noise[(f >= a) & (f < b)]) * f[1] + 1e-20):.1f} / "
    f"{10 * np.log10(np.sum(p_echo[(f >= a) & (f < b)]) * f[1] + 1e-20):.1f}"
    for a, b in zip(edges, edges[1:])))


def attenuated(x, under100, under300, above):
    f, _, z = signal.stft(x, 16000, nperseg=512)
    g = np.where(f < 100, under100, np.where(f < 300, under300, above))
    return signal.istft(z * (10 ** (g / 20))[:, None], 16000, nperseg=512)[1][:len(x)]


print("\nERLE over far-end single talk (blocks) / first 2 s (blocks):")
rows = [("echo removed perfectly, noise kept (LS residual)", residual)]
for lo, mid, hi in [(-6, -6, -15), (-15, -6, -15), (-15, -15, -15)]:
    rows.append((f"echo removed, noise {lo:+d} dB <100 Hz, {mid:+d} dB 100-300 Hz, {hi:+d} dB above",
                 attenuated(residual, lo, mid, hi)))
rows += list(outputs.items())
for name, out in rows:
    (whole, nw), (start2, ns) = erle(out), erle(out, first, first + 200)
    print(f"  {name:<66} {whole:5.1f} ({nw}) / {start2:5.1f} ({ns})")
