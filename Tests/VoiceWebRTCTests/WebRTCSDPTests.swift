import Foundation
import Testing
import VoiceEngine
@testable import VoiceWebRTC

/// Fixtures/ holds offers real browsers produced (see Fixtures/README.md for where each came from).
func fixture(_ name: String) throws -> String {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/\(name)")
    return try String(contentsOf: url, encoding: .utf8)
}

@Suite("WebRTC SDP (RFC 8829/8839/8842)")
struct WebRTCSDPTests {
    static let chromium = "chromium-156-offer-audio-video-data.sdp"

    @Test func chromiumOfferParses() throws {
        let offer = try WebRTCSessionDescription(parsing: try fixture(Self.chromium))
        let t = offer.transport
        #expect(t.ice.ufrag == "J5MH" && t.ice.password == "RQybpOneqcHXvk7ZcJoPCAZy")
        #expect(t.setup == .actpass && t.mid == "0" && t.trickle && !t.iceLite)
        #expect(
            t.fingerprint.algorithm == "sha-256" && t.fingerprint.bytes.count == 32 && t.fingerprint.bytes[0] == 0x21)
        #expect(t.audioLevelExtensionID == 1)
        // Two UDP host candidates (v4 and v6); the TCP ones are not kept.
        #expect(t.candidates.map(\.host) == ["192.0.2.2", "fd00::2"])
        #expect(t.candidates[1].address?.family == .ipv6 && t.candidates[0].priority == 2_122_194_687)
        #expect(offer.sections.map(\.media) == ["audio", "video", "application"])
        #expect(offer.sections.map(\.mid) == ["0", "1", "2"])
        #expect(offer.base.audio.opus?.payloadType == 111)
    }

    @Test func answerHasOneAudioLineAndRejectsVideoAndData() throws {
        let offer = try WebRTCSessionDescription(parsing: try fixture(Self.chromium))
        let local = WebRTCLocalParameters(
            ice: ICECredentials(ufrag: "engineUF", password: "enginePasswordOf24chars_"),
            fingerprint: DTLSFingerprint(bytes: Array(repeating: 0xAB, count: 32)),
            candidates: [
                ICECandidate(
                    foundation: "1", priority: ICECandidate.priority(kind: .host),
                    host: "127.0.0.1", port: 27_010, kind: .host)
            ])
        let (text, negotiated, role) = try WebRTCSessionDescription.answer(
            to: offer, localCapabilities: AudioCapabilities(address: "127.0.0.1", port: 27_010), local: local)
        #expect(role == .client)
        #expect(negotiated.payloadType == 111 && negotiated.rtcpMux && negotiated.srtp == nil)
        #expect(negotiated.encoder.inbandFEC == false || negotiated.peerWantsFEC)
        let lines = text.split(separator: "\r\n").map(String.init)
        #expect(lines.contains("a=group:BUNDLE 0") && lines.contains("a=ice-lite"))
        #expect(lines.contains("m=audio 27010 UDP/TLS/RTP/SAVPF 111 110"))
        #expect(lines.contains("a=rtpmap:110 telephone-event/48000"))
        #expect(lines.contains("a=setup:active") && lines.contains("a=rtcp-mux") && lines.contains("a=mid:0"))
        #expect(lines.contains("a=ice-ufrag:engineUF") && lines.contains("a=ice-pwd:enginePasswordOf24chars_"))
        #expect(lines.contains("a=fingerprint:" + local.fingerprint.sdpValue))
        #expect(lines.contains("a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level"))
        #expect(lines.contains("a=candidate:1 1 udp 2130706431 127.0.0.1 27010 typ host"))
        #expect(
            lines.contains {
                $0.hasPrefix("a=fmtp:111 ") && $0.contains("useinbandfec=1") && $0.contains("minptime=10")
            })
        // Video and the data channel: port 0, their mids kept, in the offer's order.
        let mLines = lines.filter { $0.hasPrefix("m=") }
        #expect(mLines.count == 3)
        #expect(
            mLines[1].hasPrefix("m=video 0 UDP/TLS/RTP/SAVPF ")
                && mLines[2] == "m=application 0 UDP/DTLS/SCTP webrtc-datachannel")
        #expect(lines.contains("a=mid:1") && lines.contains("a=mid:2"))
        // Our answer parses as a WebRTC description with our parameters.
        let parsed = try WebRTCSessionDescription(parsing: text)
        #expect(parsed.transport.ice == local.ice && parsed.transport.setup == .active && parsed.transport.iceLite)
        #expect(parsed.sections.map(\.mid) == ["0", "1", "2"])
    }

    /// Firefox puts the fingerprint at session level, writes no candidates before trickling them, and uses
    /// payload type 109 for Opus.
    @Test func firefoxOfferParsesAndIsAnswered() throws {
        let offer = try WebRTCSessionDescription(parsing: try fixture("firefox-offer-audio-video.sdp"))
        let t = offer.transport
        #expect(t.ice.ufrag == "6c0579ea" && t.setup == .actpass && t.mid == "0" && t.trickle)
        #expect(t.fingerprint.bytes.first == 0x75 && t.candidates.isEmpty && t.audioLevelExtensionID == 1)
        #expect(offer.base.audio.opus?.payloadType == 109)
        let local = WebRTCLocalParameters(
            ice: ICECredentials.random(), fingerprint: DTLSFingerprint(bytes: Array(repeating: 1, count: 32)),
            candidates: [])
        let (text, negotiated, role) = try WebRTCSessionDescription.answer(
            to: offer, localCapabilities: AudioCapabilities(address: "::1", port: 27_011), local: local)
        #expect(negotiated.payloadType == 109 && role == .client)
        let lines = text.split(separator: "\r\n").map(String.init)
        // Firefox offers telephone-event at 8 kHz only: it is answered beside Opus at 48 kHz.
        #expect(lines.contains("m=audio 27011 UDP/TLS/RTP/SAVPF 109 101") && lines.contains("c=IN IP6 ::1"))
        #expect(lines.contains("a=group:BUNDLE 0") && lines.contains("a=mid:1"))
        #expect(lines.contains { $0.hasPrefix("m=video 0 UDP/TLS/RTP/SAVPF 120") })
    }

    @Test func missingOrUnusableTransportAttributesAreNamed() throws {
        let text = try fixture(Self.chromium)
        func without(_ prefix: String) -> String {
            text.split(separator: "\r\n", omittingEmptySubsequences: false).filter { !$0.hasPrefix(prefix) }
                .joined(separator: "\r\n")
        }
        #expect(throws: WebRTCSDPError.missingAttribute("ice-ufrag")) {
            try WebRTCSessionDescription(parsing: without("a=ice-ufrag"))
        }
        #expect(throws: WebRTCSDPError.missingAttribute("fingerprint")) {
            try WebRTCSessionDescription(parsing: without("a=fingerprint"))
        }
        #expect(throws: WebRTCSDPError.missingAttribute("setup")) {
            try WebRTCSessionDescription(parsing: without("a=setup"))
        }
        let sha1 = text.replacingOccurrences(of: "a=fingerprint:sha-256 21:32", with: "a=fingerprint:sha-1 21:32")
        #expect(throws: WebRTCSDPError.self) { try WebRTCSessionDescription(parsing: sha1) }
    }

    @Test func candidateLinesRoundTrip() throws {
        let c = try #require(
            ICECandidate(
                sdpValue:
                    "candidate:842163049 1 udp 1677729535 203.0.113.7 61000 typ srflx raddr 10.0.0.2 rport 61000 generation 0"
            ))
        #expect(c.kind == .srflx && c.relatedHost == "10.0.0.2" && c.relatedPort == 61000)
        #expect(ICECandidate(sdpValue: c.sdpValue) == c)
        #expect(ICECandidate(sdpValue: "candidate:1 1 udp x 1.2.3.4 5 typ host") == nil)
        #expect(ICECandidate.priority(kind: .host) == 2_130_706_431)
    }
}

@Suite("ICE-lite agent (RFC 8445 §2.5, RFC 7675)")
struct ICELiteAgentTests {
    let browser = ICECredentials(ufrag: "brws", password: "browserpasswordbrowser")
    let engine = ICECredentials(ufrag: "engn", password: "enginepasswordengine12")
    let source = TransportAddress("127.0.0.1", port: 27_020)!

    @Test func answersAnAuthenticCheckAndSelectsTheNominatedPair() throws {
        let agent = ICELiteAgent(local: engine, remote: browser)
        let check = ICELiteAgent.check(from: browser, to: engine, priority: 100, nominate: true)
        let reply = try #require(
            agent.handle(
                check.serialize(integrityKey: STUNMessage.shortTermKey(password: engine.password), fingerprint: true),
                from: source, now: .seconds(1)))
        let response = try STUNMessage(parsing: reply)
        #expect(response.messageClass == .successResponse && response.transactionID == check.transactionID)
        #expect(try response.xorAddress() == source)
        #expect(response.verifyIntegrity(key: STUNMessage.shortTermKey(password: engine.password)))
        #expect(agent.nominated && agent.selectedAddress == source)
        #expect(agent.hasConsent(now: .seconds(30)) && !agent.hasConsent(now: .seconds(31.5)))
    }

    @Test func wrongPasswordGets401AndNoConsent() throws {
        let agent = ICELiteAgent(local: engine, remote: browser)
        let check = ICELiteAgent.check(from: browser, to: engine, priority: 100, nominate: true)
        let reply = try #require(
            agent.handle(
                check.serialize(integrityKey: Array("wrong".utf8), fingerprint: true),
                from: source, now: .seconds(1)))
        #expect(try STUNMessage(parsing: reply).errorCode()?.code == 401)
        #expect(agent.selectedAddress == nil && !agent.hasConsent(now: .seconds(1)) && agent.rejectedChecks == 1)
        #expect(agent.handle([1, 2, 3], from: source, now: .seconds(1)) == nil && agent.rejectedChecks == 2)
    }

    @Test func anICERestartRefusesTheOldCredentialsAndStartsConsentOver() throws {
        let agent = ICELiteAgent(local: engine, remote: browser)
        let key = STUNMessage.shortTermKey(password: engine.password)
        let first = ICELiteAgent.check(from: browser, to: engine, priority: 100, nominate: true)
        _ = agent.handle(first.serialize(integrityKey: key), from: source, now: .seconds(1))
        #expect(agent.nominated)
        let newEngine = ICECredentials.random(), newBrowser = ICECredentials.random()
        agent.restart(local: newEngine, remote: newBrowser)
        #expect(!agent.nominated && !agent.hasConsent(now: .seconds(1)))
        // A check with the old credentials (or with a stranger's ufrag) is refused.
        let stale = ICELiteAgent.check(from: browser, to: engine, priority: 100, nominate: true)
        #expect(
            try STUNMessage(
                parsing: #require(agent.handle(stale.serialize(integrityKey: key), from: source, now: .seconds(2)))
            ).errorCode()?.code == 401)
        let fresh = ICELiteAgent.check(from: newBrowser, to: newEngine, priority: 100, nominate: true)
        let reply = try #require(
            agent.handle(
                fresh.serialize(integrityKey: STUNMessage.shortTermKey(password: newEngine.password)),
                from: source, now: .seconds(2)))
        #expect(try STUNMessage(parsing: reply).messageClass == .successResponse && agent.hasConsent(now: .seconds(2)))
    }

    @Test func aControlledPeerGetsRoleConflict() throws {
        let agent = ICELiteAgent(local: engine, remote: browser)
        var check = ICELiteAgent.check(from: browser, to: engine, priority: 100, nominate: false)
        check.attributes.removeAll { $0.type == STUNAttribute.Kind.iceControlling }
        check.attributes.append(.uint64(STUNAttribute.Kind.iceControlled, 7))
        let reply = try #require(
            agent.handle(
                check.serialize(integrityKey: STUNMessage.shortTermKey(password: engine.password)),
                from: source, now: .zero))
        #expect(try STUNMessage(parsing: reply).errorCode()?.code == 487)
    }
}
