import Foundation
import Testing
import VoiceSRTP
@testable import VoiceWebRTC

/// DTLS-SRTP between two engines: OpenSSL on both sides, real libsrtp sessions from the exported keys.
@Suite("DTLS-SRTP (RFC 5763/5764)")
struct DTLSSRTPTests {
    /// Delivers datagrams between two associations until neither has anything to send (or `rounds` run out);
    /// `drop` may discard a datagram (index in the whole exchange) to exercise retransmission.
    static func pump(_ a: DTLSSRTPAssociation, _ b: DTLSSRTPAssociation, first: [[UInt8]], rounds: Int = 20) {
        var toB = first
        var toA: [[UInt8]] = []
        for _ in 0..<rounds where !(toA.isEmpty && toB.isEmpty) {
            let forB = toB
            toB = []
            for d in forB { toA += d.withUnsafeBytes { b.receive($0) } }
            let forA = toA
            toA = []
            for d in forA { toB += d.withUnsafeBytes { a.receive($0) } }
        }
    }

    @Test func twoEnginesAgreeOnGCMAndMirrorTheirKeys() throws {
        let clientCert = try DTLSCertificate(), serverCert = try DTLSCertificate()
        #expect(clientCert.fingerprint.bytes.count == 32 && clientCert.fingerprint != serverCert.fingerprint)
        let client = try DTLSSRTPAssociation(
            certificate: clientCert, role: .client, remoteFingerprint: serverCert.fingerprint)
        let server = try DTLSSRTPAssociation(
            certificate: serverCert, role: .server, remoteFingerprint: clientCert.fingerprint)
        Self.pump(client, server, first: client.start())
        guard case .connected(let c) = client.state, case .connected(let s) = server.state else {
            Issue.record("not connected: client \(client.state), server \(server.state)")
            return
        }
        #expect(c.suite == .aeadAES128GCM && s.suite == .aeadAES128GCM)
        #expect(c.localKey == s.remoteKey && c.remoteKey == s.localKey && c.localKey != c.remoteKey)
        #expect(c.localKey.count == 28)
        // The keys work: what the client protects, the server unprotects.
        let (clientOut, _) = try c.makeSessions()
        let (_, serverIn) = try s.makeSessions()
        var packet = [UInt8](repeating: 0, count: 12 + 40 + 16)
        packet[0] = 0x80
        packet[1] = 111
        packet[3] = 1
        packet[11] = 7
        for i in 12..<52 { packet[i] = UInt8(i) }
        let original = Array(packet[0..<52])
        let protected = try packet.withUnsafeMutableBytes { try clientOut.protect($0, length: 52) }
        #expect(protected == 68 && Array(packet[12..<52]) != Array(original[12...]))
        let plain = try packet.withUnsafeMutableBytes { try serverIn.unprotect($0, length: protected) }
        #expect(plain == 52 && Array(packet[0..<52]) == original)
    }

    @Test func aPeerOfferingOnlyAESCMGetsAESCM() throws {
        let clientCert = try DTLSCertificate(), serverCert = try DTLSCertificate()
        let client = try DTLSSRTPAssociation(
            certificate: clientCert, role: .client,
            remoteFingerprint: serverCert.fingerprint, suites: [.aesCM128HmacSHA1_80])
        let server = try DTLSSRTPAssociation(
            certificate: serverCert, role: .server, remoteFingerprint: clientCert.fingerprint)
        Self.pump(client, server, first: client.start())
        guard case .connected(let keys) = server.state else {
            Issue.record("server \(server.state)")
            return
        }
        #expect(keys.suite == .aesCM128HmacSHA1_80 && keys.localKey.count == 30)
    }

    @Test func aFingerprintMismatchFailsBothSidesWithTypedErrors() throws {
        let clientCert = try DTLSCertificate(), serverCert = try DTLSCertificate(), other = try DTLSCertificate()
        // The server was told a different client fingerprint (a man in the middle, or mixed-up signalling).
        let client = try DTLSSRTPAssociation(
            certificate: clientCert, role: .client, remoteFingerprint: serverCert.fingerprint)
        let server = try DTLSSRTPAssociation(
            certificate: serverCert, role: .server, remoteFingerprint: other.fingerprint)
        Self.pump(client, server, first: client.start())
        #expect(
            server.state == .failed(.fingerprintMismatch(expected: other.fingerprint, actual: clientCert.fingerprint)))
        guard case .failed(.alertReceived(let code, _)) = client.state else {
            Issue.record("client should have received an alert, is \(client.state)")
            return
        }
        #expect(code == 42)  // bad_certificate
    }

    @Test func noCommonProfileIsATypedError() throws {
        let clientCert = try DTLSCertificate(), serverCert = try DTLSCertificate()
        let client = try DTLSSRTPAssociation(
            certificate: clientCert, role: .client,
            remoteFingerprint: serverCert.fingerprint, suites: [.aesCM128HmacSHA1_32])
        let server = try DTLSSRTPAssociation(
            certificate: serverCert, role: .server,
            remoteFingerprint: clientCert.fingerprint, suites: [.aeadAES128GCM])
        Self.pump(client, server, first: client.start())
        #expect(client.state == .failed(.noCommonSRTPProfile))
    }

    @Test func aLostFlightIsRetransmittedWhenTheTimerExpires() throws {
        let clientCert = try DTLSCertificate(), serverCert = try DTLSCertificate()
        let client = try DTLSSRTPAssociation(
            certificate: clientCert, role: .client, remoteFingerprint: serverCert.fingerprint)
        let server = try DTLSSRTPAssociation(
            certificate: serverCert, role: .server, remoteFingerprint: clientCert.fingerprint)
        let lost = client.start()
        #expect(!lost.isEmpty)
        let wait = try #require(client.timeUntilRetransmission)
        #expect(wait > .zero && wait <= .seconds(1))
        #expect(client.handleTimeout().isEmpty)  // not due yet
        Thread.sleep(
            forTimeInterval: Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18 + 0.05)
        let again = client.handleTimeout()
        #expect(!again.isEmpty)
        Self.pump(client, server, first: again)
        #expect(client.state != .handshaking)
        if case .connected = client.state {} else { Issue.record("client \(client.state)") }
    }

    @Test func garbageIsDroppedWithoutEndingTheHandshake() throws {
        let clientCert = try DTLSCertificate(), serverCert = try DTLSCertificate()
        let client = try DTLSSRTPAssociation(
            certificate: clientCert, role: .client, remoteFingerprint: serverCert.fingerprint)
        let server = try DTLSSRTPAssociation(
            certificate: serverCert, role: .server, remoteFingerprint: clientCert.fingerprint)
        let hello = client.start()
        _ = [UInt8]([]).withUnsafeBytes { server.receive($0) }
        #expect(server.droppedRecords == 1)
        Self.pump(client, server, first: hello)
        if case .connected = server.state {} else { Issue.record("server \(server.state)") }
    }
}
