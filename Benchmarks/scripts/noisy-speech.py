#!/usr/bin/env python3
"""Noisy speech for scoring noise suppression: each clean 16 kHz talker plus generated noise at fixed SNRs.

    Benchmarks/scripts/noisy-speech.py SPEECH_DIR OUT_DIR [--seed 1500]

Writes OUT_DIR/<talker>_<noise>_<snr>dB.wav (the microphone) beside OUT_DIR/<talker>_clean.wav (the reference the
output is scored against with pesq-wb.py) and OUT_DIR/manifest.json. Noises: white, pink and brown (1/f^c
spectra, stationary) and babble (four other talkers of the set, time-shifted and summed: non-stationary, speech-like,
the hard case for a suppressor). SNRs: 0, 5, 10 and 20 dB, speech level measured over its active 20 ms frames (the
way P.56 does, not diluted by pauses). Seeds are fixed: the same files every run.
"""
import json
import os
import sys
import wave

import numpy as np

RATE = 16000
SNRS = [0, 5, 10, 20]
NOISES = ["white", "pink", "brown", "babble"]
COLOURS = {"white": 0, "pink": 1, "brown": 2}


def read(path):
    with wave.open(path, "rb") as w:
        if w.getnchannels() != 1 or w.getsampwidth() != 2 or w.getframerate() != RATE:
            return None
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype("float64")


def write(path, x):
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(np.clip(np.round(x), -32768, 32767).astype("<i2").tobytes())


def active_level(x):
    """Mean power over the 20 ms frames within 30 dB of the loudest (active speech)."""
    frames = x[: len(x) // 320 * 320].reshape(-1, 320)
    power = (frames ** 2).mean(axis=1)
    active = power[power > power.max() * 1e-3]
    return active.mean()


def coloured(rng, n, colour):
    spectrum = np.fft.rfft(rng.standard_normal(n))
    f = np.arange(len(spectrum), dtype="float64")
    f[0] = 1
    spectrum /= f ** (colour / 2)
    return np.fft.irfft(spectrum, n)


def babble(rng, n, others):
    out = np.zeros(n)
    for talker in others:
        shifted = np.roll(np.resize(talker, n), int(rng.integers(0, n)))
        out += shifted / np.sqrt(active_level(talker))
    return out


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    if len(args) < 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    seed = int(argv[argv.index("--seed") + 1]) if "--seed" in argv else 1500
    source, out = args[0], args[1]
    os.makedirs(out, exist_ok=True)
    talkers = {}
    for name in sorted(os.listdir(source)):
        if name.endswith(".wav"):
            x = read(os.path.join(source, name))
            if x is not None and len(x) >= 2 * RATE:
                talkers[name[:-4]] = x
    manifest = []
    for t, (name, clean) in enumerate(talkers.items()):
        write(os.path.join(out, f"{name}_clean.wav"), clean)
        level = active_level(clean)
        others = [x for other, x in talkers.items() if other != name][:4]
        for i, kind in enumerate(NOISES):
            rng = np.random.default_rng(seed + 100 * t + i)
            n = len(clean)
            noise = babble(rng, n, others) if kind == "babble" else coloured(rng, n, COLOURS[kind])
            noise /= np.sqrt((noise ** 2).mean())
            for snr in SNRS:
                mic = clean + noise * np.sqrt(level) * 10 ** (-snr / 20)
                peak = np.abs(mic).max()
                scale = min(1.0, 30000 / peak)
                file = f"{name}_{kind}_{snr}dB.wav"
                write(os.path.join(out, file), mic * scale)
                if scale < 1:
                    write(os.path.join(out, f"{name}_{kind}_{snr}dB_clean.wav"), clean * scale)
                manifest.append({"mic": file, "clean": f"{name}_{kind}_{snr}dB_clean.wav" if scale < 1 else f"{name}_clean.wav",
                                 "talker": name, "noise": kind, "snr_db": snr, "seed": seed + 100 * t + i})
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump({"rate": RATE, "seed": seed, "clips": manifest}, f, indent=1)
    print(f"{len(manifest)} noisy clips from {len(talkers)} talkers -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
