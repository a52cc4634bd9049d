import Testing
import VoiceEngine

@Suite struct SDPNegotiationTests {
    static func caps(
        port: Int = 40000, send: OpusEncoderConfiguration = OpusEncoderConfiguration(bitrate: 32000, inbandFEC: true),
        receiveFEC: Bool = true, receiveDTX: Bool = false, receiveStereo: Bool = false, maxReceiveBitrate: Int? = nil,
        maxPlaybackRate: Int = 48000, srtp: SRTPPolicy = .required([.aesCM128HmacSHA1_80]), rtcpMux: Bool = true,
        direction: MediaDirection = .sendrecv
    ) -> AudioCapabilities {
        AudioCapabilities(
            address: "127.0.0.1", port: port, send: send, receiveFEC: receiveFEC, receiveDTX: receiveDTX,
            receiveStereo: receiveStereo, maxReceiveBitrate: maxReceiveBitrate, maxPlaybackRate: maxPlaybackRate,
            srtp: srtp, rtcpMux: rtcpMux, direction: direction)
    }

    /// Full exchange through SDP text on both sides; returns (offerer's, answerer's) results.
    static func exchange(_ offerer: AudioCapabilities, _ answerer: AudioCapabilities) throws
        -> (NegotiatedAudio, NegotiatedAudio)
    {
        let offer = SessionDescription.makeOffer(offerer)
        let received = try SessionDescription(parsing: offer.serialize())
        let (answer, answererResult) = try SessionDescription.makeAnswer(to: received, localCapabilities: answerer)
        let answerReceived = try SessionDescription(parsing: answer.serialize())
        let offererResult = try offer.negotiate(answer: answerReceived, localCapabilities: offerer)
        return (offererResult, answererResult)
    }

    @Test func bothSidesAgreeOnKeysSuitePayloadTypeAndAddresses() throws {
        let (a, b) = try Self.exchange(Self.caps(port: 40000), Self.caps(port: 50000))
        let sa = try #require(a.srtp), sb = try #require(b.srtp)
        #expect(sa.suite == .aesCM128HmacSHA1_80 && sb.suite == sa.suite && sa.tag == sb.tag)
        #expect(sa.localKey == sb.remoteKey && sb.localKey == sa.remoteKey)
        #expect(sa.localKey != sa.remoteKey)
        #expect(a.payloadType == 111 && b.payloadType == 111)
        #expect(a.remotePort == 50000 && b.remotePort == 40000)
        #expect(a.remoteAddress == "127.0.0.1")
        #expect(a.rtcpMux && b.rtcpMux && a.remoteRTCPPort == 50000)
        #expect(a.direction == .sendrecv && b.direction == .sendrecv)
    }

    /// FEC is sent only when the sender allows it and the receiver asked for it (useinbandfec=1).
    @Test(arguments: [(true, true), (true, false), (false, true), (false, false)])
    func fecIsTheAndOfSenderWillingnessAndReceiverPreference(senderAllows: Bool, receiverWants: Bool) throws {
        let sender = Self.caps(send: OpusEncoderConfiguration(inbandFEC: senderAllows))
        let receiver = Self.caps(port: 50000, receiveFEC: receiverWants)
        let (asOfferer, _) = try Self.exchange(sender, receiver)
        let (_, asAnswerer) = try Self.exchange(receiver, sender)
        #expect(asOfferer.encoder.inbandFEC == (senderAllows && receiverWants))
        #expect(asAnswerer.encoder.inbandFEC == (senderAllows && receiverWants))
        #expect(asOfferer.peerWantsFEC == receiverWants)
    }

    @Test(arguments: [(true, true), (true, false), (false, true)])
    func dtxIsTheAndOfSenderWillingnessAndReceiverPreference(senderAllows: Bool, receiverAccepts: Bool) throws {
        let sender = Self.caps(send: OpusEncoderConfiguration(dtx: senderAllows))
        let receiver = Self.caps(port: 50000, receiveDTX: receiverAccepts)
        #expect(try Self.exchange(sender, receiver).0.encoder.dtx == (senderAllows && receiverAccepts))
        #expect(try Self.exchange(receiver, sender).1.encoder.dtx == (senderAllows && receiverAccepts))
    }

    @Test func stereoNeedsBothTheSendersChannelsAndTheReceiversStereoFlag() throws {
        let stereoSender = Self.caps(send: OpusEncoderConfiguration(channels: 2))
        let (monoReceiverResult, _) = try Self.exchange(stereoSender, Self.caps(port: 1, receiveStereo: false))
        #expect(monoReceiverResult.encoder.channels == 1)
        let (toStereo, stereoReceiver) = try Self.exchange(
            stereoSender, Self.caps(port: 1, send: OpusEncoderConfiguration(channels: 1), receiveStereo: true))
        #expect(toStereo.encoder.channels == 2)
        // The receiver decodes stereo because it asked and the sender announced sprop-stereo=1.
        #expect(stereoReceiver.decoderChannels == 2)
        #expect(toStereo.decoderChannels == 1)
    }

    @Test(arguments: [(64000, nil as Int?, 64000), (64000, 24000, 24000), (20000, 40000, 20000), (64000, 6000, 6000)])
    func bitrateIsTheMinimumOfOurCeilingAndThePeersMaxAverageBitrate(ours: Int, peerMax: Int?, expected: Int) throws {
        let sender = Self.caps(send: OpusEncoderConfiguration(bitrate: ours))
        let receiver = Self.caps(port: 1, maxReceiveBitrate: peerMax)
        #expect(try Self.exchange(sender, receiver).0.encoder.bitrate == expected)
        #expect(try Self.exchange(receiver, sender).1.encoder.bitrate == expected)
        // The peer's limit also caps the raised bitrate that pays for start-up FEC.
        let toPeer = try Self.exchange(sender, receiver).0
        #expect(toPeer.peerMaximumBitrate == peerMax)
        #expect(MediaStreamConfiguration(negotiated: toPeer).lossAdaptation.startingBitrateCeiling == peerMax)
    }

    @Test func maxPlaybackRateLowersTheEncoderRate() throws {
        let (a, _) = try Self.exchange(Self.caps(), Self.caps(port: 1, maxPlaybackRate: 16000))
        #expect(a.encoder.sampleRate == 16000)
        let (b, _) = try Self.exchange(Self.caps(), Self.caps(port: 1, maxPlaybackRate: 22050))
        #expect(b.encoder.sampleRate == 16000)
        let (c, _) = try Self.exchange(Self.caps(), Self.caps(port: 1))
        #expect(c.encoder.sampleRate == 48000)
    }

    @Test func answererPicksTheOfferersFirstSuiteItSupportsAndEchoesTheTag() throws {
        let offerer = Self.caps(srtp: .required([.aeadAES256GCM, .aes256CMHmacSHA1_80, .aesCM128HmacSHA1_80]))
        let answerer = Self.caps(port: 1, srtp: .required([.aesCM128HmacSHA1_80, .aes256CMHmacSHA1_80]))
        let (a, b) = try Self.exchange(offerer, answerer)
        #expect(b.srtp?.suite == .aes256CMHmacSHA1_80 && b.srtp?.tag == 2)
        #expect(a.srtp?.suite == .aes256CMHmacSHA1_80 && a.srtp?.localKey == b.srtp?.remoteKey)
        #expect(a.srtp?.localKey.count == SRTPCryptoSuite.aes256CMHmacSHA1_80.keyMaterialLength)
    }

    @Test func noCommonSuiteIsAnError() throws {
        let offer = SessionDescription.makeOffer(Self.caps(srtp: .required([.aeadAES128GCM])))
        #expect(throws: SDPError.noCommonCryptoSuite(offered: ["AEAD_AES_128_GCM"])) {
            try SessionDescription.makeAnswer(to: offer, localCapabilities: Self.caps(port: 1))
        }
    }

    @Test func offerWithoutCryptoIsRejectedWhenWeRequireSRTP() throws {
        let plainOffer = SessionDescription.makeOffer(Self.caps(srtp: .disabled))
        #expect(plainOffer.audio.transportProtocol == "RTP/AVP" && plainOffer.audio.crypto.isEmpty)
        #expect(throws: SDPError.srtpRequired) {
            try SessionDescription.makeAnswer(to: plainOffer, localCapabilities: Self.caps(port: 1))
        }
        // …but accepted as plain RTP when SRTP is optional.
        let (_, negotiated) = try SessionDescription.makeAnswer(
            to: plainOffer, localCapabilities: Self.caps(port: 1, srtp: .optional([.aesCM128HmacSHA1_80])))
        #expect(negotiated.srtp == nil)
    }

    @Test func secureOfferIsRejectedWhenSRTPIsDisabled() throws {
        let offer = SessionDescription.makeOffer(Self.caps())
        #expect(throws: SDPError.srtpNotSupported) {
            try SessionDescription.makeAnswer(to: offer, localCapabilities: Self.caps(port: 1, srtp: .disabled))
        }
    }

    @Test func offererRejectsAnAnswerWithAnUnofferedTagOrWithoutCrypto() throws {
        let caps = Self.caps()
        let offer = SessionDescription.makeOffer(caps)
        var (answer, _) = try SessionDescription.makeAnswer(to: offer, localCapabilities: Self.caps(port: 1))
        var forged = answer
        forged.audio.crypto[0].tag = 7
        #expect(throws: SDPError.answerDoesNotMatchOffer("crypto tag 7 was not offered")) {
            try offer.negotiate(answer: forged, localCapabilities: caps)
        }
        answer.audio.crypto = []
        #expect(throws: SDPError.srtpRequired) { try offer.negotiate(answer: answer, localCapabilities: caps) }
    }

    @Test func rtcpMuxOnlyWhenBothWantIt() throws {
        let (a, b) = try Self.exchange(Self.caps(rtcpMux: true), Self.caps(port: 5000, rtcpMux: false))
        #expect(!a.rtcpMux && !b.rtcpMux)
        #expect(a.remoteRTCPPort == 5001)
    }

    @Test func ptimeFollowsThePeersWishWithinItsMaxptime() throws {
        var answererCaps = Self.caps(port: 1)
        answererCaps.send.frameDuration = .ms40
        let (offererSide, answererSide) = try Self.exchange(Self.caps(), answererCaps)
        // The offerer asked for 20 ms; the answerer sends 20 ms even though it prefers 40.
        #expect(answererSide.ptime == 20 && answererSide.encoder.frameDuration == .ms20)
        #expect(offererSide.ptime == 40)
        var tightCaps = Self.caps(port: 1)
        tightCaps.maxptime = 20
        var longCaps = Self.caps()
        longCaps.send.frameDuration = .ms60
        let offer = SessionDescription.makeOffer(tightCaps)
        var modified = offer
        modified.audio.ptime = nil
        let (_, n) = try SessionDescription.makeAnswer(to: modified, localCapabilities: longCaps)
        #expect(n.ptime == 20)
    }

    @Test func directionIsIntersectedWithTheReverseOfTheOffer() throws {
        let (a, b) = try Self.exchange(Self.caps(direction: .sendonly), Self.caps(port: 1))
        #expect(a.direction == .sendonly && b.direction == .recvonly)
        let (c, d) = try Self.exchange(Self.caps(direction: .recvonly), Self.caps(port: 1, direction: .recvonly))
        #expect(c.direction == .inactive && d.direction == .inactive)
    }

    @Test func answersABrowserStyleOfferOnItsPayloadTypeAndRejectsVideoInPlace() throws {
        var offer = try SessionDescription(parsing: SDPSamples.browserOffer)
        // A WebRTC offer is DTLS-SRTP (SAVPF, no a=crypto): refused when SRTP is disabled…
        #expect(throws: SDPError.srtpNotSupported) {
            try SessionDescription.makeAnswer(to: offer, localCapabilities: Self.caps(port: 1, srtp: .disabled))
        }
        // …and answered as plain RTP when the profile is plain (the same offer with RTP/AVPF).
        offer.audio.transportProtocol = "RTP/AVPF"
        let (answer, n) = try SessionDescription.makeAnswer(
            to: offer, localCapabilities: Self.caps(port: 1, srtp: .optional([.aesCM128HmacSHA1_80])))
        #expect(n.payloadType == 111 && n.encoder.inbandFEC && n.rtcpMux && n.srtp == nil)
        #expect(n.remoteAddress == "192.0.2.10" && n.remotePort == 54400)
        let mLines = answer.serialize().split(separator: "\r\n").filter { $0.hasPrefix("m=") }
        #expect(mLines == ["m=audio 1 RTP/AVPF 111 110", "m=video 0 UDP/TLS/RTP/SAVPF 96"])  // 110: telephone-event/48000
    }

    @Test func aBrowserOfferNeedsDTLSSoSDESOnlyPeersRefuseIt() throws {
        let offer = try SessionDescription(parsing: SDPSamples.browserOffer)
        #expect(throws: SDPError.srtpRequired) {
            try SessionDescription.makeAnswer(to: offer, localCapabilities: Self.caps(port: 1))
        }
    }

    @Test func answersAnAsteriskOfferWithItsOpusPayloadTypeAndASupportedCryptoLine() throws {
        let offer = try SessionDescription(parsing: SDPSamples.asteriskOffer)
        let local = Self.caps(
            port: 30000, send: OpusEncoderConfiguration(bitrate: 48000, inbandFEC: true),
            srtp: .required([.aesCM128HmacSHA1_80, .aesCM128HmacSHA1_32]))
        let (answer, n) = try SessionDescription.makeAnswer(to: offer, localCapabilities: local)
        // Line 1 has an MKI, which our sessions do not use, so line 2 (the 32-bit tag suite) is chosen.
        #expect(n.srtp?.tag == 2 && n.srtp?.suite == .aesCM128HmacSHA1_32)
        #expect(n.payloadType == 107 && n.encoder.bitrate == 24000 && n.encoder.inbandFEC)
        #expect(n.remoteAddress == "203.0.113.5" && n.remotePort == 15346 && n.remoteRTCPPort == 15347)
        #expect(!n.rtcpMux)
        let text = answer.serialize()
        #expect(text.contains("m=audio 30000 RTP/SAVP 107 101\r\n"))  // 101: its telephone-event/8000
        #expect(text.contains("a=crypto:2 AES_CM_128_HMAC_SHA1_32 inline:"))
        #expect(!text.contains("rtcp-mux"))
    }

    @Test func answersABaresipOfferWithStereoDTXAndAES256() throws {
        let offer = try SessionDescription(parsing: SDPSamples.baresipOffer)
        let local = Self.caps(
            port: 30000, send: OpusEncoderConfiguration(channels: 2, bitrate: 96000, dtx: true), receiveStereo: true,
            srtp: .required([.aesCM128HmacSHA1_80, .aes256CMHmacSHA1_80]))
        let (_, n) = try SessionDescription.makeAnswer(to: offer, localCapabilities: local)
        #expect(n.srtp?.suite == .aes256CMHmacSHA1_80 && n.srtp?.tag == 1)
        #expect(n.encoder.channels == 2 && n.encoder.dtx && n.encoder.bitrate == 64000)
        #expect(n.decoderChannels == 2 && n.rtcpMux && n.payloadType == 96)
    }

    @Test func answerRejectsOtherMediaSectionsInPlace() throws {
        var offer = SessionDescription.makeOffer(Self.caps())
        offer.otherMedia = [
            SDPOtherMedia(index: 0, media: "video", port: 9, transportProtocol: "RTP/SAVP", formats: ["96"])
        ]
        offer.audioIndex = 1
        let parsed = try SessionDescription(parsing: offer.serialize())
        #expect(parsed.audioIndex == 1)
        let (answer, _) = try SessionDescription.makeAnswer(to: parsed, localCapabilities: Self.caps(port: 1))
        let lines = answer.serialize().split(separator: "\r\n").filter { $0.hasPrefix("m=") }
        #expect(lines == ["m=video 0 RTP/SAVP 96", "m=audio 1 RTP/SAVP 111 101"])
    }

    @Test func rejectedAudioAndNoCommonCodecAreErrors() throws {
        var offer = SessionDescription.makeOffer(Self.caps())
        offer.audio.port = 0
        #expect(throws: SDPError.audioRejected) {
            try SessionDescription.makeAnswer(to: offer, localCapabilities: Self.caps(port: 1))
        }
        offer.audio.port = 4000
        offer.audio.formats = [
            RTPFormat(payloadType: 3, rtpmap: RTPMap(encodingName: "GSM", clockRate: 8000)), RTPFormat(payloadType: 18)
        ]
        #expect(throws: SDPError.noCommonCodec(offered: ["GSM/8000", "18"])) {
            try SessionDescription.makeAnswer(to: offer, localCapabilities: Self.caps(port: 1))
        }
    }
}
