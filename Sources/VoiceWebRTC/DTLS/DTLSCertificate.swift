internal import CDTLS

/// The engine's DTLS identity: an ECDSA P-256 key and a self-signed certificate made at start-up (RFC 8827 §6.5:
/// WebRTC endpoints authenticate by the fingerprint signalled in SDP, not by a CA), with its sha-256 fingerprint.
///
/// One per engine (or per call, for unlinkability); immutable once made, so it may be shared between calls.
public final class DTLSCertificate: @unchecked Sendable {
    let key: OpaquePointer
    let x509: OpaquePointer
    /// The sha-256 fingerprint to put in `a=fingerprint`.
    public let fingerprint: DTLSFingerprint

    /// Generates a key and a certificate valid from a day ago (clock skew) for `validDays`.
    public init(commonName: String = "VoiceEngine", validDays: Int = 30) throws(DTLSError) {
        guard let key = voice_dtls_generate_p256() else { throw Self.failure("EVP_PKEY_Q_keygen") }
        guard let x509 = X509_new() else {
            EVP_PKEY_free(key)
            throw Self.failure("X509_new")
        }
        self.key = key
        self.x509 = x509
        var serial: UInt32 = 0
        _ = withUnsafeMutableBytes(of: &serial) { RAND_bytes($0.baseAddress, 4) }
        X509_set_version(x509, 2)
        ASN1_INTEGER_set(X509_get_serialNumber(x509), Int(serial >> 1))
        X509_gmtime_adj(X509_getm_notBefore(x509), -86_400)
        X509_gmtime_adj(X509_getm_notAfter(x509), validDays * 86_400)
        X509_set_pubkey(x509, key)
        let name = X509_get_subject_name(x509)
        X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, commonName, -1, -1, 0)
        X509_set_issuer_name(x509, name)
        guard X509_sign(x509, key, EVP_sha256()) > 0 else { throw Self.failure("X509_sign") }
        guard let fingerprint = Self.fingerprint(of: x509) else { throw Self.failure("X509_digest") }
        self.fingerprint = fingerprint
    }

    deinit {
        X509_free(x509)
        EVP_PKEY_free(key)
    }

    /// The sha-256 fingerprint of a certificate (DER), as RFC 8122 defines it.
    static func fingerprint(of x509: OpaquePointer) -> DTLSFingerprint? {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard X509_digest(x509, EVP_sha256(), &digest, &length) == 1 else { return nil }
        return DTLSFingerprint(bytes: Array(digest.prefix(Int(length))))
    }

    static func failure(_ call: String) -> DTLSError { .setup(call: call, reason: openSSLErrorString()) }
}

/// OpenSSL's queued errors as one line (and the queue cleared, so the next failure starts clean).
func openSSLErrorString() -> String {
    var reasons: [String] = []
    while case let code = ERR_get_error(), code != 0 {
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        reasons.append(String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
    return reasons.isEmpty ? "no OpenSSL error queued" : reasons.joined(separator: "; ")
}
