import Foundation
import Testing
import VoiceCore
import VoiceSRTP
@testable import VoiceWebRTC
import VoiceTestSupport

/// Two engines with full ICE agents over real sockets on loopback (IPv4 and IPv6 host candidates each): the
/// agents check, nominate the IPv6 pair, DTLS-SRTP completes on it and SRTP flows both ways.
@Suite("Full ICE between two engines on loopback", .tags(.live), .scheduledByTags, .timeLimit(.minutes(1)))
struct ICETransportTests {
    @Test func hostCandidatesOnEveryInterfaceAreGathered() throws {
        let all = HostCandidates.addresses(includeLoopback: true)
        #expect(all.contains(TransportAddress("127.0.0.1", port: 0)!))
        #expect(!HostCandidates.addresses().contains(TransportAddress("127.0.0.1", port: 0)!))
        #expect(!all.contains { $0.family == .ipv6 && $0.host.hasPrefix("fe80") })
    }

    /// Two full agents on loopback sockets; returns both transports once DTLS completed (or fails the test).
    @Test func fullAgentsConnectOverIPv6AndIPv4LoopbackAndCarrySRTP() throws {
        let hosts = [TransportAddress("127.0.0.1", port: 0)!, TransportAddress("::1", port: 0)!]
        try #require(HostCandidates.addresses(includeLoopback: true).contains { $0.host == "::1" }, "no IPv6 loopback")
        let certA = try DTLSCertificate(), certB = try DTLSCertificate()
        let agentA = ICEAgent(role: .controlling), agentB = ICEAgent(role: .controlled)
        let socketsA = try hosts.map { try DatagramSocket(bind: $0) },
            socketsB = try hosts.map { try DatagramSocket(bind: $0) }
        let offer = try agentA.gather(sockets: socketsA)
        let answer = try agentB.gather(sockets: socketsB)
        #expect(
            offer.count == 2
                && offer.first { $0.host == "::1" }!.priority > offer.first { $0.host == "127.0.0.1" }!.priority)
        // Signalling: the candidates travel as SDP lines.
        agentA.setRemoteCredentials(agentB.local)
        agentB.setRemoteCredentials(agentA.local)
        for c in answer { agentA.addRemoteCandidate(try #require(ICECandidate(sdpValue: c.sdpValue))) }
        for c in offer { agentB.addRemoteCandidate(try #require(ICECandidate(sdpValue: c.sdpValue))) }
        for agent in [agentA, agentB] {
            agent.localGatheringDone()
            agent.remoteGatheringDone()
        }

        let a = WebRTCTransport(
            sockets: socketsA, ice: .full(agentA),
            dtls: try DTLSSRTPAssociation(certificate: certA, role: .server, remoteFingerprint: certB.fingerprint))
        let b = WebRTCTransport(
            sockets: socketsB, ice: .full(agentB),
            dtls: try DTLSSRTPAssociation(certificate: certB, role: .client, remoteFingerprint: certA.fingerprint))
        let atA = WebRTCTransportTests.Received(), atB = WebRTCTransportTests.Received()
        a.onSRTP = { datagram, _ in atA.unprotect(datagram, with: a.keys) }
        b.onSRTP = { datagram, _ in atB.unprotect(datagram, with: b.keys) }
        let clock = MonotonicClock()
        a.start { clock.now }
        b.start { clock.now }
        defer {
            a.stop()
            b.stop()
        }
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline, a.keys == nil || b.keys == nil { Thread.sleep(forTimeInterval: 0.005) }
        let ka = try #require(a.keys, "A: ICE \(agentA.state), DTLS \(a.dtls.state)")
        let kb = try #require(b.keys, "B: ICE \(agentB.state), DTLS \(b.dtls.state)")
        #expect(ka.localKey == kb.remoteKey)
        // The IPv6 pair wins (higher priority), and both sides agree on it.
        #expect(a.remoteAddress == socketsB[1].localAddress && b.remoteAddress == socketsA[1].localAddress)

        let outA = try SRTPSession(suite: ka.suite, key: ka.localKey, direction: .outbound)
        let outB = try SRTPSession(suite: kb.suite, key: kb.localKey, direction: .outbound)
        for i in 0..<30 {
            for (session, transport, ssrc) in [(outA, a, UInt32(0xA)), (outB, b, UInt32(0xB))] {
                var packet = WebRTCTransportTests.rtp(
                    sequence: UInt16(i), ssrc: ssrc, payload: [UInt8](repeating: UInt8(i), count: 40), room: 16)
                let n = try packet.withUnsafeMutableBytes { try session.protect($0, length: 52) }
                #expect(
                    packet.withUnsafeBytes {
                        transport.send(UnsafeRawBufferPointer(rebasing: $0[0..<n]), now: clock.now)
                    })
            }
        }
        let until = Date().addingTimeInterval(3)
        while Date() < until,
            atA.lock.withLock({ atA.payloads.count }) < 30 || atB.lock.withLock({ atB.payloads.count }) < 30
        {
            Thread.sleep(forTimeInterval: 0.01)
        }
        atA.lock.withLock { #expect(atA.payloads.count == 30 && atA.failures == 0) }
        atB.lock.withLock { #expect(atB.payloads.count == 30 && atB.failures == 0) }
    }
}
