#!/usr/bin/env python3
"""Generates the realistic AEC set the way the ICASSP AEC-Challenge synthetic set was made (arXiv 2009.04972).

    Benchmarks/scripts/aec-realistic.py OUTPUT_DIR --speech DIR [DIR ...] [--clips N] [--seconds S]
                                        [--snr-min DB] [--only GROUP] [--handover N]

Real speech for both talkers (16 kHz mono WAVs found in the --speech folders; the far and near talker of a clip come
from different files), image-source rooms (pyroomacoustics ShoeBox, T60 drawn from 0.2 to 1.2 s), a loudspeaker
nonlinearity on the far end before the room (hard clipping at a drawn fraction of the peak, then the challenge's
memoryless sigmoid), a bulk device delay, stationary coloured noise at 0-40 dB SNR and a signal-to-echo ratio from
-10 to +10 dB. Clip groups (in turn):

  fst   far-end single talk for the whole clip
  nst   near-end single talk (the far end silent)
  dt    far-end single talk for the first 4 s, then double talk
  move  far-end single talk; the device moves at half time (a second room response, 100 ms crossfade)

and, with --handover N, N clips more (index 100 + i, seed BASE_SEED + 100 + i; no other clip changes):

  hand  far-end single talk for the first 4 s, then the far end falls silent and the near talker speaks alone from
        4.3 s (a turn-taking gap of 300 ms, inside the far end's echo tail and the suppressor's hold): a lone near
        talker after the canceller and its suppressor have learned the echo path (in nst the far end never plays, so
        nothing was learned and the suppressor has nothing to hold down)

Each clip is drawn from its own seed (BASE_SEED + index), so a clip never changes when the set grows. Writes
<name>_far.wav, <name>_mic.wav, the two near-end references and manifest.json (every clip's seed and drawn
parameters, the far-end onset and the double-talk start in samples). Needs numpy, scipy and pyroomacoustics (PyPI).

Near-end references. As in the AEC-Challenge synthetic set (its datasets/synthetic/README.md: `nearend_speech` times
`nearend_scale` is the near end exactly as it is in `nearend_mic_signal`, clean, without the near-end noise), the
near talker reaches the microphone without a room response of its own; only the echo goes through the room. So:
  <name>_near.wav        the near talker as it is in the microphone, without echo and without noise (the
                         challenge's target; "near" in the manifest)
  <name>_near_noisy.wav  the microphone without the echo: near talker plus the background noise, what a perfect
                         echo canceller with no noise suppression would output ("near_with_noise")

--snr-min draws the SNR from DB...40 dB instead of 0...40 (the same draws, so every other parameter of a seed is
unchanged): a low-noise set, where the microphone itself can score PESQ-WB 4 against the clean near end. --only keeps
the clips of one group (their seeds stay BASE_SEED + index).
"""
import json
import os
import sys
import wave

import numpy as np

RATE = 16000
BASE_SEED = 15000
GROUPS = ["fst", "nst", "dt", "move"]


def read(path):
    with wave.open(path, "rb") as w:
        if w.getnchannels() != 1 or w.getsampwidth() != 2 or w.getframerate() != RATE:
            return None
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype("float64") / 32768.0


def write(path, x):
    pcm = np.clip(np.round(x * 32768.0), -32768, 32767).astype("<i2")
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(pcm.tobytes())


def rms(x):
    return float(np.sqrt(np.mean(x ** 2) + 1e-20))


def talker(rng, source, n):
    """n samples of `source` from a random start, looped, normalised to -25 dBFS RMS over its active part."""
    start = int(rng.integers(0, max(1, len(source) - n))) if len(source) > n else 0
    x = np.resize(np.roll(source, -start), n)
    active = x[np.abs(x) > 0.01]
    return x * (10 ** (-25 / 20) / rms(active if len(active) else x))


def loudspeaker(rng, x):
    """The challenge's loudspeaker model: hard clipping at a fraction of the peak, then a memoryless sigmoid."""
    limit = float(rng.uniform(0.6, 1.0)) * np.max(np.abs(x))
    clipped = np.clip(x, -limit, limit) / max(limit, 1e-9)
    b = 1.5 * clipped - 0.3 * clipped ** 2
    a = np.where(b > 0, 4.0, 0.5)
    return (2 / (1 + np.exp(-a * b)) - 1) * limit


def room_response(rng, t60):
    import pyroomacoustics as pra
    dim = [float(rng.uniform(3, 8)), float(rng.uniform(3, 7)), float(rng.uniform(2.4, 3.5))]
    absorption, order = pra.inverse_sabine(t60, dim)
    room = pra.ShoeBox(dim, fs=RATE, materials=pra.Material(absorption), max_order=min(order, 60))
    device = [float(rng.uniform(0.5, dim[0] - 0.5)), float(rng.uniform(0.5, dim[1] - 0.5)), float(rng.uniform(0.7, 1.5))]
    spacing = float(rng.uniform(0.05, 0.3))
    angle = float(rng.uniform(0, 2 * np.pi))
    mic = [device[0] + spacing * np.cos(angle), device[1] + spacing * np.sin(angle), device[2]]
    room.add_source(device)
    room.add_microphone(mic)
    room.compute_rir()
    return np.array(room.rir[0][0]), dim


def noise(rng, n, colour):
    """Stationary noise with a 1/f^colour spectrum (0 white, 1 pink, 2 brown), unit RMS."""
    spectrum = np.fft.rfft(rng.standard_normal(n))
    f = np.arange(len(spectrum), dtype="float64")
    f[0] = 1
    spectrum /= f ** (colour / 2)
    x = np.fft.irfft(spectrum, n)
    return x / rms(x)


def clip(index, sources, seconds, snr_min=0.0, group=None):
    from scipy.signal import fftconvolve
    seed = BASE_SEED + index
    rng = np.random.default_rng(seed)
    group = group or GROUPS[index % len(GROUPS)]
    n = int(seconds * RATE)
    names = sorted(sources)
    far_name = names[int(rng.integers(len(names)))]
    near_name = names[int(rng.integers(len(names) - 1))]
    if near_name == far_name:
        near_name = names[-1]
    t60 = float(rng.uniform(0.2, 1.2))
    ser = float(rng.uniform(-10, 10))
    snr = float(rng.uniform(snr_min, 40))
    colour = float(rng.uniform(0, 2))
    delay = int(rng.uniform(0.005, 0.1) * RATE)
    far = talker(rng, sources[far_name], n)
    near = talker(rng, sources[near_name], n)
    rir, dim = room_response(rng, t60)
    params = {"name": f"{group}_{index:02d}", "group": group, "seed": seed, "far_source": far_name,
              "near_source": near_name, "t60_s": round(t60, 3), "room_m": [round(d, 2) for d in dim],
              "ser_db": round(ser, 2), "snr_db": round(snr, 2), "noise_colour": round(colour, 2),
              "device_delay_ms": round(delay * 1000 / RATE, 1)}
    if group == "hand":
        far[4 * RATE:] = 0  # the far end stops at 4 s; its echo rings on in the room
    played = loudspeaker(rng, far)
    echo = np.concatenate([np.zeros(delay), fftconvolve(played, rir)])[:n]
    if group == "move":
        second, _ = room_response(rng, t60)
        moved = np.concatenate([np.zeros(delay), fftconvolve(played, second)])[:n]
        ramp = np.clip((np.arange(n) - n // 2) / (0.1 * RATE), 0, 1)
        echo = (1 - ramp) * echo + ramp * moved
        params["move_at_sample"] = n // 2
    dt_start = 0
    near_alone_from = None
    if group == "hand":
        near_alone_from = int(4.3 * RATE)
        near[:near_alone_from] = 0
    if group == "fst" or group == "move":
        near[:] = 0
    elif group == "nst":
        far[:] = 0
        echo[:] = 0
    else:
        dt_start = 4 * RATE
        near[:dt_start] = 0
    # Levels: the echo from the signal-to-echo ratio against the near talker (-25 dBFS active), or where there
    # is no near talker as if one were there; the noise from the SNR against the louder of the two.
    echo *= 10 ** ((-25 - ser) / 20) / max(rms(echo[np.abs(echo) > 1e-4]) if np.any(np.abs(echo) > 1e-4) else 1, 1e-9)
    speech_level = 10 ** (-25 / 20) * max(1, 10 ** (-ser / 20)) if group != "nst" else 10 ** (-25 / 20)
    background = noise(rng, n, colour) * speech_level * 10 ** (-snr / 20)
    mic = echo + near + background
    peak = np.max(np.abs(mic))
    if peak > 0.99:
        scale = 0.99 / peak
        mic, near, echo, background = mic * scale, near * scale, echo * scale, background * scale
    near_noisy = near + background
    onset = int(np.argmax(np.abs(far) > 0.01)) if np.any(np.abs(far) > 0.01) else None
    params.update({"far_onset_sample": onset, "double_talk_from_sample": dt_start if group == "dt" else None,
                   "near_alone_from_sample": near_alone_from,
                   "far": params["name"] + "_far.wav", "mic": params["name"] + "_mic.wav",
                   "near": params["name"] + "_near.wav", "near_with_noise": params["name"] + "_near_noisy.wav"})
    return params, far, mic, near, near_noisy


def main(argv):
    if len(argv) < 3 or "--speech" not in argv:
        print("usage: aec-realistic.py OUTPUT_DIR --speech DIR [DIR ...] [--clips N] [--seconds S] [--snr-min DB]"
              " [--only GROUP] [--handover N]", file=sys.stderr)
        return 2
    out = argv[0]
    count = int(argv[argv.index("--clips") + 1]) if "--clips" in argv else 40
    seconds = float(argv[argv.index("--seconds") + 1]) if "--seconds" in argv else 10
    snr_min = float(argv[argv.index("--snr-min") + 1]) if "--snr-min" in argv else 0.0
    only = argv[argv.index("--only") + 1] if "--only" in argv else None
    handover = int(argv[argv.index("--handover") + 1]) if "--handover" in argv else 0
    folders = []
    for a in argv[argv.index("--speech") + 1:]:
        if a.startswith("--"):
            break
        folders.append(a)
    sources = {}
    for folder in folders:
        for f in sorted(os.listdir(folder)):
            if f.endswith(".wav") and "echo" not in f and "mic" not in f and "lpb" not in f and "processed" not in f:
                x = read(os.path.join(folder, f))
                if x is not None and len(x) > 4 * RATE:
                    sources[f] = x
    if len(sources) < 2:
        print("error: need at least two 16 kHz mono speech files of 4 s or more", file=sys.stderr)
        return 1
    os.makedirs(out, exist_ok=True)
    clips = []
    draws = [(i, None) for i in range(count)] + [(100 + i, "hand") for i in range(handover)]
    for i, group in draws:
        if only is not None and (group or GROUPS[i % len(GROUPS)]) != only:
            continue
        params, far, mic, near, near_noisy = clip(i, sources, seconds, snr_min, group)
        for key, signal in (("far", far), ("mic", mic), ("near", near), ("near_with_noise", near_noisy)):
            write(os.path.join(out, params[key]), signal)
        clips.append(params)
        print(f"{params['name']}: T60 {params['t60_s']} s, SER {params['ser_db']} dB, SNR {params['snr_db']} dB",
              file=sys.stderr)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump({"generator": "Benchmarks/scripts/aec-realistic.py", "base_seed": BASE_SEED, "seconds": seconds,
                   "snr_min_db": snr_min, "only": only, "handover": handover,
                   "speech_sources": sorted(sources), "clips": clips}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
