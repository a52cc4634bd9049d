import VoiceEngine
import Foundation

/// Deterministic test signals, as Float samples in [-1, 1] at a given rate.
///
/// These make the project's own test vectors (tones, sweeps, speech-like audio, noise), so that
/// checks never depend on recordings the project cannot ship.
public enum SignalGenerator {
    /// A sine tone.
    public static func sine(
        frequency: Double, amplitude: Double = 0.5, sampleRate: Int, seconds: Double, phase: Double = 0
    ) -> [Float] {
        let count = Int((seconds * Double(sampleRate)).rounded())
        let step = 2 * Double.pi * frequency / Double(sampleRate)
        return (0..<count).map { Float(amplitude * sin(phase + step * Double($0))) }
    }

    /// A logarithmic sweep from `from` to `to` Hz (exponential chirp, constant energy per octave).
    public static func sweep(from f0: Double, to f1: Double, amplitude: Double = 0.5, sampleRate: Int, seconds: Double)
        -> [Float]
    {
        let count = Int((seconds * Double(sampleRate)).rounded())
        let k = Foundation.log(f1 / f0) / seconds
        return (0..<count).map { i in
            let t = Double(i) / Double(sampleRate)
            let phase = 2 * Double.pi * f0 * (Foundation.exp(k * t) - 1) / k
            return Float(amplitude * sin(phase))
        }
    }

    /// Gaussian white noise with the given RMS level.
    public static func whiteNoise(rms: Double = 0.1, sampleRate: Int, seconds: Double, seed: UInt64) -> [Float] {
        var rng = SeededGenerator(seed: seed)
        let count = Int((seconds * Double(sampleRate)).rounded())
        return (0..<count).map { _ in Float(max(-1, min(1, rms * rng.nextGaussian()))) }
    }

    /// Pink (1/f) noise with the given RMS level, from Paul Kellet's refined filter of white noise.
    public static func pinkNoise(rms: Double = 0.1, sampleRate: Int, seconds: Double, seed: UInt64) -> [Float] {
        var rng = SeededGenerator(seed: seed)
        let count = Int((seconds * Double(sampleRate)).rounded())
        var b = [Double](repeating: 0, count: 7)
        var raw = [Double](repeating: 0, count: count)
        for i in 0..<count {
            let white = rng.nextGaussian()
            b[0] = 0.99886 * b[0] + white * 0.0555179
            b[1] = 0.99332 * b[1] + white * 0.0750759
            b[2] = 0.96900 * b[2] + white * 0.1538520
            b[3] = 0.86650 * b[3] + white * 0.3104856
            b[4] = 0.55000 * b[4] + white * 0.5329522
            b[5] = -0.7616 * b[5] - white * 0.0168980
            raw[i] = b[0] + b[1] + b[2] + b[3] + b[4] + b[5] + b[6] + white * 0.5362
            b[6] = white * 0.115926
        }
        let measured = (raw.reduce(0) { $0 + $1 * $1 } / Double(max(count, 1))).squareRoot()
        let gain = measured > 0 ? rms / measured : 0
        return raw.map { Float(max(-1, min(1, $0 * gain))) }
    }

    /// Silence.
    public static func silence(sampleRate: Int, seconds: Double) -> [Float] {
        [Float](repeating: 0, count: Int((seconds * Double(sampleRate)).rounded()))
    }

    /// A speech-like signal: voiced syllables (a glottal-like harmonic series on a gliding pitch,
    /// shaped by three moving formants) at a syllable rate near 4 Hz, separated by pauses.
    ///
    /// It has what codecs, jitter buffers and echo cancellers react to in speech — pitch, formants,
    /// onsets and silence — without shipping a recording. Harmonics stay below `min(sampleRate/2, 7 kHz)`.
    public static func speechLike(sampleRate: Int, seconds: Double, seed: UInt64, level: Double = 0.3) -> [Float] {
        var rng = SeededGenerator(seed: seed)
        let count = Int((seconds * Double(sampleRate)).rounded())
        var out = [Float](repeating: 0, count: count)
        let rate = Double(sampleRate)
        let maxFrequency = min(rate / 2 * 0.9, 7_000)
        var position = Int(0.2 * rate)
        while position < count {
            // A talk spurt of 2–5 syllables, then a pause of 0.3–1.0 s.
            let syllables = 2 + Int(rng.nextUnit() * 4)
            for _ in 0..<syllables where position < count {
                let length = Int((0.12 + 0.16 * rng.nextUnit()) * rate)
                let pitchStart = 95 + 120 * rng.nextUnit()
                let pitchEnd = pitchStart * (0.8 + 0.4 * rng.nextUnit())
                let formants = [
                    (300 + 500 * rng.nextUnit(), 90.0),
                    (900 + 1300 * rng.nextUnit(), 120.0),
                    (2200 + 900 * rng.nextUnit(), 180.0)
                ]
                let loudness = level * (0.5 + 0.5 * rng.nextUnit())
                var phase = 0.0
                for n in 0..<length where position + n < count {
                    let progress = Double(n) / Double(length)
                    let pitch = pitchStart + (pitchEnd - pitchStart) * progress
                    phase += 2 * Double.pi * pitch / rate
                    var sample = 0.0
                    var harmonic = 1.0
                    while harmonic * pitch < maxFrequency {
                        let f = harmonic * pitch
                        var gain = 0.0
                        for (centre, bandwidth) in formants {
                            let d = (f - centre) / bandwidth
                            gain += 1 / (1 + d * d)
                        }
                        sample += gain / harmonic.squareRoot() * sin(harmonic * phase)
                        harmonic += 1
                    }
                    let envelope = sin(Double.pi * progress)  // smooth syllable onset and decay
                    out[position + n] = Float(loudness * 0.25 * envelope * sample)
                }
                position += length + Int(0.02 * rate * rng.nextUnit())
            }
            position += Int((0.3 + 0.7 * rng.nextUnit()) * rate)
        }
        return out.map { max(-1, min(1, $0)) }
    }

    /// Converts Float samples in [-1, 1] to 16-bit PCM, rounding and clipping.
    public static func toInt16(_ samples: [Float]) -> [Int16] {
        samples.map { Int16(max(-32768, min(32767, ($0 * 32767).rounded()))) }
    }

    /// Converts 16-bit PCM to Float samples in [-1, 1).
    public static func toFloat(_ samples: [Int16]) -> [Float] {
        samples.map { Float($0) / 32768 }
    }
}
