internal import COpenSSL

/// The hash functions the signalling protocols name: MD5 (SIP digest, STUN long-term keys), SHA-1 (signed
/// registrations, STUN and TURN REST credentials), SHA-256 (SIP digest). One wrapper over OpenSSL's libcrypto, which
/// the engine links for SRTP already, so no protocol carries its own hashing code.
public enum HashAlgorithm: Sendable, Hashable, CaseIterable {
    case md5, sha1, sha256

    /// The digest's length in bytes.
    public var digestLength: Int {
        switch self {
        case .md5: 16
        case .sha1: 20
        case .sha256: 32
        }
    }

    fileprivate var evp: OpaquePointer? {
        switch self {
        case .md5: EVP_md5()
        case .sha1: EVP_sha1()
        case .sha256: EVP_sha256()
        }
    }

    /// The digest of `bytes`.
    public func digest(_ bytes: some Collection<UInt8>) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = withContiguousBytes(bytes) { input in
            EVP_Digest(input.baseAddress, input.count, &output, &length, evp, nil)
        }
        // EVP_Digest fails only on allocation failure or an algorithm the build lacks; all three are in every build.
        precondition(ok == 1, "EVP_Digest failed")
        return Array(output.prefix(Int(length)))
    }

    /// HMAC (RFC 2104) of `message` under `key`.
    public func hmac(key: some Collection<UInt8>, message: some Collection<UInt8>) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let result = withContiguousBytes(key) { key in
            withContiguousBytes(message) { message in
                HMAC(evp, key.baseAddress, Int32(key.count), message.baseAddress, message.count, &output, &length)
            }
        }
        precondition(result != nil, "HMAC failed")
        return Array(output.prefix(Int(length)))
    }
}

/// Runs `body` on the bytes of `collection`, copying only when the collection is not contiguous.
private func withContiguousBytes<R>(_ collection: some Collection<UInt8>, _ body: (UnsafeBufferPointer<UInt8>) -> R)
    -> R
{
    if let result = collection.withContiguousStorageIfAvailable({ body($0) }) { return result }
    return Array(collection).withUnsafeBufferPointer(body)
}

extension HashAlgorithm {
    /// The digest of `bytes` as lower-case hex, the form SIP digest authentication (RFC 7616) exchanges.
    public func hexDigest(_ bytes: some Collection<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(digestLength * 2)
        for byte in digest(bytes) {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
