/// Measures a device's actual sample rate against the monotonic clock: a least-squares line through
/// (time, frames transferred) observations; the slope is the rate. This is the drift the echo canceller must
/// compensate between the capture and playout clocks.
///
/// Numerically stable for long runs (Welford-style running means and co-moments around the first
/// observation), O(1) per observation, no allocation: safe to update on an audio thread.
public struct ClockRateEstimator: Sendable, Hashable {
    /// The rate the device claims (Hz).
    public let nominalRate: Double
    /// Observations taken.
    public private(set) var count = 0

    private var origin: (time: Int64, frames: Int64) = (0, 0)
    private var meanT = 0.0
    private var meanF = 0.0
    private var sTT = 0.0
    private var sTF = 0.0

    public init(nominalRate: Double) {
        precondition(nominalRate > 0, "a nominal rate must be positive")
        self.nominalRate = nominalRate
    }

    /// Adds an observation: `frames` transferred in total by `time`.
    public mutating func add(_ observation: ClockObservation) {
        add(timeNanoseconds: observation.time.nanoseconds, frames: observation.frames)
    }

    /// Adds an observation: `frames` transferred in total by `timeNanoseconds` (monotonic).
    public mutating func add(timeNanoseconds: Int64, frames: Int64) {
        if count == 0 { origin = (timeNanoseconds, frames) }
        let t = Double(timeNanoseconds - origin.time) * 1e-9
        let f = Double(frames - origin.frames)
        count += 1
        let n = Double(count)
        let dT = t - meanT
        meanT += dT / n
        meanF += (f - meanF) / n
        sTT += dT * (t - meanT)
        sTF += dT * (f - meanF)
    }

    /// Frames per second by least squares; nil until two observations at different times.
    public var estimatedRate: Double? {
        guard count >= 2, sTT > 0 else { return nil }
        return sTF / sTT
    }

    /// Deviation of the estimated rate from the nominal one, in parts per million (positive = fast).
    public var deviationPPM: Double? {
        estimatedRate.map { ($0 / nominalRate - 1) * 1e6 }
    }

    /// Forgets all observations (after an interruption or a device restart).
    public mutating func reset() {
        self = ClockRateEstimator(nominalRate: nominalRate)
    }

    /// How much faster the capture clock runs than the playout clock, in ppm, each relative to its nominal
    /// rate (so devices at different rates compare); nil until both have estimates.
    public static func relativeDriftPPM(capture: ClockRateEstimator, playout: ClockRateEstimator) -> Double? {
        guard let c = capture.estimatedRate, let p = playout.estimatedRate else { return nil }
        return ((c / capture.nominalRate) / (p / playout.nominalRate) - 1) * 1e6
    }

    public static func == (a: ClockRateEstimator, b: ClockRateEstimator) -> Bool {
        a.nominalRate == b.nominalRate && a.count == b.count && a.origin == b.origin && a.meanT == b.meanT
            && a.meanF == b.meanF && a.sTT == b.sTT && a.sTF == b.sTF
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(nominalRate)
        hasher.combine(count)
        hasher.combine(meanT)
        hasher.combine(meanF)
    }
}
