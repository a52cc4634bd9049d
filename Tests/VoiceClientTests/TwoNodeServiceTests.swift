import Foundation
import Testing
import VoiceClient
import VoiceService
import VoiceTestSupport

/// Two nodes of the service on loopback, A on 127.0.0.1 and B on 127.0.0.2 (same ports), each a Kamailio (usrloc
/// in the shared database only, kamailio.cfg's CLUSTER) and a registration service, sharing one PostgreSQL
/// database and secret: a client registered through one node is called from a client on the other (the INVITE
/// crosses to the node its TLS connection ends at, by the binding's Path), and media and hang-up go both ways.
/// Ports 26320–26329.
@Suite(
    "Two service nodes sharing the database", .tags(.interop, .live), .scheduledByTags, .serialized,
    .timeLimit(.minutes(3)),
    .enabled(if: serviceUnavailableReason == nil, "\(serviceUnavailableReason ?? "")"))
struct TwoNodeServiceTests {
    static let nodes = ["sip:127.0.0.1:26320", "sip:127.0.0.2:26320"]

    /// Runs `body` with both nodes started, shut down afterwards whatever happens.
    static func withTwoNodes(_ body: (ServiceHarness, ServiceHarness) async throws -> Void) async throws {
        let a = try ServiceHarness(sipPort: 26320)
        a.clusterNodes = nodes
        a.registrationListenPort = 26321
        let b = try ServiceHarness(joining: a, host: "127.0.0.2")
        b.clusterNodes = nodes
        do {
            try await a.start()
            try await b.startRegistrationService(port: 26321)
            try await b.startKamailio()
            try await body(a, b)
        } catch {
            for node in [a, b] { if let kamailio = node.kamailio { print("kamailio log:\n\(kamailio.logTail)") } }
            await b.shutdown()
            await a.shutdown()
            throw error
        }
        await b.shutdown()
        await a.shutdown()
    }

    /// Alice on A with `aliceConfiguration` (A's own by default) listening, bob on B started.
    static func startAliceOnAAndBobOnB(
        _ a: ServiceHarness, _ b: ServiceHarness, aliceConfiguration: VoiceClientConfiguration? = nil
    ) async throws -> (alice: VoiceClient, aliceLog: EventLog, bob: VoiceClient, bobLog: EventLog) {
        let alice = try a.client("alice", configuration: aliceConfiguration)
        let bob = try b.client("bob", configuration: b.configuration(serverName: "voiceengine.test"))
        let aliceLog = EventLog(alice), bobLog = EventLog(bob)
        await alice.startListening()
        await bob.start()
        let aliceStarted = await aliceLog.first { $0 == .started }, bobStarted = await bobLog.first { $0 == .started }
        #expect(aliceStarted != nil && bobStarted != nil, "alice: \(aliceLog.events), bob: \(bobLog.events)")
        return (alice, aliceLog, bob, bobLog)
    }

    @Test func aClientOnOneNodeCallsAClientOnTheOtherBothWays() async throws {
        try await Self.withTwoNodes { a, b in
            let alice = try a.client("alice")
            let bob = try b.client("bob", configuration: b.configuration(serverName: "voiceengine.test"))
            let aliceLog = EventLog(alice), bobLog = EventLog(bob)
            await alice.startListening()
            await bob.startListening()
            #expect(await aliceLog.first { $0 == .started } != nil, "alice on A: \(aliceLog.events)")
            #expect(await bobLog.first { $0 == .started } != nil, "bob on B: \(bobLog.events)")
            // Each node's registration service answered its own client; the bindings are both in the database.
            let bindings = try a.database.psql("SELECT username FROM location ORDER BY username")
            #expect(bindings.split(separator: "\n") == ["alice", "bob"], "location: \(bindings)")
            // Each binding's Path names the node its connection ends at.
            let paths = try a.database.psql("SELECT path FROM location ORDER BY username").split(separator: "\n")
            #expect(
                paths.count == 2 && paths[0].hasPrefix("<sip:127.0.0.1:26320;lr;received=sip:127.0.0.1:"), "\(paths)")
            #expect(
                paths.count == 2 && paths[1].hasPrefix("<sip:127.0.0.2:26320;lr;received=sip:127.0.0.1:"), "\(paths)")

            // B → A: bob's INVITE is relayed by B to A, which holds alice's connection.
            let call = try await bob.callUser("alice")
            let incoming = try #require(await aliceLog.incomingCall(), "alice got no call: \(aliceLog.events)")
            #expect(incoming.caller == "bob")
            try await incoming.call.answer()
            try await waitFor(call, .established)
            try await waitFor(incoming.call, .established)
            try await Task.sleep(for: .seconds(2))
            try await call.hangup()
            try await waitFor(incoming.call, .ended)
            #expect(await incoming.call.details.endCause == .remoteHangup)
            #expect(await call.details.endCause == .localHangup)
            let received = try #require(await incoming.call.mediaReport, "no media report on alice's call")
            #expect(received.rtp.received > 50, "alice received \(received.rtp.received) RTP packets in 2 s")

            // A → B, hung up by the callee this time.
            let back = try await alice.callUser("bob")
            let toBob = try #require(await bobLog.incomingCall(), "bob got no call: \(bobLog.events)")
            try await toBob.call.answer()
            try await waitFor(back, .established)
            try await Task.sleep(for: .seconds(1))
            try await toBob.call.hangup()
            try await waitFor(back, .ended)
            #expect(await back.details.endCause == .remoteHangup)
            #expect(await toBob.call.details.endCause == .localHangup)
            for client in [alice, bob] { await client.terminate() }
        }
    }

    /// Node A stops: a user who registers again on B is called at once through B, although A's binding of the
    /// same user is still in `location` (the call forks to it and that branch times out).
    @Test func aUserRegisteredAgainOnTheSecondNodeIsReachableAfterTheFirstStops() async throws {
        try await Self.withTwoNodes { a, b in
            let onB = b.configuration(serverName: "voiceengine.test")
            let (alice, _, bob, _) = try await Self.startAliceOnAAndBobOnB(a, b)

            a.stopKamailio()
            try await a.http?.close()
            await alice.terminate()
            let aliceOnB = try b.client("alice", configuration: onB)
            let movedLog = EventLog(aliceOnB)
            await aliceOnB.startListening()
            #expect(await movedLog.first { $0 == .started } != nil, "alice on B: \(movedLog.events)")
            let bindings = try a.database.psql("SELECT count(*) FROM location WHERE username = 'alice'")
            #expect(bindings == "2", "alice's bindings (A's stale one and B's): \(bindings)")

            let call = try await bob.callUser("alice")
            let incoming = try #require(
                await movedLog.incomingCall(timeout: .seconds(15)), "alice on B got no call: \(movedLog.events)")
            try await incoming.call.answer()
            try await waitFor(call, .established, timeout: .seconds(15))
            try await call.hangup()
            try await waitFor(incoming.call, .ended)
            for client in [aliceOnB, bob] { await client.terminate() }
        }
    }

    /// Node A stops while alice is registered through it: her client moves to B by itself (its server list) and
    /// is reachable from bob within the registration's refresh interval.
    @Test func aClientFailsOverToTheSecondNodeWithinItsRefreshInterval() async throws {
        try await Self.withTwoNodes { a, b in
            var failover = a.configuration(serverName: "voiceengine.test")
            failover.additionalServiceHosts = ["127.0.0.2"]
            failover.registrationExpires = 20
            let (alice, aliceLog, bob, _) = try await Self.startAliceOnAAndBobOnB(a, b, aliceConfiguration: failover)

            a.stopKamailio()
            try await a.http?.close()
            let stopped = ContinuousClock.now
            // Within the refresh interval (90 % of 20 s) and a margin, bob's call reaches alice through B.
            var reached: IncomingCall?
            while reached == nil, ContinuousClock.now - stopped < .seconds(30) {
                let call = try await bob.callUser("alice")
                reached = await aliceLog.incomingCall(timeout: .seconds(5))
                if reached == nil { _ = try? await call.hangup() }
            }
            let incoming = try #require(reached, "alice was not reachable through B: \(aliceLog.events)")
            print("alice reachable through B \(ContinuousClock.now - stopped) after A stopped")
            try await incoming.call.answer()
            try await incoming.call.hangup()
            for client in [alice, bob] { await client.terminate() }
        }
    }
}
