import Testing
import VoiceEngine

/// Offer/answer of DTLS-SRTP keying (RFC 5763 §5, RFC 5764, RFC 4145 a=setup): a fingerprint and a role instead of
/// SDES keys. The offer below is baresip 1.0's (`mediaenc=dtls_srtp`, `rtcp_mux yes`), captured on loopback: it puts
/// `a=setup` and `a=fingerprint` at session level, with the hash name in capitals.
@Suite struct SDPDTLSNegotiationTests {
    static let ours =
        "sha-256 0A:1B:2C:3D:4E:5F:60:71:82:93:A4:B5:C6:D7:E8:F9:0A:1B:2C:3D:4E:5F:60:71:82:93:A4:B5:C6:D7:E8:F9"
    static let baresipFingerprint =
        "SHA-256 E5:28:A5:21:B8:2E:A0:21:D6:96:54:8E:0D:62:E6:C4:DD:4E:29:E5:9B:B6:4B:7F:B5:A2:4C:D6:3E:D0:8A:FC"

    static func baresipOffer(setup: String = "actpass") -> String {
        [
            "v=0", "o=- 3097081120 32289454 IN IP4 127.0.0.1", "s=-", "c=IN IP4 127.0.0.1", "t=0 0",
            "a=tool:baresip 1.0.0", "a=setup:\(setup)", "a=fingerprint:\(baresipFingerprint)",
            "m=audio 39162 UDP/TLS/RTP/SAVPF 96 101", "a=rtpmap:96 opus/48000/2",
            "a=fmtp:96 stereo=1;sprop-stereo=1;maxaveragebitrate=32000", "a=rtpmap:101 telephone-event/8000",
            "a=fmtp:101 0-15", "a=sendrecv", "a=label:1", "a=rtcp-rsize",
            "a=ssrc:152914390 cname:sip:b@127.0.0.1:28300",
            "a=rtcp-mux", "a=minptime:20", "a=ptime:20", ""
        ].joined(separator: "\r\n")
    }

    static func caps(dtls: String? = ours, port: Int = 40000) -> AudioCapabilities {
        AudioCapabilities(
            address: "127.0.0.1", port: port, srtp: .required([.aesCM128HmacSHA1_80]), dtlsFingerprint: dtls)
    }

    @Test func baresipsOfferIsAnsweredPassiveWithOurFingerprintAndNoSDESKeys() throws {
        let offer = try SessionDescription(parsing: Self.baresipOffer())
        let (answer, negotiated) = try SessionDescription.makeAnswer(to: offer, localCapabilities: Self.caps())
        #expect(negotiated.dtls == NegotiatedDTLS(remoteFingerprint: Self.baresipFingerprint, isClient: false))
        #expect(negotiated.srtp == nil)
        #expect(negotiated.rtcpMux && negotiated.remotePort == 39162)
        let text = answer.serialize()
        #expect(text.contains("m=audio 40000 UDP/TLS/RTP/SAVPF 96"))
        #expect(text.contains("a=fingerprint:\(Self.ours)\r\n") && text.contains("a=setup:passive\r\n"))
        #expect(!text.contains("a=crypto"))
    }

    @Test func setupDecidesWhoSendsTheClientHello() throws {
        let passive = try SessionDescription(parsing: Self.baresipOffer(setup: "passive"))
        let (answer, negotiated) = try SessionDescription.makeAnswer(to: passive, localCapabilities: Self.caps())
        #expect(negotiated.dtls?.isClient == true)
        #expect(answer.serialize().contains("a=setup:active\r\n"))
        let active = try SessionDescription(parsing: Self.baresipOffer(setup: "active"))
        #expect(
            try SessionDescription.makeAnswer(to: active, localCapabilities: Self.caps()).negotiated.dtls?.isClient
                == false)
        let holdconn = try SessionDescription(parsing: Self.baresipOffer(setup: "holdconn"))
        #expect(throws: SDPError.unsupportedDTLSSetup("holdconn")) {
            try SessionDescription.makeAnswer(to: holdconn, localCapabilities: Self.caps())
        }
    }

    @Test func withoutAFingerprintOfOursADTLSOfferIsRefusedAsBefore() throws {
        let offer = try SessionDescription(parsing: Self.baresipOffer())
        #expect(throws: SDPError.srtpRequired) {
            try SessionDescription.makeAnswer(to: offer, localCapabilities: Self.caps(dtls: nil))
        }
    }

    @Test func ourDTLSOfferIsActpassAndTheAnswerMakesUsTheClient() throws {
        let offerer = Self.caps(dtls: Self.ours)
        let offer = SessionDescription.makeOffer(offerer)
        let text = offer.serialize()
        #expect(text.contains("UDP/TLS/RTP/SAVP 111") && text.contains("a=setup:actpass") && !text.contains("a=crypto"))
        let theirs = "sha-256 " + Array(repeating: "AA", count: 32).joined(separator: ":")
        let (answer, answered) = try SessionDescription.makeAnswer(
            to: try SessionDescription(parsing: text), localCapabilities: Self.caps(dtls: theirs, port: 50000))
        #expect(answered.dtls == NegotiatedDTLS(remoteFingerprint: Self.ours, isClient: false))
        let negotiated = try offer.negotiate(
            answer: try SessionDescription(parsing: answer.serialize()), localCapabilities: offerer)
        #expect(negotiated.dtls == NegotiatedDTLS(remoteFingerprint: theirs, isClient: true))
        #expect(negotiated.srtp == nil && negotiated.remotePort == 50000)
    }

    @Test func anSDESOfferIsStillAnsweredWithSDESByADTLSCapableAnswerer() throws {
        let offer = SessionDescription.makeOffer(Self.caps(dtls: nil))
        let (answer, negotiated) = try SessionDescription.makeAnswer(
            to: try SessionDescription(parsing: offer.serialize()), localCapabilities: Self.caps(port: 50000))
        #expect(negotiated.srtp != nil && negotiated.dtls == nil)
        #expect(!answer.serialize().contains("a=fingerprint"))
    }

    @Test func anOfferWithSDESNextToDTLSIsAnsweredWithDTLSByADTLSPeerAndWithSDESByAnSDESPeer() throws {
        let offerer = AudioCapabilities(
            address: "127.0.0.1", port: 40000, srtp: .required([.aesCM128HmacSHA1_80]), dtlsFingerprint: Self.ours,
            offersSDESWithDTLS: true)
        let offer = SessionDescription.makeOffer(offerer)
        let text = offer.serialize()
        #expect(text.contains("m=audio 40000 RTP/SAVP 111") && text.contains("a=crypto:1 AES_CM_128_HMAC_SHA1_80"))
        #expect(text.contains("a=fingerprint:\(Self.ours)\r\n") && text.contains("a=setup:actpass\r\n"))

        let theirs = "sha-256 " + Array(repeating: "BB", count: 32).joined(separator: ":")
        let (dtlsAnswer, dtlsAnswered) = try SessionDescription.makeAnswer(
            to: try SessionDescription(parsing: text), localCapabilities: Self.caps(dtls: theirs, port: 50000))
        #expect(dtlsAnswered.dtls?.isClient == false && dtlsAnswered.srtp == nil)
        #expect(!dtlsAnswer.serialize().contains("a=crypto"), "a DTLS-SRTP answer must not send SDES keys")
        let viaDTLS = try offer.negotiate(
            answer: try SessionDescription(parsing: dtlsAnswer.serialize()), localCapabilities: offerer)
        #expect(viaDTLS.dtls == NegotiatedDTLS(remoteFingerprint: theirs, isClient: true) && viaDTLS.srtp == nil)

        let (sdesAnswer, sdesAnswered) = try SessionDescription.makeAnswer(
            to: try SessionDescription(parsing: text), localCapabilities: Self.caps(dtls: nil, port: 50000))
        #expect(sdesAnswered.srtp != nil && sdesAnswered.dtls == nil)
        let viaSDES = try offer.negotiate(
            answer: try SessionDescription(parsing: sdesAnswer.serialize()), localCapabilities: offerer)
        #expect(viaSDES.dtls == nil && viaSDES.srtp?.remoteKey == sdesAnswered.srtp?.localKey)
    }

    @Test func aDTLSOnlyAnswererRefusesAnSDESOnlyOfferWithItsOwnError() throws {
        let offer = SessionDescription.makeOffer(Self.caps(dtls: nil))
        let dtlsOnly = AudioCapabilities(
            address: "127.0.0.1", port: 50000, srtp: .required([]), dtlsFingerprint: Self.ours)
        #expect(throws: SDPError.sdesRefused) {
            try SessionDescription.makeAnswer(
                to: try SessionDescription(parsing: offer.serialize()), localCapabilities: dtlsOnly)
        }
        // Its own offers carry no SDES key even when SDES next to DTLS is asked for: it has no suite to offer.
        var asking = dtlsOnly
        asking.offersSDESWithDTLS = true
        let text = SessionDescription.makeOffer(asking).serialize()
        #expect(!text.contains("a=crypto") && text.contains("UDP/TLS/RTP/SAVP"))
    }

    static let iceA = SDPICEParameters(
        ufrag: "aUfr", password: "aPasswordOfTwentyTwoChars",
        candidates: ["1 1 udp 2130706431 127.0.0.1 40000 typ host"])
    static let iceB = SDPICEParameters(
        ufrag: "bUfr", password: "bPasswordOfTwentyTwoChars",
        candidates: ["1 1 udp 2130706431 127.0.0.1 50000 typ host"])

    @Test func iceParametersTravelInOfferAndAnswerOnlyWhenBothSidesDoICE() throws {
        var offerer = Self.caps()
        offerer.ice = Self.iceA
        let offer = SessionDescription.makeOffer(offerer)
        let text = offer.serialize()
        #expect(text.contains("a=ice-ufrag:aUfr\r\na=ice-pwd:aPasswordOfTwentyTwoChars\r\n"))
        #expect(text.contains("a=candidate:1 1 udp 2130706431 127.0.0.1 40000 typ host\r\n"))

        var answerer = Self.caps(
            dtls: "sha-256 " + Array(repeating: "CC", count: 32).joined(separator: ":"), port: 50000)
        answerer.ice = Self.iceB
        let (answer, answered) = try SessionDescription.makeAnswer(
            to: try SessionDescription(parsing: text), localCapabilities: answerer)
        #expect(answered.remoteICE == Self.iceA)
        #expect(answer.serialize().contains("a=ice-ufrag:bUfr"))
        let negotiated = try offer.negotiate(
            answer: try SessionDescription(parsing: answer.serialize()), localCapabilities: offerer)
        #expect(negotiated.remoteICE == Self.iceB)

        // A peer without ICE: no ICE in our answer to it, none negotiated; media on its c=/m= address.
        let plain = SessionDescription.makeOffer(Self.caps(port: 42000))
        let (plainAnswer, plainAnswered) = try SessionDescription.makeAnswer(
            to: try SessionDescription(parsing: plain.serialize()), localCapabilities: answerer)
        #expect(plainAnswered.remoteICE == nil && plainAnswered.remotePort == 42000)
        #expect(!plainAnswer.serialize().contains("ice-ufrag") && !plainAnswer.serialize().contains("a=candidate"))
        // An answer without ICE to our ICE offer: none negotiated either.
        let (noICEAnswer, _) = try SessionDescription.makeAnswer(
            to: try SessionDescription(parsing: text), localCapabilities: Self.caps(port: 51000))
        let withoutICE = try offer.negotiate(
            answer: try SessionDescription(parsing: noICEAnswer.serialize()), localCapabilities: offerer)
        #expect(withoutICE.remoteICE == nil && withoutICE.remotePort == 51000)
    }
}
