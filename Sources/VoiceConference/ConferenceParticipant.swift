import VoiceCodec
import VoiceCore
import VoiceEngine

/// One member of a ``ConferenceRoom``: the engine's own ``MediaStream`` (SRTP, RTP statistics, jitter buffer,
/// decode/PLC/FEC on the way in; RTP, SRTP and its own encoder on the way out; RTCP beside them) plus what the
/// mixer keeps about it (level, talker state, its mix-minus limiter).
///
/// Created by ``ConferenceRoom/addParticipant(label:configuration:sink:transport:now:)``. Everything here is
/// touched only on the thread that ticks the room.
public final class ConferenceParticipant {
    // Mutable state: `@exclusivity(unchecked)`, as ConferenceRoom's (touched only on the room's thread).
    /// Unique within the process (a counter), for reports and logs.
    public let id: Int
    /// What the server calls it (the SIP URI or call ID).
    public let label: String
    /// The participant's media stream: its receive chain and its send chain.
    public let stream: MediaStream
    /// Where its datagrams arrive, when the room reads them itself each tick (nil: the server calls
    /// ``ConferenceRoom/receive(_:from:arrival:)``).
    public let transport: UDPMediaTransport?
    /// Muted participants are heard by nobody (their audio is still received, so unmuting is instant); they
    /// keep hearing the room.
    @exclusivity(unchecked) public var isMuted = false

    // Mixer state.
    let decoded: UnsafeMutableBufferPointer<Int16>
    @exclusivity(unchecked) var limiter: ConferenceLimiter
    /// Its shared-encoder group in the room (Opus listeners of one configuration); nil for a telephony codec
    /// (G.711, G.722), whose listener mix goes through its own stream's encoder: those cost next to nothing to
    /// encode, and its stream resamples between the room's rate and the codec's.
    @exclusivity(unchecked) var group: ConferenceEncoderGroup?
    /// Peak-following level (mean square) used to rank talkers.
    @exclusivity(unchecked) var level = 0.0
    @exclusivity(unchecked) var lastLevel = 0.0
    @exclusivity(unchecked) var isTalker = false
    /// Talker-selection score this tick (level, with the hysteresis bonus for current talkers).
    @exclusivity(unchecked) var score = 0.0
    /// Dormant: quiet for a while with nothing left to play, so its receive chain is ticked only when a packet
    /// arrives (DTX costs nearly nothing).
    @exclusivity(unchecked) var isDormant = false
    /// Consecutive decoded ticks below the speech threshold.
    @exclusivity(unchecked) var quietTicks = 0
    @exclusivity(unchecked) var lastAccepted = 0
    @exclusivity(unchecked) var latched: UDPEndpoint?

    // Counters (see ConferenceParticipantStatistics).
    @exclusivity(unchecked) var talkerTicks = 0
    @exclusivity(unchecked) var ownEncodedFrames = 0
    @exclusivity(unchecked) var sharedFramesSent = 0
    @exclusivity(unchecked) var dormantTicks = 0
    @exclusivity(unchecked) var decodedTicks = 0

    init(
        id: Int, label: String, stream: MediaStream, transport: UDPMediaTransport?, tickSamples: Int,
        limiter: ConferenceLimiter, group: ConferenceEncoderGroup?
    ) {
        self.id = id
        self.label = label
        self.stream = stream
        self.transport = transport
        decoded = UnsafeMutableBufferPointer<Int16>.allocate(capacity: tickSamples)
        decoded.initialize(repeating: 0)
        self.limiter = limiter
        self.group = group
    }

    deinit { decoded.deallocate() }

    /// Its figures now (copies the stream's statistics: for reports, not for every tick).
    public var statistics: ConferenceParticipantStatistics {
        let s = stream.statistics
        var p = ConferenceParticipantStatistics(id: id, label: label)
        p.isMuted = isMuted
        p.isTalking = isTalker
        p.isDormant = isDormant
        p.levelDBFS = ConferenceMixing.dBFS(meanSquare: lastLevel)
        p.packetsReceived = s.receivedPackets
        p.packetsExpected = s.expectedPackets
        p.packetsLost = max(0, s.lostPackets)
        p.playedSamples = s.jitterBuffer.playedSamples
        p.concealedSamples = s.jitterBuffer.concealedSamples
        p.fecRecoveredFrames = s.jitterBuffer.fecRecoveredFrames
        p.fecRecoveredSamples = s.jitterBuffer.fecRecoveredSamples
        p.packetsSent = s.packetsSent
        p.talkerTicks = talkerTicks
        p.ownEncodedFrames = ownEncodedFrames
        p.sharedFramesSent = sharedFramesSent
        p.dormantTicks = dormantTicks
        p.decodedTicks = decodedTicks
        p.limiterClippedSamples = limiter.clippedSamples
        p.drops = s.drops.total
        p.rtcpReceived = s.rtcpReceived
        p.roundTripMilliseconds = s.roundTripMilliseconds
        p.senderReportsAnswered = s.senderReportsAnswered
        return p
    }
}

/// One participant's figures (``ConferenceParticipant/statistics``).
public struct ConferenceParticipantStatistics: Sendable, Hashable {
    public var id: Int
    public var label: String
    public var isMuted = false
    /// Among the N loudest talkers this tick.
    public var isTalking = false
    /// Silent with nothing arriving: its receive chain is not ticked.
    public var isDormant = false
    /// Level of its last decoded tick (dBFS).
    public var levelDBFS = -120.0
    public var packetsReceived = 0
    public var packetsExpected = 0
    /// Packets the network lost (RFC 3550: expected − received).
    public var packetsLost = 0
    /// Samples its jitter buffer played, and how many of them were loss concealment.
    public var playedSamples = 0
    public var concealedSamples = 0
    /// Lost frames played from their FEC copy from their start, and the samples played from FEC copies (see
    /// `JitterBufferStatistics.fecRecoveredFrames`).
    public var fecRecoveredFrames = 0
    public var fecRecoveredSamples = 0
    /// RTP packets sent to it (its own mix-minus and the shared mix).
    public var packetsSent = 0
    /// Ticks it was one of the talkers (heard by the others).
    public var talkerTicks = 0
    /// Frames encoded by its own encoder (its mix-minus while talking; with a telephony codec also the full mix
    /// while listening).
    public var ownEncodedFrames = 0
    /// Frames of the shared mix sent to it (encoded once for all listeners of its codec configuration; a telephony
    /// codec's listener has its mix encoded by its own encoder, counted in ``ownEncodedFrames``).
    public var sharedFramesSent = 0
    /// Ticks its receive chain was skipped because it was silent and sent nothing.
    public var dormantTicks = 0
    /// Ticks its receive chain ran (jitter buffer: decode, PLC, FEC).
    public var decodedTicks = 0
    /// Samples its mix-minus limiter had to clamp (must be 0).
    public var limiterClippedSamples = 0
    /// Datagrams its stream dropped (bad SRTP, malformed, wrong SSRC …).
    public var drops = 0
    /// Authenticated RTCP compound packets from the participant, and the latest round trip they measured.
    public var rtcpReceived = 0
    public var roundTripMilliseconds: Double?
    /// Its report blocks that answer the room's sender reports: the room's RTCP reached it.
    public var senderReportsAnswered = 0

    public init(id: Int, label: String) {
        self.id = id
        self.label = label
    }

    /// Loss as a fraction of the packets expected.
    public var lossRatio: Double { packetsExpected == 0 ? 0 : Double(packetsLost) / Double(packetsExpected) }
    /// Concealed ÷ played samples.
    public var concealmentRatio: Double { playedSamples == 0 ? 0 : Double(concealedSamples) / Double(playedSamples) }
}

/// The listeners of one codec configuration: the shared mix is encoded once here and the same packet goes to
/// each of them (only the RTP header and SRTP are per listener).
final class ConferenceEncoderGroup {
    let opus: OpusEncoderConfiguration
    let encoder: OpusEncoder
    let packet: UnsafeMutableBufferPointer<UInt8>
    @exclusivity(unchecked) var limiter: ConferenceLimiter
    /// The members' loss adaptation policy (that of the participant that opened the group).
    let lossAdaptation: LossAdaptationPolicy
    @exclusivity(unchecked) var members = 0
    @exclusivity(unchecked) var encodedFrames = 0
    @exclusivity(unchecked) var encodeErrors = 0
    /// Times FEC or the expected loss of the shared encoder was changed.
    @exclusivity(unchecked) var fecAdaptations = 0

    init(opus: OpusEncoderConfiguration, lossAdaptation: LossAdaptationPolicy, limiterThreshold: Int16)
        throws(OpusError)
    {
        self.opus = opus
        self.lossAdaptation = lossAdaptation
        limiter = ConferenceLimiter(threshold: limiterThreshold)
        encoder = try OpusEncoder(configuration: opus)
        packet = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 1_500)
        packet.initialize(repeating: 0)
    }

    deinit { packet.deallocate() }

    /// Sets FEC and the expected loss for a (smoothed) listener loss of `percent`, as a call's own encoder would
    /// be set for its peer's (``LossAdaptationPolicy/setting(forLossPercent:fecOn:)``); no-op when nothing changes.
    func adapt(toLossPercent percent: Double) {
        guard lossAdaptation.enabled else { return }
        let (fec, expected) = lossAdaptation.setting(forLossPercent: percent, fecOn: encoder.configuration.inbandFEC)
        guard fec != encoder.configuration.inbandFEC || expected != encoder.configuration.expectedLossPercent else {
            return
        }
        do {
            try encoder.setInbandFEC(fec)
            try encoder.setExpectedLossPercent(expected)
            fecAdaptations += 1
        } catch {
            encodeErrors += 1
        }
    }
}
