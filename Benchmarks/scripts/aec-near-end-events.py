#!/usr/bin/env python3
"""How much of a real-device clip's residual over the background is near-end sound, not echo.

    Benchmarks/scripts/aec-near-end-events.py DEVICES_DIR CLIP_NAME OUTPUT.wav [--over DB]

DEVICES_DIR holds the clips.json that `voice-bench aec --devices` reads; OUTPUT.wav is the canceller's output for the
clip (`voice-engine aec --far LPB --mic MIC --out OUTPUT.wav`). Residual over the background counts every far-talk
block, so a sound made at the device while the far end talks (the device handled or moved, a talker) counts as
residual echo. This marks such blocks from spectral envelopes, which hold where a linear fit of the microphone from
the loopback does not (real devices drift, and their loudspeakers distort):

- per 10 ms block and band (seven bands up to 8 kHz), the echo the loopback can explain is g(band) times the
  loopback's band power, the loudest of the last 300 ms (the echo path's span); g is the median of microphone over
  loopback in the clip's far-talk blocks;
- a block is a near-end event when the microphone stands DB (default 10) over that echo plus the microphone's
  background (its median band power in the clip's background).

Prints the far-talk blocks, the events among them, their share of the output's far-talk energy, and the residual
over the background with and without them, on the blocks `ResidualOverBackground` uses (far talk: the loopback within
35 dB of its loudest block in the block or the 300 ms before it; the background: the clip's stretch, or else the
blocks more than 300 ms after the loopback was last active), and above 60 Hz, as `ResidualOverBackground` takes its
levels (a second-order Butterworth high-pass).
"""
import argparse
import json
import os
import sys

import numpy as np
import scipy.io.wavfile as wavfile
from scipy.signal import butter, sosfilt

BLOCK = 160
BAND_EDGES = [1, 4, 8, 16, 32, 48, 64, 81]  # FFT bins of a 160-sample block: 100 Hz to 8 kHz
ECHO_SPAN_BLOCKS = 30
AUDIBLE_FROM_HZ = 60  # ResidualOverBackground.audibleFromHz


def read(path):
    rate, x = wavfile.read(path)
    if rate != 16000 or x.ndim != 1:
        sys.exit(f"error: {path}: 16 kHz mono expected")
    return x.astype(float)


def band_powers(x, n):
    spectrum = np.abs(np.fft.rfft(x.reshape(n, BLOCK) * np.hanning(BLOCK), axis=1)) ** 2
    return np.stack([spectrum[:, a:b].sum(1) for a, b in zip(BAND_EDGES[:-1], BAND_EDGES[1:])], 1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("devices")
    parser.add_argument("clip")
    parser.add_argument("output")
    parser.add_argument("--over", type=float, default=10.0, help="dB over explained echo + background (default 10)")
    args = parser.parse_args()
    clips = json.load(open(os.path.join(args.devices, "clips.json")))
    clip = next((c for c in clips if c["name"] == args.clip), None)
    if clip is None:
        sys.exit(f"error: no clip named {args.clip} in {args.devices}/clips.json")
    far = read(os.path.join(args.devices, clip["lpb"]))
    mic = read(os.path.join(args.devices, clip["mic"]))
    out = read(args.output)
    n = min(len(far), len(mic), len(out)) // BLOCK
    far, mic, out = far[: n * BLOCK], mic[: n * BLOCK], out[: n * BLOCK]

    far_power = np.mean(far.reshape(n, BLOCK) ** 2, 1)
    active = far_power > far_power.max() * 10 ** -3.5
    until = int(round(clip["single_talk_until_s"] * 100)) if clip.get("single_talk_until_s") is not None else n
    talk = np.array([active[max(0, i - ECHO_SPAN_BLOCKS): i + 1].any() and i < until for i in range(n)])
    start, end = clip.get("background_from_s"), clip.get("background_to_s")
    if start is not None and end is not None:
        background = np.zeros(n, bool)
        background[int(round(start * 100)): int(round(end * 100))] = True
    else:
        background = np.array([not active[max(0, i - ECHO_SPAN_BLOCKS): i + 1].any() and i < until for i in range(n)])
    if not background.any():
        sys.exit(f"error: {args.clip} has no background to measure against")

    far_bands, mic_bands = band_powers(far, n), band_powers(mic, n)
    recent_far = np.stack([far_bands[max(0, i - ECHO_SPAN_BLOCKS): i + 1].max(0) for i in range(n)])
    gain = np.median(mic_bands[talk] / (recent_far[talk] + 1e-9), axis=0)
    explained = gain * recent_far + np.median(mic_bands[background], axis=0)
    event = 10 * np.log10((mic_bands.sum(1) + 1e-9) / (explained.sum(1) + 1e-9)) > args.over

    audible = butter(2, AUDIBLE_FROM_HZ, "highpass", fs=16000, output="sos")
    out_power = np.mean(sosfilt(audible, out).reshape(n, BLOCK) ** 2, 1)

    def residual(mask):
        return 10 * np.log10(out_power[mask].mean() / out_power[background].mean())

    events = talk & event
    share = out_power[events].sum() / out_power[talk].sum() * 100
    print(f"{args.clip}: far-talk blocks {talk.sum()}, near-end events {events.sum()} holding {share:.0f} % of the "
          f"output's far-talk energy; residual over background {residual(talk):.1f} dB, "
          f"{residual(talk & ~event):.1f} dB without the events")


if __name__ == "__main__":
    main()
