/// Pitch-preserving time stretching of speech for the jitter buffer (WSOLA-style, as NetEq's accelerate and
/// preemptive expand): removes or inserts exactly one pitch period, found by normalised cross-correlation, with
/// a linear crossfade over that period. Because the spliced segments are one period apart the waveform stays
/// continuous (no click) and the pitch is unchanged; only the duration changes.
///
/// The jitter buffer uses the second form, ``accelerate(_:count:removing:)`` / ``slowDown(_:count:adding:)``:
/// exactly one 10 ms tick, spliced where the audio matches itself best at that lag (or is quiet), because its
/// playout must stay on the tick grid (see ``AdaptiveJitterBuffer``). Where nothing matches well enough it
/// refuses, and the buffer tries again on the next frame.
///
/// Written here rather than using libsonic: the buffer needs to remove or add a given amount at a chosen moment
/// (a discrete, decision-driven operation on ~30 ms of audio), not a continuous speed factor over a stream;
/// this is ~100 lines, allocation-free, and keeps the decision ("was it stretchable?") in our hands.
/// Mono only.
public struct TimeStretcher: Sendable {
    public let sampleRate: Int
    /// Shortest and longest pitch period searched (2.5 ms … 12.5 ms: 80–400 Hz voices).
    public let minLag: Int
    public let maxLag: Int
    /// Minimum normalised correlation for a voiced splice.
    public var correlationThreshold: Double = 0.75
    /// Minimum normalised correlation for a splice at a given lag (``splicePoint(_:count:lag:overlap:)``): lower
    /// than for a pitch period, because a fixed lag matches voiced speech only where its pitch fits, and refusing
    /// too often leaves the buffer above its target (0.4: 0.35–0.45 give the same late loss on the `JitterBenchmark`
    /// scenarios, higher values hold the delay a tick too high for longer).
    public var spliceCorrelationThreshold: Double = 0.4
    /// Crossfade length of a fixed-lag splice as a share of the lag (``accelerate(_:count:removing:)``,
    /// ``slowDown(_:count:adding:)``), used within 0…1 (beyond one lag, slow-down would read what it already
    /// overwrote). 0.5 and 1.0 score the same under 30 ms jitter (PESQ-WB 4.22 / 4.21, `voice-engine simulate
    /// --jitter 30`, seeds 1–3; Benchmarks/README.md section 7): PESQ there follows the late packets, not the splices.
    public var overlapRatio: Double = 0.5

    /// Samples of audio a splice of `amount` needs at least (``splicePoint(_:count:lag:overlap:)``): the lag plus
    /// the crossfade.
    public func spliceSpan(removingOrAdding amount: Int) -> Int { amount + crossfadeLength(for: amount) }

    private func crossfadeLength(for amount: Int) -> Int { max(1, Int(Double(amount) * min(1, max(0, overlapRatio)))) }
    /// Below this RMS (linear, of Int16) the segment counts as silence and is stretched whatever its correlation.
    public var silenceRMS: Double = 150

    public init(sampleRate: Int) {
        self.sampleRate = sampleRate
        minLag = sampleRate / 400
        maxLag = sampleRate / 80
    }

    /// Samples `accelerate`/`slowDown` need in `buffer` to be able to act.
    public var requiredSamples: Int { 2 * maxLag }

    /// Finds the splice period: the lag in `minLag...maxLag` with the highest normalised correlation between
    /// `x[0..<lag]` and `x[lag..<2*lag]`. Searched coarsely on a 4 kHz decimation (as NetEq does), then refined
    /// at full rate around the best coarse lag. Returns nil when the audio is neither periodic enough nor silent.
    /// - Parameter limit: the longest period allowed (the caller's budget of samples to remove or add).
    public func bestPeriod(_ x: UnsafeBufferPointer<Int16>, limit: Int = .max) -> Int? {
        let longest = min(maxLag, x.count / 2, limit)
        guard longest >= minLag else { return nil }
        var energy = 0.0
        for n in 0..<(2 * longest) { energy += Double(x[n]) * Double(x[n]) }
        if (energy / Double(2 * longest)).squareRoot() < silenceRMS { return longest }  // silence: any splice works

        let step = max(1, sampleRate / 4_000)
        var coarseBest = minLag
        var coarseScore = -2.0
        var lag = minLag
        while lag <= longest {
            let score = correlation(x, lag: lag, stride: step)
            if score > coarseScore {
                coarseScore = score
                coarseBest = lag
            }
            lag += step
        }
        var bestLag = coarseBest
        var bestScore = -2.0
        for candidate in max(minLag, coarseBest - step)...min(longest, coarseBest + step) {
            let score = correlation(x, lag: candidate, stride: 1)
            if score > bestScore {
                bestScore = score
                bestLag = candidate
            }
        }
        return bestScore >= correlationThreshold ? bestLag : nil
    }

    private func correlation(_ x: UnsafeBufferPointer<Int16>, lag: Int, stride: Int) -> Double {
        let (xy, xx, yy) = Self.lagProducts(x, from: 0, length: lag, lag: lag, stride: stride)
        return xx > 0 && yy > 0 ? xy / (xx * yy).squareRoot() : 0
    }

    /// Σ x[n]·x[n+lag], Σ x[n]², Σ x[n+lag]² over n = from, from + stride, … < from + length: what both the
    /// pitch-period search and the fixed-lag splice search score a window by.
    @inline(__always)
    private static func lagProducts(
        _ x: UnsafeBufferPointer<Int16>, from start: Int, length: Int, lag: Int, stride: Int
    ) -> (xy: Double, xx: Double, yy: Double) {
        var xy = 0.0
        var xx = 0.0
        var yy = 0.0
        var n = start
        while n < start + length {
            let a = Double(x[n])
            let b = Double(x[n + lag])
            xy += a * b
            xx += a * a
            yy += b * b
            n += stride
        }
        return (xy, xx, yy)
    }

    /// Finds where `buffer[0..<count]` can be spliced at exactly `lag` samples: the start `a` of the `overlap`-long
    /// window `x[a..<a+overlap]` that best matches `x[a+lag..<a+lag+overlap]` (normalised cross-correlation), or
    /// the quietest window when one is below `silenceRMS` (any splice is inaudible there). nil when no window is
    /// quiet or similar enough (`spliceCorrelationThreshold`): the caller tries again on the next frame.
    ///
    /// Why a fixed lag rather than the pitch period: the jitter buffer must move its playout by whole 10 ms ticks
    /// (see ``AdaptiveJitterBuffer``), so the amount is given and the freedom left is *where* to splice.
    public func splicePoint(_ x: UnsafeBufferPointer<Int16>, count: Int, lag: Int, overlap: Int) -> Int? {
        let last = count - lag - overlap
        guard lag > 0, overlap > 0, last >= 0 else { return nil }
        var bestStart = 0
        var bestScore = -2.0
        var quietStart = 0
        var quietEnergy = Double.infinity
        let step = max(1, sampleRate / 8_000)
        var a = 0
        while a <= last {
            let (xy, xx, yy) = Self.lagProducts(x, from: a, length: overlap, lag: lag, stride: 1)
            let score = xx > 0 && yy > 0 ? xy / (xx * yy).squareRoot() : 1
            if score > bestScore {
                bestScore = score
                bestStart = a
            }
            if xx + yy < quietEnergy {
                quietEnergy = xx + yy
                quietStart = a
            }
            a += step
        }
        if (quietEnergy / Double(2 * overlap)).squareRoot() < silenceRMS { return quietStart }
        return bestScore >= spliceCorrelationThreshold ? bestStart : nil
    }

    /// Shortens `buffer[0..<count]` in place by exactly `amount` samples, splicing at the best point
    /// (``splicePoint(_:count:lag:overlap:)``) with a linear crossfade over `amount · overlapRatio` samples.
    /// - Returns: whether it did (false: nowhere quiet or similar enough; the buffer is unchanged).
    public func accelerate(_ buffer: UnsafeMutableBufferPointer<Int16>, count: Int, removing amount: Int) -> Bool {
        let overlap = crossfadeLength(for: amount)
        guard let a = splicePoint(UnsafeBufferPointer(buffer), count: count, lag: amount, overlap: overlap) else {
            return false
        }
        // out = x[0..<a], crossfade x[a+n] → x[a+amount+n] over the overlap, then x[a+amount+overlap...].
        for n in 0..<overlap {
            let w = Double(n + 1) / Double(overlap + 1)
            let mixed = Double(buffer[a + n]) * (1 - w) + Double(buffer[a + amount + n]) * w
            buffer[a + n] = Int16(clamping: Int(mixed.rounded()))
        }
        for n in (a + amount + overlap)..<count { buffer[n - amount] = buffer[n] }
        return true
    }

    /// Lengthens `buffer[0..<count]` in place by exactly `amount` samples (`buffer` must have room for
    /// `count + amount`): `x[a..<a+amount]` is played twice, joined by a linear crossfade over `amount · overlapRatio`.
    /// - Returns: whether it did (false: nowhere quiet or similar enough; the buffer is unchanged).
    public func slowDown(_ buffer: UnsafeMutableBufferPointer<Int16>, count: Int, adding amount: Int) -> Bool {
        let overlap = crossfadeLength(for: amount)
        guard buffer.count >= count + amount,
            let a = splicePoint(UnsafeBufferPointer(buffer), count: count, lag: amount, overlap: overlap)
        else { return false }
        // out = x[0..<a+amount], crossfade x[a+amount+n] → x[a+n] over the overlap, then x[a+overlap...].
        var n = count - 1
        while n >= a + overlap {
            buffer[n + amount] = buffer[n]
            n -= 1
        }
        // buffer[a+amount+overlap...] now holds x[a+overlap...]; x[0..<a+amount+overlap] is still in place.
        for k in 0..<overlap {
            let w = Double(k + 1) / Double(overlap + 1)
            let mixed = Double(buffer[a + amount + k]) * (1 - w) + Double(buffer[a + k]) * w
            buffer[a + amount + k] = Int16(clamping: Int(mixed.rounded()))
        }
        return true
    }

    /// Shortens `buffer[0..<count]` in place by one pitch period of at most `limit` samples.
    /// - Returns: samples removed (0 when the audio was not stretchable or too short).
    public func accelerate(_ buffer: UnsafeMutableBufferPointer<Int16>, count: Int, limit: Int = .max) -> Int {
        guard count >= 2 * minLag,
            let lag = bestPeriod(UnsafeBufferPointer(rebasing: buffer[0..<count]), limit: limit)
        else { return 0 }
        // out[n] = x[n]·(1−w) + x[n+lag]·w over one period, then x[2·lag...] follows continuously.
        for n in 0..<lag {
            let w = Double(n + 1) / Double(lag + 1)
            let mixed = Double(buffer[n]) * (1 - w) + Double(buffer[n + lag]) * w
            buffer[n] = Int16(clamping: Int(mixed.rounded()))
        }
        for n in (2 * lag)..<count { buffer[n - lag] = buffer[n] }
        return lag
    }

    /// Lengthens `buffer[0..<count]` in place by one pitch period of at most `limit` samples; `buffer` must have
    /// room for `count + maxLag`.
    /// - Returns: samples added (0 when the audio was not stretchable or too short).
    public func slowDown(_ buffer: UnsafeMutableBufferPointer<Int16>, count: Int, limit: Int = .max) -> Int {
        guard count >= 2 * minLag,
            let lag = bestPeriod(UnsafeBufferPointer(rebasing: buffer[0..<count]), limit: limit),
            buffer.count >= count + lag
        else { return 0 }
        // x[0..<lag], then a period fading from x[lag...] back to x[0...], then x[lag...] again.
        var n = count - 1
        while n >= lag {
            buffer[n + lag] = buffer[n]
            n -= 1
        }
        // Now buffer[2·lag..<count+lag] = x[lag..<count]; buffer[0..<lag] = x[0..<lag] still in place;
        // buffer[lag..<2·lag] must become the crossfade of x[lag+n] (from buffer[2·lag+n]) into x[n].
        for n in 0..<lag {
            let w = Double(n + 1) / Double(lag + 1)
            let mixed = Double(buffer[2 * lag + n]) * (1 - w) + Double(buffer[n]) * w
            buffer[lag + n] = Int16(clamping: Int(mixed.rounded()))
        }
        return lag
    }
}
