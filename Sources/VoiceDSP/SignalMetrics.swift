import Foundation

/// Objective measures used by the test-vector manifest, the tests and the benchmarks.
///
/// All functions take the reference first and the signal under test second, and compare
/// them sample by sample over the common length (align first with ``bestLag(reference:test:maxLag:)``).
public enum SignalMetrics {
    /// Energy in decibels relative to full scale of a sine (0 dBFS = a full-scale sine's RMS, 1/√2).
    public static func rmsDBFS(_ x: ArraySlice<Float>) -> Double {
        guard !x.isEmpty else { return -200 }
        let meanSquare = x.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(x.count)
        return 10 * log10(max(meanSquare * 2, 1e-20))
    }

    public static func rmsDBFS(_ x: [Float]) -> Double { rmsDBFS(x[...]) }

    /// Signal-to-noise ratio in dB: energy of the reference over energy of the difference.
    public static func snr(reference: [Float], test: [Float]) -> Double {
        let n = min(reference.count, test.count)
        var signal = 0.0
        var noise = 0.0
        for i in 0..<n {
            let r = Double(reference[i])
            let d = r - Double(test[i])
            signal += r * r
            noise += d * d
        }
        return 10 * log10(max(signal, 1e-20) / max(noise, 1e-20))
    }

    /// Segmental SNR in dB (the mean of per-frame SNRs, each clamped to [-10, 35] dB) over the frames
    /// where the reference is active (above `silenceThresholdDBFS`), the usual codec-quality measure.
    public static func segmentalSNR(
        reference: [Float], test: [Float], frameLength: Int, silenceThresholdDBFS: Double = -50
    ) -> Double {
        let n = min(reference.count, test.count)
        var total = 0.0
        var frames = 0
        var start = 0
        while start + frameLength <= n {
            let r = reference[start..<start + frameLength]
            if rmsDBFS(r) > silenceThresholdDBFS {
                var signal = 0.0
                var noise = 0.0
                for i in start..<start + frameLength {
                    let d = Double(reference[i]) - Double(test[i])
                    signal += Double(reference[i]) * Double(reference[i])
                    noise += d * d
                }
                total += max(-10, min(35, 10 * log10(max(signal, 1e-20) / max(noise, 1e-20))))
                frames += 1
            }
            start += frameLength
        }
        return frames > 0 ? total / Double(frames) : 0
    }

    /// The lag (in samples, 0...maxLag) by which `test` trails `reference`, by maximum cross-correlation.
    public static func bestLag(reference: [Float], test: [Float], maxLag: Int) -> Int {
        var best = 0
        var bestScore = -Double.infinity
        let n = min(reference.count, test.count)
        for lag in 0...max(0, maxLag) where lag < n {
            var score = 0.0
            var i = 0
            while i + lag < n {
                score += Double(reference[i]) * Double(test[i + lag])
                i += 1
            }
            if score > bestScore {
                bestScore = score
                best = lag
            }
        }
        return best
    }

    /// `test` shifted earlier by `lag` samples, so that it lines up with its reference.
    public static func aligned(_ test: [Float], lag: Int) -> [Float] {
        lag <= 0 ? test : Array(test.dropFirst(lag))
    }

    /// The level of one frequency component in dBFS (Goertzel), over the whole signal.
    public static func toneLevelDBFS(_ x: [Float], frequency: Double, sampleRate: Int) -> Double {
        guard !x.isEmpty else { return -200 }
        let w = 2 * Double.pi * frequency / Double(sampleRate)
        let coefficient = 2 * cos(w)
        var s1 = 0.0
        var s2 = 0.0
        for v in x {
            let s0 = Double(v) + coefficient * s1 - s2
            s2 = s1
            s1 = s0
        }
        let power = s1 * s1 + s2 * s2 - coefficient * s1 * s2
        let amplitude = 2 * power.squareRoot() / Double(x.count)
        return 20 * log10(max(amplitude, 1e-10))
    }
}
