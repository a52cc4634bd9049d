import Foundation
import Testing
import VoiceEngine
import VoiceTestSupport
import VoiceWebRTC

/// ICE on a SIP call's media port with coturn (this suite's, on loopback port 28478, relay ports 28500–28599):
/// the port gathers its relayed candidate over the media socket itself, connects through the relay and the
/// transport then carries media as ChannelData; refused credentials come back as the server's typed refusal.
@Suite(
    "ICE on a media port through coturn", .tags(.interop, .live), .scheduledByTags, .serialized,
    .timeLimit(.minutes(1)),
    .enabled(if: TURNServerProcess.isInstalled, "coturn is not installed (make test-deps installs it)"))
struct ICEMediaPortRelayTests {
    static let secret = "ice-media-port-relay-secret"
    static let address = TransportAddress("127.0.0.1", port: 28478)!

    static func startServer() async throws -> TURNServerProcess {
        let server = try TURNServerProcess(port: address.port, relayPorts: 28500...28599, secret: secret)
        guard await server.waitUntilListening() else {
            server.stop()
            throw TURNServerStartFailure(log: server.logTail)
        }
        return server
    }

    static func turn(_ user: String, secret: String = secret) -> TURNServer {
        TURNServer(address: address, credentials: .restAPI(secret: secret, user: user))
    }

    /// Without host candidates (and with a server-reflexive address equal to the host one on loopback) each port
    /// has only its relayed candidate: the pair found is relay to relay, and media crosses the relay both ways.
    @Test func portsWithOnlyRelayedCandidatesConnectThroughTheRelayAndCarryMediaAsChannelData() async throws {
        let server = try await Self.startServer()
        defer { server.stop() }
        let a = try await ICEMediaPortTests.bindPolled(), b = try await ICEMediaPortTests.bindPolled()
        let controlling = ICEMediaPort(transport: a, role: .controlling, hosts: [])
        let controlled = ICEMediaPort(transport: b, role: .controlled, hosts: [])
        #expect(await controlling.gather(turn: Self.turn("alice")) == [])
        #expect(await controlled.gather(turn: Self.turn("bob")) == [])
        let relayA = try #require(controlling.localCandidates.first?.address)
        let relayB = try #require(controlled.localCandidates.first?.address)
        #expect(
            controlling.localCandidates.map(\.kind) == [.relay] && controlled.localCandidates.map(\.kind) == [.relay])
        #expect(controlling.sdp.candidates.count == 1 && controlling.sdp.candidates[0].contains("typ relay"))
        #expect(relayA.port != a.localEndpoint.port && (28500...28599).contains(Int(relayA.port)))

        async let fromA = controlling.connect(to: controlled.sdp, timeout: .seconds(8))
        async let fromB = controlled.connect(to: controlling.sdp, timeout: .seconds(8))
        let (selectedByA, selectedByB) = await (fromA, fromB)
        let endpointA = try UDPEndpoint(host: relayA.host, port: Int(relayA.port))
        let endpointB = try UDPEndpoint(host: relayB.host, port: Int(relayB.port))
        #expect(selectedByA == .success(endpointB), "\(selectedByA)")
        #expect(selectedByB == .success(endpointA), "\(selectedByB)")
        #expect(controlling.selectedPairIsRelayed && controlled.selectedPairIsRelayed)
        #expect(controlling.selectedPairKinds.map { [$0.local, $0.remote] } == [.relay, .relay])
        #expect(a.relayedPeer?.peer == endpointB && b.relayedPeer?.peer == endpointA)

        // An RTP packet each way: sent to the peer's relayed address, it leaves as ChannelData to the server and
        // arrives from the peer's relayed address.
        for (from, to, source) in [(a, b, endpointA), (b, a, endpointB)] {
            let rtp = ICEMediaPortTests.rtp
            #expect(rtp.withUnsafeBytes { from.send($0, to: to === b ? endpointB : endpointA) } == .sent)
            let arrived = try await ICEMediaPortTests.sourceOfRTP(arrivingAt: to)
            #expect(arrived == source, "the relayed RTP arrived from \(arrived.map { "\($0)" } ?? "nowhere")")
        }
        #expect(a.relayedDatagrams.sent >= 1 && a.relayedDatagrams.received >= 1, "\(a.relayedDatagrams)")
        #expect(b.relayedDatagrams.sent >= 1 && b.relayedDatagrams.received >= 1, "\(b.relayedDatagrams)")
        controlling.stop()
        controlled.stop()
        #expect(a.relayedPeer == nil, "stop() leaves the transport relaying")
        await a.close()
        await b.close()
    }

    /// Credentials made with another secret: coturn answers the authenticated Allocate with 401, which the
    /// gathering returns as such; the port keeps its host candidate and has no relayed one.
    @Test func refusedCredentialsComeBackAsTheServersRefusal() async throws {
        let server = try await Self.startServer()
        defer { server.stop() }
        let a = try await ICEMediaPortTests.bindPolled()
        let port = ICEMediaPort(transport: a, role: .controlling)
        let failures = await port.gather(turn: Self.turn("mallory", secret: "not-the-shared-secret"))
        guard case .rejected(let code, let reason)? = failures.first, failures.count == 1 else {
            Issue.record("expected one refusal, got \(failures)")
            return
        }
        #expect(code == 401, "\(code) \(reason)")
        #expect(port.localCandidates.map(\.kind) == [.host])
        port.stop()
        await a.close()
    }
}

struct TURNServerStartFailure: Error, CustomStringConvertible {
    let log: String
    var description: String { "coturn did not start:\n\(log)" }
}
