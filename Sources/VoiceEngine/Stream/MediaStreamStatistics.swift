import VoiceJitter

/// Received datagrams the stream dropped, by reason. Every datagram handed to
/// ``MediaStream/receiveDatagram(_:arrival:)-(UnsafeRawBufferPointer,_)`` is either processed or counted in exactly one of these.
public struct MediaStreamDrops: Sendable, Hashable, Codable {
    /// Empty datagrams.
    public var empty = 0
    /// Larger than ``MediaStreamConfiguration/maximumDatagramBytes``.
    public var tooLarge = 0
    /// Neither RTP nor RTCP (version not 2, or too short for either header).
    public var notRTP = 0
    /// RTP that fails to parse (truncated header, CSRC/extension/padding overrun), before or after SRTP.
    public var malformedRTP = 0
    /// RTCP that fails compound validation or parsing.
    public var malformedRTCP = 0
    /// SRTP packets whose authentication tag did not verify (wrong key, tampering).
    public var authenticationFailed = 0
    /// SRTP packets rejected by the replay window (a replay, or too old).
    public var replayed = 0
    /// SRTCP packets that failed authentication or the replay check.
    public var rtcpAuthenticationFailed = 0
    /// RTP from an SSRC other than the peer's.
    public var unknownSSRC = 0
    /// RTP with a payload type other than the negotiated one.
    public var wrongPayloadType = 0
    /// RTP the RFC 3550 sequence validation rejected (a huge jump not yet confirmed).
    public var badSequence = 0
    /// RFC 4733 telephone-event packets too short to hold an event.
    public var malformedTelephoneEvent = 0

    public init() {}

    /// All drops.
    public var total: Int {
        empty + tooLarge + notRTP + malformedRTP + malformedRTCP + authenticationFailed + replayed
            + rtcpAuthenticationFailed + unknownSSRC + wrongPayloadType + badSequence + malformedTelephoneEvent
    }
}

/// A stream's live figures: a plain value, cheap to read from the thread that drives the stream.
public struct MediaStreamStatistics: Sendable {
    // Send side.
    /// RTP packets and their bytes on the wire (after SRTP) handed to the sink.
    public var packetsSent = 0
    public var bytesSent = 0
    /// Frames not sent: DTX (silence) and hold.
    public var framesSuppressed = 0
    /// DTMF: RFC 4733 packets sent in place of audio frames, digits whose events were sent and digits received
    /// (each once, whatever the retransmissions).
    public var telephoneEventPacketsSent = 0
    public var dtmfDigitsSent = 0
    public var dtmfDigitsReceived = 0
    /// Of ``dtmfDigitsReceived``, those heard as tones in the audio
    /// (``MediaStreamConfiguration/detectsInBandDTMF``).
    public var inBandDTMFDigitsReceived = 0
    public var rtcpSent = 0
    public var rtcpBytesSent = 0

    // Receive side.
    /// RTP packets accepted into the receive chain (after SRTP and validation) and their bytes on the wire.
    public var packetsReceived = 0
    public var bytesReceived = 0
    public var rtcpReceived = 0
    /// Report blocks about our stream that answer one of our sender reports (LSR set): the peer received our RTCP.
    /// Counted even when the round trip comes out negative (a peer's DLSR rounded up on a sub-millisecond path).
    public var senderReportsAnswered = 0
    /// The peer sent an authenticated RTCP BYE for its stream (RFC 3550 §6.6): it has left, so a live call can
    /// end at once as a remote hang-up instead of waiting for a media timeout.
    public var remoteSentBye = false
    /// Drops by reason.
    public var drops = MediaStreamDrops()
    /// RFC 3550 A.3 figures of the peer's stream: expected, received (duplicates included, as RFC 3550 counts them)
    /// and cumulative lost = expected − received.
    public var expectedPackets = 0
    public var receivedPackets = 0
    public var lostPackets = 0
    public var duplicatePackets = 0
    /// Loss runs seen in sequence numbers (a gap of n consecutive packets is one run of length n), for burstiness.
    public var lossRuns = 0
    /// RFC 3550 interarrival jitter of the peer's stream, in milliseconds.
    public var jitterMilliseconds = 0.0
    /// The jitter buffer's figures (delay, target, concealment, FEC recoveries, late packets).
    public var jitterBuffer = JitterBufferStatistics()

    // From the peer's reports about us.
    /// Last fraction lost the peer reported (0...1), and the smoothed loss driving FEC (in %).
    public var remoteFractionLost: Double?
    public var remoteCumulativeLost: Int?
    public var remoteJitterMilliseconds: Double?
    public var smoothedRemoteLossPercent = 0.0
    /// Round-trip time from the last report block with LSR/DLSR, and its min/mean/max over the call.
    public var roundTripMilliseconds: Double?
    public var roundTripSamples = 0
    public var roundTripSumMilliseconds = 0.0
    public var roundTripMinMilliseconds = Double.infinity
    public var roundTripMaxMilliseconds = 0.0

    // Encoder state.
    public var encoderFECEnabled = false
    public var encoderExpectedLossPercent = 0
    /// Times loss feedback changed the encoder's FEC settings.
    public var fecAdaptations = 0

    // Voice processing.
    /// Echo-return-loss enhancement estimate in dB: 10·log10(Σ mic² / Σ out²) over capture blocks where the far
    /// end (what this side played) was active. Double talk lowers it; nil without voice processing or far-end audio.
    public var erleDecibels: Double?
    /// Capture blocks the voice-activity detector marked as speech.
    public var voiceActiveBlocks = 0
    public var captureBlocks = 0
    public var playoutBlocks = 0

    /// Errors from components that should never fail once running (encoder, canceller, resampler), counted
    /// rather than thrown on the audio path.
    public var processingErrors = 0

    public var muted = false
    public var onHold = false

    public init() {}

    /// Mean RTT over the call, or nil before the first measurement.
    public var meanRoundTripMilliseconds: Double? {
        roundTripSamples == 0 ? nil : roundTripSumMilliseconds / Double(roundTripSamples)
    }

    /// Network loss of the peer's stream, 0...1.
    public var lossRate: Double {
        expectedPackets == 0 ? 0 : Double(max(lostPackets, 0)) / Double(expectedPackets)
    }
}
