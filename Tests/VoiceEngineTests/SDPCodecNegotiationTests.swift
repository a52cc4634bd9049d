import Testing
import VoiceEngine

/// Codec choice in offer/answer: Opus, G.722, PCMU, PCMA in our offers; the offer's first common codec in answers;
/// the media stream configured at the chosen codec's rate.
@Suite struct SDPCodecNegotiationTests {
    static func caps(port: Int, codecs: [AudioCodec] = AudioCapabilities.defaultCodecs) -> AudioCapabilities {
        AudioCapabilities(address: "127.0.0.1", port: port, srtp: .optional([.aesCM128HmacSHA1_80]), codecs: codecs)
    }

    /// A plain-RTP offer as a SIP trunk or desk phone sends it, with `formats` on its m-line and their rtpmaps.
    static func peerOffer(_ formats: String, rtpmaps: [String], ptime: Int? = 20) throws -> SessionDescription {
        var text = "v=0\r\no=- 1 1 IN IP4 192.0.2.7\r\ns=-\r\nc=IN IP4 192.0.2.7\r\nt=0 0\r\n"
        text += "m=audio 30000 RTP/AVP \(formats)\r\n"
        for line in rtpmaps { text += "a=rtpmap:\(line)\r\n" }
        if let ptime { text += "a=ptime:\(ptime)\r\n" }
        text += "a=sendrecv\r\n"
        return try SessionDescription(parsing: text)
    }

    @Test func ourOfferListsOpusThenG722ThenG711() throws {
        let offer = SessionDescription.makeOffer(Self.caps(port: 4000))
        let text = offer.serialize()
        #expect(text.contains("m=audio 4000 RTP/AVP 111 9 0 8 101 102\r\n"), "telephone-event at 48 and 8 kHz after")
        for line in [
            "a=rtpmap:111 opus/48000/2", "a=rtpmap:9 G722/8000", "a=rtpmap:0 PCMU/8000", "a=rtpmap:8 PCMA/8000"
        ] {
            #expect(text.contains(line + "\r\n"), "\(line)")
        }
        let parsed = try SessionDescription(parsing: text)
        #expect(parsed.audio.formats.map(\.codec) == [.opus, .g722, .pcmu, .pcma, nil, nil])
    }

    /// The answer takes the offer's first codec we code, not ours: a trunk preferring PCMA over PCMU gets PCMA.
    @Test func theAnswerTakesTheOffersFirstCommonCodec() throws {
        let offer = try Self.peerOffer("8 0 101", rtpmaps: ["8 PCMA/8000", "0 PCMU/8000", "101 telephone-event/8000"])
        let (answer, negotiated) = try SessionDescription.makeAnswer(
            to: offer, localCapabilities: Self.caps(port: 5000))
        #expect(negotiated.codec == .pcma && negotiated.payloadType == 8 && negotiated.ptime == 20)
        #expect(!negotiated.peerWantsFEC && negotiated.decoderChannels == 1 && negotiated.srtp == nil)
        #expect(answer.serialize().contains("m=audio 5000 RTP/AVP 8 101\r\na=rtpmap:8 PCMA/8000\r\n"))
        #expect(negotiated.telephoneEventPayloadType == 101 && negotiated.telephoneEventClockRate == 8_000)

        // Static payload types without rtpmap (RFC 3551) and G.722 before G.711.
        let bare = try Self.peerOffer("9 0", rtpmaps: [], ptime: 30)
        let (_, g722) = try SessionDescription.makeAnswer(to: bare, localCapabilities: Self.caps(port: 5000))
        #expect(g722.codec == .g722 && g722.payloadType == 9)
        #expect(g722.ptime == 20, "30 ms is no Opus frame duration, so the packet time stays ours")

        // An answerer without G.722 skips it for the next common one.
        let (_, pcmu) = try SessionDescription.makeAnswer(
            to: bare, localCapabilities: Self.caps(port: 5000, codecs: [.opus, .pcmu]))
        #expect(pcmu.codec == .pcmu && pcmu.payloadType == 0)

        // Opus stays first when the peer offers it anywhere after a codec we do not code.
        let mixed = try Self.peerOffer("3 96 0", rtpmaps: ["3 GSM/8000", "96 opus/48000/2", "0 PCMU/8000"])
        let (_, opus) = try SessionDescription.makeAnswer(to: mixed, localCapabilities: Self.caps(port: 5000))
        #expect(opus.codec == .opus && opus.payloadType == 96)
    }

    @Test func theOffererTakesTheAnswersCodec() throws {
        let offerer = Self.caps(port: 4000)
        let offer = SessionDescription.makeOffer(offerer)
        let received = try SessionDescription(parsing: offer.serialize())
        let (answer, answerer) = try SessionDescription.makeAnswer(
            to: received, localCapabilities: Self.caps(port: 5000, codecs: [.pcmu]))
        let negotiated = try offer.negotiate(
            answer: try SessionDescription(parsing: answer.serialize()), localCapabilities: offerer)
        #expect(answerer.codec == .pcmu && negotiated.codec == .pcmu && negotiated.payloadType == 0)
        #expect(negotiated.srtp?.localKey == answerer.srtp?.remoteKey)

        // An answer naming a codec we never offered is refused.
        let opusOnly = SessionDescription.makeOffer(Self.caps(port: 4000, codecs: [.opus]))
        #expect(throws: SDPError.answerDoesNotMatchOffer("PCMU payload type 0 was not offered")) {
            try opusOnly.negotiate(answer: answer, localCapabilities: Self.caps(port: 4000))
        }
    }

    /// The stream runs at the codec's rate: 8 kHz for G.711, 16 kHz for G.722, with Opus' FEC and DTX off.
    @Test func theMediaStreamConfigurationFollowsTheCodec() throws {
        for (formats, rtpmap, codec, rate) in [
            ("0", "0 PCMU/8000", AudioCodec.pcmu, 8_000), ("8", "8 PCMA/8000", .pcma, 8_000),
            ("9", "9 G722/8000", .g722, 16_000)
        ] {
            let offer = try Self.peerOffer(formats, rtpmaps: [rtpmap])
            let (_, negotiated) = try SessionDescription.makeAnswer(
                to: offer, localCapabilities: Self.caps(port: 5000))
            let configuration = MediaStreamConfiguration(negotiated: negotiated)
            #expect(configuration.codec == codec && configuration.processingRate == rate)
            #expect(configuration.payloadType == negotiated.payloadType)
            let stream = try MediaStream(configuration: configuration)
            #expect(!stream.statistics.encoderFECEnabled)
        }
        var wrong = MediaStreamConfiguration(codec: .pcmu, processingRate: 16_000)
        #expect(
            throws: MediaStreamError.invalidConfiguration(
                field: "processingRate", reason: "PCMU codes at 8000 Hz, not 16000 Hz")
        ) {
            try wrong.validate()
        }
        wrong.processingRate = 8_000
        try wrong.validate()
    }
}
