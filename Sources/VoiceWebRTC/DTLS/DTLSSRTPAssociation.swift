internal import CDTLS
import VoiceEngine
import VoiceSRTP

#if canImport(Glibc)
import Glibc
#endif

/// The SRTP keys a DTLS handshake produced (RFC 5764 §4.2): the negotiated suite, the key we protect with and the
/// key the peer protects with.
public struct DTLSSRTPKeys: Equatable, Sendable {
    public var suite: SRTPCryptoSuite
    public var localKey: SRTPMasterKey
    public var remoteKey: SRTPMasterKey
    /// The keys of the RTCP component's own handshake, for a stream whose RTCP is not multiplexed
    /// (``DTLSSRTPMediaPortHandshake``); nil: SRTCP uses the keys above.
    public var rtcp: MediaStreamSRTCPKeys? = nil

    /// The outbound (protect) and inbound (unprotect) libsrtp sessions for these keys.
    public func makeSessions() throws(SRTPError) -> (outbound: SRTPSession, inbound: SRTPSession) {
        (
            try SRTPSession(suite: suite, key: localKey, direction: .outbound),
            try SRTPSession(suite: suite, key: remoteKey, direction: .inbound)
        )
    }
}

/// One DTLS-SRTP association (RFC 5763/5764) over OpenSSL's DTLS 1.2, with memory BIOs so the datagrams stay
/// ours: the caller feeds what arrived (``receive(_:)``), sends what the association returns, and calls
/// ``handleTimeout()`` when ``timeUntilRetransmission`` has passed.
///
/// The peer is authenticated by the fingerprint its SDP announced; a certificate that does not match fails the
/// handshake inside OpenSSL's verify callback, so the peer gets a `bad_certificate` alert and we a typed
/// ``DTLSError/fingerprintMismatch(expected:actual:)``.
///
/// Not thread-safe: one thread (the transport's receive loop) drives it. Not on the per-packet audio path: after
/// the handshake SRTP goes straight to libsrtp, and only DTLS records (alerts, close_notify) come here.
public final class DTLSSRTPAssociation {
    /// `a=setup:active` makes the DTLS client, `passive` the server (RFC 5763 §5; an `actpass` offerer is told by
    /// the answer which it is).
    public enum Role: Sendable { case client, server }

    public enum State: Equatable, Sendable {
        case handshaking
        case connected(DTLSSRTPKeys)
        case failed(DTLSError)
    }

    /// use_srtp profiles in our preference order (RFC 5764 §4.1.2, RFC 7714 §14.2). AEAD first: it is cheaper per
    /// packet and what Chromium prefers.
    public static let defaultSuites: [SRTPCryptoSuite] = [.aeadAES128GCM, .aesCM128HmacSHA1_80]

    public let role: Role
    public let remoteFingerprint: DTLSFingerprint
    public private(set) var state: State = .handshaking
    /// The peer's certificate fingerprint as received (set during the handshake).
    public private(set) var receivedFingerprint: DTLSFingerprint?
    /// Datagrams that were not DTLS records OpenSSL could use (counted, dropped).
    public private(set) var droppedRecords = 0

    private let context: OpaquePointer
    private let ssl: OpaquePointer
    private let inBIO: OpaquePointer
    private let outBIO: OpaquePointer
    private let mtu: Int
    private var alert: (code: UInt8, description: String)?
    private var started = false

    /// - Parameters:
    ///   - certificate: our identity (its fingerprint is in our SDP).
    ///   - role: client (`setup:active`) or server (`setup:passive`).
    ///   - remoteFingerprint: the peer's `a=fingerprint`; only sha-256 is accepted.
    ///   - suites: SRTP profiles offered/accepted, preference order; AES_CM_128_HMAC_SHA1_80, _32, AEAD_AES_128_GCM
    ///     and AEAD_AES_256_GCM have use_srtp names.
    ///   - mtu: largest datagram the association produces (1200 keeps a flight inside any tunnel).
    public init(
        certificate: DTLSCertificate, role: Role, remoteFingerprint: DTLSFingerprint,
        suites: [SRTPCryptoSuite] = DTLSSRTPAssociation.defaultSuites, mtu: Int = 1200
    ) throws(DTLSError) {
        self.role = role
        self.remoteFingerprint = remoteFingerprint
        self.mtu = mtu
        guard let context = SSL_CTX_new(DTLS_method()) else { throw DTLSCertificate.failure("SSL_CTX_new") }
        self.context = context
        guard voice_dtls_ctx_set_versions(context) == 1 else {
            SSL_CTX_free(context)
            throw DTLSCertificate.failure("SSL_CTX_set_min_proto_version")
        }
        let profiles = suites.compactMap(\.useSRTPName).joined(separator: ":")
        // SSL_CTX_set_tlsext_use_srtp returns 0 on success.
        guard !profiles.isEmpty, SSL_CTX_set_tlsext_use_srtp(context, profiles) == 0,
            SSL_CTX_use_certificate(context, certificate.x509) == 1,
            SSL_CTX_use_PrivateKey(context, certificate.key) == 1
        else {
            SSL_CTX_free(context)
            throw DTLSCertificate.failure("SSL_CTX_set_tlsext_use_srtp/use_certificate")
        }
        // Both sides present a certificate (the server asks for the client's); the callback checks the fingerprint.
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, verifyFingerprint)
        guard let ssl = SSL_new(context) else {
            SSL_CTX_free(context)
            throw DTLSCertificate.failure("SSL_new")
        }
        guard let inBIO = voice_dtls_new_mem_bio(), let outBIO = voice_dtls_new_mem_bio() else {
            SSL_free(ssl)
            SSL_CTX_free(context)
            throw DTLSCertificate.failure("BIO_new")
        }
        self.ssl = ssl
        self.inBIO = inBIO
        self.outBIO = outBIO
        SSL_set_bio(ssl, inBIO, outBIO)  // the SSL owns both BIOs from here
        voice_dtls_set_mtu(ssl, mtu - 28)  // minus IP+UDP headers, as OpenSSL's MTU is the DTLS payload
        SSL_set_ex_data(ssl, 0, Unmanaged.passUnretained(self).toOpaque())
        SSL_set_info_callback(ssl, recordAlert)
        if role == .client { SSL_set_connect_state(ssl) } else { SSL_set_accept_state(ssl) }
    }

    deinit {
        SSL_free(ssl)
        SSL_CTX_free(context)
    }

    /// Starts the handshake: the client's first flight (ClientHello); nothing for a server.
    public func start() -> [[UInt8]] {
        guard !started else { return [] }
        started = true
        if role == .client { step() }
        return drainDatagrams()
    }

    /// Feeds one datagram that the demultiplexer classified as DTLS; returns the datagrams to send back.
    /// After failure, further input is ignored (the state keeps the first error).
    public func receive(_ datagram: UnsafeRawBufferPointer) -> [[UInt8]] {
        if case .failed = state { return [] }
        started = true
        guard datagram.count > 0, BIO_write(inBIO, datagram.baseAddress, Int32(datagram.count)) == Int32(datagram.count)
        else {
            droppedRecords += 1
            return []
        }
        step()
        return drainDatagrams()
    }

    /// Time until OpenSSL wants to retransmit its last flight; nil when no timer runs (idle, or done).
    public var timeUntilRetransmission: Duration? {
        var left = timeval()
        guard voice_dtls_get_timeout(ssl, &left) == 1 else { return nil }
        return .seconds(left.tv_sec) + .microseconds(left.tv_usec)
    }

    /// Retransmits the last flight if its timer expired (RFC 6347 §4.2.4); returns the datagrams to send.
    public func handleTimeout() -> [[UInt8]] {
        guard case .handshaking = state else { return [] }
        if voice_dtls_handle_timeout(ssl) < 0 { fail(.handshakeFailed(reason: openSSLErrorString())) }
        return drainDatagrams()
    }

    /// Ends the association with a close_notify (to send).
    public func close() -> [[UInt8]] {
        SSL_shutdown(ssl)
        return drainDatagrams()
    }

    // MARK: Driving OpenSSL

    private func step() {
        switch state {
        case .handshaking:
            let result = SSL_do_handshake(ssl)
            if result == 1 {
                finishHandshake()
            } else {
                checkError(result)
            }
        case .connected:
            // Only alerts and close_notify are expected (data channels are declined); read and discard.
            var scratch = [UInt8](repeating: 0, count: 2048)
            while true {
                let n = SSL_read(ssl, &scratch, Int32(scratch.count))
                if n > 0 {
                    droppedRecords += 1
                    continue
                }
                checkError(n)
                break
            }
        case .failed:
            break
        }
    }

    private func checkError(_ result: Int32) {
        let code = SSL_get_error(ssl, result)
        switch code {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            ERR_clear_error()
        case SSL_ERROR_ZERO_RETURN:
            fail(.closedByPeer)
        default:
            if let received = receivedFingerprint, received != remoteFingerprint {
                ERR_clear_error()
                fail(.fingerprintMismatch(expected: remoteFingerprint, actual: received))
            } else if let alert {
                ERR_clear_error()
                fail(alert.code == 0 ? .closedByPeer : .alertReceived(code: alert.code, description: alert.description))
            } else {
                fail(.handshakeFailed(reason: openSSLErrorString()))
            }
        }
    }

    private func finishHandshake() {
        // The verify callback ran during the handshake; check again in case it was never called.
        guard let peer = SSL_get1_peer_certificate(ssl) else {
            return fail(.handshakeFailed(reason: "the peer sent no certificate"))
        }
        let actual = DTLSCertificate.fingerprint(of: peer)
        X509_free(peer)
        guard let actual, actual == remoteFingerprint else {
            return fail(.fingerprintMismatch(expected: remoteFingerprint, actual: actual ?? DTLSFingerprint(bytes: [])))
        }
        guard let profile = SSL_get_selected_srtp_profile(ssl),
            let suite = SRTPCryptoSuite(useSRTPID: profile.pointee.id)
        else { return fail(.noCommonSRTPProfile) }
        // RFC 5764 §4.2: client key | server key | client salt | server salt.
        let keyLength = suite.masterKeyLength, saltLength = suite.masterSaltLength
        var material = [UInt8](repeating: 0, count: 2 * (keyLength + saltLength))
        let label = "EXTRACTOR-dtls_srtp"
        guard SSL_export_keying_material(ssl, &material, material.count, label, label.utf8.count, nil, 0, 0) == 1 else {
            return fail(.handshakeFailed(reason: "SSL_export_keying_material: \(openSSLErrorString())"))
        }
        let clientKey = Array(material[0..<keyLength])
        let serverKey = Array(material[keyLength..<2 * keyLength])
        let clientSalt = Array(material[2 * keyLength..<2 * keyLength + saltLength])
        let serverSalt = Array(material[(2 * keyLength + saltLength)...])
        let client = SRTPMasterKey(bytes: clientKey + clientSalt)
        let server = SRTPMasterKey(bytes: serverKey + serverSalt)
        explicit_bzero(&material, material.count)
        state = .connected(
            DTLSSRTPKeys(
                suite: suite, localKey: role == .client ? client : server, remoteKey: role == .client ? server : client)
        )
    }

    private func fail(_ error: DTLSError) {
        if case .failed = state { return }
        state = .failed(error)
    }

    /// Everything OpenSSL wrote, cut into datagrams at DTLS record boundaries (13-byte header, 16-bit length) and
    /// packed up to the MTU: a memory BIO keeps bytes, not datagrams.
    private func drainDatagrams() -> [[UInt8]] {
        let pending = voice_dtls_bio_pending(outBIO)
        guard pending > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: pending)
        let read = BIO_read(outBIO, &bytes, Int32(pending))
        guard read > 0 else { return [] }
        bytes.removeSubrange(Int(read)...)
        var datagrams: [[UInt8]] = []
        var current: [UInt8] = []
        var offset = 0
        while offset + 13 <= bytes.count {
            let length = Int(bytes[offset + 11]) << 8 | Int(bytes[offset + 12])
            let end = min(offset + 13 + length, bytes.count)
            if !current.isEmpty && current.count + (end - offset) > mtu {
                datagrams.append(current)
                current = []
            }
            current += bytes[offset..<end]
            offset = end
        }
        if !current.isEmpty { datagrams.append(current) }
        return datagrams
    }

    // MARK: Callbacks (C function pointers: no captures; the association is found through ex_data slot 0)

    fileprivate static func from(_ ssl: OpaquePointer?) -> DTLSSRTPAssociation? {
        guard let ssl, let raw = SSL_get_ex_data(ssl, 0) else { return nil }
        return Unmanaged<DTLSSRTPAssociation>.fromOpaque(raw).takeUnretainedValue()
    }

    fileprivate func noteCertificate(_ fingerprint: DTLSFingerprint?) -> Bool {
        receivedFingerprint = fingerprint
        return fingerprint == remoteFingerprint
    }

    fileprivate func noteAlert(_ value: Int32) {
        let code = UInt8(truncatingIfNeeded: value & 0xFF)
        let text = SSL_alert_desc_string_long(value).map { String(cString: $0) } ?? "alert \(code)"
        if alert == nil || code != 0 { alert = (code, text) }
    }
}

/// OpenSSL's verify callback: accepts exactly the certificate whose sha-256 fingerprint the SDP announced
/// (self-signed, so OpenSSL's own chain verdict is ignored).
private func verifyFingerprint(_ preverify: Int32, _ store: OpaquePointer?) -> Int32 {
    guard let store, X509_STORE_CTX_get_error_depth(store) == 0,
        let raw = X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()),
        let association = DTLSSRTPAssociation.from(OpaquePointer(raw))
    else { return 1 }  // certificates above the leaf (none in WebRTC) are not what the fingerprint names
    guard let certificate = X509_STORE_CTX_get_current_cert(store) else { return 0 }
    if association.noteCertificate(DTLSCertificate.fingerprint(of: certificate)) { return 1 }
    // CERT_REJECTED makes OpenSSL send bad_certificate (42) rather than unknown_ca.
    X509_STORE_CTX_set_error(store, X509_V_ERR_CERT_REJECTED)
    return 0
}

/// OpenSSL's info callback: remembers the alert a peer sent so the failure names it.
private func recordAlert(_ ssl: OpaquePointer?, _ event: Int32, _ value: Int32) {
    guard event & SSL_CB_READ_ALERT != 0 else { return }
    DTLSSRTPAssociation.from(ssl)?.noteAlert(value)
}

extension SRTPCryptoSuite {
    /// The use_srtp profile name OpenSSL knows (RFC 5764 §4.1.2, RFC 7714 §14.2); nil for suites without one.
    var useSRTPName: String? {
        switch self {
        case .aesCM128HmacSHA1_80: "SRTP_AES128_CM_SHA1_80"
        case .aesCM128HmacSHA1_32: "SRTP_AES128_CM_SHA1_32"
        case .aeadAES128GCM: "SRTP_AEAD_AES_128_GCM"
        case .aeadAES256GCM: "SRTP_AEAD_AES_256_GCM"
        case .aes256CMHmacSHA1_80: nil
        }
    }

    /// The suite for a use_srtp profile ID.
    init?(useSRTPID id: UInt) {
        switch id {
        case 0x0001: self = .aesCM128HmacSHA1_80
        case 0x0002: self = .aesCM128HmacSHA1_32
        case 0x0007: self = .aeadAES128GCM
        case 0x0008: self = .aeadAES256GCM
        default: return nil
        }
    }
}
