/// Estimates the clock drift between loudspeaker and microphone from the slope of the echo delay over time.
///
/// Feed it delay measurements expressed in the far-end's own timeline (the delay the echo would have without any
/// compensation): with drift ε (loudspeaker faster than microphone by ε), the delay falls by ε samples per
/// microphone sample. A least-squares line over a sliding window gives ε. A measurement far off the line is an
/// outlier (a false peak in double talk) and is ignored, unless several agree with each other: then the bulk delay
/// has jumped (the device latency changed), and the line starts again from them.
///
/// Fixed capacity, no allocation after `init`.
public struct DriftEstimator: Sendable {
    /// What happened to a measurement.
    public enum Outcome: Sendable, Equatable {
        case accepted
        case outlier
        /// The measurements now agree on a new bulk delay; the history was restarted.
        case delayJump
    }

    /// The window the line is fitted over, in microphone samples.
    public let windowSamples: Int64
    /// Distance from the line, in samples, beyond which a measurement is an outlier.
    public let toleranceSamples: Double
    /// Minimum time span of accepted measurements before a drift is reported, in samples.
    public let minimumSpanSamples: Int64

    private var times: [Int64]
    private var delays: [Double]
    private var head = 0
    private var count = 0
    // Heap buffers made in init, not array literals: an optimised build emits a constant literal as a static,
    // immutable object, so the first write (the first outlier, mid-call) would copy it — an allocation.
    private var pendingTimes = [Int64](repeating: 0, count: 3)
    private var pendingDelays = [Double](repeating: 0, count: 3)
    private var pendingCount = 0

    /// - Parameters:
    ///   - sampleRate: microphone rate in Hz.
    ///   - windowSeconds: fit window (longer: finer, slower to follow a change).
    ///   - toleranceMilliseconds: outlier distance.
    public init(
        sampleRate: Int, windowSeconds: Double = 10, toleranceMilliseconds: Double = 1, minimumSpanSeconds: Double = 2
    ) {
        windowSamples = Int64(windowSeconds * Double(sampleRate))
        toleranceSamples = toleranceMilliseconds * Double(sampleRate) / 1000
        minimumSpanSamples = Int64(minimumSpanSeconds * Double(sampleRate))
        times = [Int64](repeating: 0, count: 128)
        delays = [Double](repeating: 0, count: 128)
    }

    /// Adds one measurement: `delay` samples at microphone sample `time`.
    @discardableResult
    public mutating func add(time: Int64, delay: Double) -> Outcome {
        dropOlder(than: time - windowSamples)
        if let predicted = prediction(at: time), abs(delay - predicted) > toleranceSamples {
            // Off the line: an outlier unless it agrees with the other recent outliers.
            if pendingCount > 0, abs(delay - pendingDelays[pendingCount - 1]) > toleranceSamples { pendingCount = 0 }
            pendingTimes[pendingCount] = time
            pendingDelays[pendingCount] = delay
            pendingCount += 1
            guard pendingCount == pendingTimes.count else { return .outlier }
            count = 0
            for i in 0..<pendingCount { append(pendingTimes[i], pendingDelays[i]) }
            pendingCount = 0
            return .delayJump
        }
        pendingCount = 0
        append(time, delay)
        return .accepted
    }

    /// Forgets everything.
    public mutating func reset() {
        count = 0
        pendingCount = 0
    }

    /// Drift in ppm, positive when the loudspeaker clock runs faster than the microphone's (the echo delay shrinks),
    /// or `nil` until enough measurements span `minimumSpanSamples`.
    public var driftPPM: Double? {
        guard count >= 6, let (slope, _) = fit(), span >= minimumSpanSamples else { return nil }
        return -slope * 1_000_000
    }

    /// Standard error of ``driftPPM`` from the fit's residuals, ppm (`nil` when there is no estimate).
    public var driftStandardErrorPPM: Double? {
        guard count >= 6, let (slope, intercept) = fit() else { return nil }
        let t0 = times[index(0)]
        var residual = 0.0, st = 0.0, stt = 0.0
        for i in 0..<count {
            let t = Double(times[index(i)] - t0)
            let r = delays[index(i)] - (intercept + slope * t)
            residual += r * r
            st += t
            stt += t * t
        }
        let n = Double(count)
        let sxx = stt - st * st / n
        guard sxx > 0 else { return nil }
        return (residual / (n - 2) / sxx).squareRoot() * 1_000_000
    }

    /// The delay the line predicts at `time`, when there is a line (or the last value when there are few points).
    public func prediction(at time: Int64) -> Double? {
        guard count > 0 else { return nil }
        if count < 4 || span < minimumSpanSamples / 2 {
            return delays[index(count - 1)]
        }
        guard let (slope, intercept) = fit() else { return nil }
        return intercept + slope * Double(time - times[index(0)])
    }

    /// Number of measurements on the line.
    public var measurementCount: Int { count }

    private var span: Int64 { count == 0 ? 0 : times[index(count - 1)] - times[index(0)] }

    private func index(_ i: Int) -> Int { (head + i) % times.count }

    private mutating func append(_ time: Int64, _ delay: Double) {
        if count == times.count {
            head = (head + 1) % times.count
            count -= 1
        }
        times[index(count)] = time
        delays[index(count)] = delay
        count += 1
    }

    private mutating func dropOlder(than limit: Int64) {
        while count > 0 && times[head] < limit {
            head = (head + 1) % times.count
            count -= 1
        }
    }

    /// Least-squares slope (delay samples per microphone sample) and intercept at the first point.
    private func fit() -> (Double, Double)? {
        guard count >= 2 else { return nil }
        let t0 = times[index(0)]
        var st = 0.0, sd = 0.0, stt = 0.0, std = 0.0
        for i in 0..<count {
            let t = Double(times[index(i)] - t0)
            let d = delays[index(i)]
            st += t
            sd += d
            stt += t * t
            std += t * d
        }
        let n = Double(count)
        let denominator = n * stt - st * st
        guard denominator > 0 else { return nil }
        let slope = (n * std - st * sd) / denominator
        return (slope, (sd - slope * st) / n)
    }
}
