/// What the FEC look-ahead is decided from (``AdaptiveJitterBuffer/Configuration/FECLookAhead``): the recent
/// rate of sequence gaps, whether the stream carries FEC, and the share of packets whose FEC copy would come in
/// time without looking ahead; and, with ``AdaptiveJitterBuffer/Configuration/FECLookAhead/holdsFromCallStart``,
/// whether the look-ahead still holds from the call's start. A value, updated per packet; no storage beyond its
/// fields.
struct FECLookAheadState {
    private let settings: AdaptiveJitterBuffer.Configuration.FECLookAhead
    /// The newest sequence number seen.
    private var newestSequence: Int64?
    /// The recent rate of sequence gaps (an exponential average over packets).
    private(set) var recentGapRate = 0.0
    /// Gaps and packets spanned since the stream began, while fewer than `lossMemoryPackets`: the rate so far,
    /// which the exponential average (starting from none) only reaches after several gaps.
    private var gapsSoFar = 0.0
    private var packetsSoFar = 0.0
    /// Packets since the last one carrying FEC.
    private var packetsSinceFEC = Int.max
    /// Share of packets whose relative delay is at most the target minus one packet: those whose FEC copy is
    /// there in time without look-ahead.
    var inTimeShare = 0.0
    /// Whether the look-ahead is on.
    private(set) var isOn = false
    /// Whether the look-ahead is on because it holds from the call's first packet, not yet released by a calm
    /// window nor handed to the loss rule by a gap.
    private(set) var isHeldFromStart = false

    init(settings: AdaptiveJitterBuffer.Configuration.FECLookAhead) {
        self.settings = settings
        isHeldFromStart = settings.holdsFromCallStart && settings.minimumRecoverablePercent != nil
        isOn = isHeldFromStart
    }

    /// Takes the newest packet so far (by sequence number).
    mutating func addNewest(sequence: Int64, hasFEC: Bool) {
        // A gap (of any length: only its last frame has its FEC in the next packet) is one event over the
        // packets it spans; a reordered packet comes too late to undo it, which errs towards looking ahead.
        let missing = newestSequence.map { Double(min(max(0, sequence - $0 - 1), 50)) } ?? 0
        let gap = missing > 0 ? 1.0 : 0
        recentGapRate += (gap - recentGapRate * (missing + 1)) / settings.lossMemoryPackets
        // A loss while the look-ahead holds from the start keeps it: the loss rule takes over from its state on
        // (its hysteresis, and on a calm path the rate so far, which one gap among the first seconds' packets
        // keeps above the release threshold).
        if gap > 0 { isHeldFromStart = false }
        if packetsSoFar < settings.lossMemoryPackets {
            gapsSoFar += gap
            packetsSoFar += missing + 1
        }
        if hasFEC {
            packetsSinceFEC = 0
        } else if packetsSinceFEC < Int.max {
            packetsSinceFEC += 1
        }
        newestSequence = sequence
    }

    /// Whether a packet within the last `lossMemoryPackets` carried FEC.
    var carriesFEC: Bool { Double(packetsSinceFEC) < settings.lossMemoryPackets }

    /// Switches the look-ahead on when the frames it would save reach the minimum share, and off only when they
    /// fall below `releaseRatio` of it: each switch moves the target by a packet, which the buffer must stretch in
    /// or out, so a share hovering near the minimum (5 % loss under 30 ms jitter) must not toggle it every few
    /// seconds. On a calm path, while the memory is not yet full, the rate so far counts too: a call's first gap
    /// then switches the look-ahead on, so the next losses are recovered whole (and the first one's concealment
    /// becomes its delay, ``PlayoutOperations``), instead of being concealed until the third or fourth gap. Under
    /// jitter the FEC copy often comes in time anyway, and the average alone decides.
    ///
    /// While the look-ahead holds from the call's start, it stays on until `callMilliseconds` (the time played so
    /// far) reaches ``AdaptiveJitterBuffer/Configuration/FECLookAhead/calmReleaseMilliseconds`` without a gap, or
    /// the path is no longer calm; then the loss rule decides, which on a call without loss switches it off.
    /// Returns true when this update released the hold.
    @discardableResult
    mutating func update(calm: Bool, callMilliseconds: Double) -> Bool {
        guard let minimum = settings.minimumRecoverablePercent else { return false }
        if isHeldFromStart {
            // Under jitter the FEC copy often comes in time anyway: the loss rule decides from the start there.
            guard callMilliseconds >= settings.calmReleaseMilliseconds || !calm else { return false }
            isHeldFromStart = false
            isOn = false
            return true
        }
        let soFar = calm && packetsSoFar < settings.lossMemoryPackets ? gapsSoFar / max(packetsSoFar, 1) : 0
        let gained = max(recentGapRate, soFar) * (1 - inTimeShare) * 100
        isOn = carriesFEC && gained >= (isOn ? minimum * settings.releaseRatio : minimum)
        return false
    }
}
