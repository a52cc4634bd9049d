/// The ideal mix of a conference room rebuilt with the delays each talker actually reached a listener with.
///
/// Why: in a room every talker has its own jitter buffer, which sets its own delay and moves it on its own (at
/// each talk spurt after DTX, or by stretching under jitter), so in a received mix talker A may lag 80 ms and
/// talker B 140 ms, and the lags move. The sample-aligned ideal mix (clean speech summed with no delay) then
/// differs from the received mix in the talkers' relative timing, which PESQ (one delay per utterance) scores as
/// distortion although each voice is intact. Scoring against this delay-matched ideal separates the two: what is
/// left is damage to the voices (loss, concealment, coding).
///
/// Method: per window of 1 s of the received mix, each talker's delay is the lag (20…600 ms) that maximises the
/// normalised cross-correlation of the received mix with that talker's clean speech, first on 4-sample sums
/// (4 kHz), then refined to the sample (±4); a window where the talker is silent or the peak weak (correlation
/// coefficient under 0.2) keeps the previous lag. The aligned ideal is then each talker's clean speech shifted by its window's lag, summed.
public struct ConferenceAlignment: Sendable {
    /// Lags (samples) per talker per window.
    public var lags: [[Int]]
    /// Whether the talker was active in that window (its lag measured, not carried over).
    public var active: [[Bool]]
    public let window: Int

    public static let windowSamples = 16_000
    public static let maximumLagMilliseconds = 600
    /// No path is faster than this (the simulated legs' base delays plus a jitter buffer's minimum).
    public static let minimumLagMilliseconds = 20
    static let minimumCorrelation = 0.2

    /// - Parameters: `received` and `talkers` are 16 kHz mono, from the same start.
    public init(received: [Int16], talkers: [[Int16]]) {
        let sampleRate = 16_000
        let window = Self.windowSamples
        self.window = window
        let maxLag = Self.maximumLagMilliseconds * sampleRate / 1000
        let minLag = Self.minimumLagMilliseconds * sampleRate / 1000
        let r = received.map(Float.init)
        let windows = received.count / window
        var lags: [[Int]] = []
        var active: [[Bool]] = []
        let r4 = Self.sums4(r)
        for talker in talkers {
            let s = talker.map(Float.init)
            let s4 = Self.sums4(s)
            // Prefix sums of s4² for the normalisation.
            var prefix = [Double](repeating: 0, count: s4.count + 1)
            for k in 0..<s4.count { prefix[k + 1] = prefix[k] + Double(s4[k] * s4[k]) }
            let loudest =
                stride(from: 0, to: max(0, s.count - window), by: window).map { start in
                    prefix[min(s4.count, (start + window) / 4)] - prefix[start / 4]
                }.max() ?? 0
            var previous = 0
            var talkerLags: [Int] = []
            var talkerActive: [Bool] = []
            for w in 0..<windows {
                let start4 = w * window / 4
                let count4 = window / 4
                var best = -Double.infinity
                var bestLag = -1
                var received = 0.0
                for n in 0..<count4 where start4 + n < r4.count { received += Double(r4[start4 + n] * r4[start4 + n]) }
                s4.withUnsafeBufferPointer { s4p in
                    r4.withUnsafeBufferPointer { r4p in
                        for lag4 in (minLag / 4)...(maxLag / 4) {
                            let from = start4 - lag4
                            guard from >= 0, from + count4 <= s4p.count else { continue }
                            let energy = prefix[from + count4] - prefix[from]
                            // Silent stretch of the talker (40 dB below its loudest second): nothing to align on.
                            guard energy > loudest * 1e-4 else { continue }
                            var dot: Float = 0
                            for n in 0..<count4 { dot += r4p[start4 + n] * s4p[from + n] }
                            let score = Double(dot) / energy.squareRoot()
                            if score > best {
                                best = score
                                bestLag = lag4 * 4
                            }
                        }
                    }
                }
                // A weak peak (correlation coefficient under 0.2: the talker barely present in this second of the
                // mix) is not a measurement.
                if bestLag >= 0 && best / max(received, 1).squareRoot() < Self.minimumCorrelation { bestLag = -1 }
                if bestLag >= 0 {
                    bestLag = Self.refine(r, s, start: w * window, count: window, around: bestLag, maxLag: maxLag)
                    previous = bestLag
                    talkerActive.append(true)
                } else {
                    talkerActive.append(false)
                }
                talkerLags.append(previous)
            }
            // Windows before the first measurement take the first measured lag.
            if let first = talkerActive.firstIndex(of: true) {
                for w in 0..<first { talkerLags[w] = talkerLags[first] }
            }
            lags.append(talkerLags)
            active.append(talkerActive)
        }
        self.lags = lags
        self.active = active
    }

    /// The ideal mix with each talker delayed by its measured lag, window by window (as long as `received`).
    public func alignedIdeal(talkers: [[Int16]], samples: Int) -> [Int16] {
        var mix = [Int32](repeating: 0, count: samples)
        for (j, talker) in talkers.enumerated() {
            for t in 0..<samples {
                let w = min(t / window, lags[j].count - 1)
                let k = t - (w >= 0 ? lags[j][w] : 0)
                if k >= 0 && k < talker.count { mix[t] += Int32(talker[k]) }
            }
        }
        return mix.map { Int16(clamping: $0) }
    }

    /// Range (ms) of a talker's lag over the windows it was active in: how far its delay moved.
    public func lagRangeMilliseconds(_ j: Int) -> (min: Double, max: Double) {
        let measured = zip(lags[j], active[j]).filter(\.1).map(\.0)
        guard let lo = measured.min(), let hi = measured.max() else { return (0, 0) }
        return (Double(lo) / 16, Double(hi) / 16)
    }

    /// Mean absolute difference (ms) between two talkers' lags over windows where both were active: how far they
    /// sit apart in the received mix (0 in the sample-aligned ideal).
    public func meanLagDifferenceMilliseconds(_ a: Int, _ b: Int) -> Double {
        var sum = 0.0
        var n = 0
        for w in lags[a].indices where active[a][w] && active[b][w] {
            sum += abs(Double(lags[a][w] - lags[b][w])) / 16
            n += 1
        }
        return n == 0 ? 0 : sum / Double(n)
    }

    private static func sums4(_ x: [Float]) -> [Float] {
        (0..<(x.count / 4)).map { x[4 * $0] + x[4 * $0 + 1] + x[4 * $0 + 2] + x[4 * $0 + 3] }
    }

    private static func refine(_ r: [Float], _ s: [Float], start: Int, count: Int, around lag: Int, maxLag: Int) -> Int
    {
        var best = -Double.infinity
        var bestLag = lag
        for l in max(0, lag - 4)...min(maxLag, lag + 4) {
            let from = start - l
            guard from >= 0, from + count <= s.count else { continue }
            var dot: Float = 0
            var energy: Float = 0
            for n in 0..<count {
                dot += r[start + n] * s[from + n]
                energy += s[from + n] * s[from + n]
            }
            let score = Double(dot) / Double(max(energy, 1)).squareRoot()
            if score > best {
                best = score
                bestLag = l
            }
        }
        return bestLag
    }
}
