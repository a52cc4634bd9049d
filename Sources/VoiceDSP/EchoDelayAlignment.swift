/// Coarse alignment of the reference with its echo: ``EchoDelayEstimator`` (GCC-PHAT) measures by how much the
/// microphone trails the reference, and the reference is delayed so the echo onset lands a margin inside the filter.
///
/// GCC-PHAT is a coarse tool (4 kHz envelope, biased towards strong early reflections), so it is used with
/// hysteresis: the first three agreeing confident measurements set the alignment; after that only a jump larger
/// than the re-alignment threshold away from where the adapted filter has the echo, seen three times in agreement,
/// moves it (and restarts the filter). Smaller movements are the filter's job. It measures every 200 ms while the
/// filter has no stable echo path and pauses while it has one (the filter's peak tracks small moves and
/// ``EchoReturnMonitor`` finds jumps): its three 8192-point FFTs per measurement are most of the canceller's cost
/// beyond speexdsp's own.
final class EchoDelayAlignment {
    let estimator: EchoDelayEstimator
    /// How far ahead of the estimated echo onset the reference is placed inside the filter (samples), so estimation
    /// error and drift before compensation stay inside the filter.
    let margin: Int
    private let sampleRate: Double
    private let minimumConfidence: Double
    private let realignThreshold: Double
    /// Whether an alignment has been set since the start (before it, the filter's peak is not tracked).
    private(set) var aligned = false
    /// The last three confident measurements (a ring at `recentCount`). Not an array literal: a constant literal is
    /// a static object, and the first write would copy it (allocate).
    private var recent = [Double](repeating: 0, count: 3)
    private var recentCount = 0
    private var blocksSinceEstimate = 0
    static let estimateInterval = 20
    /// Blocks between measurements now: ``estimateInterval`` (200 ms) while acquiring, ``idleEstimateInterval``
    /// once ``unclearEstimatesBeforeIdle`` measurements in a row over an active far end found no clear echo (a
    /// headset or a muted speaker: nothing to find, yet two 8192-point FFTs would run every 200 ms for the whole
    /// call — a tenth of a live processing-on call's media thread, and their 200 kB of scratch evicting the filters'
    /// state; `EchoDelayIdleTests`); back to 200 ms at the first confident one. A silent far end (no measurement)
    /// neither counts nor resets.
    private(set) var estimateSpacing = EchoDelayAlignment.estimateInterval
    private var unclearEstimates = 0
    static let unclearEstimatesBeforeIdle = 10
    static let idleEstimateInterval = 80
    /// Blocks during which measurements are not acted on after a jump re-alignment (the estimator's window still
    /// holds the old delay).
    private var holdOff = 0

    init(estimator: EchoDelayEstimator, configuration: EchoCancellerConfiguration) {
        let rate = configuration.sampleRate
        self.estimator = estimator
        sampleRate = Double(rate)
        margin = configuration.alignmentMarginMilliseconds * rate / 1000
        minimumConfidence = configuration.minimumConfidence
        realignThreshold = Double(configuration.realignThresholdMilliseconds * rate) / 1000
    }

    /// Takes one microphone block and, when a measurement is due and the filter shows no stable echo path,
    /// measures. Returns the delay (samples) the reference should be re-aligned to, or `nil` to keep it.
    /// `appliedDelay` is the reference's current delay, `peak` where the filter has the echo.
    func addMicrophone(
        _ mic: UnsafeBufferPointer<Int16>, appliedDelay: Int, peak: EchoPathPeak,
        statistics: inout EchoCancellerStatistics
    ) -> Int? {
        estimator.addMicrophone(mic)
        blocksSinceEstimate += 1
        var realignment: Int?
        if blocksSinceEstimate >= estimateSpacing && !(aligned && peak.isStable) {
            blocksSinceEstimate = 0
            if let estimate = estimator.estimate() {
                statistics.lastConfidence = estimate.confidence
                let confident = estimate.confidence >= minimumConfidence
                spaceEstimates(afterConfident: confident)
                if confident && holdOff == 0 {
                    realignment = use(estimate, appliedDelay: appliedDelay, peak: peak, statistics: &statistics)
                }
            }
        }
        if holdOff > 0 { holdOff -= 1 }
        return realignment
    }

    /// Counts measurements that found no clear echo and sets the spacing of the next (see ``estimateSpacing``).
    private func spaceEstimates(afterConfident confident: Bool) {
        unclearEstimates = confident ? 0 : unclearEstimates + 1
        estimateSpacing =
            unclearEstimates >= Self.unclearEstimatesBeforeIdle ? Self.idleEstimateInterval : Self.estimateInterval
    }

    /// Hysteresis on a confident measurement: the alignment to move to, or `nil`.
    private func use(
        _ estimate: EchoDelayEstimator.Estimate, appliedDelay: Int, peak: EchoPathPeak,
        statistics: inout EchoCancellerStatistics
    ) -> Int? {
        if peak.position == nil { statistics.estimatedDelayMilliseconds = estimate.delaySamples * 1000 / sampleRate }
        recent[recentCount % 3] = estimate.delaySamples
        recentCount += 1
        let lo = min(recent[0], recent[1], recent[2])
        let hi = max(recent[0], recent[1], recent[2])
        guard recentCount >= 3 && hi - lo <= sampleRate / 1000 else { return nil }
        let median = recent[0] + recent[1] + recent[2] - lo - hi
        // Where the echo is now: the adapted filter knows best; before it has a clear peak, the alignment.
        let onset = Double(appliedDelay) + (peak.isStable ? peak.position ?? Double(margin) : Double(margin))
        guard !aligned || abs(median - onset) > realignThreshold else { return nil }
        return max(0, Int(median.rounded()) - margin)
    }

    /// Notes that the reference was aligned; `moved`: to a new delay, so earlier measurements no longer agree.
    func didAlign(moved: Bool) {
        aligned = true
        if moved { recentCount = 0 }
    }

    /// Notes a jump re-alignment: earlier measurements saw the old delay, and so will the next few.
    func didJump() {
        recentCount = 0
        holdOff = 200
    }

    func reset() {
        estimator.reset()
        aligned = false
        recentCount = 0
        blocksSinceEstimate = 0
        estimateSpacing = Self.estimateInterval
        unclearEstimates = 0
        holdOff = 0
    }
}
