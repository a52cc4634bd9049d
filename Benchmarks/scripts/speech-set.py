#!/usr/bin/env python3
"""The 65 s real-speech set of the listening-quality table joined into one 16 kHz mono WAV.

    Benchmarks/scripts/speech-set.py SPEECH_DIR OUT.wav

SPEECH_DIR is the `speech/` folder of the shared test data. The files and their order are
`JitterBenchmark.speechSetFiles`; the 8 kHz clip is resampled to 16 kHz with scipy's polyphase filter (the
Swift loader uses the speexdsp resampler; the PESQ-WB figures of the table are the same either way).
Exit status: 0, 2 usage, 3 numpy/scipy not installed.
"""
import sys

FILES = [
    "jfk_16k_mono.wav", "mediastreamer2_hello_16k.wav", "pjsip_input_16k.wav", "pystoi_clean_16k.wav",
    "webrtcvad_leaktest_8k.wav", "mediastreamer2_silence_voice_16k.wav",
]


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    try:
        import numpy as np
        from scipy.io import wavfile
        from scipy.signal import resample_poly
    except ImportError as error:
        print(f"error: {error.name} is not installed", file=sys.stderr)
        return 3
    parts = []
    for name in FILES:
        rate, x = wavfile.read(f"{argv[0]}/{name}")
        if x.ndim != 1:
            continue
        if rate != 16000:
            x = np.clip(np.round(resample_poly(x.astype("float64"), 16000, rate)), -32768, 32767).astype("int16")
        parts.append(x)
    joined = np.concatenate(parts)
    wavfile.write(argv[1], 16000, joined)
    print(f"{argv[1]}: {len(joined) / 16000:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
