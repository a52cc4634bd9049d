import Foundation
import VoiceCodec
import VoiceSRTP

/// Whether the audio stream must, may or must not be protected by SRTP (keys exchanged as SDES `a=crypto`).
public enum SRTPPolicy: Equatable, Sendable {
    /// Offer `RTP/SAVP` with these suites (preference order); reject a peer without a common suite.
    case required([SRTPCryptoSuite])
    /// Offer `RTP/AVP` with crypto lines (best-effort SRTP); fall back to plain RTP when the peer has none.
    case optional([SRTPCryptoSuite])
    /// Plain RTP only; a peer demanding a secure profile is rejected.
    case disabled

    var suites: [SRTPCryptoSuite] {
        switch self {
        case .required(let s), .optional(let s): s
        case .disabled: []
        }
    }
}

/// What this endpoint is able and willing to do for one audio stream; the input of ``SessionDescription/makeOffer(_:sessionID:)``
/// and ``SessionDescription/makeAnswer(to:localCapabilities:sessionID:)``.
public struct AudioCapabilities: Equatable, Sendable {
    /// The codecs we code, in our preference order: an offer lists them in this order, an answer takes the
    /// offer's first one that is here. Opus (wideband, FEC) first, then G.722 (wideband), then G.711 µ-law and
    /// A-law, which every SIP trunk, gateway and desk phone has.
    public var codecs: [AudioCodec]
    /// The default order: Opus, G.722, PCMU, PCMA.
    public static let defaultCodecs: [AudioCodec] = [.opus, .g722, .pcmu, .pcma]
    /// Dynamic payload type we offer for Opus (an answer reuses the offer's).
    public var payloadType: UInt8
    /// Address and RTP port the peer should send to (our transport's local address).
    public var address: String
    public var port: Int
    /// What we are willing to send: bitrate is our ceiling, `inbandFEC`/`dtx`/`channels == 2` say we may use
    /// them, `frameDuration` is our preferred ptime; the negotiated encoder is this with the peer's limits applied.
    public var send: OpusEncoderConfiguration
    /// What we prefer to receive, announced in our fmtp (RFC 7587 receiver parameters).
    public var receiveFEC: Bool
    public var receiveDTX: Bool
    public var receiveStereo: Bool
    public var receiveCBR: Bool
    /// Our `maxaveragebitrate`; nil for no limit.
    public var maxReceiveBitrate: Int?
    /// Our `maxplaybackrate` (the rate our playout actually uses, e.g. 16000 for wideband processing).
    public var maxPlaybackRate: Int
    /// Longest packet time we can receive (`a=maxptime`).
    public var maxptime: Int?
    public var srtp: SRTPPolicy
    public var rtcpMux: Bool
    /// Where our RTCP socket is when RTCP is not multiplexed (RFC 3605 `a=rtcp:`); nil: the RTP port + 1 (RFC 3550
    /// §11). Offers announce it even with `a=rtcp-mux`, because a peer that does not multiplex sends there.
    public var rtcpPort: Int?
    public var direction: MediaDirection
    /// Our DTLS certificate's fingerprint as `a=fingerprint` carries it ("sha-256 AB:CD:…"): when set, offers use
    /// DTLS-SRTP (RFC 5763/5764: `UDP/TLS/RTP/SAVP`, `a=setup:actpass`, no `a=crypto`) and answers accept an offer
    /// that keys that way; the handshake itself runs elsewhere (VoiceWebRTC's `DTLSSRTPAssociation`), on the
    /// media port. nil: SDES only.
    public var dtlsFingerprint: String?
    /// First payload type of RFC 4733 `telephone-event` (DTMF in RTP), offered at each audio clock rate and
    /// answered when the peer offers it; nil: not offered or answered (DTMF then goes by SIP INFO).
    public var telephoneEventPayloadType: UInt8? = 101
    /// With ``dtlsFingerprint``: offers also carry `a=crypto` lines for ``srtp``'s suites on an `RTP/SAVP` line, so
    /// a peer that only does SDES (baresip's default) answers with SDES while a DTLS-SRTP peer answers with its
    /// fingerprint. Only for encrypted signalling: the SDES keys travel in the SDP.
    public var offersSDESWithDTLS: Bool
    /// Our ICE credentials and candidates (RFC 8839): offers carry them; answers only when the offer had ICE (a peer
    /// without it gets a plain answer and media on the c=/m= address).
    public var ice: SDPICEParameters?

    public init(
        payloadType: UInt8 = 111, address: String, port: Int, send: OpusEncoderConfiguration = .init(),
        receiveFEC: Bool = true, receiveDTX: Bool = false, receiveStereo: Bool = false, receiveCBR: Bool = false,
        maxReceiveBitrate: Int? = nil, maxPlaybackRate: Int = 48_000, maxptime: Int? = 120,
        srtp: SRTPPolicy = .required([.aesCM128HmacSHA1_80, .aesCM128HmacSHA1_32]), rtcpMux: Bool = true,
        rtcpPort: Int? = nil, direction: MediaDirection = .sendrecv, dtlsFingerprint: String? = nil,
        offersSDESWithDTLS: Bool = false, ice: SDPICEParameters? = nil,
        codecs: [AudioCodec] = AudioCapabilities.defaultCodecs
    ) {
        precondition(!codecs.isEmpty, "AudioCapabilities needs at least one codec")
        self.codecs = codecs
        self.ice = ice
        self.rtcpPort = rtcpPort
        self.offersSDESWithDTLS = offersSDESWithDTLS
        precondition((96...127).contains(payloadType), "Opus needs a dynamic payload type (96…127)")
        self.dtlsFingerprint = dtlsFingerprint
        self.payloadType = payloadType
        self.address = address
        self.port = port
        self.send = send
        self.receiveFEC = receiveFEC
        self.receiveDTX = receiveDTX
        self.receiveStereo = receiveStereo
        self.receiveCBR = receiveCBR
        self.maxReceiveBitrate = maxReceiveBitrate
        self.maxPlaybackRate = maxPlaybackRate
        self.maxptime = maxptime
        self.srtp = srtp
        self.rtcpMux = rtcpMux
        self.direction = direction
    }

    /// The fmtp we announce: our receive preferences plus what we will send (sprop-*).
    var opusParameters: OpusFormatParameters {
        OpusFormatParameters(
            maxPlaybackRate: maxPlaybackRate, spropMaxCaptureRate: send.sampleRate,
            maxAverageBitrate: maxReceiveBitrate, stereo: receiveStereo, spropStereo: send.channels == 2,
            cbr: receiveCBR ? true : nil, useInbandFEC: receiveFEC, useDTX: receiveDTX)
    }

    /// Our payload types in preference order: Opus at ``payloadType``, the telephony codecs at their static ones.
    var formats: [RTPFormat] {
        codecs.map { codec in
            switch codec {
            case .opus:
                RTPFormat(
                    payloadType: payloadType, rtpmap: RTPMap(encodingName: "opus", clockRate: 48_000, channels: 2),
                    opusParameters: opusParameters)
            case .telephony(let t):
                RTPFormat(
                    payloadType: t.payloadType, rtpmap: RTPMap(encodingName: t.encodingName, clockRate: t.rtpClockRate))
            }
        }
    }

    var connection: SDPConnection {
        SDPConnection(addressType: address.contains(":") ? "IP6" : "IP4", address: address)
    }
}

/// The SRTP half of a negotiated stream: one suite, the key we protect with and the key the peer protects with.
public struct NegotiatedSRTP: Equatable, Sendable, CustomStringConvertible {
    public var suite: SRTPCryptoSuite
    /// The crypto tag both sides agreed on.
    public var tag: UInt32
    /// Our key: protects what we send (the peer's inbound session uses it).
    public var localKey: SRTPMasterKey
    /// The peer's key: unprotects what we receive.
    public var remoteKey: SRTPMasterKey

    public var description: String { "SRTP \(suite) tag \(tag) (keys redacted)" }
}

/// A stream keyed by DTLS-SRTP (RFC 5763): whom the handshake must authenticate and which side starts it. The keys
/// come from the handshake, so ``NegotiatedAudio/srtp`` is nil until the caller has run it and put them in.
public struct NegotiatedDTLS: Equatable, Sendable {
    /// The peer's `a=fingerprint` value ("sha-256 AB:CD:…"), which its certificate must match.
    public var remoteFingerprint: String
    /// Whether we are the DTLS client (`a=setup:active`, we send the ClientHello) or the server (`passive`).
    public var isClient: Bool

    public init(remoteFingerprint: String, isClient: Bool) {
        self.remoteFingerprint = remoteFingerprint
        self.isClient = isClient
    }
}

/// The outcome of offer/answer for one audio stream: everything a media stream is configured with.
public struct NegotiatedAudio: Equatable, Sendable {
    /// The codec both sides send (the first of the offer's that the answerer codes).
    public var codec: AudioCodec = .opus
    /// The codec's payload type both sides use (the offer's).
    public var payloadType: UInt8
    /// Encoder settings for our send side: our willingness limited by the peer's receive preferences (for a
    /// telephony codec only `frameDuration`, the packet time, applies).
    public var encoder: OpusEncoderConfiguration
    /// Channels to decode to: 2 only when we asked for stereo and the peer says it sends stereo.
    public var decoderChannels: Int
    /// Whether the peer asked for in-band FEC (and so whether ``encoder`` has it, if we allow it).
    public var peerWantsFEC: Bool
    /// The peer's Opus `maxaveragebitrate`, nil when it set none: our encoder never sends above it, not even
    /// while it pays for start-up FEC with extra bits.
    public var peerMaximumBitrate: Int? = nil
    /// nil for plain RTP.
    public var srtp: NegotiatedSRTP?
    public var rtcpMux: Bool
    /// Packet time we send, in ms (equals `encoder.frameDuration`).
    public var ptime: Int
    /// Where to send RTP (the peer's `c=` and `m=` port) and RTCP (same port when muxed, else the peer's
    /// `a=rtcp:` port or its RTP port + 1).
    public var remoteAddress: String
    public var remotePort: Int
    public var remoteRTCPPort: Int
    /// Our direction after negotiation.
    public var direction: MediaDirection
    /// Set when the stream is keyed by DTLS-SRTP instead of SDES: ``srtp`` is then nil and the media must not
    /// flow until the handshake has produced the keys.
    public var dtls: NegotiatedDTLS? = nil
    /// The RFC 4733 telephone-event payload type both sides agreed on; nil: the peer did not negotiate it.
    public var telephoneEventPayloadType: UInt8? = nil
    /// Its clock rate: the codec's, or 8000 beside a codec at another rate (then event durations are counted at
    /// 8 kHz while timestamps stay the audio's).
    public var telephoneEventClockRate: Int? = nil
    /// The peer's ICE credentials and candidates when both sides do ICE: connectivity checks then pick the address
    /// media flows to, instead of the c=/m= one.
    public var remoteICE: SDPICEParameters? = nil
}

/// An audio section's ICE parameters (RFC 8839 §5): `a=ice-ufrag`, `a=ice-pwd` and the `a=candidate` values.
public struct SDPICEParameters: Equatable, Sendable {
    public var ufrag: String
    public var password: String
    /// The candidates as `a=candidate:` carries them, without the `candidate:` prefix.
    public var candidates: [String]

    public init(ufrag: String, password: String, candidates: [String]) {
        self.ufrag = ufrag
        self.password = password
        self.candidates = candidates
    }

    /// The attributes (without `a=`) that carry them.
    public var attributes: [String] {
        ["ice-ufrag:" + ufrag, "ice-pwd:" + password] + candidates.map { "candidate:" + $0 }
    }
}

extension SessionDescription {
    /// An offer for one audio stream listing ``AudioCapabilities/codecs`` in order, with fresh SRTP keys (one
    /// `a=crypto` line per suite, tags 1, 2, …).
    ///
    /// Keep the returned description: ``negotiate(answer:localCapabilities:)`` needs the keys it contains.
    public static func makeOffer(_ local: AudioCapabilities, sessionID: UInt64 = .random(in: 1...(1 << 62)))
        -> SessionDescription
    {
        var crypto = local.srtp.suites.enumerated().map { index, suite in
            SDESCryptoAttribute.generate(tag: UInt32(index + 1), suite: suite)
        }
        var proto: String
        if case .required = local.srtp { proto = "RTP/SAVP" } else { proto = "RTP/AVP" }
        var dtlsAttributes: [String] = []
        if let fingerprint = local.dtlsFingerprint {
            // RFC 5763 §5: the offerer says actpass and lets the answerer pick the DTLS roles; no SDES keys unless
            // asked to offer both (then on RTP/SAVP, the profile SDES-only peers accept).
            if local.offersSDESWithDTLS, !crypto.isEmpty {
                proto = "RTP/SAVP"
            } else {
                crypto = []
                proto = "UDP/TLS/RTP/SAVP"
            }
            dtlsAttributes = ["fingerprint:" + fingerprint, "setup:actpass"]
        }
        var audio = AudioMediaDescription(
            port: local.port, transportProtocol: proto, formats: local.formats, direction: local.direction,
            ptime: local.send.frameDuration.milliseconds, maxptime: local.maxptime,
            crypto: crypto, rtcpMux: local.rtcpMux, rtcpPort: local.rtcpPort)
        audio.formats += telephoneEventFormats(for: audio.formats, local: local)
        audio.otherAttributes = dtlsAttributes + (local.ice?.attributes ?? [])
        return SessionDescription(
            origin: SDPOrigin(
                sessionID: "\(sessionID)", addressType: local.connection.addressType,
                address: local.address),
            connection: local.connection, audio: audio)
    }

    /// Answers `offer`: picks its first payload type of a codec in ``AudioCapabilities/codecs``, its first crypto line with a suite we support (with a
    /// fresh key of ours under the offer's tag), rtcp-mux if offered and wanted, and the send settings of
    /// ``NegotiatedAudio/encoder`` (see ``SessionDescription/negotiateSendSide(local:remote:opus:)``). Other media sections are rejected
    /// with port 0.
    ///
    /// - Throws: ``SDPError/noCommonCodec(offered:)``, ``SDPError/audioRejected`` (offer port 0), ``SDPError/noCommonCryptoSuite(offered:)``,
    ///   ``SDPError/srtpRequired``, ``SDPError/srtpNotSupported``, or ``SDPError/missingLine(_:)`` for no address.
    public static func makeAnswer(
        to offer: SessionDescription, localCapabilities local: AudioCapabilities,
        sessionID: UInt64 = .random(in: 1...(1 << 62))
    ) throws(SDPError) -> (answer: SessionDescription, negotiated: NegotiatedAudio) {
        let remote = offer.audio
        guard remote.port != 0 else { throw .audioRejected }
        guard let chosen = remote.formats.first(where: { $0.codec.map(local.codecs.contains) ?? false }),
            let codec = chosen.codec
        else { throw .noCommonCodec(offered: remote.formats.filter { !$0.isTelephoneEvent }.map(\.displayName)) }

        var localCrypto: SDESCryptoAttribute?
        var srtp: NegotiatedSRTP?
        let supported = local.srtp.suites
        // DTLS-SRTP (RFC 5763): a fingerprint and no crypto lines; we answer with ours and take the role the
        // offer leaves us (passive for actpass/active, so the offerer sends the ClientHello).
        var dtls: NegotiatedDTLS?
        var dtlsAttributes: [String] = []
        // An offer with both a fingerprint and a=crypto lines is answered with DTLS-SRTP: its keys never travel.
        if let ours = local.dtlsFingerprint, let theirs = offer.dtlsAttribute("fingerprint") {
            let setup = offer.dtlsAttribute("setup")?.lowercased() ?? "active"  // RFC 4145 §4: active when absent
            guard ["actpass", "active", "passive"].contains(setup) else { throw .unsupportedDTLSSetup(setup) }
            dtls = NegotiatedDTLS(remoteFingerprint: theirs, isClient: setup == "passive")
            dtlsAttributes = ["fingerprint:" + ours, "setup:" + (setup == "passive" ? "active" : "passive")]
        }
        if dtls == nil, local.dtlsFingerprint != nil, supported.isEmpty,
            !remote.crypto.isEmpty || !remote.unsupportedCrypto.isEmpty
        {
            throw .sdesRefused
        }
        if dtls == nil, !remote.crypto.isEmpty || !remote.unsupportedCrypto.isEmpty, !supported.isEmpty {
            // The offerer lists lines in its preference order; take the first we support. Lines with several keys,
            // MKIs or session parameters (KDR, UNENCRYPTED_SRTP…) are not supported by our sessions: skip them.
            let chosen = remote.crypto.first(where: {
                supported.contains($0.suite) && $0.keys.count == 1 && $0.keys[0].mki == nil
                    && $0.sessionParameters.isEmpty
            })
            if let chosen {
                let mine = SDESCryptoAttribute.generate(tag: chosen.tag, suite: chosen.suite)
                localCrypto = mine
                srtp = NegotiatedSRTP(suite: chosen.suite, tag: chosen.tag, localKey: mine.key, remoteKey: chosen.key)
            } else if case .required = local.srtp {
                throw .noCommonCryptoSuite(
                    offered: remote.crypto.map(\.suite.rawValue) + remote.unsupportedCrypto.map(Self.suiteName))
            } else if remote.isSecureProfile {
                throw .noCommonCryptoSuite(
                    offered: remote.crypto.map(\.suite.rawValue) + remote.unsupportedCrypto.map(Self.suiteName))
            }
        }
        if srtp == nil, dtls == nil {
            if case .required = local.srtp { throw .srtpRequired }
            if remote.isSecureProfile { throw .srtpNotSupported }
        }

        let rtcpMux = remote.rtcpMux && local.rtcpMux
        let direction = MediaDirection(
            sends: remote.direction.receives && local.direction.sends,
            receives: remote.direction.sends && local.direction.receives)
        let encoder = negotiateSendSide(local: local, remote: remote, format: chosen)
        var answerFormat = local.formats.first(where: { $0.codec == codec })!
        answerFormat.payloadType = chosen.payloadType

        var answerAudio = AudioMediaDescription(
            port: local.port, transportProtocol: remote.transportProtocol, formats: [answerFormat],
            direction: direction, ptime: local.send.frameDuration.milliseconds, maxptime: local.maxptime,
            crypto: localCrypto.map { [$0] } ?? [], rtcpMux: rtcpMux, rtcpPort: rtcpMux ? nil : local.rtcpPort)
        let answeredEvent =
            local.telephoneEventPayloadType == nil
            ? nil : remote.telephoneEventMatching(clockRate: chosen.rtpmap?.clockRate ?? codec.rtpClockRate)
        if let answeredEvent {
            answerAudio.formats.append(
                telephoneEvent(payloadType: answeredEvent.payloadType, clockRate: answeredEvent.clockRate))
        }
        let remoteICE = offer.iceParameters
        answerAudio.otherAttributes = dtlsAttributes + (remoteICE == nil ? [] : local.ice?.attributes ?? [])
        let answer = SessionDescription(
            origin: SDPOrigin(
                sessionID: "\(sessionID)", addressType: local.connection.addressType,
                address: local.address),
            connection: local.connection, audio: answerAudio, audioIndex: offer.audioIndex,
            otherMedia: offer.otherMedia.map {
                var m = $0
                m.port = 0
                return m
            })
        var negotiated = try makeNegotiated(
            remoteDescription: offer, local: local, format: chosen, encoder: encoder, srtp: srtp,
            rtcpMux: rtcpMux, direction: direction)
        negotiated.dtls = dtls
        negotiated.telephoneEventPayloadType = answeredEvent?.payloadType
        negotiated.telephoneEventClockRate = answeredEvent?.clockRate
        negotiated.remoteICE = local.ice == nil ? nil : remoteICE
        return (answer, negotiated)
    }

    /// The offerer's side: combines our `self` offer with the peer's `answer`.
    ///
    /// - Throws: ``SDPError/answerDoesNotMatchOffer(_:)`` when the answer's crypto tag or suite was not offered, or
    ///   its codec's payload type was not offered; ``SDPError/srtpRequired`` when we required SRTP and it has none;
    ///   ``SDPError/audioRejected``, ``SDPError/noCommonCodec(offered:)``.
    public func negotiate(answer: SessionDescription, localCapabilities local: AudioCapabilities) throws(SDPError)
        -> NegotiatedAudio
    {
        let remote = answer.audio
        guard remote.port != 0 else { throw .audioRejected }
        guard let chosen = remote.formats.first(where: { $0.codec.map(local.codecs.contains) ?? false }),
            let codec = chosen.codec
        else { throw .noCommonCodec(offered: remote.formats.filter { !$0.isTelephoneEvent }.map(\.displayName)) }
        guard audio.formats.contains(where: { $0.payloadType == chosen.payloadType && $0.codec == codec }) else {
            throw .answerDoesNotMatchOffer("\(codec) payload type \(chosen.payloadType) was not offered")
        }
        var srtp: NegotiatedSRTP?
        var dtls: NegotiatedDTLS?
        if local.dtlsFingerprint != nil, audio.crypto.isEmpty || remote.crypto.isEmpty {
            // We offered DTLS-SRTP (actpass), maybe with SDES: the answer without a=crypto names its fingerprint
            // and the role it took.
            guard let theirs = answer.dtlsAttribute("fingerprint") else {
                throw .answerDoesNotMatchOffer("DTLS-SRTP was offered and the answer has no a=fingerprint")
            }
            let setup = answer.dtlsAttribute("setup")?.lowercased() ?? "active"
            guard setup == "active" || setup == "passive" else { throw .unsupportedDTLSSetup(setup) }
            dtls = NegotiatedDTLS(remoteFingerprint: theirs, isClient: setup == "passive")
        } else if let theirs = remote.crypto.first {
            guard let ours = audio.crypto.first(where: { $0.tag == theirs.tag }) else {
                throw .answerDoesNotMatchOffer("crypto tag \(theirs.tag) was not offered")
            }
            guard ours.suite == theirs.suite else {
                throw .answerDoesNotMatchOffer(
                    "crypto tag \(theirs.tag) offered \(ours.suite), answered \(theirs.suite)")
            }
            srtp = NegotiatedSRTP(suite: ours.suite, tag: ours.tag, localKey: ours.key, remoteKey: theirs.key)
        } else if case .required = local.srtp {
            throw .srtpRequired
        }
        let rtcpMux = remote.rtcpMux && audio.rtcpMux
        let direction = MediaDirection(
            sends: remote.direction.receives && audio.direction.sends,
            receives: remote.direction.sends && audio.direction.receives)
        let encoder = Self.negotiateSendSide(local: local, remote: remote, format: chosen)
        var negotiated = try Self.makeNegotiated(
            remoteDescription: answer, local: local, format: chosen, encoder: encoder, srtp: srtp,
            rtcpMux: rtcpMux, direction: direction)
        negotiated.dtls = dtls
        // The answer's telephone-event (at the codec's clock rate, else 8000), if we offered that type at that rate.
        if let event = remote.telephoneEventMatching(clockRate: chosen.rtpmap?.clockRate ?? codec.rtpClockRate),
            audio.telephoneEventPayloadType(clockRate: event.clockRate) == event.payloadType
        {
            negotiated.telephoneEventPayloadType = event.payloadType
            negotiated.telephoneEventClockRate = event.clockRate
        }
        negotiated.remoteICE = local.ice == nil ? nil : answer.iceParameters
        return negotiated
    }

    /// The ICE parameters of the audio section (credentials there or at session level, RFC 8839 §5.4); nil without
    /// both credentials.
    var iceParameters: SDPICEParameters? {
        guard let ufrag = dtlsAttribute("ice-ufrag"), let password = dtlsAttribute("ice-pwd") else { return nil }
        let candidates = audio.otherAttributes.compactMap { attribute in
            attribute.lowercased().hasPrefix("candidate:") ? String(attribute.dropFirst("candidate:".count)) : nil
        }
        return SDPICEParameters(ufrag: ufrag, password: password, candidates: candidates)
    }

    /// A DTLS or ICE attribute's value (`fingerprint`, `setup`, `ice-ufrag`, `ice-pwd`) from the audio section, else from the session level
    /// (baresip puts both there; RFC 8122 §5 allows either).
    func dtlsAttribute(_ name: String) -> String? {
        let prefix = name + ":"
        for attribute in audio.otherAttributes + sessionAttributes where attribute.lowercased().hasPrefix(prefix) {
            return attribute.dropFirst(prefix.count).trimmingCharacters(in: .whitespaces)
        }
        return nil
    }

    /// Our encoder settings given the peer's description (RFC 7587 §7.1: the peer's fmtp states what it wants to
    /// receive, so it bounds what we send):
    /// - FEC only when we allow it **and** the peer's `useinbandfec=1`; DTX likewise with `usedtx=1`;
    /// - stereo only when we allow it **and** the peer's `stereo=1`;
    /// - bitrate = min(our ceiling, the peer's `maxaveragebitrate`), within Opus' 6–510 kb/s;
    /// - CBR when the peer's `cbr=1`;
    /// - sample rate lowered to the highest Opus rate ≤ the peer's `maxplaybackrate` (no point coding more);
    /// - packet time = the peer's `a=ptime` (or fmtp `ptime`) if Opus can produce it, else ours; then capped by the
    ///   peer's `a=maxptime` and raised to its `minptime`.
    ///
    /// For a telephony codec only the packet time applies (from `a=ptime`/`a=maxptime`): no FEC, DTX or stereo.
    public static func negotiateSendSide(
        local: AudioCapabilities, remote: AudioMediaDescription, format: RTPFormat
    ) -> OpusEncoderConfiguration {
        var params = format.opusParameters ?? OpusFormatParameters()
        if format.codec != .opus {
            params = OpusFormatParameters(useInbandFEC: false, useDTX: false)
        }
        var encoder = local.send
        encoder.inbandFEC = local.send.inbandFEC && params.effectiveUseInbandFEC
        encoder.dtx = local.send.dtx && params.effectiveUseDTX
        encoder.channels = local.send.channels == 2 && params.effectiveStereo ? 2 : 1
        var bitrate = local.send.bitrate
        if let peerMax = params.maxAverageBitrate { bitrate = min(bitrate, peerMax) }
        encoder.bitrate = min(
            max(bitrate, OpusEncoderConfiguration.bitrateRange.lowerBound),
            OpusEncoderConfiguration.bitrateRange.upperBound)
        if params.effectiveCBR { encoder.variableBitrate = false }
        let playback = params.effectiveMaxPlaybackRate
        let rateCap = OpusEncoderConfiguration.supportedSampleRates.last(where: { $0 <= playback }) ?? 8_000
        encoder.sampleRate = min(local.send.sampleRate, rateCap)

        let durations = OpusFrameDuration.allCases.map(\.milliseconds)
        var ptime = local.send.frameDuration.milliseconds
        if let wanted = remote.ptime ?? params.ptime, durations.contains(wanted) { ptime = wanted }
        if let maxptime = remote.maxptime, ptime > maxptime {
            ptime = durations.last(where: { $0 <= maxptime }) ?? durations[0]
        }
        if let minptime = params.minptime, ptime < minptime {
            ptime = durations.first(where: { $0 >= minptime }) ?? ptime
        }
        encoder.frameDuration = OpusFrameDuration(rawValue: ptime) ?? local.send.frameDuration
        return encoder
    }

    private static func makeNegotiated(
        remoteDescription: SessionDescription, local: AudioCapabilities, format: RTPFormat,
        encoder: OpusEncoderConfiguration, srtp: NegotiatedSRTP?, rtcpMux: Bool, direction: MediaDirection
    ) throws(SDPError) -> NegotiatedAudio {
        guard let connection = remoteDescription.audioConnection else { throw .missingLine("c=") }
        let remote = remoteDescription.audio
        let codec = format.codec ?? .opus
        let params = format.opusParameters ?? OpusFormatParameters()
        var negotiated = NegotiatedAudio(
            codec: codec, payloadType: format.payloadType, encoder: encoder,
            decoderChannels: codec == .opus && local.receiveStereo && params.effectiveSpropStereo ? 2 : 1,
            peerWantsFEC: codec == .opus && params.effectiveUseInbandFEC, srtp: srtp, rtcpMux: rtcpMux,
            ptime: encoder.frameDuration.milliseconds, remoteAddress: connection.address, remotePort: remote.port,
            remoteRTCPPort: rtcpMux ? remote.port : (remote.rtcpPort ?? remote.port + 1), direction: direction)
        negotiated.peerMaximumBitrate = codec == .opus ? params.maxAverageBitrate : nil
        return negotiated
    }

    private static func suiteName(_ unsupportedLine: String) -> String {
        let fields = unsupportedLine.split(separator: " ")
        return fields.count > 1 ? String(fields[1]) : unsupportedLine
    }
}
