import Testing
import VoiceEngine

/// SDP texts as real peers send them, hand-written from their documented formats.
enum SDPSamples {
    /// A browser (WebRTC, Chrome-style) offer: BUNDLE, ICE, SAVPF, fmtp with minptime, extmap, ssrc, a video line.
    static let browserOffer = """
        v=0
        o=- 4611731400430051336 2 IN IP4 127.0.0.1
        s=-
        t=0 0
        a=group:BUNDLE 0 1
        a=extmap-allow-mixed
        a=msid-semantic: WMS stream1
        m=audio 54400 UDP/TLS/RTP/SAVPF 111 63 9 0 8 13 110 126
        c=IN IP4 192.0.2.10
        a=rtcp:9 IN IP4 0.0.0.0
        a=candidate:1 1 udp 2113937151 192.0.2.10 54400 typ host generation 0
        a=ice-ufrag:EsAw
        a=ice-pwd:bP+XJMM09aR8AiX1jdukzR6Y
        a=fingerprint:sha-256 D2:FA:0E:C3:22:59:5E:14:95:69:92:3D:13:B4:84:24:2C:C2:A2:C0:3E:FD:34:8E:5E:EA:6F:AF:52:CE:E6:0F
        a=setup:actpass
        a=mid:0
        a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level
        a=sendrecv
        a=msid:stream1 track1
        a=rtcp-mux
        a=rtpmap:111 opus/48000/2
        a=rtcp-fb:111 transport-cc
        a=fmtp:111 minptime=10;useinbandfec=1
        a=rtpmap:63 red/48000/2
        a=fmtp:63 111/111
        a=rtpmap:9 G722/8000
        a=rtpmap:0 PCMU/8000
        a=rtpmap:8 PCMA/8000
        a=rtpmap:13 CN/8000
        a=rtpmap:110 telephone-event/48000
        a=rtpmap:126 telephone-event/8000
        a=ssrc:3570614608 cname:4TOk42mSjXCkVIa6
        m=video 9 UDP/TLS/RTP/SAVPF 96
        c=IN IP4 0.0.0.0
        a=rtpmap:96 VP8/90000
        a=mid:1

        """.replacingOccurrences(of: "\n", with: "\r\n")

    /// An Asterisk (chan_pjsip, SDES) offer: RTP/SAVP, crypto with two suites, ptime/maxptime, PT 107 for Opus.
    static let asteriskOffer = """
        v=0
        o=- 1704305 1704307 IN IP4 203.0.113.5
        s=Asterisk
        c=IN IP4 203.0.113.5
        t=0 0
        m=audio 15346 RTP/SAVP 107 0 8 101
        a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:WVNfX19zZW1jdGwgKCkgewkyMjA7fQp9CnVubGVz|2^20|1:32
        a=crypto:2 AES_CM_128_HMAC_SHA1_32 inline:NzB4d1BINUAvLEw6UzF3WSJ+PSdFcGdUJShpX1Zj
        a=rtpmap:107 opus/48000/2
        a=fmtp:107 useinbandfec=1;maxaveragebitrate=24000
        a=rtpmap:0 PCMU/8000
        a=rtpmap:8 PCMA/8000
        a=rtpmap:101 telephone-event/8000
        a=fmtp:101 0-16
        a=ptime:20
        a=maxptime:150
        a=sendrecv
        """

    /// A baresip offer: RTP/SAVP with AES-256 and AES-128 crypto, stereo fmtp, rtcp-mux, LF line ends.
    static let baresipOffer = """
        v=0
        o=- 2890844526 2890844526 IN IP4 198.51.100.7
        s=-
        c=IN IP4 198.51.100.7
        t=0 0
        m=audio 10000 RTP/SAVP 96 0
        b=AS:128
        a=rtpmap:96 opus/48000/2
        a=fmtp:96 stereo=1;sprop-stereo=1;maxaveragebitrate=64000;usedtx=1
        a=rtpmap:0 PCMU/8000
        a=rtcp-mux
        a=crypto:1 AES_256_CM_HMAC_SHA1_80 inline:BwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyAhIiMkJSYnKCkqKywtLi8wMTIzNA==
        a=crypto:2 AES_CM_128_HMAC_SHA1_80 inline:\(String(repeating: "QUJD", count: 10))
        a=sendrecv
        a=label:1
        a=ssrc:1234567 cname:baresip@host

        """
}

@Suite struct SDPParsingTests {
    @Test func parsesBrowserOfferKeepingOtherMediaAndAttributes() throws {
        let sdp = try SessionDescription(parsing: SDPSamples.browserOffer)
        #expect(sdp.origin.sessionID == "4611731400430051336")
        #expect(sdp.audio.port == 54400)
        #expect(sdp.audio.transportProtocol == "UDP/TLS/RTP/SAVPF")
        #expect(sdp.audio.formats.map(\.payloadType) == [111, 63, 9, 0, 8, 13, 110, 126])
        #expect(sdp.audio.opus?.payloadType == 111)
        #expect(sdp.audio.opus?.opusParameters?.useInbandFEC == true)
        #expect(sdp.audio.opus?.opusParameters?.minptime == 10)
        #expect(sdp.audio.formats.first(where: { $0.payloadType == 63 })?.fmtp == "111/111")
        #expect(sdp.audio.rtcpMux)
        #expect(sdp.audio.rtcpPort == 9)
        #expect(sdp.audio.direction == .sendrecv)
        #expect(sdp.audio.crypto.isEmpty)
        #expect(sdp.audioConnection?.address == "192.0.2.10")
        #expect(sdp.otherMedia.map(\.media) == ["video"])
        #expect(sdp.otherMedia[0].index == 1)
        #expect(sdp.audio.otherAttributes.contains("mid:0"))
        #expect(sdp.sessionAttributes.contains("group:BUNDLE 0 1"))
    }

    @Test func parsesAsteriskOfferWithCryptoLifetimeAndMKI() throws {
        let sdp = try SessionDescription(parsing: SDPSamples.asteriskOffer)
        #expect(sdp.audio.opus?.payloadType == 107)
        #expect(sdp.audio.opus?.opusParameters?.maxAverageBitrate == 24000)
        #expect(sdp.audio.crypto.map(\.tag) == [1, 2])
        #expect(sdp.audio.crypto.map(\.suite) == [.aesCM128HmacSHA1_80, .aesCM128HmacSHA1_32])
        #expect(sdp.audio.crypto[0].keys[0].lifetime == 1 << 20)
        #expect(sdp.audio.crypto[0].keys[0].mki == SDESMasterKeyIdentifier(value: 1, length: 32))
        #expect(sdp.audio.ptime == 20)
        #expect(sdp.audio.maxptime == 150)
        #expect(!sdp.audio.rtcpMux)
        #expect(sdp.audio.formats.first(where: { $0.payloadType == 101 })?.fmtp == "0-16")
    }

    @Test func parsesBaresipOfferWithLFLineEnds() throws {
        let sdp = try SessionDescription(parsing: SDPSamples.baresipOffer)
        let params = try #require(sdp.audio.opus?.opusParameters)
        #expect(params.stereo == true && params.spropStereo == true && params.useDTX == true)
        #expect(params.maxAverageBitrate == 64000)
        #expect(sdp.audio.crypto.map(\.suite) == [.aes256CMHmacSHA1_80, .aesCM128HmacSHA1_80])
        #expect(sdp.audio.rtcpMux)
    }

    @Test func roundTripsThroughSerialize() throws {
        for text in [SDPSamples.browserOffer, SDPSamples.asteriskOffer, SDPSamples.baresipOffer] {
            let sdp = try SessionDescription(parsing: text)
            let again = try SessionDescription(parsing: sdp.serialize())
            #expect(again == sdp)
            #expect(sdp.serialize().hasSuffix("\r\n"))
        }
    }

    @Test func roundTripsAnOfferWeMade() throws {
        let caps = AudioCapabilities(
            address: "127.0.0.1", port: 40000,
            send: OpusEncoderConfiguration(channels: 2, bitrate: 48000, inbandFEC: true, dtx: true),
            receiveDTX: true, receiveStereo: true, maxReceiveBitrate: 40000, maxPlaybackRate: 16000,
            srtp: .required([.aeadAES128GCM, .aesCM128HmacSHA1_80]))
        let offer = SessionDescription.makeOffer(caps)
        let text = offer.serialize()
        #expect(text.contains("a=rtpmap:111 opus/48000/2\r\n"))
        #expect(text.contains("m=audio 40000 RTP/SAVP 111 101 102\r\n"))
        #expect(text.contains("a=crypto:1 AEAD_AES_128_GCM inline:"))
        #expect(text.contains("a=crypto:2 AES_CM_128_HMAC_SHA1_80 inline:"))
        #expect(
            text.contains("a=rtcp-mux\r\n") && text.contains("a=ptime:20\r\n") && text.contains("a=maxptime:120\r\n"))
        let fmtp = try #require(text.split(separator: "\r\n").first { $0.hasPrefix("a=fmtp:111 ") })
        for part in [
            "maxplaybackrate=16000", "sprop-maxcapturerate=48000", "maxaveragebitrate=40000", "stereo=1",
            "sprop-stereo=1", "useinbandfec=1", "usedtx=1"
        ] {
            #expect(fmtp.contains(part), "\(part) missing from \(fmtp)")
        }
        #expect(try SessionDescription(parsing: text) == offer)
    }

    /// Each malformed text is rejected with the error and line number that point at the fault.
    @Test(arguments: [
        ("o=- 1 1 IN IP4 h\ns=-\n", SDPError.malformedLine(line: 1, reason: "an SDP must start with v=0")),
        ("v=1\n", .malformedLine(line: 1, reason: "unsupported version v=1")),
        (
            "v=0\no=- 1 1 IN IP4\n",
            .malformedLine(line: 2, reason: "o= needs <user> <id> <version> IN <type> <address>")
        ),
        (
            "v=0\no=- 1 1 IN IP4 h\ns=-\nthis is not sdp\n",
            .malformedLine(line: 4, reason: "not a <letter>=<value> line")
        ),
        ("v=0\no=- 1 1 IN IP4 h\ns=-\nc=IN IP4 1.2.3.4\nt=0 0\n", .missingLine("m=audio")),
        ("v=0\ns=-\nc=IN IP4 1.2.3.4\nt=0 0\nm=audio 1 RTP/AVP 0\n", .missingLine("o=")),
        ("v=0\no=- 1 1 IN IP4 h\ns=-\nt=0 0\nm=audio 1 RTP/AVP 0\n", .missingLine("c=")),
        (
            "v=0\no=- 1 1 IN IP4 h\ns=-\nc=IN IP4 1.2.3.4\nt=0 0\nm=audio 99999 RTP/AVP 0\n",
            .malformedLine(line: 6, reason: "bad port '99999'")
        ),
        (
            "v=0\no=- 1 1 IN IP4 h\ns=-\nc=IN IP4 1.2.3.4\nt=0 0\nm=audio 1 RTP/AVP 200\n",
            .malformedLine(line: 6, reason: "bad payload type '200'")
        ),
        (
            "v=0\no=- 1 1 IN IP4 h\ns=-\nc=IN IP4 1.2.3.4\nt=0 0\nm=audio 1 RTP/AVP 111\na=rtpmap:111 opus\n",
            .malformedLine(line: 7, reason: "rtpmap needs <encoding>/<clock rate>[/<channels>]")
        ),
        (
            "v=0\no=- 1 1 IN IP4 h\ns=-\nc=IN IP4 1.2.3.4\nt=0 0\nm=audio 1 RTP/AVP 111\na=rtpmap:111 opus/48000/2\na=fmtp:111 useinbandfec=2\n",
            .malformedLine(line: 8, reason: "Opus fmtp: useinbandfec=2 is not 0 or 1")
        ),
        (
            "v=0\no=- 1 1 IN IP4 h\ns=-\nc=IN IP4 1.2.3.4\nt=0 0\nm=audio 1 RTP/AVP 111\na=fmtp:111 maxaveragebitrate=1000000\na=rtpmap:111 opus/48000/2\n",
            .malformedLine(line: 7, reason: "Opus fmtp: maxaveragebitrate=1000000 is not a number in 6000...510000")
        ),
        (
            "v=0\no=- 1 1 IN IP4 h\ns=-\nc=IN IP4 1.2.3.4\nt=0 0\nm=audio 1 RTP/AVP 111\na=ptime:fast\n",
            .malformedLine(line: 7, reason: "ptime 'fast' is not a number")
        ),
        (
            "v=0\no=- 1 1 IN IP4 h\ns=-\nc=IN IP4 1.2.3.4\nt=0 0\nm=audio 1 RTP/SAVP 111\na=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:!!!\n",
            .badCrypto(line: 7, .badBase64)
        ),
        (
            "v=0\no=- 1 1 IN IP4 h\ns=-\nc=IPX 1.2.3.4\n",
            .malformedLine(line: 4, reason: "c= needs IN IP4|IP6 <address>")
        )
    ])
    func rejectsMalformedSDPNamingTheLine(text: String, expected: SDPError) {
        #expect(throws: expected) { try SessionDescription(parsing: text) }
    }

    @Test func keepsUnknownCryptoSuitesAsideInsteadOfFailing() throws {
        let text = """
            v=0
            o=- 1 1 IN IP4 h
            s=-
            c=IN IP4 10.0.0.1
            t=0 0
            m=audio 4000 RTP/SAVP 111
            a=rtpmap:111 opus/48000/2
            a=crypto:1 F8_128_HMAC_SHA1_80 inline:MTIzNDU2Nzg5QUJDREUwMTIzNDU2Nzg5QUJjZGVm
            """
        let sdp = try SessionDescription(parsing: text)
        #expect(sdp.audio.crypto.isEmpty)
        #expect(sdp.audio.unsupportedCrypto.count == 1)
        #expect(sdp.audio.opus?.opusParameters == OpusFormatParameters())
    }

    @Test func sessionLevelDirectionAppliesWhenTheSectionHasNone() throws {
        let text = "v=0\no=- 1 1 IN IP4 h\ns=-\nc=IN IP4 10.0.0.1\nt=0 0\na=recvonly\nm=audio 4000 RTP/AVP 111\n"
        #expect(try SessionDescription(parsing: text).audio.direction == .recvonly)
    }
}

@Suite struct SDPRobustnessTests {
    /// Thousands of mutated peer SDPs (bytes flipped, lines cut, dropped or duplicated): each one parses or is
    /// rejected with an SDPError, and whatever parses can be answered or refused with an SDPError — never a crash.
    @Test func mutatedSamplesParseOrFailWithATypedError() {
        var generator = SeededGenerator(seed: 0xBADC0DE)
        let samples = [SDPSamples.browserOffer, SDPSamples.asteriskOffer, SDPSamples.baresipOffer]
        let local = AudioCapabilities(address: "127.0.0.1", port: 4000, srtp: .optional([.aesCM128HmacSHA1_80]))
        var parsed = 0, rejected = 0
        for round in 0..<3000 {
            var lines = samples[round % samples.count].split(separator: "\n", omittingEmptySubsequences: false)
                .map(String.init)
            switch Int.random(in: 0..<4, using: &generator) {
            case 0:
                let i = Int.random(in: 0..<lines.count, using: &generator)
                var bytes = Array(lines[i].utf8)
                if !bytes.isEmpty {
                    bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(
                        in: 0...255, using: &generator)
                }
                lines[i] = String(decoding: bytes, as: UTF8.self)
            case 1:
                let i = Int.random(in: 0..<lines.count, using: &generator)
                lines[i] = String(lines[i].prefix(Int.random(in: 0...lines[i].count, using: &generator)))
            case 2:
                lines.remove(at: Int.random(in: 0..<lines.count, using: &generator))
            default:
                let i = Int.random(in: 0..<lines.count, using: &generator)
                lines.insert(lines[i], at: Int.random(in: 0...lines.count, using: &generator))
            }
            do {
                let sdp = try SessionDescription(parsing: lines.joined(separator: "\n"))
                parsed += 1
                _ = try? SessionDescription.makeAnswer(to: sdp, localCapabilities: local)
                #expect(throws: Never.self) { try SessionDescription(parsing: sdp.serialize()) }
            } catch {
                rejected += 1
            }
        }
        // Both outcomes occur, so the mutations reach the validation paths and the accepting paths.
        #expect(parsed > 100 && rejected > 100)
    }
}
