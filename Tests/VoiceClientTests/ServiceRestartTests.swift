import Foundation
import NIOPosix
import Testing
import VoiceClient
import VoiceService
import VoiceTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// The service restarted while clients are registered and messages are stored: the registration service (a new
/// instance on the same database), Kamailio (killed, as in a crash, and started again) and both. Everything is in
/// PostgreSQL, so every stored message is delivered and no replayed sequence is accepted. After a registration
/// service restart the clients are called at once without registering again; after a Kamailio restart their TLS
/// connections are gone, so each client notices, registers again on a new connection with the credentials it
/// holds (no new grant) and is called as soon as Kamailio is back. Ports 26200–26209.
@Suite(
    "The service across restarts", .tags(.interop, .live), .scheduledByTags, .serialized, .timeLimit(.minutes(2)),
    .enabled(if: serviceUnavailableReason == nil, "\(serviceUnavailableReason ?? "")"))
struct ServiceRestartTests {
    enum Restarted: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case registrationService, kamailio, both
        var testDescription: String { rawValue }
        var sipPort: Int { 26200 + 2 * (Self.allCases.firstIndex(of: self) ?? 0) }
    }

    @Test(arguments: Restarted.allCases)
    func nothingIsLostAcrossARestart(of restarted: Restarted) async throws {
        try await withService(
            sipPort: restarted.sipPort, prepare: { $0.registrationListenPort = restarted.sipPort + 1 }
        ) { service in
            var configuration = service.configuration(pushData: nil)
            // Kamailio takes about a second to come back: retry about twice a second meanwhile.
            (configuration.reconnectBackoffBase, configuration.reconnectBackoffCap) = (.milliseconds(250), .seconds(1))
            let bobPushData = Data("bob's device token".utf8)
            let alice = try service.client("alice", configuration: configuration)
            var bobConfiguration = configuration
            bobConfiguration.pushData = bobPushData
            let bob = try service.client("bob", configuration: bobConfiguration)
            let aliceEvents = EventLog(alice), bobEvents = EventLog(bob)
            await alice.start()
            await bob.startListening()
            #expect(await aliceEvents.first { $0 == .started } != nil, "\(aliceEvents.events)")
            #expect(await bobEvents.first { $0 == .started } != nil, "\(bobEvents.events)")
            // Carol registered once and is offline: a message to her is stored.
            let carolBefore = try service.client("carol")
            await carolBefore.start()
            await carolBefore.terminate()
            let stored = try await alice.send(message: "kept across the restart", to: ["carol"])
            #expect(
                await aliceEvents.first { $0 == .messageStoredForLaterDelivery(id: stored, recipient: "carol") }
                    != nil, "\(aliceEvents.events)")
            // A request the service accepted, to replay after the restart.
            let connection = RegistrationServiceConnection(
                host: "127.0.0.1", port: service.registrationPort, transport: service.configuration().transport)
            let dave = RegistrationRequest(
                applicationKey: ServiceHarness.applicationKey, userID: "dave", signed: service.sign("dave"))
            _ = try await connection.register(dave)
            let bobBinding = try service.database.psql("SELECT callid, cseq FROM location WHERE username = 'bob'")
            #expect(!bobBinding.isEmpty, "bob's binding is not in the location table")
            let acceptedBefore = await service.registrationService.accepted

            if restarted != .kamailio { try await service.restartRegistrationService() }
            if restarted != .registrationService {
                // A crash: no chance to write anything out.
                if let kamailio = service.kamailio { kill(-kamailio.pid, SIGKILL) }
                service.stopKamailio()
                // Its workers release the port as they die, just after the main process.
                let deadline = ContinuousClock.now + .seconds(3)
                while await waitUntilUDPBound(service.sipPort, timeout: .zero), ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(20))
                }
                try await service.startKamailio()
                let back = ContinuousClock.now
                // Both clients saw their connection close and register again on a new one.
                for (name, events) in [("alice", aliceEvents), ("bob", bobEvents)] {
                    #expect(
                        await events.first { if case .registrationLost = $0 { true } else { false } } != nil,
                        "\(name) did not notice: \(events.events)")
                    #expect(
                        await events.first(timeout: .seconds(10)) { $0 == .reregistered(serviceHost: "127.0.0.1") }
                            != nil, "\(name) did not register again: \(events.events)")
                }
                print(
                    "ServiceRestartTests: both clients registered again \(ContinuousClock.now - back) after Kamailio was back"
                )
            }

            // Bob is called at once: on the binding Kamailio had before, or on the one he registered again.
            try await callGoesThrough(from: alice, to: "bob", calleeEvents: bobEvents)
            let bobBindingAfter = try service.database.psql(
                "SELECT callid, cseq FROM location WHERE username = 'bob'")
            if restarted == .registrationService {
                #expect(bobBindingAfter == bobBinding, "bob registered again")
            } else {
                // The same binding (Call-ID) registered again on the new connection, with a higher CSeq. Its
                // REGISTER also asks for the dead connection's Contact to go (expires=0); Kamailio sometimes keeps
                // it after a restart, so its row is not asserted away here (a call forks to it and that branch
                // fails at once).
                let rows = { (text: String) in
                    text.split(separator: "\n").compactMap { line -> (callID: String, cseq: Int)? in
                        let fields = line.split(separator: "|")
                        guard fields.count == 2, let cseq = Int(fields[1]) else { return nil }
                        return (String(fields[0]), cseq)
                    }
                }
                let before = try #require(rows(bobBinding).first, "\(bobBinding)")
                #expect(
                    rows(bobBindingAfter).contains { $0.callID == before.callID && $0.cseq > before.cseq },
                    "bob's binding was not registered again: \(bobBinding) → \(bobBindingAfter)")
            }
            if restarted == .kamailio {
                #expect(await service.registrationService.accepted == acceptedBefore, "a client registered again")
            } else {
                #expect(await service.registrationService.accepted == 0, "a client registered again")
            }
            // The replay is refused, and bob's push data is still known.
            let connectionAfter = RegistrationServiceConnection(
                host: "127.0.0.1", port: service.registrationPort, transport: service.configuration().transport)
            await #expect(
                throws: VoiceClientError.registrationRefused(
                    .sequenceNotIncreasing(received: dave.sequence, lastAccepted: dave.sequence))
            ) {
                try await connectionAfter.register(dave)
            }
            #expect(
                try await service.registrationService.pushData(
                    applicationKey: ServiceHarness.applicationKey, userID: "bob") == [bobPushData])
            // Carol comes back and gets the stored message, once.
            let carol = try service.client("carol")
            let carolEvents = EventLog(carol)
            await carol.start()
            #expect(
                await carolEvents.firstMessage()?.text == "kept across the restart",
                "\(carolEvents.events)\n\(service.kamailio?.logTail ?? "")")
            await alice.terminate()
            await bob.terminate()
            await carol.terminate()
        }
    }

    /// Failover between service nodes: the first configured host (127.0.0.2, where nothing listens) does not
    /// answer, so the client registers on the next one; when that node's Kamailio restarts, the client tries it,
    /// then the other host, backs off, and registers again on the node that came back — with the credentials it
    /// holds, and reachable at once.
    @Test func aNodeThatDoesNotAnswerIsPassedOverAtStartAndAfterALoss() async throws {
        try await withService(sipPort: 26206, prepare: { $0.registrationListenPort = 26207 }) { service in
            var configuration = service.configuration()
            configuration.serviceHost = "127.0.0.2"
            configuration.additionalServiceHosts = ["127.0.0.1"]
            (configuration.reconnectBackoffBase, configuration.reconnectBackoffCap) = (.milliseconds(250), .seconds(1))
            let alice = try service.client("alice", configuration: configuration)
            let bob = try service.client("bob")
            let aliceEvents = EventLog(alice), bobEvents = EventLog(bob)
            await alice.start()
            await bob.start()
            #expect(await aliceEvents.first { $0 == .started } != nil, "\(aliceEvents.events)")
            #expect(await bobEvents.first { $0 == .started } != nil, "\(bobEvents.events)")
            #expect(await service.registrationService.accepted == 2)

            service.stopKamailio()
            let deadline = ContinuousClock.now + .seconds(3)
            while await waitUntilUDPBound(service.sipPort, timeout: .zero), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(
                await aliceEvents.first { if case .registrationLost = $0 { true } else { false } } != nil,
                "\(aliceEvents.events)")
            // Rounds over both hosts fail while Kamailio is down.
            try await Task.sleep(for: .seconds(1))
            try await service.startKamailio()
            #expect(
                await aliceEvents.first(timeout: .seconds(10)) { $0 == .reregistered(serviceHost: "127.0.0.1") } != nil,
                "\(aliceEvents.events)")
            #expect(
                await bobEvents.first(timeout: .seconds(10)) { $0 == .reregistered(serviceHost: "127.0.0.1") } != nil,
                "\(bobEvents.events)")
            #expect(await service.registrationService.accepted == 2, "a client asked for new credentials")

            try await callGoesThrough(from: bob, to: "alice", calleeEvents: aliceEvents)
            await alice.terminate()
            await bob.terminate()
        }
    }

    /// `caller` calls `callee`, who answers; the call is established and hung up.
    private func callGoesThrough(from caller: VoiceClient, to callee: String, calleeEvents: EventLog) async throws {
        let call = try await caller.callUser(callee)
        let incoming = try #require(await calleeEvents.incomingCall(), "\(callee) got no call: \(calleeEvents.events)")
        try await incoming.call.answer()
        try await waitFor(call, .established)
        try await call.hangup()
        try await waitFor(incoming.call, .ended)
    }
}
