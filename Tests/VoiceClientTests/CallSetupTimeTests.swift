import Foundation
import NIOCore
import NIOPosix
import Testing
import VoiceSIP
import VoiceTestSupport
import VoiceWebRTC

@testable import VoiceClient

/// Call setup time on loopback, from the INVITE to the caller's first authenticated RTP from the callee (the live
/// call's `established`: received RTP that passed SRTP, decoded on the next tick), for the three ways a client call
/// can be keyed and connected: SDES-SRTP, DTLS-SRTP, and DTLS-SRTP after ICE checks. Two user agents call each other
/// directly (no proxy) with the client's own media binding and `SIPCallMedia`; null devices. With ICE, media goes
/// where the checks found the peer, not to the SDP's c=/m= address.
@Suite("Client call setup time", .tags(.live, .slow), .scheduledByTags, .serialized, .timeLimit(.minutes(1)))
struct CallSetupTimeTests {
    enum Keying: String, CaseIterable, Sendable { case sdes, dtls, dtlsWithICE }

    static let calls = 5

    /// The caller's and the callee's media: the client's binding, reduced to what `keying` uses. With `relay` (a
    /// TURN server) each side gathers only its relayed candidate (`relayOnly`), so the call connects through the
    /// relay: with host candidates kept out of the SDP alone, a check from a host would reach the peer's relay
    /// and let the pair found be that host, a peer-reflexive candidate.
    static func bind(_ keying: Keying, role: ICEAgent.Role, relay: TURNServer? = nil) async throws
        -> CallLink.BoundMedia
    {
        let media = try await CallLink.bindMedia(
            host: "127.0.0.1", signallingEncrypted: keying == .sdes, iceRole: role,
            turnServers: relay.map { [$0] } ?? [], relayOnly: relay != nil)
        var capabilities = media.capabilities
        if keying == .sdes { capabilities.dtlsFingerprint = nil }
        if keying != .dtlsWithICE { capabilities.ice = nil }
        return CallLink.BoundMedia(
            transport: media.transport, capabilities: capabilities, certificate: media.certificate, ice: media.ice)
    }

    static let devices = CallAudioDevices(
        microphone: "null", speaker: "null", sampleRate: 16_000, voiceProcessing: false)

    /// One call: dial, answer, both media started; returns the time from the INVITE to the caller's first
    /// authenticated RTP, how the call was keyed, and where the caller's media went and the callee's media port
    /// is. `rewrite` changes what the caller takes from the answer before its media starts.
    static func oneCall(
        _ keying: Keying, caller: SIPUserAgent, callee: SIPUserAgent, relay: TURNServer? = nil,
        rewrite: (inout NegotiatedAudio) -> Void = { _ in }
    ) async throws -> (time: Duration, negotiated: NegotiatedAudio, sentTo: UDPEndpoint?, calleePort: UDPEndpoint) {
        let calleeMedia = try await bind(keying, role: .controlled, relay: relay)
        let answering = Task { () -> SIPCallMedia? in
            for await incoming in callee.incomingCalls {
                let negotiated = try await incoming.answer(with: calleeMedia.capabilities)
                return try await SIPCallMedia.start(
                    negotiated: negotiated, callID: CallID(incoming.callID), transport: calleeMedia.transport,
                    certificate: calleeMedia.certificate, ice: calleeMedia.ice, devices: devices)
            }
            return nil
        }
        let callerMedia = try await bind(keying, role: .controlling, relay: relay)
        let port = try #require(await callee.endpoint.localAddress(.udp)?.port)
        let started = ContinuousClock.now
        let call = try await caller.call(
            SIPURI(user: "callee", host: "127.0.0.1", port: port), offering: callerMedia.capabilities)
        var media = try #require(await answeredMedia(of: call), "the call was not answered")
        rewrite(&media)
        let live = try await SIPCallMedia.start(
            negotiated: media, callID: CallID(call.callID), transport: callerMedia.transport,
            certificate: callerMedia.certificate, ice: callerMedia.ice, devices: devices)
        #expect(
            (live.ice?.selectedPair != nil) == (keying == .dtlsWithICE),
            "\(keying): ICE selected \(live.ice?.selectedPair.map { "\($0.remote)" } ?? "no pair")")
        if relay != nil {
            // Both sides have only their relayed candidate: the pair found joins the two relays.
            let kinds = live.ice?.selectedPairKinds
            #expect(
                kinds.map { [$0.local, $0.remote] } == [.relay, .relay],
                "the pair found is \(kinds.map { "\($0)" } ?? "none")")
        }
        var flowing: Duration?
        for await event in live.live.events {
            if case .established = event {
                flowing = ContinuousClock.now - started
                break
            }
        }
        let sentTo = callerMedia.transport.remote
        _ = await live.stop(cause: .localHangup)
        _ = await (try await answering.value)?.stop(cause: .remoteHangup)
        await call.hangUp()
        await callerMedia.transport.close()
        await calleeMedia.transport.close()
        return (try #require(flowing, "media did not flow"), media, sentTo, calleeMedia.transport.localEndpoint)
    }

    @Test func withICETheMediaGoesToTheSelectedPairNotToTheSDPAddress() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let caller = try await loopbackAgent("caller", on: group.next())
        let callee = try await loopbackAgent("callee", on: group.next())
        // The answer's c=/m= point at the discard port, where nothing answers: only the ICE candidates are right.
        let call = try await Self.oneCall(.dtlsWithICE, caller: caller, callee: callee) { answer in
            answer.remotePort = 9
            answer.remoteRTCPPort = 9
        }
        #expect(call.negotiated.remotePort == 9)
        // The callee's socket is bound to every interface: the pair found names one of them, on its port.
        #expect(
            call.sentTo?.port == call.calleePort.port, "the caller sent to \(call.sentTo.map { "\($0)" } ?? "nowhere")")
        try await caller.endpoint.close()
        try await callee.endpoint.close()
        try await group.shutdownGracefully()
    }

    @Test func setupTimeOfEachKeying() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let caller = try await loopbackAgent("caller", on: group.next())
        let callee = try await loopbackAgent("callee", on: group.next())
        var report: [String] = []
        for keying in Keying.allCases {
            var times: [Duration] = []
            for _ in 0..<Self.calls {
                let (time, negotiated, _, _) = try await Self.oneCall(keying, caller: caller, callee: callee)
                #expect((negotiated.dtls != nil) == (keying != .sdes), "\(keying) negotiated \(negotiated)")
                #expect((negotiated.remoteICE != nil) == (keying == .dtlsWithICE), "\(keying): ICE \(negotiated)")
                times.append(time)
            }
            times.sort()
            let median = times[times.count / 2]
            report.append("\(keying.rawValue): median \(median), min \(times[0]), max \(times[times.count - 1])")
            #expect(median < .seconds(3), "\(keying) took \(median) to set up on loopback")
        }
        print(
            "client call setup (INVITE → first authenticated RTP at the caller), \(Self.calls) calls each on loopback:")
        for line in report { print("  " + line) }
        try await caller.endpoint.close()
        try await callee.endpoint.close()
        try await group.shutdownGracefully()
    }
}

/// Call setup time through coturn on loopback (port 28678, relay ports 28700–28799, this suite's): both sides
/// offer only their relayed candidate, so the checks, the DTLS handshake and the media cross the relay.
@Suite(
    "Client call setup time through a TURN relay", .tags(.live, .slow, .interop), .scheduledByTags, .serialized,
    .timeLimit(.minutes(1)),
    .enabled(if: TURNServerProcess.isInstalled, "coturn is not installed (make test-deps installs it)"))
struct RelayedCallSetupTimeTests {
    @Test func setupTimeThroughTheRelay() async throws {
        let secret = "relayed-setup-secret"
        let server = try TURNServerProcess(port: 28678, relayPorts: 28700...28799, secret: secret)
        defer { server.stop() }
        try #require(await server.waitUntilListening(), "coturn did not start: \(server.logTail)")
        let relay = TURNServer(
            address: TransportAddress("127.0.0.1", port: 28678)!,
            credentials: .restAPI(secret: secret, user: "setup"))
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let caller = try await loopbackAgent("caller", on: group.next())
        let callee = try await loopbackAgent("callee", on: group.next())
        var times: [Duration] = []
        for _ in 0..<CallSetupTimeTests.calls {
            let (time, negotiated, sentTo, calleePort) = try await CallSetupTimeTests.oneCall(
                .dtlsWithICE, caller: caller, callee: callee, relay: relay)
            #expect(negotiated.remoteICE?.candidates.allSatisfy { $0.contains(" typ relay") } == true)
            #expect(sentTo?.port != calleePort.port, "media went straight to the callee's port")
            times.append(time)
        }
        times.sort()
        let median = times[times.count / 2]
        print(
            "client call setup through the relay (INVITE → first authenticated RTP at the caller), "
                + "\(CallSetupTimeTests.calls) calls on loopback: median \(median), min \(times[0]), max \(times.last!)"
        )
        #expect(median < .seconds(3), "\(median) to set up through the relay on loopback")
        try await caller.endpoint.close()
        try await callee.endpoint.close()
        try await group.shutdownGracefully()
    }
}

/// A user agent on a loopback UDP port of its own, calling peers directly (no proxy, no credentials).
func loopbackAgent(_ user: String, on loop: any EventLoop) async throws -> SIPUserAgent {
    let endpoint = try await SIPEndpoint.start(on: loop, udp: try SocketAddress(ipAddress: "127.0.0.1", port: 0))
    return SIPUserAgent(
        endpoint: endpoint, credentials: nil,
        configuration: SIPUserAgentConfiguration(addressOfRecord: SIPURI(user: user, host: "127.0.0.1")))
}

/// What the answer to `call`'s offer negotiated; nil when the call ended unanswered.
func answeredMedia(of call: SIPCall) async -> NegotiatedAudio? {
    for await event in call.events {
        switch event {
        case .established(let media, _): return media
        case .ended: return nil
        default: continue
        }
    }
    return nil
}
