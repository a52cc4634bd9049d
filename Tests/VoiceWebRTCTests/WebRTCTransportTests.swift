import Foundation
import Testing
import VoiceCore
import VoiceSRTP
@testable import VoiceWebRTC
import VoiceTestSupport

/// Two engines on loopback UDP (ephemeral ports): ICE check and nomination, DTLS-SRTP handshake and SRTP both
/// ways on the one port each, through real sockets, OpenSSL and libsrtp.
@Suite("WebRTC transport between two engines on loopback", .tags(.live), .scheduledByTags, .timeLimit(.minutes(1)))
struct WebRTCTransportTests {
    final class Received: @unchecked Sendable {
        let lock = NSLock()
        var payloads: [[UInt8]] = []
        var failures = 0
        var connected: Result<DTLSSRTPKeys, DTLSError>?

        /// Unprotects one SRTP datagram with the peer's key and keeps its payload (a failure is counted).
        func unprotect(_ datagram: UnsafeMutableRawBufferPointer, with keys: DTLSSRTPKeys?) {
            lock.withLock {
                guard let keys,
                    let inbound = try? SRTPSession(suite: keys.suite, key: keys.remoteKey, direction: .inbound),
                    let n = try? inbound.unprotect(datagram, length: datagram.count)
                else {
                    failures += 1
                    return
                }
                payloads.append(Array(datagram[12..<n]))
            }
        }
    }

    static func rtp(sequence: UInt16, ssrc: UInt32, payload: [UInt8], room: Int) -> [UInt8] {
        var p: [UInt8] = [
            0x80, 111, UInt8(sequence >> 8), UInt8(sequence & 0xFF), 0, 0, 0, UInt8(sequence & 0xFF),
            UInt8(ssrc >> 24), UInt8((ssrc >> 16) & 0xFF), UInt8((ssrc >> 8) & 0xFF), UInt8(ssrc & 0xFF)
        ]
        p += payload
        return p + [UInt8](repeating: 0, count: room)
    }

    func run(ipv6: Bool) throws {
        let host = ipv6 ? "::1" : "127.0.0.1"
        let clock = MonotonicClock()
        let answererICE = ICECredentials.random(), offererICE = ICECredentials.random()
        let answererCert = try DTLSCertificate(), offererCert = try DTLSCertificate()
        let answererSocket = try DatagramSocket(bind: TransportAddress(host, port: 0)!)
        let offererSocket = try DatagramSocket(bind: TransportAddress(host, port: 0)!)
        // The answerer: ICE-lite, setup:active (DTLS client), as it answers a browser.
        let answerer = WebRTCTransport(
            socket: answererSocket, ice: .liteControlled(ICELiteAgent(local: answererICE, remote: offererICE)),
            dtls: try DTLSSRTPAssociation(
                certificate: answererCert, role: .client, remoteFingerprint: offererCert.fingerprint))
        // The offerer: controlling, nominates the answerer's host candidate, DTLS server (setup:actpass → passive).
        let offerer = WebRTCTransport(
            socket: offererSocket,
            ice: .controlling(local: offererICE, remote: answererICE, candidate: answererSocket.localAddress),
            dtls: try DTLSSRTPAssociation(
                certificate: offererCert, role: .server, remoteFingerprint: answererCert.fingerprint))

        let atAnswerer = Received(), atOfferer = Received()
        for (transport, sink) in [(answerer, atAnswerer), (offerer, atOfferer)] {
            transport.onConnected = { result in sink.lock.withLock { sink.connected = result } }
            transport.onSRTP = { datagram, _ in sink.unprotect(datagram, with: transport.keys) }
        }
        answerer.start { clock.now }
        offerer.start { clock.now }
        defer {
            answerer.stop()
            offerer.stop()
        }

        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline,
            atAnswerer.lock.withLock({ atAnswerer.connected == nil })
                || atOfferer.lock.withLock({ atOfferer.connected == nil })
        {
            Thread.sleep(forTimeInterval: 0.01)
        }
        let a = try #require(atAnswerer.lock.withLock { atAnswerer.connected }).get()
        let o = try #require(atOfferer.lock.withLock { atOfferer.connected }).get()
        #expect(a.suite == .aeadAES128GCM && a.localKey == o.remoteKey)
        #expect(
            answerer.remoteAddress == offererSocket.localAddress && offerer.remoteAddress == answererSocket.localAddress
        )

        // 50 packets each way (one session per direction, as a stream keeps them).
        let aOut = try SRTPSession(suite: a.suite, key: a.localKey, direction: .outbound)
        let oOut = try SRTPSession(suite: o.suite, key: o.localKey, direction: .outbound)
        for i in 0..<50 {
            let payload = (0..<40).map { UInt8(truncatingIfNeeded: $0 * 7 + i) }
            for (session, transport, ssrc) in [(aOut, answerer, UInt32(0xA),), (oOut, offerer, UInt32(0xB))] {
                var packet = Self.rtp(sequence: UInt16(i), ssrc: ssrc, payload: payload, room: 16)
                let n = try packet.withUnsafeMutableBytes { try session.protect($0, length: 52) }
                #expect(
                    packet.withUnsafeBytes {
                        transport.send(UnsafeRawBufferPointer(rebasing: $0[0..<n]), now: clock.now)
                    })
            }
        }
        let until = Date().addingTimeInterval(5)
        while Date() < until,
            atAnswerer.lock.withLock({ atAnswerer.payloads.count }) < 50
                || atOfferer.lock.withLock({ atOfferer.payloads.count }) < 50
        {
            Thread.sleep(forTimeInterval: 0.01)
        }
        for sink in [atAnswerer, atOfferer] {
            sink.lock.withLock {
                #expect(sink.payloads.count == 50 && sink.failures == 0)
                #expect(sink.payloads.first == (0..<40).map { UInt8(truncatingIfNeeded: $0 * 7) })
            }
        }
        // RFC 7675: with no authenticated check for 30 s the ICE-lite side stops sending (the test's clock jumps).
        let probe = [UInt8](repeating: 0x80, count: 40)
        #expect(!probe.withUnsafeBytes { answerer.send($0, now: clock.now + .seconds(31)) })
        #expect(probe.withUnsafeBytes { answerer.send($0, now: clock.now) })
    }

    @Test func iceDTLSAndSRTPOverIPv4() throws { try run(ipv6: false) }

    @Test(.enabled(if: (try? DatagramSocket(bind: TransportAddress("::1", port: 0)!)) != nil, "no IPv6 loopback here"))
    func iceDTLSAndSRTPOverIPv6() throws { try run(ipv6: true) }
}
