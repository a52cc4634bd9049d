import Foundation
import NIOPosix
import Testing
import VoiceSIP
import VoiceTestSupport
import VoiceWebRTC

@testable import VoiceClient

/// A call's RTCP when the peer does not multiplex it: keyed by a DTLS-SRTP handshake of its own on the RTCP port
/// (RFC 5764 §4.1) with Debian's baresip (`dtls_srtp`, `rtcp_mux no`), and following a re-INVITE that moves the
/// peer's RTCP port. A user agent on loopback with the client's call media (`CallLink.bindMedia`,
/// `SIPCallMedia`); baresip's SIP on 26_180.
@Suite(
    "VoiceClient call RTCP without rtcp-mux", .tags(.interop, .live), .scheduledByTags, .serialized,
    .timeLimit(.minutes(2)))
struct ClientRTCPPortTests {
    /// RFC 3550's minimum report interval is 5 s (the first report after half of it): in 9 s both sides have sent
    /// reports and answered the other's.
    static let seconds = 9

    @Test(.enabled(if: BaresipPeer.isInstalled, "baresip is not installed (make test-deps installs it)"))
    func dtlsSRTPWithoutMuxKeysTheRTCPPortByItsOwnHandshakeAndGetsRoundTripTimes() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "client-rtcp-dtls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let port = 26_180
        let microphone = try BaresipPeer.repeated(Self.speechOrSilence(in: directory), seconds: 30, into: directory)
        let arguments = try BaresipPeer.configure(
            directory: directory, port: port, microphone: microphone, mediaEncryption: "dtls_srtp", rtcpMux: false)
        let baresip = try ChildProcessGroup(
            BaresipPeer.executable, arguments, log: directory.appendingPathComponent("baresip.log"))
        defer { baresip.stop() }
        guard await waitUntilUDPBound(port) else { try Test.cancel("baresip did not start:\n\(baresip.logTail)") }

        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let agent = try await loopbackAgent("alice", on: group.next())
        let media = try await CallLink.bindMedia(host: "127.0.0.1", signallingEncrypted: false, iceRole: .controlling)
        let call = try await agent.call(SIPURI(user: "b", host: "127.0.0.1", port: port), offering: media.capabilities)
        let answer = try #require(await answeredMedia(of: call), "baresip did not answer:\n\(baresip.logTail)")
        #expect(answer.dtls != nil && !answer.rtcpMux, "baresip (dtls_srtp, rtcp_mux no) answered \(answer)")
        let live = try await SIPCallMedia.start(
            negotiated: answer, callID: CallID(call.callID), transport: media.transport,
            certificate: media.certificate, ice: media.ice,
            devices: CallAudioDevices(microphone: "null", speaker: "null", sampleRate: 16_000, voiceProcessing: false))
        try await Task.sleep(for: .seconds(Self.seconds))
        let result = await live.stop(cause: .localHangup)
        let counters = media.transport.rtcpCounters
        await call.hangUp()
        await media.transport.close()
        try await agent.endpoint.close()
        try await group.shutdownGracefully()

        let rtcp = result.report.rtcp
        print(
            "DTLS-SRTP without rtcp-mux: RTCP sent \(rtcp.sent), received \(rtcp.received), answering ours \(rtcp.senderReportsAnswered), RTT \(result.report.rtt), drops \(result.report.drops.counts), RTCP port \(counters.map { "\($0)" } ?? "none")"
        )
        #expect(result.wasEstablished, "media did not flow both ways: \(result.statistics)")
        #expect(media.transport.remoteRTCP?.port == UInt16(answer.remoteRTCPPort))
        // baresip drops SRTCP it cannot authenticate with its RTCP component's keys: an answered sender report
        // proves ours reached its RTCP port keyed by the second handshake.
        #expect(
            rtcp.received > 0, "no report of baresip's was accepted on the RTCP port: \(String(describing: counters))")
        #expect(rtcp.senderReportsAnswered > 0, "baresip's reports do not answer ours: they did not reach it")
        #expect(result.report.rtt.samples > 0, "no round-trip time from baresip's reports")
        #expect(result.report.drops.counts.rtcpAuthenticationFailed == 0, "\(result.report.drops.counts)")
        #expect((counters?.receivedRTCP ?? 0) > 0 && result.transport.receivedRTCP == 0, "RTCP arrived on the RTP port")
    }

    /// A re-INVITE from the peer announcing another RTCP port (`a=rtcp:`): our reports go there from then on.
    /// Two user agents on loopback keyed by SDES: the answerer runs the client's call media (`SIPCallMedia`), the
    /// offerer's two RTCP ports are sockets that only see what arrives.
    @Test func aReINVITEThatMovesThePeersRTCPPortMovesOurReports() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let bob = try await loopbackAgent("bob", on: loop)
        let alice = try await loopbackAgent("alice", on: loop)
        let bobMedia = try await UDPMediaTransport.bind(
            host: "127.0.0.1", configuration: UDPMediaTransport.Configuration(receive: .consumerPolls))
        let firstRTCP = try await UDPMediaTransport.bind(
            host: "127.0.0.1", configuration: UDPMediaTransport.Configuration(receive: .consumerPolls))
        let movedRTCP = try await UDPMediaTransport.bind(
            host: "127.0.0.1", configuration: UDPMediaTransport.Configuration(receive: .consumerPolls))
        let aliceMedia = try await UDPMediaTransport.bind(
            host: "127.0.0.1", configuration: UDPMediaTransport.Configuration(receive: .consumerPolls))
        let bobCapabilities = AudioCapabilities(
            address: "127.0.0.1", port: Int(bobMedia.localEndpoint.port), rtcpMux: false,
            rtcpPort: Int(firstRTCP.localEndpoint.port))
        let incoming = Task { () -> (SIPCall, NegotiatedAudio)? in
            for await call in alice.incomingCalls {
                let answered = try await call.answer(
                    with: AudioCapabilities(
                        address: "127.0.0.1", port: Int(aliceMedia.localEndpoint.port), rtcpMux: false))
                return (call, answered)
            }
            return nil
        }
        let alicePort = try #require(await alice.endpoint.localAddress(.udp)?.port)
        let call = try await bob.call(
            SIPURI(user: "alice", host: "127.0.0.1", port: alicePort), offering: bobCapabilities)
        let (aliceCall, answered) = try #require(try await incoming.value)
        #expect(!answered.rtcpMux && answered.remoteRTCPPort == Int(firstRTCP.localEndpoint.port))
        let live = try SIPCallMedia(
            negotiated: answered, callID: CallID(aliceCall.callID), transport: aliceMedia,
            devices: CallAudioDevices(microphone: "null", speaker: "null", sampleRate: 16_000, voiceProcessing: false))
        let updates = Task {
            for await event in aliceCall.events {
                if case .mediaUpdated(let media, _) = event { try? live.update(media) }
            }
        }
        // Until the re-INVITE, alice's reports arrive at the first RTCP port.
        #expect(await Self.receivesRTCP(firstRTCP, within: .seconds(8)), "no report at the first RTCP port")

        var moved = bobCapabilities
        moved.rtcpPort = Int(movedRTCP.localEndpoint.port)
        let renegotiated = try await call.reoffer(direction: nil, freshKeys: false, offering: moved)
        #expect(!renegotiated.rtcpMux)
        #expect(await Self.receivesRTCP(movedRTCP, within: .seconds(8)), "alice's reports did not follow the re-INVITE")
        #expect(aliceMedia.remoteRTCP == movedRTCP.localEndpoint)

        _ = await live.stop(cause: .localHangup)
        await call.hangUp()
        updates.cancel()
        for transport in [bobMedia, firstRTCP, movedRTCP, aliceMedia] { await transport.close() }
        try await bob.endpoint.close()
        try await alice.endpoint.close()
        try await group.shutdownGracefully()
    }

    /// Whether an RTCP datagram arrives at `transport` within `timeout`.
    static func receivesRTCP(_ transport: UDPMediaTransport, within timeout: Duration) async -> Bool {
        transport.discardPending(.rtcp)
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            transport.receiveFromSocket()
            if transport.pendingPackets(.rtcp) > 0 { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    /// The shared speech recording as baresip's microphone, or a second of silence without it.
    static func speechOrSilence(in directory: URL) throws -> String {
        if SharedTestData.isPresent { return SharedTestData.speech + "/pjsip_input_16k.wav" }
        let path = directory.appendingPathComponent("silence.wav").path
        try WAVFile.write(
            pcm16: [Int16](repeating: 0, count: 16_000), format: AudioFormat(sampleRate: 16_000, channels: 1), to: path)
        return path
    }
}
