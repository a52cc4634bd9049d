/// Acquires a clock drift too large for the adaptive filter to show it: a Doppler-style search over the slope of
/// the echo delay.
///
/// At ±1000 ppm the echo path moves 16 samples a second at 16 kHz; MDF never converges on a path moving that fast,
/// so its impulse response has no stable peak to track (what ``DriftEstimator`` fits), and single GCC-PHAT delay
/// measurements hop between the direct path and reflections of similar height. This search looks at several
/// seconds at once instead: short-segment GCC-PHAT correlations (``EchoDelayEstimator/segmentCorrelation(into:)``,
/// every ~250 ms) are kept, and for each candidate drift ε the segments are shifted by the delay change ε implies
/// at their time and summed. With the right ε every peak of the room response — direct path and reflections alike
/// — lines up in every segment and the sum has one tall peak; a wrong ε smears them. The best ε (coarse grid, then
/// a fine one around it) and its peak against the no-drift peak say whether there is a drift to compensate.
///
/// It measures the drift left in the reference as the estimator sees it (after any compensation already applied),
/// so the caller clears it whenever that compensation changes. Candidates are scored a few per call (``step(budget:)``)
/// so no block carries the whole search. Fixed storage, no allocation after `init`.
final class DriftSearch {
    /// One finished search.
    struct Result: Equatable {
        /// Drift that best lines the segments up, ppm (positive: the delay shrinks, the loudspeaker runs fast).
        var ppm: Double
        /// Height of the summed peak at `ppm`, per segment.
        var score: Float
        /// The same with no drift (the segments taken as they are).
        var zeroScore: Float
        /// Mean over the coarse grid: what a wrong drift gives.
        var meanScore: Float
        /// Segments summed.
        var segments: Int
        /// Where the summed peak is at `ppm`: the echo delay at the newest segment, in the estimator's lags.
        var lag: Int
    }

    /// Values per segment correlation (lags 0 ... maxLag at the estimator's rate).
    let lags: Int
    /// Segments kept (the window searched).
    let slots: Int
    /// Searched drift range, ± ppm, and the grids.
    let maximumPPM: Double = 3_000
    let coarseStep: Double = 100
    let fineStep: Double = 10
    private let history: UnsafeMutableBufferPointer<Float>
    private let times: UnsafeMutableBufferPointer<Int64>
    private let sum: UnsafeMutableBufferPointer<Float>
    /// Scores of the fine grid, for the parabolic refinement around its best.
    private let fineScores: UnsafeMutableBufferPointer<Float>
    private var fineIndex = 0
    private var head = 0
    /// Segments held.
    private(set) var count = 0

    // The search in progress.
    private(set) var searching = false
    private var fine = false
    private var candidate = 0.0
    private var last = 0.0
    private var bestPPM = 0.0
    private var bestScore: Float = -.infinity
    private var bestLag = 0
    private var zeroScore: Float = 0
    private var coarseSum: Float = 0
    private var coarseCount = 0
    private var newest: Int64 = 0
    private var searchedCount = 0

    /// - Parameters:
    ///   - lags: values per segment correlation.
    ///   - slots: segments kept (24 at ~250 ms: a 6 s window).
    init(lags: Int, slots: Int = 24) {
        self.lags = lags
        self.slots = slots
        history = .allocate(capacity: lags * slots)
        history.initialize(repeating: 0)
        times = .allocate(capacity: slots)
        times.initialize(repeating: 0)
        sum = .allocate(capacity: lags)
        sum.initialize(repeating: 0)
        fineScores = .allocate(capacity: Int(2 * coarseStep / fineStep) + 2)
        fineScores.initialize(repeating: 0)
    }

    deinit {
        history.deallocate()
        times.deallocate()
        sum.deallocate()
        fineScores.deallocate()
    }

    /// Where the next segment correlation is written (then ``commit(time:)`` it).
    var nextSlot: UnsafeMutableBufferPointer<Float> {
        UnsafeMutableBufferPointer(rebasing: history[head * lags..<(head + 1) * lags])
    }

    /// Keeps the segment just written to ``nextSlot``, measured at decimated microphone count `time`. Ignored while a
    /// search runs (the window must not move under it).
    func commit(time: Int64) {
        guard !searching else { return }
        times[head] = time
        head = (head + 1) % slots
        count = min(count + 1, slots)
    }

    /// Forgets the segments (the reference timeline changed) and any search in progress.
    func clear() {
        count = 0
        head = 0
        searching = false
    }

    /// Starts a search over the segments held.
    func start() {
        guard count >= 2 else { return }
        searching = true
        fine = false
        candidate = -maximumPPM
        last = maximumPPM
        bestScore = -.infinity
        bestPPM = 0
        coarseSum = 0
        coarseCount = 0
        newest = times[(head - 1 + slots) % slots]
        searchedCount = count
        zeroScore = score(ppm: 0).value
    }

    /// Scores up to `budget` candidates; returns the result when the search is complete.
    func step(budget: Int) -> Result? {
        guard searching else { return nil }
        for _ in 0..<budget {
            let (s, lag) = score(ppm: candidate)
            if s > bestScore {
                bestScore = s
                bestPPM = candidate
                bestLag = lag
            }
            if fine {
                fineScores[fineIndex] = s
                fineIndex += 1
            } else {
                coarseSum += s
                coarseCount += 1
            }
            candidate += fine ? fineStep : coarseStep
            if candidate > last + 1e-9 {
                if fine {
                    searching = false
                    let n = Float(searchedCount)
                    return Result(
                        ppm: refined(), score: bestScore / n, zeroScore: zeroScore / n,
                        meanScore: coarseSum / Float(max(coarseCount, 1)) / n, segments: searchedCount, lag: bestLag)
                }
                fine = true
                let centre = bestPPM
                fineIndex = 0
                candidate = centre - coarseStep + fineStep
                last = centre + coarseStep - fineStep
            }
        }
        return nil
    }

    /// The best drift to a fraction of the fine step: a parabola through the best fine score and its neighbours.
    private func refined() -> Double {
        let first = candidate - Double(fineIndex) * fineStep
        let i = Int(((bestPPM - first) / fineStep).rounded())
        guard i > 0, i < fineIndex - 1, fineScores[i] == bestScore else { return bestPPM }
        let y0 = Double(fineScores[i - 1]), y1 = Double(fineScores[i]), y2 = Double(fineScores[i + 1])
        let denominator = y0 - 2 * y1 + y2
        guard denominator < 0 else { return bestPPM }
        return bestPPM + fineStep * max(-0.5, min(0.5, 0.5 * (y0 - y2) / denominator))
    }

    /// Height and lag of the tallest peak of the segments summed with the shifts drift `ppm` implies.
    private func score(ppm: Double) -> (value: Float, lag: Int) {
        let lags = lags
        let sum = sum
        let history = history
        let rate = ppm * 1e-6
        // Shifts are positive for positive drift (older segments saw a longer delay); find the common lag range.
        var lowest = 0
        var highest = 0
        for k in 0..<searchedCount {
            let slot = (head - 1 - k + 2 * slots) % slots
            let shift = rate * Double(newest - times[slot])
            let i = Int(shift.rounded(.down))
            lowest = min(lowest, i)
            highest = max(highest, i + 1)
        }
        let from = -lowest
        let to = lags - 1 - highest
        guard to > from else { return (0, 0) }
        // Half-open ranges and unchecked index arithmetic: a closed range's iterator and overflow checks kept these
        // loops scalar.
        let end = to + 1
        for d in from..<end { sum[d] = 0 }
        for k in 0..<searchedCount {
            let slot = (head - 1 - k + 2 * slots) % slots
            let shift = rate * Double(newest - times[slot])
            let i = Int(shift.rounded(.down))
            let f = Float(shift - Double(i))
            let g = 1 - f
            let base = slot * lags + i
            // Eight lags at a time: the same products and sums per lag as one at a time (no fused multiply-add).
            let s = sum.baseAddress!
            let h = history.baseAddress! + base
            let gv = SIMD8<Float>(repeating: g)
            let fv = SIMD8<Float>(repeating: f)
            var d = from
            while d &+ 8 <= end {
                let h0 = UnsafeRawPointer(h + d).loadUnaligned(as: SIMD8<Float>.self)
                let h1 = UnsafeRawPointer(h + (d &+ 1)).loadUnaligned(as: SIMD8<Float>.self)
                let acc = UnsafeRawPointer(s + d).loadUnaligned(as: SIMD8<Float>.self)
                UnsafeMutableRawPointer(s + d).storeBytes(of: acc + (gv * h0 + fv * h1), as: SIMD8<Float>.self)
                d &+= 8
            }
            while d < end {
                s[d] += g * h[d] + f * h[d &+ 1]
                d &+= 1
            }
        }
        var best: Float = -.infinity
        var lag = from
        for d in from..<end where sum[d] > best {
            best = sum[d]
            lag = d
        }
        return (best, lag)
    }
}
