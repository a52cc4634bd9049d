import Foundation
import Testing
import VoiceEngine
import VoiceSIP
import VoiceTestSupport

/// An ICE restart in a re-INVITE (RFC 8445 §9, RFC 8839 §4.4.1.1): the offer has new `a=ice-ufrag/ice-pwd`; the
/// answerer restarts too and answers with the new credentials its call prepared, and later answers repeat them.
/// Re-offers that keep the credentials (a hold) are answered with the current ones. Two user agents on loopback; no
/// media flows.
@Suite("ICE restarts in re-INVITEs between two user agents", .tags(.live), .scheduledByTags, .timeLimit(.minutes(1)))
struct SIPICERestartTests {
    static func ice(_ ufrag: String, _ address: String) -> SDPICEParameters {
        SDPICEParameters(
            ufrag: ufrag, password: ufrag + "-password-of-22-chars",
            candidates: ["1 1 udp 2130706431 \(address) 40000 typ host"])
    }

    @Test func theAnswerToARestartCarriesThePreparedCredentialsAndLaterAnswersKeepThem() async throws {
        try await withEventLoop { loop in
            let (alice, _) = try await makeAgent("alice", on: loop)
            let (bob, _) = try await makeAgent("bob", on: loop)
            var aliceOffers = testCapabilities(port: 40000)
            aliceOffers.ice = Self.ice("aliceOne", "192.168.46.2")
            var bobAnswers = testCapabilities(port: 40002)
            bobAnswers.ice = Self.ice("bobOne", "192.168.47.2")
            let outgoing = try await alice.call(try await directURI("bob", bob), offering: aliceOffers)
            let aliceLog = CallEventLog(outgoing)
            var incoming = bob.incomingCalls.makeAsyncIterator()
            let call = try #require(await incoming.next())
            let bobLog = CallEventLog(call)
            let bobMedia = try await call.answer(with: bobAnswers)
            let aliceMedia = try await aliceLog.established()
            #expect(aliceMedia.remoteICE?.ufrag == "bobOne" && bobMedia.remoteICE?.ufrag == "aliceOne")

            // A hold keeps the credentials: the prepared ones are not used.
            await call.prepareICERestart(Self.ice("bobTwo", "192.168.47.2"))
            let held = try await outgoing.reoffer(direction: .sendonly, freshKeys: false, offering: aliceOffers)
            #expect(held.remoteICE?.ufrag == "bobOne")
            _ = try await outgoing.reoffer(direction: .sendrecv, freshKeys: false, offering: aliceOffers)

            // Alice moved: new credentials and candidates. Bob's answer restarts too, with the prepared ones.
            var moved = aliceOffers
            moved.address = "192.168.46.3"
            moved.ice = Self.ice("aliceTwo", "192.168.46.3")
            let restarted = try await outgoing.reoffer(direction: .sendrecv, freshKeys: false, offering: moved)
            #expect(restarted.remoteICE == Self.ice("bobTwo", "192.168.47.2"))
            let seenByBob = try await bobLog.wait("the restart at bob") {
                if case .mediaUpdated(let media, true) = $0, media.remoteICE?.ufrag == "aliceTwo" { media } else { nil }
            }
            #expect(seenByBob.remoteICE?.candidates.first?.contains("192.168.46.3") == true)

            // A later hold by alice keeps both sides' new credentials.
            let heldAgain = try await outgoing.reoffer(direction: .sendonly, freshKeys: false, offering: moved)
            #expect(heldAgain.remoteICE?.ufrag == "bobTwo")
            await outgoing.hangUp()
            _ = try await bobLog.ended()
        }
    }
}
