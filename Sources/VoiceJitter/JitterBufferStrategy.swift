import VoiceCore

/// What a jitter buffer did to produce (part of) one 10 ms output block. Recorded per tick for tests and plots.
public enum PlayoutOperation: Sendable, Hashable, CaseIterable {
    /// Nothing to play yet (before the first packet, while building up the initial delay): silence.
    case buffering
    /// A received packet decoded as is.
    case normal
    /// A missing frame synthesised by the decoder's packet-loss concealment.
    case expand
    /// A lost frame decoded from the in-band FEC of the packet after it.
    case fecRecover
    /// The first packet after concealment, crossfaded from the concealed signal.
    case merge
    /// Decoded audio shortened by time-stretching (buffer above target, or sender clock fast).
    case accelerate
    /// Decoded audio lengthened by time-stretching (buffer below target, or sender clock slow).
    case slowDown
    /// A DTX gap (the sender stopped sending during silence): comfort noise, not loss.
    case comfortNoise
}

/// The figures a jitter buffer reports; all are plain values a caller can read at any time.
public struct JitterBufferStatistics: Sendable, Hashable {
    /// Audio received but not yet played, from the playout position to the end of the newest packet, plus
    /// decoded samples waiting to be output (ms).
    public var currentDelayMilliseconds: Double = 0
    /// The delay the buffer is steering towards (ms). For the speexdsp strategy, its own optimal-delay estimate
    /// is not exported, so this is its current delay.
    public var targetDelayMilliseconds: Double = 0
    /// How late the audio playing now is compared with the fastest recent packet (ms): the quantity the adaptive
    /// buffer steers, steadier than the buffer level, which saws up and down with every packet. nil for
    /// strategies that do not measure it, and before playout starts.
    public var playoutDelayMilliseconds: Double?
    /// The playout delay the buffer steers towards (ms): its estimate of the relative-arrival-delay quantile plus
    /// margin. nil where not measured.
    public var targetPlayoutDelayMilliseconds: Double?
    /// Sum of `currentDelayMilliseconds` over ticks since playout started (see `meanDelayMilliseconds`).
    public var delaySumMilliseconds: Double = 0
    /// Ticks that produced output after playout started.
    public var ticks: Int = 0
    /// Distinct packets inserted (duplicates excluded).
    public var packetsReceived: Int = 0
    /// Packets expected from the sequence-number range seen (highest - first + 1).
    public var packetsExpected: Int = 0
    /// Packets that arrived after their playout time: dropped because playout had passed them, or (adaptive
    /// buffer) played after playout had concealed in place waiting for them. Either way the listener heard
    /// concealment where the packet belonged, so both count, and strategies compare on equal terms.
    public var latePackets: Int = 0
    /// Copies of a packet already received (dropped).
    public var duplicatePackets: Int = 0
    /// Packets rejected as unusable (empty, oversized or undecodable payload).
    public var invalidPackets: Int = 0
    /// Samples output after playout started (per channel).
    public var playedSamples: Int = 0
    /// Of those, samples synthesised by loss concealment (expand).
    public var concealedSamples: Int = 0
    /// Of those, comfort noise / silence for DTX gaps (not loss).
    public var comfortNoiseSamples: Int = 0
    /// Lost frames played from their in-band FEC copy (the next packet's) from their start. A frame whose start
    /// concealment had already played while playout waited for that packet is not one of them: the listener heard
    /// concealment at its playout time, so its concealed samples count in ``concealedSamples`` and only the rest,
    /// played from the FEC copy, in ``fecRecoveredSamples`` (as in RFC 3611's loss after FEC, where a repair that
    /// comes after the playout time does not make the frame received; WebRTC's `concealedSamples` counts the
    /// synthesised samples either way).
    public var fecRecoveredFrames: Int = 0
    /// Samples played from in-band FEC copies. Each sample of a lost frame that the listener heard is counted
    /// either here or in ``concealedSamples``, never in both.
    public var fecRecoveredSamples: Int = 0
    /// Samples removed by accelerate (time compression).
    public var acceleratedSamples: Int = 0
    /// Samples added by slow-down (time expansion).
    public var slowedDownSamples: Int = 0
    /// Samples of late packets left out because concealment had already played in their place while playout
    /// waited for them (adaptive buffer; what speexdsp does by dropping the late packet whole).
    public var lateSkippedSamples: Int = 0
    /// Times the buffer discarded its contents to resynchronise (overflow, or far above target).
    public var flushes: Int = 0
    /// Packets discarded by flushes.
    public var flushedPackets: Int = 0
    /// Times the sender's RTP timestamps jumped to a new base while its sequence numbers ran on (each restarts
    /// playout on the new timeline; see `AdaptiveJitterBuffer`).
    public var timelineResets: Int = 0

    public init() {}

    /// Mean buffer delay over all ticks since playout started (ms).
    public var meanDelayMilliseconds: Double { ticks == 0 ? 0 : delaySumMilliseconds / Double(ticks) }
    /// Late packets ÷ packets received (packets the network lost are not late; the oracle floor uses the same
    /// denominator).
    public var lateLossRate: Double { packetsReceived == 0 ? 0 : Double(latePackets) / Double(packetsReceived) }
    /// Concealed samples ÷ played samples.
    public var concealmentRatio: Double { playedSamples == 0 ? 0 : Double(concealedSamples) / Double(playedSamples) }
}

/// A jitter buffer: packets in (payload level — RTP/SRTP parsing happens before), one 10 ms block out per tick.
///
/// Both the adaptive buffer and the speexdsp buffer implement it, so they can be compared on identical input.
/// Not thread-safe: the network side and the playout side must be serialised by the caller (the engine hands
/// packets to the playout thread through an SPSC queue).
public protocol JitterBufferStrategy: AnyObject {
    /// Output format; every tick writes `format.samplesPerBlock * format.channels` samples.
    var format: AudioFormat { get }
    /// Accepts one received packet. Duplicates, late and malformed packets are counted and dropped.
    /// - Parameters:
    ///   - payload: the codec payload (an Opus packet).
    ///   - sequenceNumber: the RTP sequence number.
    ///   - rtpTimestamp: the RTP timestamp (in `rtpClockRate` units, 48 kHz for Opus).
    ///   - arrival: when the packet arrived, on the receiver's media clock.
    func insert(payload: UnsafeBufferPointer<UInt8>, sequenceNumber: UInt16, rtpTimestamp: UInt32, arrival: MediaTime)
    /// Produces the next 10 ms block into `output` (exactly one block long).
    /// - Returns: the operation that produced (the start of) the block.
    @discardableResult
    func playoutTick(into output: UnsafeMutableBufferPointer<Int16>) -> PlayoutOperation
    /// The same, with the time the tick was scheduled for on the clock `arrival` is on: a buffer that measures
    /// its playout delay uses it instead of inferring the tick clock from arrivals (``AdaptiveJitterBuffer``).
    @discardableResult
    func playoutTick(into output: UnsafeMutableBufferPointer<Int16>, scheduledAt time: MediaTime) -> PlayoutOperation
    /// Current figures.
    var statistics: JitterBufferStatistics { get }
    /// Extended RTP timestamp of the next sample to be output, or nil before playout starts. Lets a simulation
    /// measure end-to-end delay (play time − send time) identically for every strategy.
    var playoutTimestamp: Int64? { get }
}

extension JitterBufferStrategy {
    /// A buffer with no notion of time (speexdsp counts its own ticks) ignores the tick's time.
    @discardableResult
    public func playoutTick(into output: UnsafeMutableBufferPointer<Int16>, scheduledAt time: MediaTime)
        -> PlayoutOperation
    {
        playoutTick(into: output)
    }

    /// Array convenience for `insert(payload:...)`.
    public func insert(payload: [UInt8], sequenceNumber: UInt16, rtpTimestamp: UInt32, arrival: MediaTime) {
        payload.withUnsafeBufferPointer {
            insert(payload: $0, sequenceNumber: sequenceNumber, rtpTimestamp: rtpTimestamp, arrival: arrival)
        }
    }

    /// Fills `frame` with the next block (no allocation while the frame's storage is uniquely referenced).
    @discardableResult
    public func playoutTick(into frame: inout AudioFrame) -> PlayoutOperation {
        precondition(frame.format == format, "frame format \(frame.format) differs from the buffer's \(format)")
        return frame.withUnsafeMutableSamples { playoutTick(into: $0) }
    }
}
