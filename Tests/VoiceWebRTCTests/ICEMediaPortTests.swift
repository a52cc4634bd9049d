import Foundation
import Testing
import VoiceEngine
import VoiceTestSupport
import VoiceWebRTC

/// ICE on a SIP call's media port (`ICEMediaPort`): two agents on real loopback sockets, each driving the
/// `UDPMediaTransport` a call's media then uses, find each other from the SDP parameters alone.
@Suite("ICE on a media port", .tags(.live), .scheduledByTags)
struct ICEMediaPortTests {
    static func bindPolled(_ host: String = "127.0.0.1") async throws -> UDPMediaTransport {
        try await UDPMediaTransport.bind(
            host: host, port: 0, configuration: UDPMediaTransport.Configuration(receive: .consumerPolls))
    }

    /// A 60-byte RTP packet, as media sent on a selected pair.
    static let rtp: [UInt8] = {
        var rtp = [UInt8](repeating: 0, count: 60)
        (rtp[0], rtp[1], rtp[11]) = (0x80, 96, 7)
        return rtp
    }()

    /// Polls `transport` until ``rtp`` arrives (at most 3 s) and returns where it came from.
    static func sourceOfRTP(arrivingAt transport: UDPMediaTransport) async throws -> UDPEndpoint? {
        let deadline = ContinuousClock.now + .seconds(3)
        while ContinuousClock.now < deadline {
            _ = transport.receiveFromSocket()
            if let source = transport.withNextPacket(.rtp, { $0.bytes.count == rtp.count ? $0.source : nil }) ?? nil {
                return source
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        return nil
    }

    @Test func twoPortsSelectThePairOfTheirHostCandidatesAndKeepAnsweringChecks() async throws {
        let a = try await Self.bindPolled(), b = try await Self.bindPolled()
        let controlling = ICEMediaPort(transport: a, role: .controlling)
        let controlled = ICEMediaPort(transport: b, role: .controlled)
        #expect(controlling.sdp.candidates.count == 1 && controlling.sdp.candidates[0].contains("typ host"))
        #expect(controlling.sdp.candidates[0].contains("127.0.0.1 \(a.localEndpoint.port)"))
        #expect(controlling.sdp.ufrag != controlled.sdp.ufrag && controlling.sdp.password.count >= 22)

        async let fromA = controlling.connect(to: controlled.sdp, timeout: .seconds(5))
        async let fromB = controlled.connect(to: controlling.sdp, timeout: .seconds(5))
        let (selectedByA, selectedByB) = await (fromA, fromB)
        #expect(selectedByA == .success(b.localEndpoint), "\(selectedByA)")
        #expect(selectedByB == .success(a.localEndpoint), "\(selectedByB)")
        #expect(controlling.selectedPair?.remote == TransportAddress(b.localEndpoint))
        controlling.stop()
        controlled.stop()
        await a.close()
        await b.close()
    }

    /// RFC 8445 §9 while media runs: the side that moved restarts with new credentials and candidates, the other
    /// answers with prepared ones and takes them up at the first check naming them; both select a pair again while
    /// the sockets are polled by someone else (the media threads).
    @Test func anICERestartSelectsAPairAgainWithNewCredentialsOnBothSides() async throws {
        let a = try await Self.bindPolled(), b = try await Self.bindPolled()
        let moving = ICEMediaPort(transport: a, role: .controlling)
        let staying = ICEMediaPort(transport: b, role: .controlled)
        async let firstA = moving.connect(to: staying.sdp, timeout: .seconds(5))
        async let firstB = staying.connect(to: moving.sdp, timeout: .seconds(5))
        let (selectedA, selectedB) = await (firstA, firstB)
        #expect(selectedA == .success(b.localEndpoint) && selectedB == .success(a.localEndpoint))
        let polling = Task {
            while !Task.isCancelled {
                _ = a.receiveFromSocket()
                _ = b.receiveFromSocket()
                try? await Task.sleep(for: .milliseconds(5))
            }
        }
        let (movingBefore, stayingBefore) = (moving.sdp, staying.sdp)
        let answer = staying.prepareRestart()
        #expect(answer.ufrag != stayingBefore.ufrag && answer.password != stayingBefore.password)
        #expect(answer.candidates == stayingBefore.candidates && staying.sdp == stayingBefore)
        #expect(await moving.restart(turn: nil).isEmpty)
        let offer = moving.sdp
        #expect(offer.ufrag != movingBefore.ufrag && offer.password != movingBefore.password)
        #expect(offer.candidates.count == 1 && offer.candidates[0].contains("127.0.0.1 \(a.localEndpoint.port)"))
        // The mover checks as soon as it has the answer; the other side connects when the ACK reaches it.
        async let againA = moving.connect(to: answer, timeout: .seconds(5))
        try await Task.sleep(for: .milliseconds(150))
        #expect(staying.sdp.ufrag == answer.ufrag, "the first check with the new credentials did not restart it")
        async let againB = staying.connect(to: offer, timeout: .seconds(5))
        let (reselectedA, reselectedB) = await (againA, againB)
        #expect(reselectedA == .success(b.localEndpoint), "\(reselectedA)")
        #expect(reselectedB == .success(a.localEndpoint), "\(reselectedB)")
        polling.cancel()
        moving.stop()
        staying.stop()
        await a.close()
        await b.close()
    }

    @Test func aPeerThatGoesAwayAfterTheChecksIsReportedWhenItsConsentExpires() async throws {
        let a = try await Self.bindPolled(), b = try await Self.bindPolled()
        let consent = (interval: MediaTime.milliseconds(200), lifetime: MediaTime.milliseconds(1_000))
        let staying = ICEMediaPort(transport: a, role: .controlling, consent: consent)
        let leaving = ICEMediaPort(transport: b, role: .controlled, consent: consent)
        async let fromA = staying.connect(to: leaving.sdp, timeout: .seconds(5))
        async let fromB = leaving.connect(to: staying.sdp, timeout: .seconds(5))
        let (selectedByA, selectedByB) = await (fromA, fromB)
        #expect(selectedByA == .success(b.localEndpoint) && selectedByB == .success(a.localEndpoint))
        let (failures, report) = AsyncStream.makeStream(of: ICEError.self)
        staying.onFailure { report.yield($0) }
        // Both ends keep polling their sockets (as the media threads do): consent stays fresh past its lifetime.
        let polling = Task {
            while !Task.isCancelled {
                _ = a.receiveFromSocket()
                _ = b.receiveFromSocket()
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
        try await Task.sleep(for: .milliseconds(1_500))
        #expect(staying.selectedPair != nil, "consent lapsed while the peer answered")
        // The peer goes away: its checks stop being answered.
        leaving.stop()
        await b.close()
        let started = ContinuousClock.now
        var iterator = failures.makeAsyncIterator()
        let timeout = Task {
            try? await Task.sleep(for: .seconds(5))
            report.finish()
        }
        let failure = await iterator.next()
        #expect(failure == .consentExpired)
        #expect(ContinuousClock.now - started < .seconds(3), "consent expired after \(ContinuousClock.now - started)")
        timeout.cancel()
        polling.cancel()
        staying.stop()
        await a.close()
    }

    @Test func aPeerThatNeverAnswersTimesOut() async throws {
        let a = try await Self.bindPolled(), silent = try await Self.bindPolled()
        let port = ICEMediaPort(transport: a, role: .controlling)
        let absent = ICEMediaPort(transport: silent, role: .controlled)
        let started = ContinuousClock.now
        let outcome = await port.connect(to: absent.sdp, timeout: .milliseconds(700))
        #expect(outcome == .failure(.timedOut), "\(outcome)")
        #expect(ContinuousClock.now - started < .seconds(3))
        port.stop()
        await a.close()
        await silent.close()
    }
}
