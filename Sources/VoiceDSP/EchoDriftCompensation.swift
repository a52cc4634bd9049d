/// Keeps the reference on the microphone's clock: estimates the drift between loudspeaker and microphone and
/// resamples the far end to cancel it, which MDF needs (raw MDF falls from ~47 dB ERLE to ~11 dB at 100 ppm).
///
/// Two estimates: every 250 ms the canceller hands it the echo delay in the far end's own timeline (alignment plus
/// the adapted filter's peak plus what the resampler has stretched), and ``DriftEstimator`` fits its slope; at most
/// once a second the resampler's fractional ratio is set from it. A drift too fast for the filter to converge on
/// (hundreds of ppm and more: no stable peak ever appears) is acquired first by ``DriftSearch``, which lines up
/// several seconds of short GCC-PHAT correlations along candidate drift slopes; three agreeing clear results set
/// the compensation, after which the filter converges and its peak refines the estimate.
///
/// The resampler is bypassed until the first compensation, so it adds no latency; when it comes in, its latency is
/// taken back from the alignment. Storage is allocated in `init`; the first drift adjustment allocates a filter
/// table inside speexdsp (once, at control rate).
final class EchoDriftCompensation {
    private var fit: DriftEstimator
    private let search: DriftSearch
    private let resampler: Resampler
    /// The resampler's output for one ``pass(_:to:)``.
    private var resampled: [Int16]
    /// Whether the far end goes through the resampler (from the first compensation on). Until then it is bypassed:
    /// the resampler's latency would make the reference late for an echo path shorter than it.
    private var engaged = false
    /// Reference delay the resampler adds once engaged (its filter's latency), taken back from the alignment.
    private(set) var latency = 0
    /// Far-end samples played (before resampling): against the reference line's length, what has been stretched.
    private(set) var farConsumed: Int64 = 0
    /// Estimated drift, ppm (loudspeaker faster positive), and the compensation applied, in the same sense.
    private(set) var estimatedPPM: Double?
    private(set) var compensatedPPM = 0.0
    private let sampleRate: Int
    private var lastUpdate: Int64 = 0
    private var blocksSinceSegment = 0
    private var blocksSinceSearch = 0
    /// Blocks between drift searches: 50 (half a second), doubled after each search that found no clear drift up to
    /// ``maximumSearchInterval``, back to 50 after a clear one. A call without echo (a headset, a muted speaker)
    /// would otherwise search without pause — a fifth of a live call's CPU with voice processing on.
    private var searchInterval = 50
    private static let maximumSearchInterval = 800
    /// Clear search results agreeing with each other, not yet acted on (their sum and count).
    private var searchSum = 0.0
    private var searchCount = 0
    /// Agreeing clear searches needed before the drift is compensated (their mean is used).
    private let searchesNeeded = 3
    /// Consecutive blocks the filter has shown a stable echo path: after ``stableBlocksBeforeSegmentPause`` the
    /// search's history stops being fed (the search cannot start while the path is stable, and by the time it could
    /// the history is stale).
    private var stableBlocks = 0
    private static let stableBlocksBeforeSegmentPause = 500

    /// - Parameters:
    ///   - searchLags: decimated lags of the delay estimator's segment correlations.
    ///   - maxFarEndSamplesPerCall: the most far-end samples one ``pass(_:to:)`` takes.
    init(sampleRate: Int, searchLags: Int, maxFarEndSamplesPerCall: Int) throws(SpeexDSPError) {
        self.sampleRate = sampleRate
        fit = DriftEstimator(sampleRate: sampleRate)
        search = DriftSearch(lags: searchLags)
        do {
            // Quality 3: a short filter (1.5 ms of latency at 16 kHz, flat to ~7 kHz); the reference only has to
            // model the echo.
            resampler = try Resampler(inputRate: sampleRate, outputRate: sampleRate, channels: 1, quality: 3)
        } catch { throw .resampler(error) }
        resampled = [Int16](repeating: 0, count: resampler.maximumOutputCount(forInput: maxFarEndSamplesPerCall))
    }

    /// Writes played far-end samples to `line`, through the resampler once it is engaged.
    func pass(_ played: UnsafeBufferPointer<Int16>, to line: EchoReferenceLine) throws(SpeexDSPError) {
        farConsumed += Int64(played.count)
        guard engaged else {
            line.write(played)
            return
        }
        let produced: Int
        do {
            produced = try resampled.withUnsafeMutableBufferPointer { out throws(ResamplerError) in
                try resampler.process(played, into: out).produced
            }
        } catch { throw .resampler(error) }
        resampled.withUnsafeBufferPointer { line.write(UnsafeBufferPointer(rebasing: $0[0..<produced])) }
    }

    /// Takes the echo delay in the far end's timeline at microphone sample `time` (from a clear filter peak) and, when
    /// the fit is precise, updates the compensation (see ``updateCompensation(now:appliedDelay:)``).
    func track(delay: Double, at time: Int64, appliedDelay: inout Int) throws(SpeexDSPError) {
        fit.add(time: time, delay: delay)
        try updateCompensation(now: time, appliedDelay: &appliedDelay)
    }

    /// Sets the compensation from the filter-peak fit when it is precise, at most once a second.
    private func updateCompensation(now: Int64, appliedDelay: inout Int) throws(SpeexDSPError) {
        guard let ppm = fit.driftPPM, let error = fit.driftStandardErrorPPM, error < 5 else { return }
        let target = ppm
        estimatedPPM = target
        let compensating = compensatedPPM != 0
        // Below ~10 ppm the echo path moves under 0.2 samples a second, which MDF follows by itself; and near the
        // nominal ratio the resampler's steps are 15 ppm apart, so engaging would only add error.
        guard compensating || abs(target) >= 10, now - lastUpdate >= Int64(sampleRate),
            abs(target - compensatedPPM) > 1
        else { return }
        try applyCompensation(target, now: now, appliedDelay: &appliedDelay)
    }

    /// One block of drift acquisition (with delay alignment): feeds the search a segment correlation every 25 blocks
    /// (paused after 5 s of a stable echo path) and, while the filter shows no stable echo path, runs a search over
    /// the last 3-6 s, four candidates per block: every half second, less often (up to every 8 s) while searches
    /// find no clear drift. Returns the delay to re-align the reference to when a compensation moved the echo
    /// out of the filter's comfortable part, else `nil`.
    func acquire(
        estimator: EchoDelayEstimator, peak: EchoPathPeak, margin: Int, now: Int64, appliedDelay: inout Int
    ) throws(SpeexDSPError) -> Int? {
        blocksSinceSearch += 1
        if search.searching {
            guard let result = search.step(budget: 4) else { return nil }
            return try use(
                result, factor: estimator.factor, peak: peak, margin: margin, now: now, appliedDelay: &appliedDelay)
        }
        stableBlocks = peak.isStable ? stableBlocks + 1 : 0
        if stableBlocks == Self.stableBlocksBeforeSegmentPause { search.clear() }
        if stableBlocks >= Self.stableBlocksBeforeSegmentPause { return nil }
        blocksSinceSegment += 1
        if blocksSinceSegment >= 25 {
            blocksSinceSegment = 0
            if let t = estimator.segmentCorrelation(into: search.nextSlot) { search.commit(time: t) }
        }
        // Only while the filter shows no stable echo path: once it does, it tracks any drift left itself.
        if search.count >= 12 && blocksSinceSearch >= searchInterval && !peak.isStable {
            blocksSinceSearch = 0
            search.start()
        }
        return nil
    }

    /// Acts on a finished search: a clear drift (its peak well above the no-drift one and the grid's mean), seen in
    /// three agreeing searches, is added to the compensation (their mean) — unless the filter already shows the
    /// echo path, in which case it tracks the drift itself, more precisely.
    private func use(
        _ result: DriftSearch.Result, factor: Int, peak: EchoPathPeak, margin: Int, now: Int64, appliedDelay: inout Int
    ) throws(SpeexDSPError) -> Int? {
        let clear =
            result.score > 1.5 * result.zeroScore && result.score > 2.5 * result.meanScore && abs(result.ppm) >= 50
        guard clear else {
            searchCount = 0
            searchInterval = min(searchInterval * 2, Self.maximumSearchInterval)
            return nil
        }
        searchInterval = 50
        // The filter shows the path: it follows the drift itself, and the filter-peak estimate will be finer.
        if peak.isStable { return nil }
        if let error = fit.driftStandardErrorPPM, error < 5, fit.driftPPM != nil { return nil }
        if searchCount > 0 && abs(searchSum / Double(searchCount) - result.ppm) > 60 { searchCount = 0 }
        if searchCount == 0 { searchSum = 0 }
        searchSum += result.ppm
        searchCount += 1
        guard searchCount >= searchesNeeded else { return nil }
        let measured = searchSum / Double(searchCount)
        searchCount = 0
        let target = compensatedPPM + measured
        // The echo delay now, in the reference line's timeline as the search saw it. While the echo moves the
        // filter has no stable peak to keep the alignment on: when the echo has left the comfortable part
        // of the filter (more than half the margin from where the alignment put it), the alignment is set afresh.
        let onset = result.lag * factor
        let moved = abs(onset - (appliedDelay + margin)) > margin / 2
        let wasEngaged = engaged
        guard try applyCompensation(target, now: now, appliedDelay: &appliedDelay) else { return nil }
        estimatedPPM = target
        search.clear()
        // The filter-peak line restarts from here: points from before (an unconverged filter, the resampler's
        // engagement step) would bias its slope.
        fit.reset()
        return moved ? max(0, onset - margin - (wasEngaged ? 0 : latency)) : nil
    }

    /// Sets the resampler to cancel a drift of `ppm`, engaging it (and taking its latency back from
    /// `appliedDelay`) the first time. Returns whether it was applied (not when the echo path is shorter than the
    /// resampler's latency: the reference would arrive after its echo).
    @discardableResult
    private func applyCompensation(_ ppm: Double, now: Int64, appliedDelay: inout Int) throws(SpeexDSPError) -> Bool {
        if !engaged {
            let resamplerLatency = resampler.outputLatency
            guard appliedDelay >= resamplerLatency else { return false }
            appliedDelay -= resamplerLatency
            latency = resamplerLatency
            engaged = true
        }
        lastUpdate = now
        let clamped = max(-5_000, min(5_000, ppm))
        do { try resampler.setDrift(ppm: -clamped) } catch { throw .resampler(error) }
        compensatedPPM = -resampler.driftPPM
        return true
    }

    /// Forgets the search's history (the reference moved under it).
    func clearSearch() {
        search.clear()
    }

    /// Starts over: no drift known, the resampler bypassed again.
    func reset() {
        fit.reset()
        resampler.reset()
        engaged = false
        latency = 0
        farConsumed = 0
        estimatedPPM = nil
        compensatedPPM = 0
        lastUpdate = 0
        search.clear()
        blocksSinceSegment = 0
        blocksSinceSearch = 0
        searchInterval = 50
        searchCount = 0
        stableBlocks = 0
    }
}
