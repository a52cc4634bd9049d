import Testing
import VoiceEngine

/// RFC 4733 telephone-event in offer/answer: offered at the audio's clock rate and at 8000 Hz with `0-16`, answered
/// with the offer's payload type at the codec's rate (else 8000), and carried into the stream's configuration.
@Suite struct TelephoneEventNegotiationTests {
    @Test func offerListsTelephoneEventAfterTheCodecAtItsClockRateAndAt8kHz() throws {
        let offer = SessionDescription.makeOffer(SDPNegotiationTests.caps())
        let text = offer.serialize()
        // After Opus, G.722, PCMU and PCMA: telephone-event at Opus's 48 kHz, then at 8 kHz for the others.
        #expect(text.contains("m=audio 40000 RTP/SAVP 111 9 0 8 101 102\r\n"))
        #expect(text.contains("a=rtpmap:101 telephone-event/48000\r\n"))
        #expect(text.contains("a=fmtp:101 0-16\r\n"))
        #expect(text.contains("a=rtpmap:102 telephone-event/8000\r\n"))
        #expect(text.contains("a=fmtp:102 0-16\r\n"))
        let parsed = try SessionDescription(parsing: text)
        #expect(parsed.audio.telephoneEventPayloadType(clockRate: 48_000) == 101)
        #expect(parsed.audio.telephoneEventPayloadType(clockRate: 8_000) == 102)
        #expect(parsed.audio.formats.first?.isOpus == true)
    }

    @Test func bothSidesAgreeAndTheStreamConfigurationCarriesIt() throws {
        var answerer = SDPNegotiationTests.caps(port: 50000)
        answerer.telephoneEventPayloadType = 120  // the answer must reuse the offer's type, not its own
        let (a, b) = try SDPNegotiationTests.exchange(SDPNegotiationTests.caps(), answerer)
        #expect(a.telephoneEventPayloadType == 101 && a.telephoneEventClockRate == 48_000)
        #expect(b.telephoneEventPayloadType == 101 && b.telephoneEventClockRate == 48_000)
        #expect(MediaStreamConfiguration(negotiated: a).telephoneEventPayloadType == 101)
    }

    @Test func aSideWithoutTelephoneEventsLeavesItUnnegotiated() throws {
        var plain = SDPNegotiationTests.caps(port: 50000)
        plain.telephoneEventPayloadType = nil
        let (a1, b1) = try SDPNegotiationTests.exchange(SDPNegotiationTests.caps(), plain)
        #expect(a1.telephoneEventPayloadType == nil && b1.telephoneEventPayloadType == nil)
        let (a2, b2) = try SDPNegotiationTests.exchange(plain, SDPNegotiationTests.caps(port: 40000))
        #expect(a2.telephoneEventPayloadType == nil && b2.telephoneEventPayloadType == nil)
        #expect(!SessionDescription.makeOffer(plain).serialize().contains("telephone-event"))
    }

    /// Asterisk (like baresip) offers Opus with telephone-event only at 8000 Hz: answered at 8000, and the stream
    /// counts its event durations at 8 kHz.
    @Test func telephoneEventAt8kHzIsAnsweredBesideOpus() throws {
        let offer = try SessionDescription(parsing: SDPSamples.asteriskOffer)
        let (answer, negotiated) = try SessionDescription.makeAnswer(
            to: offer,
            localCapabilities: SDPNegotiationTests.caps(
                port: 50000, srtp: .required([.aesCM128HmacSHA1_80, .aesCM128HmacSHA1_32])))
        #expect(negotiated.telephoneEventPayloadType == 101 && negotiated.telephoneEventClockRate == 8_000)
        #expect(answer.serialize().contains("a=rtpmap:101 telephone-event/8000\r\n"))
        let configuration = MediaStreamConfiguration(negotiated: negotiated)
        #expect(configuration.telephoneEventClockRate == 8_000)
        // Offerer side: an answer that keeps only our 8000 Hz telephone-event.
        let ours = SessionDescription.makeOffer(SDPNegotiationTests.caps())
        var reply = try SessionDescription.makeAnswer(
            to: ours, localCapabilities: SDPNegotiationTests.caps(port: 50000)
        ).answer
        reply.audio.formats.removeAll { $0.rtpmap?.encodingName == "telephone-event" }
        reply.audio.formats.append(
            RTPFormat(payloadType: 102, rtpmap: RTPMap(encodingName: "telephone-event", clockRate: 8_000)))
        let mine = try ours.negotiate(answer: reply, localCapabilities: SDPNegotiationTests.caps())
        #expect(mine.telephoneEventPayloadType == 102 && mine.telephoneEventClockRate == 8_000)
    }

    /// A browser offers telephone-event at 48000 (110) and 8000 (126): the answer takes 110 with Opus.
    @Test func browserOfferIsAnsweredWithTheOpusClockRatesType() throws {
        let offer = try SessionDescription(parsing: SDPSamples.browserOffer)
        var local = SDPNegotiationTests.caps(port: 50000)
        local.srtp = .optional([.aesCM128HmacSHA1_80])
        local.dtlsFingerprint = "sha-256 " + Array(repeating: "AB", count: 32).joined(separator: ":")
        let (answer, negotiated) = try SessionDescription.makeAnswer(to: offer, localCapabilities: local)
        #expect(negotiated.telephoneEventPayloadType == 110)
        let text = answer.serialize()
        #expect(text.contains("a=rtpmap:110 telephone-event/48000\r\n"))
        #expect(!text.contains("telephone-event/8000"))
    }
}
