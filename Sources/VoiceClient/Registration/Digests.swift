import COpenSSL

/// SHA-1 and HMAC-SHA1 over OpenSSL's libcrypto (already linked for SRTP and digest authentication): the signed
/// registration (SHA-1) and the ephemeral SIP credentials Kamailio's `auth_ephemeral` checks (HMAC-SHA1).
public enum Digests {
    /// SHA-1 of `bytes` (20 bytes).
    public static func sha1(_ bytes: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBufferPointer { input in
            EVP_Digest(input.baseAddress, input.count, &output, &length, EVP_sha1(), nil)
        }
        precondition(ok == 1, "EVP_Digest(SHA-1) failed")
        return Array(output.prefix(Int(length)))
    }

    /// HMAC-SHA1 (RFC 2104) of `message` under `key`.
    public static func hmacSHA1(key: [UInt8], message: [UInt8]) -> [UInt8] {
        let blockSize = 64
        var block = key.count > blockSize ? sha1(key) : key
        block += [UInt8](repeating: 0, count: blockSize - block.count)
        let inner = sha1(block.map { $0 ^ 0x36 } + message)
        return sha1(block.map { $0 ^ 0x5C } + inner)
    }
}
