/// Estimates how much buffering the network needs, NetEq-style (`delay_manager` / `relative_arrival_delay_tracker`).
///
/// For every packet the *transit* is its arrival time minus its RTP timestamp (both in ms); the *relative
/// arrival delay* is that transit minus the smallest transit seen in the last `windowMilliseconds`, i.e. how much
/// later than the fastest recent packet this one came. Relative delays go into a histogram of `bucketMilliseconds`
/// buckets whose old mass is forgotten by `forgetFactor` per packet; the target is the `quantile` of that
/// histogram (computed once per packet). Rising is fast (a few late packets move the quantile at once) and falling is slow (their mass decays
/// over roughly `1 / (1 - forgetFactor)` packets), which is what keeps a buffer from chasing every dip.
///
/// The transit minimum over a sliding window (rather than over all time) lets the estimator follow delay steps
/// and sender clock drift: a path that is slower for good is, after one window, simply the new baseline.
/// Fixed storage, no allocation per packet; O(1) forgetting (a global scale), so fine buckets cost nothing per tick.
public struct DelayEstimator: Sendable {
    public struct Configuration: Sendable, Hashable {
        /// The fraction of packets that should arrive in time (0.97: NetEq uses 0.95-0.97; 0.97 measured best against
        /// speexdsp on the `JitterBenchmark` scenarios once playout moved in whole ticks).
        public var quantile: Double = 0.97
        /// Per-packet decay of the histogram's old mass: 0.998 ≈ a 500-packet (10 s at 20 ms) memory. NetEq's 0.983
        /// is per *500 ms* sample (the largest delay of each interval), a 30 s memory; per packet (1.2 s) the 97 %
        /// quantile rests on the two or three slowest packets and swings by ±10 ms under steady 30 ms jitter
        /// (σ 8 ms), and every swing is a stretch in or out: measured 15 k stretched samples a minute at 0.983
        /// against 4.5 k at 0.995–0.998, at no more delay (`voice-engine simulate --jitter 30`, seeds 1–3). The
        /// price: a rise in jitter moves the quantile only once a few percent of the memory arrived later (about
        /// 15 packets); a delay step is followed at once by the rebaseline after a long hold.
        public var forgetFactor: Double = 0.998
        /// Histogram resolution: fine, because the target is a playout delay compared with the oracle floor, and a
        /// coarse bucket edge would waste up to a bucket of delay.
        public var bucketMilliseconds: Double = 0.5
        public var bucketCount: Int = 4_000
        /// Span of the sliding transit minimum.
        public var windowMilliseconds: Double = 2_000

        public init() {}
    }

    public let configuration: Configuration
    /// The histogram, stored as `weights[i] × scale`: forgetting multiplies only `scale` (O(1) per packet instead
    /// of a pass over every bucket), and the weights are renormalised when `scale` gets small.
    private var weights: [Double]
    private var scale = 1.0
    /// Σ weights (so the total mass is `weightSum × scale`).
    private var weightSum = 0.0
    /// ``targetMilliseconds``, recomputed once per packet (it is read several times per playout tick).
    private var cachedTarget = 0.0
    private var packetsSeen = 0
    // Sliding-window minimum of transit: a monotonic deque in a fixed ring of (arrival ms, transit ms).
    private var ringArrival: [Double]
    private var ringTransit: [Double]
    private var head = 0
    private var size = 0
    /// The latest relative arrival delay (ms).
    public private(set) var lastRelativeDelayMilliseconds: Double = 0

    public init(configuration: Configuration = Configuration()) {
        precondition(configuration.bucketCount > 1 && configuration.bucketMilliseconds > 0)
        precondition((0..<1).contains(configuration.forgetFactor) && (0...1).contains(configuration.quantile))
        self.configuration = configuration
        weights = [Double](repeating: 0, count: configuration.bucketCount)
        ringArrival = [Double](repeating: 0, count: 1024)
        ringTransit = [Double](repeating: 0, count: 1024)
    }

    /// Records one packet's arrival.
    /// - Parameters:
    ///   - arrivalMilliseconds: arrival time on the receiver clock.
    ///   - timestampMilliseconds: the packet's (extended) RTP timestamp converted to ms.
    public mutating func update(arrivalMilliseconds: Double, timestampMilliseconds: Double) {
        let transit = arrivalMilliseconds - timestampMilliseconds
        let capacity = ringArrival.count
        // Drop entries that left the window, then entries no smaller than the new one (they can never be the min).
        while size > 0 && ringArrival[head] < arrivalMilliseconds - configuration.windowMilliseconds {
            head = (head + 1) % capacity
            size -= 1
        }
        while size > 0 && ringTransit[(head + size - 1) % capacity] >= transit { size -= 1 }
        if size == capacity {
            head = (head + 1) % capacity
            size -= 1
        }
        ringArrival[(head + size) % capacity] = arrivalMilliseconds
        ringTransit[(head + size) % capacity] = transit
        size += 1
        let relative = max(0, transit - ringTransit[head])
        lastRelativeDelayMilliseconds = relative

        // Learn quickly at the start (factor grows towards forgetFactor), as NetEq's start_forget_weight does.
        packetsSeen += 1
        let factor = min(configuration.forgetFactor, 1 - 1 / Double(packetsSeen + 1))
        let bucket = min(configuration.bucketCount - 1, Int(relative / configuration.bucketMilliseconds))
        scale *= factor
        if scale < 1e-200 { renormalise() }
        let added = (1 - factor) / scale
        weights[bucket] += added
        weightSum += added
        cachedTarget = quantileMilliseconds()
    }

    /// Folds `scale` back into the weights (every ~27 000 packets at the default forget factor).
    private mutating func renormalise() {
        let s = scale
        weightSum = 0
        weights.withUnsafeMutableBufferPointer { w in
            for i in w.indices {
                w[i] *= s
                weightSum += w[i]
            }
        }
        scale = 1
    }

    /// The lower edge of the bucket where the cumulative mass reaches `quantile`: a scan from 0 that stops there,
    /// so it costs the target's own size in buckets, not the histogram's.
    private func quantileMilliseconds() -> Double {
        let goal = configuration.quantile * weightSum
        return weights.withUnsafeBufferPointer { w in
            var cumulative = 0.0
            for i in w.indices {
                cumulative += w[i]
                if cumulative >= goal { return Double(i) * configuration.bucketMilliseconds }
            }
            return Double(configuration.bucketCount) * configuration.bucketMilliseconds
        }
    }

    /// The share of packets (as weighted by the histogram) whose relative delay is at most `milliseconds`, read
    /// as ``targetMilliseconds`` is (a bucket counts when its lower edge is at most `milliseconds`). 0 when
    /// `milliseconds` is negative or before any packet.
    public func fraction(atOrBelow milliseconds: Double) -> Double {
        guard milliseconds >= 0, weightSum > 0 else { return 0 }
        let last = min(configuration.bucketCount - 1, Int(milliseconds / configuration.bucketMilliseconds))
        return weights.withUnsafeBufferPointer { w in
            var cumulative = 0.0
            for i in 0...last { cumulative += w[i] }
            return min(1, cumulative / weightSum)
        }
    }

    /// The target (ms) of least ``PlayoutTargetCost`` over the histogram's bucket edges — or `current` when moving
    /// there saves less than the weights' `stretchWorthMilliseconds`. One pass over the buckets up to where no
    /// packet is late any more (two running sums: the share later than `d` and than `d − packet`); no allocation.
    /// 0 before any packet.
    public func cheapestTarget(
        _ price: PlayoutTargetCost.Weights, situation: PlayoutTargetCost.Situation, current: Double
    ) -> Double {
        guard weightSum > 0 else { return 0 }
        let bucket = configuration.bucketMilliseconds
        let shift = Int(((situation.fecPacketMilliseconds ?? 0) / bucket).rounded())
        let currentIndex = max(0, Int((current / bucket).rounded(.down)))
        let full = weightSum * (1 - 1e-12)
        return weights.withUnsafeBufferPointer { w in
            var cumulative = 0.0  // Σ w[0...i]
            var trailing = 0.0  // Σ w[0...i − shift]
            var best = 0.0
            var bestCost = Double.infinity
            var currentCost: Double?
            var i = 0
            while i < w.count {
                cumulative += w[i]
                if i >= shift { trailing += w[i - shift] }
                let d = Double(i) * bucket
                let late = max(0, 1 - cumulative / weightSum)
                let fecLate = i >= shift ? max(0, 1 - trailing / weightSum) : 1
                let j =
                    PlayoutTargetCost.cost(delay: d, late: late, fecLate: fecLate, weights: price, situation: situation)
                    + price.moveWorthMillisecondsPerTick
                    * (abs(d - current) / PlayoutTargetCost.tickMilliseconds).rounded()
                if j < bestCost {
                    bestCost = j
                    best = d
                }
                if i == currentIndex { currentCost = j }
                if cumulative >= full && (i >= shift && trailing >= full) && i >= currentIndex { break }
                i += 1
            }
            // Past the last bucket scanned nothing is late: the cost is the delay alone.
            let stay = currentCost ?? Double(currentIndex) * bucket
            return stay - bestCost >= price.stretchWorthMilliseconds ? best : Double(currentIndex) * bucket
        }
    }

    /// The delay margin (ms) above the fastest recent packet that the `quantile` of packets needs: the lower
    /// edge of the quantile bucket (so a jitter-free path needs 0). 0 before any packet.
    public var targetMilliseconds: Double { packetsSeen > 0 ? cachedTarget : 0 }

    /// The smallest transit (arrival − timestamp, ms) in the window: the reference the relative delays and the
    /// target are measured from. nil before any packet.
    public var minimumTransitMilliseconds: Double? { size > 0 ? ringTransit[head] : nil }

    /// Forgets the transit baseline but keeps the histogram: called when playout on a calm path has just been
    /// re-timed by stalling (held concealment until a late packet came), so later packets are measured against the
    /// delay the playout now has, not against the faster path before a delay step.
    public mutating func rebaseline() {
        size = 0
        head = 0
    }

    /// Forgets everything (a new stream).
    public mutating func reset() {
        for i in weights.indices { weights[i] = 0 }
        scale = 1
        weightSum = 0
        cachedTarget = 0
        packetsSeen = 0
        head = 0
        size = 0
        lastRelativeDelayMilliseconds = 0
    }
}
