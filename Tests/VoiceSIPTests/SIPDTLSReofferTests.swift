import Foundation
import Testing
import VoiceEngine
import VoiceSIP
import VoiceTestSupport

/// Re-INVITEs of a DTLS-SRTP call keep its DTLS association (RFC 8842 §5.5): a re-offer with the same certificate
/// says the role it has (`a=setup:active` or `passive`), not `actpass`, so the answerer does not take the other role
/// and refuse the re-INVITE for needing a new handshake. Two user agents on loopback; no media flows.
@Suite("DTLS-SRTP re-offers between two user agents", .tags(.live), .scheduledByTags, .timeLimit(.minutes(1)))
struct SIPDTLSReofferTests {
    static func fingerprint(_ byte: String) -> String {
        "sha-256 " + Array(repeating: byte, count: 32).joined(separator: ":")
    }

    @Test func eitherSideHoldsWithoutChangingTheDTLSRoles() async throws {
        try await withEventLoop { loop in
            let (alice, _) = try await makeAgent("alice", on: loop)
            let (bob, _) = try await makeAgent("bob", on: loop)
            var aliceOffers = testCapabilities(port: 40000)
            aliceOffers.dtlsFingerprint = Self.fingerprint("AA")
            var bobAnswers = testCapabilities(port: 40002)
            bobAnswers.dtlsFingerprint = Self.fingerprint("BB")
            let outgoing = try await alice.call(try await directURI("bob", bob), offering: aliceOffers)
            let aliceLog = CallEventLog(outgoing)
            var incoming = bob.incomingCalls.makeAsyncIterator()
            let call = try #require(await incoming.next())
            let bobLog = CallEventLog(call)
            let bobMedia = try await call.answer(with: bobAnswers)
            let aliceMedia = try await aliceLog.established()
            _ = try await bobLog.established()
            #expect(aliceMedia.dtls?.isClient == true && bobMedia.dtls?.isClient == false)

            // The answerer (the DTLS server) holds: its re-offer says passive, the caller stays the client.
            let heldByBob = try await call.hold()
            #expect(heldByBob.direction == .sendonly && heldByBob.dtls?.isClient == false)
            let aliceHeld = try await aliceLog.wait("hold at alice") {
                if case .mediaUpdated(let media, _) = $0, media.direction == .recvonly { media } else { nil }
            }
            #expect(aliceHeld.dtls == aliceMedia.dtls)
            _ = try await call.resume()

            // The caller (the DTLS client) holds: its re-offer says active.
            let heldByAlice = try await outgoing.hold()
            #expect(heldByAlice.direction == .sendonly && heldByAlice.dtls == aliceMedia.dtls)
            await outgoing.hangUp()
            _ = try await bobLog.ended()
        }
    }
}
