import VoiceCodec
import VoiceCore
import VoiceDSP
import VoiceJitter
import VoiceRTP
import VoiceSRTP

/// Which jitter buffer a stream's receive chain uses.
public enum MediaStreamJitterBuffer: Sendable, Hashable {
    /// The NetEq-style `AdaptiveJitterBuffer` (VoiceJitter) (time-stretching, FEC recovery, merge). Its `sampleRate` is replaced
    /// by the stream's processing rate.
    case adaptive(AdaptiveJitterBuffer.Configuration = AdaptiveJitterBuffer.Configuration())
    /// The speexdsp jitter buffer (whole-frame adaptation, PLC only; allocates per packet inside speexdsp).
    case speexdsp
}

/// SRTP keys for one stream (SDES, RFC 4568): each side protects with its own key and unprotects with the peer's.
public struct MediaStreamSRTP: Sendable, Equatable {
    public var suite: SRTPCryptoSuite
    /// The key this side protects its RTP/RTCP with (the one it offered in its `a=crypto` line).
    public var localKey: SRTPMasterKey
    /// The key the peer protects with (from the peer's `a=crypto` line).
    public var remoteKey: SRTPMasterKey
    /// SRTCP's own keys when RTCP has a port and a DTLS-SRTP handshake of its own (RFC 5764 §4.1: without
    /// `a=rtcp-mux` each component keys itself); nil: RTCP is protected with the keys above.
    public var rtcp: MediaStreamSRTCPKeys?

    public init(
        suite: SRTPCryptoSuite, localKey: SRTPMasterKey, remoteKey: SRTPMasterKey, rtcp: MediaStreamSRTCPKeys? = nil
    ) {
        self.suite = suite
        self.localKey = localKey
        self.remoteKey = remoteKey
        self.rtcp = rtcp
    }
}

/// The keys of an RTCP component keyed apart from RTP (its own DTLS-SRTP association on the RTCP port).
public struct MediaStreamSRTCPKeys: Sendable, Equatable {
    public var suite: SRTPCryptoSuite
    /// The key this side protects its SRTCP with.
    public var localKey: SRTPMasterKey
    /// The key the peer protects its SRTCP with.
    public var remoteKey: SRTPMasterKey

    public init(suite: SRTPCryptoSuite, localKey: SRTPMasterKey, remoteKey: SRTPMasterKey) {
        self.suite = suite
        self.localKey = localKey
        self.remoteKey = remoteKey
    }
}

/// RTCP timing (RFC 3550 §6.2–6.3).
public struct MediaStreamRTCPSettings: Sendable, Hashable {
    /// Session bandwidth in bits per second used for the RTCP interval; nil: the Opus bitrate plus 40 bytes of
    /// IPv4/UDP/RTP header per packet.
    public var sessionBandwidth: Double?
    /// Use RFC 3550's "reduced minimum" interval (360 / kb/s seconds) instead of 5 s.
    public var useReducedMinimum: Bool
    /// The CNAME sent in SDES; nil: a random `voice-engine-xxxxxxxx` per stream.
    public var cname: String?

    public init(
        sessionBandwidth: Double? = nil, useReducedMinimum: Bool = false, cname: String? = nil
    ) {
        self.sessionBandwidth = sessionBandwidth
        self.useReducedMinimum = useReducedMinimum
        self.cname = cname
    }
}

/// How the receiver's reported loss (RTCP report blocks about our SSRC) drives the encoder's FEC.
///
/// Policy: each report's fraction lost `x` (in %) updates a smoothed loss `s ← s + smoothing·(x − s)` (the first
/// report sets `s = x`). FEC is switched on when `s > enableAbovePercent` and off again when
/// `s < disableBelowPercent` (hysteresis, so it does not flap around the threshold); while it is on the encoder's
/// expected loss is `ceil(s)` clamped to `0...maximumExpectedLossPercent`, and 0 while it is off. The bitrate
/// is not changed. With `enabled == false` the encoder keeps its configured FEC settings for the whole call.
///
/// FEC from the first packet: when the encoder starts with FEC on (the peer's fmtp asked for `useinbandfec=1`)
/// but no expected loss, Opus would spend no bits on it, so the first seconds of a lossy call — until the first
/// report — would have none. The encoder therefore starts at `initialExpectedLossPercent` and adapts from there.
///
/// Without a quality tax: Opus carves its FEC out of the bitrate, so FEC on a path that turns out clean costs the
/// primary frames of those first seconds (PESQ-WB 4.32 against 4.48 on an 11 s noisy clip without loss). Until
/// the first report the encoder therefore runs `initialFECBitrateIncreasePercent` above the configured bitrate,
/// paying for the FEC with extra bits instead; the first report puts the configured bitrate back. 60 %: on noisy
/// speech the FEC of a 5 % expected loss takes more than a quarter of the bits (25 % left 0.045 of the tax on the
/// hissy clip, 40 % 0.026, 60 % none).
public struct LossAdaptationPolicy: Sendable, Hashable {
    public var enabled: Bool
    /// Expected loss (%) the encoder starts with when FEC is on from the start and none is configured; 0: wait
    /// for the first report.
    public var initialExpectedLossPercent: Int
    /// How much (%) the bitrate is raised while FEC runs from the start at ``initialExpectedLossPercent``,
    /// until the first report; 0: FEC takes its bits from the primary frames.
    public var initialFECBitrateIncreasePercent: Int
    /// The raised start bitrate stays at or under this (the peer's `maxaveragebitrate`); nil: no limit but Opus'.
    public var startingBitrateCeiling: Int?
    public var smoothing: Double
    public var enableAbovePercent: Double
    public var disableBelowPercent: Double
    public var maximumExpectedLossPercent: Int

    public init(
        enabled: Bool = true, smoothing: Double = 0.5, enableAbovePercent: Double = 1,
        disableBelowPercent: Double = 0.5,
        maximumExpectedLossPercent: Int = 30, initialExpectedLossPercent: Int = 5,
        initialFECBitrateIncreasePercent: Int = 60, startingBitrateCeiling: Int? = nil
    ) {
        self.startingBitrateCeiling = startingBitrateCeiling
        self.enabled = enabled
        self.initialExpectedLossPercent = initialExpectedLossPercent
        self.initialFECBitrateIncreasePercent = initialFECBitrateIncreasePercent
        self.smoothing = smoothing
        self.enableAbovePercent = enableAbovePercent
        self.disableBelowPercent = disableBelowPercent
        self.maximumExpectedLossPercent = maximumExpectedLossPercent
    }

    /// What an encoder should be set to for a smoothed loss of `percent`: FEC on above ``enableAbovePercent``,
    /// off below ``disableBelowPercent`` (hysteresis: `fecOn` is the encoder's state now), and the expected loss
    /// (the loss rounded up, at most ``maximumExpectedLossPercent``; 0 with FEC off). Shared by a call's own
    /// encoder and a conference room's shared encoder.
    public func setting(forLossPercent percent: Double, fecOn: Bool) -> (fec: Bool, expectedLossPercent: Int) {
        let wantFEC = fecOn ? percent >= disableBelowPercent : percent > enableAbovePercent
        let expected = wantFEC ? min(max(Int(percent.rounded(.up)), 0), maximumExpectedLossPercent) : 0
        return (wantFEC, expected)
    }
}

/// Everything one call's audio stream is created with: codec, timing, processing, jitter buffer, SRTP and RTP
/// identities. One value, so negotiation results (SDP) and CLI flags map onto it in one place.
public struct MediaStreamConfiguration: Sendable {
    /// Opus settings. `sampleRate` is replaced by ``processingRate`` and `channels` by 1 (mono); `frameDuration`
    /// is the packet time (ptime, 20 ms by default); `inbandFEC`/`expectedLossPercent` are the starting values
    /// that ``lossAdaptation`` then steers; `dtx` as negotiated (`usedtx`).
    public var opus: OpusEncoderConfiguration
    /// The codec sent and received: Opus (``opus`` configures it) or G.722/G.711, whose rate is fixed (then
    /// ``processingRate`` must be the codec's own, and ``opus``'s `frameDuration` is still the packet time).
    public var codec: AudioCodec
    /// Rate of the whole processing chain (echo canceller, encoder, decoder, jitter buffer): 16 kHz by default.
    /// With voice processing on it must be 8, 16 or 48 kHz (what both speexdsp's canceller and Opus support).
    public var processingRate: Int
    /// The audio device's format: capture blocks handed in and playout blocks handed out are 10 ms of this.
    /// Mono only.
    public var deviceFormat: AudioFormat
    public var jitterBuffer: MediaStreamJitterBuffer
    /// SRTP keys, or nil for plain RTP.
    public var srtp: MediaStreamSRTP?
    /// Voice processing (the `voiceChat` session mode): echo cancellation, noise suppression, AGC, VAD. Off (the
    /// `default` mode) passes the microphone through unprocessed.
    public var voiceProcessing: Bool
    /// Echo canceller and preprocessor settings used when ``voiceProcessing`` is on (its rate is replaced by the
    /// processing rate).
    public var echoCanceller: EchoCancellerConfiguration
    /// Suppression of handling knocks (a device picked up or moved while the far end talks) after the canceller when
    /// ``voiceProcessing`` is on and the processing rate is one of ``TransientSuppressor/supportedSampleRates`` (its
    /// rate is replaced by the processing rate). On by default; nil turns it off.
    public var transientSuppression: TransientSuppressorConfiguration? = TransientSuppressorConfiguration()
    /// RTP payload type of Opus (dynamic, 96...127 usually; 111 as WebRTC uses by default).
    public var payloadType: UInt8
    /// Our SSRC; nil: random.
    public var ssrc: UInt32?
    /// The peer's SSRC if known from signalling; nil: latched on the first authenticated packet.
    public var remoteSSRC: UInt32?
    /// Accept RTP of any payload type (capture replay of a call whose payload type is not known); otherwise
    /// packets whose payload type differs from ``payloadType`` are dropped and counted.
    public var acceptAnyPayloadType: Bool
    /// RTP payload type of RFC 4733 telephone-events at the audio's clock rate, when the peer negotiated them; nil:
    /// DTMF is not sent in RTP and event packets are dropped as a wrong payload type.
    public var telephoneEventPayloadType: UInt8?
    /// The telephone-events' clock rate when it is not the audio's (8000 beside Opus, as baresip and Asterisk
    /// negotiate): event durations are counted in it; timestamps stay the audio's. nil: the audio's.
    public var telephoneEventClockRate: Int?
    /// Also listen for keys sent as tones in the received audio (spandsp's DTMF receiver on the decoded audio), for
    /// peers and gateways that send no telephone-events; they arrive through ``MediaStream/takeReceivedDTMF()``.
    /// Off by default: speech can rarely imitate a key, and a peer sending events and tones would be heard twice.
    public var detectsInBandDTMF = false
    public var rtcp: MediaStreamRTCPSettings
    public var lossAdaptation: LossAdaptationPolicy
    /// Largest datagram accepted (and the size of every preallocated packet buffer). 1500 by default.
    public var maximumDatagramBytes: Int
    /// Seed for SSRC, initial sequence number and timestamp, CNAME and the RTCP interval randomisation; nil: the
    /// system generator. Tests and simulations set it for reproducible runs.
    public var seed: UInt64?
    /// Media time at which the NTP wall clock read ``ntpAtZero``: SR timestamps are `ntpAtZero + now`. Only
    /// differences matter for RTT, so any value works; real calls pass the wall clock at stream start.
    public var ntpAtZero: NTPTimestamp

    public init(
        opus: OpusEncoderConfiguration = MediaStreamConfiguration.defaultOpus, codec: AudioCodec = .opus,
        processingRate: Int = 16_000,
        deviceFormat: AudioFormat = .mono48k, jitterBuffer: MediaStreamJitterBuffer = .adaptive(),
        srtp: MediaStreamSRTP? = nil, voiceProcessing: Bool = true,
        echoCanceller: EchoCancellerConfiguration = EchoCancellerConfiguration(),
        payloadType: UInt8 = 111,
        ssrc: UInt32? = nil, remoteSSRC: UInt32? = nil, acceptAnyPayloadType: Bool = false,
        rtcp: MediaStreamRTCPSettings = MediaStreamRTCPSettings(),
        lossAdaptation: LossAdaptationPolicy = LossAdaptationPolicy(),
        maximumDatagramBytes: Int = 1_500, seed: UInt64? = nil,
        ntpAtZero: NTPTimestamp = NTPTimestamp(seconds: 3_900_000_000, fraction: 0)
    ) {
        self.opus = opus
        self.codec = codec
        self.processingRate = processingRate
        self.deviceFormat = deviceFormat
        self.jitterBuffer = jitterBuffer
        self.srtp = srtp
        self.voiceProcessing = voiceProcessing
        self.echoCanceller = echoCanceller
        self.payloadType = payloadType
        self.ssrc = ssrc
        self.remoteSSRC = remoteSSRC
        self.acceptAnyPayloadType = acceptAnyPayloadType
        self.rtcp = rtcp
        self.lossAdaptation = lossAdaptation
        self.maximumDatagramBytes = maximumDatagramBytes
        self.seed = seed
        self.ntpAtZero = ntpAtZero
    }

    /// VoIP Opus, 20 ms, 32 kb/s, complexity 5, FEC off until the peer reports loss, DTX off.
    public static let defaultOpus = OpusEncoderConfiguration(
        sampleRate: 16_000, channels: 1, application: .voip, frameDuration: .ms20, bitrate: 32_000,
        complexity: 5,
        variableBitrate: true, inbandFEC: false, expectedLossPercent: 0, dtx: false)

    /// Packet time in milliseconds (the Opus frame duration).
    public var packetTimeMilliseconds: Int { opus.frameDuration.milliseconds }

    /// The Opus configuration actually used: ``opus`` at the processing rate, mono, and with FEC on but no
    /// expected loss, the policy's ``LossAdaptationPolicy/initialExpectedLossPercent`` (FEC from the first packet).
    public var effectiveOpus: OpusEncoderConfiguration {
        var o = opus
        o.sampleRate = processingRate
        o.channels = 1
        if o.inbandFEC && o.expectedLossPercent == 0 && lossAdaptation.enabled {
            o.expectedLossPercent = lossAdaptation.initialExpectedLossPercent
        }
        return o
    }

    /// What a call's encoder starts with: ``effectiveOpus``, and while FEC runs from the start at the policy's
    /// initial expected loss, a bitrate raised by ``LossAdaptationPolicy/initialFECBitrateIncreasePercent``
    /// (within Opus' range and ``LossAdaptationPolicy/startingBitrateCeiling``) until the first report puts
    /// ``opus``'s bitrate back.
    public var startingOpus: OpusEncoderConfiguration {
        var o = effectiveOpus
        let p = lossAdaptation
        if opus.inbandFEC && opus.expectedLossPercent == 0 && p.enabled && p.initialExpectedLossPercent > 0 {
            let ceiling = min(
                p.startingBitrateCeiling ?? .max, OpusEncoderConfiguration.bitrateRange.upperBound)
            o.bitrate = max(o.bitrate, min(o.bitrate + o.bitrate * p.initialFECBitrateIncreasePercent / 100, ceiling))
        }
        return o
    }

    /// Checks the combination of settings.
    /// - Throws: ``MediaStreamError/invalidConfiguration(field:reason:)`` naming the first bad field.
    public func validate() throws(MediaStreamError) {
        guard OpusRTP.isCodingRate(processingRate) else {
            throw .invalidConfiguration(
                field: "processingRate",
                reason: "\(processingRate) Hz is not an Opus rate (8, 12, 16, 24 or 48 kHz)")
        }
        if let fixed = codec.fixedSampleRate, fixed != processingRate {
            throw .invalidConfiguration(
                field: "processingRate", reason: "\(codec) codes at \(fixed) Hz, not \(processingRate) Hz")
        }
        if voiceProcessing && ![8_000, 16_000, 48_000].contains(processingRate) {
            throw .invalidConfiguration(
                field: "processingRate",
                reason: "voice processing runs at 8, 16 or 48 kHz, not \(processingRate) Hz")
        }
        guard deviceFormat.channels == 1 else {
            throw .invalidConfiguration(
                field: "deviceFormat", reason: "only mono devices are supported, got \(deviceFormat)")
        }
        guard (8_000...192_000).contains(deviceFormat.sampleRate), deviceFormat.sampleRate % 100 == 0
        else {
            throw .invalidConfiguration(
                field: "deviceFormat",
                reason:
                    "device rate \(deviceFormat.sampleRate) Hz must be 8000...192000 and a multiple of 100")
        }
        guard payloadType < 128, !(64...95).contains(payloadType) else {
            throw .invalidConfiguration(
                field: "payloadType",
                reason: "\(payloadType) must be 0...127 and outside 64...95 (RFC 5761 RTP/RTCP demux)")
        }
        try validateTelephoneEventPayloadType()
        guard (256...65_536).contains(maximumDatagramBytes) else {
            throw .invalidConfiguration(
                field: "maximumDatagramBytes", reason: "\(maximumDatagramBytes) must be 256...65536")
        }
        if let srtp {
            for (name, key) in [("srtp.localKey", srtp.localKey), ("srtp.remoteKey", srtp.remoteKey)]
            where key.count != srtp.suite.keyMaterialLength {
                throw .invalidConfiguration(
                    field: name,
                    reason: "\(key.count) bytes, \(srtp.suite) needs \(srtp.suite.keyMaterialLength)")
            }
        }
        let p = lossAdaptation
        guard p.smoothing > 0 && p.smoothing <= 1, p.disableBelowPercent <= p.enableAbovePercent,
            (0...100).contains(p.maximumExpectedLossPercent), (0...100).contains(p.initialExpectedLossPercent),
            (0...100).contains(p.initialFECBitrateIncreasePercent)
        else {
            throw .invalidConfiguration(
                field: "lossAdaptation", reason: "smoothing 0<s≤1, disable ≤ enable, max and initial 0...100")
        }
        do { try effectiveOpus.validate() } catch {
            throw .invalidConfiguration(field: "opus", reason: "\(error)")
        }
    }
}

/// Why a ``MediaStream`` could not be created. Per-packet and per-block problems are never thrown: they are
/// counted in ``MediaStreamStatistics``.
public enum MediaStreamError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalidConfiguration(field: String, reason: String)
    /// A component failed to start (the Opus encoder or decoder, the resampler, the echo canceller, libsrtp).
    case componentFailed(component: String, reason: String)

    public var description: String {
        switch self {
        case .invalidConfiguration(let field, let reason):
            "invalid media stream configuration: \(field): \(reason)"
        case .componentFailed(let component, let reason):
            "media stream \(component) failed to start: \(reason)"
        }
    }
}
