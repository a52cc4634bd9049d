import Foundation
import NIOCore
import Testing
import VoiceEngine
import VoiceSIP
import VoiceTestSupport

/// The `application/dtmf-relay` body: what we send, what we accept from PBXs and gateways, and that no body
/// traps the parser.
@Suite struct SIPDTMFRelayTests {
    @Test func bodyIsSignalAndDuration() throws {
        let digit = try #require(DTMFDigit("5"))
        #expect(
            String(decoding: SIPDTMFRelay.body(digit, durationMilliseconds: 160), as: UTF8.self)
                == "Signal=5\r\nDuration=160\r\n")
        let parsed = try #require(SIPDTMFRelay.parse(SIPDTMFRelay.body(digit, durationMilliseconds: 160)))
        #expect(parsed.digit == digit && parsed.durationMilliseconds == 160)
    }

    @Test(
        arguments: [
            ("Signal= 9\nDuration= 250\n", "9", 250),
            ("signal=#\r\n", "#", nil),
            ("Signal=11\r\nDuration=100", "#", 100),  // the event code some gateways send
            ("Foo=bar\r\nSignal = d\r\nDuration=x", "D", nil)
        ] as [(String, String, Int?)])
    func acceptsTheVariantsPeersSend(body: String, key: String, duration: Int?) throws {
        let parsed = try #require(SIPDTMFRelay.parse(Array(body.utf8)))
        #expect(parsed.digit.description == key)
        #expect(parsed.durationMilliseconds == duration)
    }

    @Test func bareDTMFBodyIsTheKeyAlone() {
        #expect(SIPDTMFRelay.parse(Array("7\r\n".utf8), bare: true)?.digit == DTMFDigit("7"))
        #expect(SIPDTMFRelay.parse(Array("77".utf8), bare: true) == nil)
    }

    @Test func bodiesWithoutAKeyAreRefused() {
        for body in ["", "Duration=160", "Signal=E", "Signal=16", "Signal=", "\u{FF}\u{FE}"] {
            #expect(SIPDTMFRelay.parse(Array(body.utf8)) == nil, "\(body)")
        }
        #expect(SIPDTMFRelay.parse([0xFF, 0xFE, 0x00]) == nil)
    }

    /// Random and mutated bodies never trap.
    @Test func fuzzedBodiesNeverCrash() {
        var random = SplitMix64(seed: 2833)
        let seed = Array("Signal=5\r\nDuration=160\r\n".utf8)
        var accepted = 0
        for round in 0..<20_000 {
            var body: [UInt8]
            if round % 2 == 0 {
                body = seed
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    body[Int.random(in: 0..<body.count, using: &random)] = UInt8.random(
                        in: .min ... .max, using: &random)
                }
            } else {
                body = (0..<Int.random(in: 0...40, using: &random)).map { _ in
                    UInt8.random(in: .min ... .max, using: &random)
                }
            }
            if let parsed = SIPDTMFRelay.parse(body) {
                accepted += 1
                #expect(parsed.digit.event < 16)
            }
            _ = SIPDTMFRelay.parse(body, bare: true)
        }
        #expect(accepted > 0)
    }
}

/// SIP INFO DTMF between two user agents on loopback: sent in order, answered 200 and reported once each.
@Suite(.tags(.live), .scheduledByTags, .serialized, .timeLimit(.minutes(1)))
struct SIPInfoDTMFTests {
    @Test func keysGoBothWaysAsInfoAndAreReportedInOrder() async throws {
        try await withEventLoop { loop in
            let (alice, aliceTrace) = try await makeAgent("alice", on: loop)
            let (bob, _) = try await makeAgent("bob", on: loop)
            let outgoing = try await alice.call(
                try await directURI("bob", bob), offering: testCapabilities(port: 40010))
            let aliceLog = CallEventLog(outgoing)
            var incoming = bob.incomingCalls.makeAsyncIterator()
            let call = try #require(await incoming.next())
            let bobLog = CallEventLog(call)
            try await call.answer(with: testCapabilities(port: 40012))
            _ = try await aliceLog.established()
            _ = try await bobLog.established()

            try await outgoing.sendDTMF(try DTMFDigit.parse("12*#"))
            try await call.sendDTMF(try DTMFDigit.parse("9A"), durationMilliseconds: 250)
            func keys(_ log: CallEventLog) -> [(String, Int?)] {
                log.events.compactMap {
                    if case .dtmfReceived(let digit, let duration) = $0 { (digit.description, duration) } else { nil }
                }
            }
            #expect(keys(bobLog).map(\.0) == ["1", "2", "*", "#"])
            #expect(keys(bobLog).allSatisfy { $0.1 == 160 })
            _ = try await aliceLog.wait("DTMF A") {
                if case .dtmfReceived(let d, _) = $0, d.description == "A" { d } else { nil }
            }
            #expect(keys(aliceLog).map(\.0) == ["9", "A"])
            #expect(keys(aliceLog).allSatisfy { $0.1 == 250 })
            // Four INFOs (UDP may retransmit one on a loaded machine), each answered 200.
            #expect(aliceTrace.count("send", containing: "INFO sip:") >= 4)
            #expect(aliceTrace.count("send", containing: "Content-Type: application/dtmf-relay") >= 4)
            #expect(aliceTrace.count("recv", containing: "CSeq: 2 INFO") >= 1)
            await outgoing.hangUp()
            _ = try await bobLog.ended()
        }
    }

    @Test func keysBeforeTheAnswerAreRefused() async throws {
        try await withEventLoop { loop in
            let (alice, _) = try await makeAgent("alice", on: loop)
            let (bob, _) = try await makeAgent("bob", on: loop)
            let outgoing = try await alice.call(
                try await directURI("bob", bob), offering: testCapabilities(port: 40014))
            var incoming = bob.incomingCalls.makeAsyncIterator()
            let call = try #require(await incoming.next())
            await #expect(throws: SIPCallError.self) { try await outgoing.sendDTMF(try DTMFDigit.parse("1")) }
            await call.reject()
        }
    }
}
