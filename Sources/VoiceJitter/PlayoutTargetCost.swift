/// The playout-delay target as the cheapest point of one explicit cost: what a listener
/// pays for a target delay `d` above the fastest recent packet, in milliseconds of delay,
///
///     J(d) = d + lateWorth · 100 · late(d) + unrecoveredWorth · 100 · lossShare · late(d − packet)
///
/// - `d`: the delay itself (every frame is heard that much later);
/// - `late(d)`: the share of packets whose relative arrival delay exceeds `d` (from the ``DelayEstimator``'s
///   histogram) — each one a late packet, a short concealment while playout holds for it;
/// - `lossShare · late(d − packet)`: the frames the network lost whose FEC copy, in the next packet, comes too
///   late to replace them (the next packet must be there one packet before its own deadline) — each one a whole
///   frame of Opus PLC instead of its FEC. Only while the stream carries FEC;
/// - and the stretching a move costs: the target moves away from where it is only when that saves at least
///   `stretchWorth` (each move is a time-stretch, or a late packet, that a listener hears).
///
/// One weight per kind of damage, in ms of delay a percent of it is worth, so the trade-offs that were scattered
/// thresholds (a fixed quantile, a minimum FEC gain for the look-ahead, a look-ahead size per path) are one
/// function. On a path without jitter it keeps the look-ahead of a packet when `lossShare · unrecoveredWorth ·
/// 100 ≥ packet`; under steady jitter it lands where the density of late packets falls to
/// `1 / (100 · lateWorth)` per ms, a quantile that follows the shape of the delay distribution rather than a fixed
/// one. Pure and allocation-free: ``DelayEstimator/cheapestTarget(_:situation:current:)`` evaluates it over the
/// histogram once per packet.
public enum PlayoutTargetCost {
    /// What each kind of damage is worth, in ms of delay per percent of packets or frames.
    public struct Weights: Sendable, Hashable {
        /// One percent of packets arriving after their playout time (a short hold and concealment each).
        public var lateWorthMilliseconds: Double
        /// One percent of frames lost and not recovered from FEC (a whole frame of PLC each).
        public var unrecoveredWorthMilliseconds: Double
        /// The least saving (ms) that pays for moving the target (a stretch or a late packet a listener hears).
        public var stretchWorthMilliseconds: Double

        /// What each tick (10 ms) the target moves away from where it is costs (ms): playout moves in whole ticks,
        /// each a stretch a listener hears, so a target that jumps three ticks on a spike and back pays six times.
        /// 0: only `stretchWorthMilliseconds` guards a move. Measured with ``recommended`` and the 5 ms band under
        /// 30 ms jitter (`voice-engine simulate --jitter 30`, seeds 1–3, 65 s of speech): 2 and 4 ms a tick both
        /// PESQ-WB 4.24 at 168.8 / 168.7 ms one-way; with late packets worth 4 ms, 2 ms a tick 4.13 at 165.0 ms —
        /// no point below 165 ms reaches speexdsp's 4.19 (Benchmarks/README.md section 7).
        public var moveWorthMillisecondsPerTick: Double

        public init(
            lateWorthMilliseconds: Double, unrecoveredWorthMilliseconds: Double, stretchWorthMilliseconds: Double,
            moveWorthMillisecondsPerTick: Double = 0
        ) {
            self.lateWorthMilliseconds = lateWorthMilliseconds
            self.unrecoveredWorthMilliseconds = unrecoveredWorthMilliseconds
            self.stretchWorthMilliseconds = stretchWorthMilliseconds
            self.moveWorthMillisecondsPerTick = moveWorthMillisecondsPerTick
        }
    }

    /// The weights measured under 30 ms jitter (see ``AdaptiveJitterBuffer/Configuration/Target/cost``): a percent
    /// of late packets worth 6 ms, of frames not recovered from FEC 20 ms, a move 2 ms. Use with
    /// `stretching.jitteryExtraAccelerateMilliseconds = 5`.
    public static let recommended = Weights(
        lateWorthMilliseconds: 6, unrecoveredWorthMilliseconds: 20, stretchWorthMilliseconds: 2)

    /// The playout grid (ms): the target moves playout in steps of this.
    public static let tickMilliseconds = 10.0

    /// What the stream is doing now.
    public struct Situation: Sendable, Hashable {
        /// Recent share of frames the network lost (0...1).
        public var lossShare: Double
        /// The packet duration (ms) when the stream carries FEC (its copy of a lost frame rides in the next
        /// packet), nil when it carries none: then a lost frame is concealed whatever the delay.
        public var fecPacketMilliseconds: Double?

        public init(lossShare: Double, fecPacketMilliseconds: Double?) {
            self.lossShare = lossShare
            self.fecPacketMilliseconds = fecPacketMilliseconds
        }
    }

    /// J(d) for a target `delay` (ms), given `late` = the share of packets later than `delay` and `fecLate` = the
    /// share later than `delay − packet` (1 when that is negative).
    @inline(__always)
    public static func cost(
        delay: Double, late: Double, fecLate: Double, weights: Weights, situation: Situation
    ) -> Double {
        var j = delay + weights.lateWorthMilliseconds * 100 * late
        if situation.fecPacketMilliseconds != nil {
            j += weights.unrecoveredWorthMilliseconds * 100 * situation.lossShare * fecLate
        }
        return j
    }
}
