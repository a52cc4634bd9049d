#!/usr/bin/env python3
"""Background under the canceller on the AEC-Challenge double-talk clip (../shared/testdata/aec-real), per band.

The clip's microphone is echo_double_talk.wav + nearend_double_talk.wav. The near-end file is near digital silence
where its talker is quiet (-84 dBFS), but the echo file carries a floor of its own wherever the far end has been
silent for 300 ms: -59.6 dBFS, 99.7 % of it a DC offset (+34 LSB, which MDF's DC notch removes), the
rest a faint noise, highest above 6 kHz. That floor is the microphone's background, so it is what comfort noise
should match, not the near-end file; levels are therefore compared from 125 Hz up.

For each output given: the median 16 ms power spectrum over far-end single-talk blocks (far end above -60 dBFS, near
end under -60 dBFS), against the median spectrum of the echo file over the blocks whose far end has been silent for
>= 300 ms, in dB: per band (125-500 Hz, 500-1000 Hz, then 1 kHz wide to 8 kHz, as RealEchoRecordingTests) and over
125 Hz-8 kHz, and the broadband median level of the output in those single-talk blocks (dBFS, DC included).
A band well above 0 is something other than background: residual echo, or comfort noise that learned it.

    python3 Benchmarks/scripts/aec-challenge-background.py OUT.wav [OUT2.wav ...]
    (OUT from: voice-engine aec --far farend_double_talk.wav --mic MIC.wav --out OUT.wav, with MIC the mix of the
    echo and near-end files, e.g. sox -m -v 1 nearend_double_talk.wav -v 1 echo_double_talk.wav MIC.wav)
"""
import os
import sys

import numpy as np
import scipy.io.wavfile as wav

here = os.path.dirname(os.path.abspath(__file__))
data = os.path.join(here, "..", "..", "..", "shared", "testdata", "aec-real")
block = 256


def read(name):
    return wav.read(os.path.join(data, name))[1].astype(float)


if len(sys.argv) < 2:
    sys.exit("usage: aec-challenge-background.py OUT.wav [OUT2.wav ...] (see the header of this script)")
for name in sys.argv[1:] + [os.path.join(data, "echo_double_talk.wav")]:
    if not os.path.isfile(name):
        sys.exit("aec-challenge-background.py: no such file: %s" % name)


far, near, echo = read("farend_double_talk.wav"), read("nearend_double_talk.wav"), read("echo_double_talk.wav")
blocks = len(far) // block


def power(x, b):
    return (x[b * block:(b + 1) * block] ** 2).mean()


def dbfs(v):
    return 10 * np.log10(np.maximum(v, 1e-6) / 32768.0**2)


far_on = dbfs(np.array([power(far, b) for b in range(blocks)])) > -60
near_quiet = dbfs(np.array([power(near, b) for b in range(blocks)])) < -60
since = np.zeros(blocks, int)
count = 10**6
for b in range(blocks):
    count = 0 if far_on[b] else count + 1
    since[b] = count
background_blocks = since >= 19  # 19 x 16 ms: the far end silent for 300 ms, its echo tail gone
single_talk = far_on & near_quiet
window = np.hanning(block)


def median_spectrum(x, mask):
    spectra = [np.abs(np.fft.rfft(x[b * block:(b + 1) * block] * window)) ** 2 for b in np.where(mask)[0]]
    return 10 * np.log10(np.median(np.array(spectra), axis=0) + 1e-9)


reference = median_spectrum(echo, background_blocks)
edges = [(2, 7), (8, 15), (16, 31), (32, 47), (48, 63), (64, 79), (80, 95), (96, 111), (112, 128)]


def band(spectrum_db, low, high):
    return 10 * np.log10(np.sum(10 ** (spectrum_db[low:high + 1] / 10)))


print("echo-file floor: %.1f dBFS median over %d blocks (far silent >= 300 ms)" % (
    np.median(dbfs(np.array([power(echo, b) for b in np.where(background_blocks)[0]]))), background_blocks.sum()))
print("%-28s %8s %9s  " % ("output", "dBFS", "125-8000") + " ".join(
    "%9s" % ("%d-%d" % (lo * 16000 // block, (hi + 1) * 16000 // block)) for lo, hi in edges))
for name in sys.argv[1:]:
    try:
        out = wav.read(name)[1].astype(float)
    except ValueError as error:
        sys.exit("aec-challenge-background.py: %s is not a WAV file (%s)" % (name, error))
    if out.ndim != 1 or len(out) < blocks * block:
        sys.exit("aec-challenge-background.py: %s is not a mono output of the challenge clip (%s samples, needs %d)"
                 % (name, "x".join(map(str, out.shape)), blocks * block))
    level = np.median(dbfs(np.array([power(out, b) for b in np.where(single_talk)[0]])))
    spectrum = median_spectrum(out, single_talk)
    print("%-28s %8.1f %+9.1f  " % (os.path.basename(name)[:28], level, band(spectrum, 2, 128) - band(reference, 2, 128))
          + " ".join("%+9.1f" % (band(spectrum, lo, hi) - band(reference, lo, hi)) for lo, hi in edges))
