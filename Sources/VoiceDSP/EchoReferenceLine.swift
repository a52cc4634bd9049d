/// The far end as played, on its own sample timeline (sample `k` is the `k`-th written), in a fixed ring long
/// enough for the longest delay searched plus the filter's tail and some slack. The echo canceller reads its
/// reference from it at the applied delay behind the microphone, and the jump search reads whole spans.
///
/// Everything written also goes to the delay estimator when there is one (only delay alignment reads the
/// estimator's rings, so without it there is no decimation work). Storage is allocated in `init`.
final class EchoReferenceLine {
    private var ring: [Int16]
    /// Samples written since the start or the last ``reset()``: the end of the timeline.
    private(set) var written: Int64 = 0
    /// End of the last write that held far-end sound (above ``soundMeanSquare``): what was played after the reference
    /// the canceller reads at its delay, whose echo may already reach the microphone.
    private(set) var soundEnd: Int64 = 0
    /// -60 dBFS, the level from which the residual-echo suppressor takes the far end for playing.
    static let soundMeanSquare = 32768.0 * 32768.0 * 1e-6
    private let estimator: EchoDelayEstimator?

    init(capacity: Int, estimator: EchoDelayEstimator?) {
        ring = [Int16](repeating: 0, count: capacity)
        self.estimator = estimator
    }

    /// Appends played samples at the end of the timeline.
    func write(_ samples: UnsafeBufferPointer<Int16>) {
        let capacity = ring.count
        var sum = 0.0
        ring.withUnsafeMutableBufferPointer { r in
            var position = Int(written % Int64(capacity))
            for s in samples {
                r[position] = s
                sum += Double(s) * Double(s)
                position += 1
                if position == capacity { position = 0 }
            }
        }
        written += Int64(samples.count)
        if sum > Self.soundMeanSquare * Double(samples.count) { soundEnd = written }
        estimator?.addReference(samples)
    }

    /// Copies samples `index ..< index + out.count` (zero where the ring has none: before the start, overwritten,
    /// or not yet written) and returns their mean square.
    func read(from index: Int64, into out: UnsafeMutableBufferPointer<Int16>) -> Double {
        copy(from: index, into: out) { $0 }
        var sum = 0.0
        for v in out { sum += Double(v) * Double(v) }
        return sum / Double(out.count)
    }

    /// Copies samples `index ..< index + out.count` as `Float` (zero where the ring has none).
    func read(from index: Int64, into out: UnsafeMutableBufferPointer<Float>) {
        copy(from: index, into: out) { Float($0) }
    }

    private func copy<Sample>(
        from index: Int64, into out: UnsafeMutableBufferPointer<Sample>, _ convert: (Int16) -> Sample
    ) where Sample: Numeric {
        let capacity = ring.count
        let written = written
        let oldest = max(0, written - Int64(capacity))
        ring.withUnsafeBufferPointer { r in
            // One division for the block, then a wrapping ring position (`index` may be negative).
            var position = Int(index % Int64(capacity))
            if position < 0 { position += capacity }
            var k = index
            for i in 0..<out.count {
                out[i] = k >= oldest && k < written ? convert(r[position]) : 0
                k += 1
                position += 1
                if position == capacity { position = 0 }
            }
        }
    }

    /// Starts the timeline over (the ring's old samples are out of it and read as zero).
    func reset() {
        written = 0
        soundEnd = 0
    }
}
