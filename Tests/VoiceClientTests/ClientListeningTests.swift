import Foundation
import Testing
import VoiceClient
import VoiceTestSupport

/// An outgoing-only client (`stopListening()`) against the real service: it is not called and its messages wait
/// at the service, while it still calls out; `startListening()` brings the waiting messages. Port 26113.
@Suite(
    "VoiceClient outgoing-only mode", .tags(.interop, .live), .scheduledByTags, .serialized,
    .timeLimit(.minutes(1)),
    .enabled(if: serviceUnavailableReason == nil, "\(serviceUnavailableReason ?? "")"))
struct ClientListeningTests {
    @Test func aClientThatStoppedListeningCallsOutButIsNotCalled() async throws {
        try await withService(sipPort: 26113) { service in
            let alice = try service.client("alice"), bob = try service.client("bob")
            let aliceLog = EventLog(alice), bobLog = EventLog(bob)
            await alice.start()
            await bob.start()
            let aliceStarted = await aliceLog.first { $0 == .started },
                bobStarted = await bobLog.first { $0 == .started }
            #expect(aliceStarted != nil && bobStarted != nil)
            await alice.stopListening()
            let listening = await alice.isStarted, connected = await alice.isConnected
            #expect(!listening && connected)

            // Nobody to ring: bob's call ends without reaching alice, and his message waits at the service.
            let unreachable = try await bob.callUser("alice")
            try await waitFor(unreachable, .ended, timeout: .seconds(15))
            #expect(await unreachable.details.establishedAt == nil)
            #expect(aliceLog.events.allSatisfy { if case .incomingCall = $0 { false } else { true } })
            let id = try await bob.send(message: "while you were away", to: ["alice"])
            let stored = await bobLog.first {
                if case .messageStoredForLaterDelivery(id, "alice") = $0 { true } else { false }
            }
            #expect(stored != nil, "\(bobLog.events)")

            // Alice still calls out.
            let call = try await alice.callUser("bob")
            let incoming = try #require(await bobLog.incomingCall())
            try await incoming.call.answer()
            try await waitFor(call, .established)
            try await call.hangup()
            try await waitFor(incoming.call, .ended)

            // Listening again: registered, and the kept message arrives.
            await alice.startListening()
            #expect(await alice.isStarted)
            let message = await aliceLog.firstMessage()
            #expect(message?.text == "while you were away" && message?.sender == "bob")
            await alice.terminate()
            await bob.terminate()
        }
    }
}
