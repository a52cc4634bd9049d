import Foundation
import Testing
import VoiceClient
import VoiceTestSupport

/// `Call.sendDTMF` between two clients through Kamailio: keys go in the media (both offer telephone-event) and
/// reach the other app as `CallEffect.dtmfReceived` on its call's updates, in order; bad keys and a call not yet
/// established are typed errors. Port 26110 is this suite's.
@Suite(
    "VoiceClient DTMF", .tags(.interop, .live), .scheduledByTags, .serialized, .timeLimit(.minutes(1)),
    .enabled(if: serviceUnavailableReason == nil, "\(serviceUnavailableReason ?? "")"))
struct ClientDTMFTests {
    @Test func keysReachTheOtherAppAsCallEffects() async throws {
        try await withService(sipPort: 26110) { service in
            let devices = CallAudioDevices(
                microphone: "null", speaker: "null", sampleRate: 16_000, voiceProcessing: false)
            let alice = try service.client("alice", audio: devices), bob = try service.client("bob", audio: devices)
            let (call, incoming, _) = try await ringingCall(from: alice, to: bob, "bob")
            await #expect(throws: CallDTMFError.self) { try await call.sendDTMF("1") }
            let keys = KeyCollector(incoming.call)
            try await incoming.call.answer()
            try await waitFor(call, .established)
            try await Task.sleep(for: .milliseconds(500))
            await #expect(throws: CallDTMFError.invalidKeys(.invalidKey("x", offset: 1))) {
                try await call.sendDTMF("1x")
            }
            try await call.sendDTMF("147#")
            let deadline = ContinuousClock.now + .seconds(5)
            while keys.text.count < 4, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
            #expect(keys.text == "147#")
            try await call.hangup()
            try await waitFor(incoming.call, .ended)
            await alice.terminate()
            await bob.terminate()
        }
    }
}

/// The keys a call's updates bring (`CallEffect.dtmfReceived`), in order.
final class KeyCollector: @unchecked Sendable {
    private let lock = NSLock()
    private var keys = ""

    init(_ call: Call) {
        let updates = call.updates
        Task { [self] in
            for await effect in updates {
                if case .dtmfReceived(let digit) = effect { lock.withLock { keys.append(digit.character) } }
            }
        }
    }

    var text: String { lock.withLock { keys } }
}
