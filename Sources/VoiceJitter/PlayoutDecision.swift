/// The pure decision function of the adaptive jitter buffer (NetEq's `decision_logic`): given a snapshot of the
/// buffer, what to do next. No state, no side effects, so each path is testable with a hand-built snapshot.
public enum PlayoutDecision {
    /// The packet situation at the playout position.
    public enum NextPacket: Sendable, Hashable {
        /// The packet buffer holds nothing at or after the playout position.
        case none
        /// The packet that starts exactly at the playout position is buffered.
        case due
        /// The first buffered packet starts `gapTimestamps` after the playout position.
        /// `isSequenceContiguous` is true when its sequence number directly follows the last decoded packet's —
        /// the sender sent nothing in between, so the gap is DTX, not loss. `hasFEC` says whether it carries
        /// in-band FEC, and `gapIsOneFrame` whether the gap is exactly one frame of its duration.
        case future(gapTimestamps: Int64, isSequenceContiguous: Bool, hasFEC: Bool, gapIsOneFrame: Bool)
    }

    /// Everything the decision depends on.
    public struct Input: Sendable, Hashable {
        /// Whether playout has started (the first packets have been buffered up to the target).
        public var hasStarted: Bool
        public var next: NextPacket
        /// Before playout starts: audio available (buffered packet durations plus decoded samples, ms). While
        /// playing: the controlled delay (the adaptive buffer passes its playout delay over the fastest recent
        /// packet).
        public var bufferLevelMilliseconds: Double
        /// What `bufferLevelMilliseconds` is steered to (ms): the start level, then the playout-delay target.
        public var targetLevelMilliseconds: Double
        /// The operation that produced the previous chunk.
        public var previous: PlayoutOperation
        /// True while the previous concealment ran with an empty buffer (the playout position is held, so the
        /// next packet, when it comes, is played rather than treated as late).
        public var isHolding: Bool
        /// The hysteresis band (ms): slow down below `target − slowDownBelow`, accelerate at or above
        /// `target + accelerateAbove`, play normally in between.
        public var slowDownBelowMilliseconds: Double
        public var accelerateAboveMilliseconds: Double

        public init(
            hasStarted: Bool, next: NextPacket, bufferLevelMilliseconds: Double, targetLevelMilliseconds: Double,
            previous: PlayoutOperation, isHolding: Bool = false, slowDownBelowMilliseconds: Double = 5,
            accelerateAboveMilliseconds: Double = 10
        ) {
            self.hasStarted = hasStarted
            self.next = next
            self.bufferLevelMilliseconds = bufferLevelMilliseconds
            self.targetLevelMilliseconds = targetLevelMilliseconds
            self.previous = previous
            self.isHolding = isHolding
            self.slowDownBelowMilliseconds = slowDownBelowMilliseconds
            self.accelerateAboveMilliseconds = accelerateAboveMilliseconds
        }
    }

    /// What to do next.
    public enum Action: Sendable, Hashable {
        /// Output silence; playout has not started.
        case buffer
        /// Start (or restart after a jump) at the first buffered packet.
        case start
        /// Decode the due packet.
        case normal
        /// Decode the due packet and shorten it by one 10 ms tick.
        case accelerate
        /// Decode the due packet and lengthen it by one 10 ms tick.
        case slowDown
        /// Decode the due packet, crossfading from concealment.
        case merge
        /// Conceal; `advance` says whether the playout position moves on (a frame is lost: later packets exist)
        /// or is held (nothing buffered: the packet may merely be late).
        case expand(advance: Bool)
        /// Decode the missing frame from the next packet's FEC.
        case fecRecover
        /// Comfort noise across a DTX gap (the position advances).
        case comfortNoise
        /// Give up on the frames between the position and the next packet and jump to it, crossfading.
        case jumpAndMerge
    }

    /// Lower and upper limits of the band the controlled delay is kept in: below `low` it slows down, at or
    /// above `high` it accelerates. Asymmetric (wider above) because a delay too low costs late packets while a
    /// delay too high only costs latency, and each stretch moves the delay by a whole 10 ms tick.
    public static func limits(target: Double, slowDownBelow: Double, accelerateAbove: Double) -> (
        low: Double, high: Double
    ) {
        (target - slowDownBelow, target + accelerateAbove)
    }

    /// Decides the next action.
    public static func decide(_ input: Input) -> Action {
        guard input.hasStarted else {
            if case .none = input.next { return .buffer }
            return input.bufferLevelMilliseconds >= input.targetLevelMilliseconds ? .start : .buffer
        }
        switch input.next {
        case .none:
            return .expand(advance: false)
        case .due:
            if input.previous == .expand { return .merge }
            let (low, high) = limits(
                target: input.targetLevelMilliseconds, slowDownBelow: input.slowDownBelowMilliseconds,
                accelerateAbove: input.accelerateAboveMilliseconds)
            if input.bufferLevelMilliseconds >= high { return .accelerate }
            if input.bufferLevelMilliseconds < low { return .slowDown }
            return .normal
        case .future(_, let contiguous, let hasFEC, let oneFrame):
            if contiguous { return .comfortNoise }
            if oneFrame && hasFEC { return .fecRecover }
            if input.isHolding { return .jumpAndMerge }
            return .expand(advance: true)
        }
    }
}
