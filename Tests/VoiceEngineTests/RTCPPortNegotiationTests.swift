import Foundation
import Testing
import VoiceEngine
import VoiceTestSupport

/// Where RTCP goes when it is not multiplexed (RFC 3550 §11, RFC 3605 `a=rtcp:`, RFC 5761 §5.1.3): what offers and
/// answers say, which remote RTCP port each side picks, and the transport's separate RTCP socket on loopback.
@Suite(.tags(.live), .scheduledByTags) struct RTCPPortNegotiationTests {
    static func caps(port: Int, rtcpMux: Bool = true, rtcpPort: Int? = nil) -> AudioCapabilities {
        AudioCapabilities(
            address: "127.0.0.1", port: port, srtp: .required([.aesCM128HmacSHA1_80]), rtcpMux: rtcpMux,
            rtcpPort: rtcpPort)
    }

    /// Offer, answer and both sides' outcomes, each description through its SDP text.
    static func exchange(_ offerer: AudioCapabilities, _ answerer: AudioCapabilities) throws
        -> (offer: SessionDescription, answer: SessionDescription, offered: NegotiatedAudio, answered: NegotiatedAudio)
    {
        let offer = SessionDescription.makeOffer(offerer)
        let (answer, answered) = try SessionDescription.makeAnswer(
            to: try SessionDescription(parsing: offer.serialize()), localCapabilities: answerer)
        let offered = try offer.negotiate(
            answer: try SessionDescription(parsing: answer.serialize()), localCapabilities: offerer)
        return (offer, answer, offered, answered)
    }

    static func audioLines(_ description: SessionDescription) -> [Substring] {
        description.serialize().split(separator: "\r\n").filter { $0.hasPrefix("a=rtcp") }
    }

    @Test func rtcpAttributeIsParsedWithAndWithoutAnAddress() throws {
        for line in ["a=rtcp:53020", "a=rtcp:53020 IN IP4 126.16.64.4"] {
            let text =
                "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
                + "m=audio 49170 RTP/AVP 111\r\na=rtpmap:111 opus/48000/2\r\n\(line)\r\n"
            let parsed = try SessionDescription(parsing: text)
            #expect(parsed.audio.rtcpPort == 53020 && !parsed.audio.rtcpMux, "\(line)")
        }
        #expect(throws: SDPError.self) {
            try SessionDescription(
                parsing: "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
                    + "m=audio 49170 RTP/AVP 111\r\na=rtpmap:111 opus/48000/2\r\na=rtcp:70000\r\n")
        }
    }

    /// An offer announces its RTCP port next to `a=rtcp-mux`: a peer that does not multiplex sends there.
    @Test func offerAnnouncesItsRTCPPortEvenWithMux() throws {
        let offer = SessionDescription.makeOffer(Self.caps(port: 40000, rtcpPort: 40007))
        #expect(Self.audioLines(offer) == ["a=rtcp-mux", "a=rtcp:40007"])
        let parsed = try SessionDescription(parsing: offer.serialize())
        #expect(parsed.audio.rtcpMux && parsed.audio.rtcpPort == 40007)
        #expect(Self.audioLines(SessionDescription.makeOffer(Self.caps(port: 40000))) == ["a=rtcp-mux"])
    }

    /// Both sides multiplex: one port, no `a=rtcp:` in the answer, RTCP to the RTP port.
    @Test func muxOnBothSidesKeepsOnePort() throws {
        let (_, answer, offered, answered) = try Self.exchange(
            Self.caps(port: 40000, rtcpPort: 40007), Self.caps(port: 50000, rtcpPort: 50001))
        #expect(Self.audioLines(answer) == ["a=rtcp-mux"])
        #expect(answered.rtcpMux && offered.rtcpMux)
        #expect(answered.remoteRTCPPort == 40000 && offered.remoteRTCPPort == 50000)
    }

    /// The answerer does not multiplex: its answer names its RTCP port, the offerer sends RTCP there and the
    /// answerer sends to the port the offer announced.
    @Test func answerWithoutMuxSaysWhereItsRTCPIs() throws {
        let (_, answer, offered, answered) = try Self.exchange(
            Self.caps(port: 40000, rtcpPort: 40007), Self.caps(port: 50000, rtcpMux: false, rtcpPort: 50003))
        #expect(Self.audioLines(answer) == ["a=rtcp:50003"])
        #expect(!answered.rtcpMux && !offered.rtcpMux)
        #expect(answered.remoteRTCPPort == 40007 && offered.remoteRTCPPort == 50003)
    }

    /// Without `a=rtcp:` the RTCP port is the RTP port + 1 (RFC 3550 §11), as baresip and most phones expect.
    @Test func withoutAnAttributeRTCPIsOnTheNextPort() throws {
        let (offer, answer, offered, answered) = try Self.exchange(
            Self.caps(port: 40000, rtcpMux: false), Self.caps(port: 50000))
        #expect(Self.audioLines(offer).isEmpty)
        #expect(Self.audioLines(answer).isEmpty, "an answer without mux and without its own RTCP port says nothing")
        #expect(answered.remoteRTCPPort == 40001 && offered.remoteRTCPPort == 50001)
    }

    /// The transport's RTCP socket: a non-multiplexed negotiation sends RTCP from it to the peer's RTCP port, RTP
    /// still from the RTP socket to the RTP port, and what arrives on it comes out as RTCP.
    @Test func transportSendsAndReceivesRTCPOnItsOwnPort() async throws {
        let ours = try await UDPMediaTransport.bind(
            host: "127.0.0.1", configuration: UDPMediaTransport.Configuration(receive: .consumerPolls))
        let peerRTP = try await UDPMediaTransport.bind(
            host: "127.0.0.1", configuration: UDPMediaTransport.Configuration(receive: .consumerPolls))
        let peerRTCP = try await UDPMediaTransport.bind(
            host: "127.0.0.1", configuration: UDPMediaTransport.Configuration(receive: .consumerPolls))
        defer {
            Task {
                await ours.close()
                await peerRTP.close()
                await peerRTCP.close()
            }
        }
        var negotiated = try SessionDescription.makeAnswer(
            to: SessionDescription.makeOffer(
                Self.caps(
                    port: Int(peerRTP.localEndpoint.port), rtcpMux: false,
                    rtcpPort: Int(peerRTCP.localEndpoint.port))),
            localCapabilities: Self.caps(port: Int(ours.localEndpoint.port))
        ).negotiated
        #expect(!negotiated.rtcpMux)
        try ours.setRemote(negotiated: negotiated)
        let rtcpEndpoint = try #require(ours.rtcpEndpoint)
        #expect(rtcpEndpoint.port == ours.localEndpoint.port + 1)
        #expect(ours.remoteRTCP == peerRTCP.localEndpoint)

        // A receiver report (RFC 3550 §6.4.2, no blocks) and an RTP header: each to its own port.
        let report: [UInt8] = [0x80, 201, 0, 1, 0, 0, 0, 7]
        let rtp: [UInt8] = [0x80, 111, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9]
        report.withUnsafeBytes { #expect(ours.send($0, kind: .rtcp) == .sent) }
        rtp.withUnsafeBytes { #expect(ours.send($0, kind: .rtp) == .sent) }
        #expect(await Self.eventually { peerRTCP.receiveFromSocket() > 0 || peerRTCP.pendingPackets(.rtcp) > 0 })
        #expect(peerRTCP.withNextPacket(.rtcp) { $0.source } == rtcpEndpoint)
        #expect(await Self.eventually { peerRTP.receiveFromSocket() > 0 || peerRTP.pendingPackets(.rtp) > 0 })
        #expect(peerRTP.withNextPacket(.rtp) { $0.source } == ours.localEndpoint)
        #expect(peerRTP.pendingPackets(.rtcp) == 0)

        // The peer's report to our RTCP port comes out of our transport as RTCP and latches only RTCP.
        report.withUnsafeBytes { #expect(peerRTCP.send($0, to: rtcpEndpoint) == .sent) }
        #expect(await Self.eventually { ours.receiveFromSocket() > 0 || ours.pendingPackets(.rtcp) > 0 })
        let source = try #require(ours.withNextPacket(.rtcp) { $0.source })
        #expect(source == peerRTCP.localEndpoint)
        ours.latchRemote(to: source, for: .rtcp)
        #expect(ours.remote == peerRTP.localEndpoint, "RTCP from the RTCP port must not move RTP")
        #expect(ours.rtcpCounters?.receivedRTCP == 1 && ours.rtcpCounters?.sent == 1)

        // A re-negotiation that leaves the peer's RTCP port keeps a latched destination; one that moves it (a new
        // a=rtcp:) sends RTCP to the new port.
        let latchedElsewhere = try UDPEndpoint(host: "127.0.0.1", port: Int(peerRTP.localEndpoint.port))
        ours.latchRemote(to: latchedElsewhere, for: .rtcp)
        try ours.followRenegotiation(negotiated)
        #expect(ours.remoteRTCP == latchedElsewhere, "an unchanged a=rtcp: must not undo the latch")
        var moved = negotiated
        moved.remoteRTCPPort = Int(peerRTP.localEndpoint.port) + 7
        try ours.followRenegotiation(moved)
        #expect(ours.remoteRTCP?.port == UInt16(moved.remoteRTCPPort))

        // With mux negotiated no RTCP socket is bound and RTCP goes where RTP goes.
        negotiated.rtcpMux = true
        let muxed = try await UDPMediaTransport.bind(host: "127.0.0.1")
        defer { Task { await muxed.close() } }
        try muxed.setRemote(negotiated: negotiated)
        #expect(muxed.rtcpEndpoint == nil && muxed.remoteRTCP == nil)
    }

    static func eventually(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<100 {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }
}
