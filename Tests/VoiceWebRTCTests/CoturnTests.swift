import Foundation
import Testing
@testable import VoiceWebRTC
import VoiceTestSupport

let turnserverPath = "/usr/bin/turnserver"

/// coturn on loopback (port 27478, relay ports 27500–27599, this suite's), started by the test with the TURN REST
/// API's shared secret (`use-auth-secret`), loopback peers allowed; stopped (and waited for) when the test ends.
final class Coturn: @unchecked Sendable {
    static let port: UInt16 = 27478
    static let secret = "voiceengine-test-secret"
    let process = Process()
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "voiceengine-coturn-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let log = directory.appendingPathComponent("turnserver.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process.executableURL = URL(fileURLWithPath: turnserverPath)
        process.arguments = [
            "-n", "--listening-ip=127.0.0.1", "--listening-port=\(Self.port)", "--relay-ip=127.0.0.1",
            "--min-port=27500", "--max-port=27599", "--use-auth-secret", "--static-auth-secret=\(Self.secret)",
            "--realm=voiceengine.test", "--no-tls", "--no-dtls", "--no-cli", "--no-tcp-relay", "--fingerprint",
            "--allow-loopback-peers", "--log-file=stdout", "--simple-log", "--pidfile=\(directory.path)/turn.pid"
        ]
        let handle = try FileHandle(forWritingTo: log)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
    }

    var log: String {
        (try? String(contentsOf: directory.appendingPathComponent("turnserver.log"), encoding: .utf8)) ?? ""
    }

    func stop() {
        // coturn takes seconds to wind down on SIGTERM; it keeps no state worth a clean shutdown here.
        stopPeer(process, grace: 0.5)
        try? FileManager.default.removeItem(at: directory)
    }
}

@Suite(
    "TURN against coturn (RFC 8656, TURN REST credentials)", .tags(.interop, .live), .scheduledByTags, .serialized,
    .timeLimit(.minutes(1)),
    .enabled(
        if: FileManager.default.isExecutableFile(atPath: turnserverPath),
        "coturn is not installed (make test-deps installs it)"))
struct CoturnTests {
    let server = TransportAddress("127.0.0.1", port: Coturn.port)!

    /// Waits until coturn answers an Allocate (it takes a moment to bind).
    func client(_ credentials: TURNCredentials) throws -> TURNClient {
        TURNClient(
            socket: try DatagramSocket(bind: TransportAddress("127.0.0.1", port: 0)!), server: server,
            credentials: credentials)
    }

    @Test func allocatesARelayAndCarriesDataBothWays() throws {
        let coturn = try Coturn()
        defer { coturn.stop() }
        Thread.sleep(forTimeInterval: 0.5)
        let turn = try client(.restAPI(secret: Coturn.secret, user: "alice"))
        let relayed: TransportAddress
        do { relayed = try turn.allocate(timeout: .seconds(5)) } catch {
            Issue.record("Allocate failed: \(error); coturn log:\n\(coturn.log.suffix(1500))")
            return
        }
        #expect(relayed.host == "127.0.0.1" && (27500...27599).contains(relayed.port))
        #expect(turn.mappedAddress == turn.socket.localAddress && turn.lifetime > 0)

        // A peer on loopback exchanges datagrams with the client through the relay only.
        let peer = try DatagramSocket(bind: TransportAddress("127.0.0.1", port: 0)!)
        try turn.createPermission(for: peer.localAddress)
        turn.send(Array("hello through the relay".utf8), to: peer.localAddress)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 8)
        defer { buffer.deallocate() }
        let got = try #require(peer.receive(into: buffer, timeoutMilliseconds: 2000))
        #expect(got.from == relayed, "the peer must see the relayed address, not the client's")
        #expect(Array(buffer[0..<got.count]) == Array("hello through the relay".utf8))
        peer.send(Array("and back".utf8), to: relayed)
        let back = try #require(turn.receiveData(timeoutMilliseconds: 2000))
        #expect(back.peer == peer.localAddress && back.data == Array("and back".utf8))
    }

    @Test func bindingReturnsTheServerReflexiveAddress() throws {
        let coturn = try Coturn()
        defer { coturn.stop() }
        Thread.sleep(forTimeInterval: 0.5)
        let turn = try client(.restAPI(secret: Coturn.secret, user: "alice"))
        #expect(try turn.bindingAddress(timeout: .seconds(5)) == turn.socket.localAddress)
    }

    @Test func wrongSecretIsATyped401() throws {
        let coturn = try Coturn()
        defer { coturn.stop() }
        Thread.sleep(forTimeInterval: 0.5)
        let turn = try client(.restAPI(secret: "not-the-secret", user: "mallory"))
        #expect(throws: TURNError.rejected(code: 401, reason: "Unauthorized")) {
            try turn.allocate(timeout: .seconds(5))
        }
    }

    @Test func expiredCredentialsAreRefused() throws {
        let coturn = try Coturn()
        defer { coturn.stop() }
        Thread.sleep(forTimeInterval: 0.5)
        let turn = try client(.restAPI(secret: Coturn.secret, user: "alice", validFor: -60))
        #expect(throws: TURNError.self) { try turn.allocate(timeout: .seconds(5)) }
    }

    /// The non-blocking refreshes a running transport sends: Refresh of the allocation and CreatePermission for
    /// each permitted peer, signed with the nonce held; coturn must accept every one.
    @Test func refreshesTheAllocationAndPermissionsWithoutBlocking() throws {
        let coturn = try Coturn()
        defer { coturn.stop() }
        Thread.sleep(forTimeInterval: 0.5)
        let turn = try client(.restAPI(secret: Coturn.secret, user: "alice"))
        try turn.allocate(timeout: .seconds(5))
        let peer = try DatagramSocket(bind: TransportAddress("127.0.0.1", port: 0)!)
        try turn.createPermission(for: peer.localAddress)
        let requests = turn.refreshRequests()
        #expect(requests.count == 2)  // Refresh + one CreatePermission
        for r in requests { turn.socket.send(r, to: server) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 8)
        defer { buffer.deallocate() }
        var answered = 0
        let deadline = Date().addingTimeInterval(3)
        while Date() < deadline, answered < 2, let (n, _) = turn.socket.receive(into: buffer, timeoutMilliseconds: 500)
        {
            var resend = false
            if turn.handleRefreshAnswer(Array(buffer[0..<n]), resend: &resend) { answered += 1 }
            #expect(!resend)
        }
        #expect(answered == 2 && turn.refreshSuccesses == 2 && turn.refreshFailures == 0, "\(coturn.log.suffix(2000))")
        // A datagram that answers nothing of ours is left to the caller.
        var resend = false
        #expect(!turn.handleRefreshAnswer(requests[0], resend: &resend))
    }
}
