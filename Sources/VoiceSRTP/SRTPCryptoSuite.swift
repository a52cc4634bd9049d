/// An SRTP crypto suite, named as in SDES (RFC 4568, RFC 6188, RFC 7714).
///
/// The raw value is the exact token used in `a=crypto:` lines, so SDES parsing and the session share one table.
public enum SRTPCryptoSuite: String, CaseIterable, Sendable, CustomStringConvertible {
    /// AES-128 counter mode with an 80-bit HMAC-SHA1 tag (RFC 4568): the default suite of SDES.
    case aesCM128HmacSHA1_80 = "AES_CM_128_HMAC_SHA1_80"
    /// AES-128 counter mode with a 32-bit HMAC-SHA1 tag on RTP; SRTCP keeps the 80-bit tag (RFC 4568 §6.2.2).
    case aesCM128HmacSHA1_32 = "AES_CM_128_HMAC_SHA1_32"
    /// AES-256 counter mode with an 80-bit HMAC-SHA1 tag (RFC 6188).
    case aes256CMHmacSHA1_80 = "AES_256_CM_HMAC_SHA1_80"
    /// AES-128 in Galois/counter mode, 16-byte tag, 12-byte salt (RFC 7714).
    case aeadAES128GCM = "AEAD_AES_128_GCM"
    /// AES-256 in Galois/counter mode, 16-byte tag, 12-byte salt (RFC 7714).
    case aeadAES256GCM = "AEAD_AES_256_GCM"

    /// Bytes of master key.
    public var masterKeyLength: Int {
        switch self {
        case .aesCM128HmacSHA1_80, .aesCM128HmacSHA1_32, .aeadAES128GCM: 16
        case .aes256CMHmacSHA1_80, .aeadAES256GCM: 32
        }
    }

    /// Bytes of master salt (14 for counter mode, 12 for GCM).
    public var masterSaltLength: Int { isAEAD ? 12 : 14 }

    /// Bytes of key material a session needs: master key followed by master salt (the SDES `inline:` value).
    public var keyMaterialLength: Int { masterKeyLength + masterSaltLength }

    /// Whether this is an AEAD (GCM) suite.
    public var isAEAD: Bool { self == .aeadAES128GCM || self == .aeadAES256GCM }

    /// Bytes `protect` appends to an RTP packet (the authentication tag).
    public var rtpTrailerLength: Int {
        switch self {
        case .aesCM128HmacSHA1_80, .aes256CMHmacSHA1_80: 10
        case .aesCM128HmacSHA1_32: 4
        case .aeadAES128GCM, .aeadAES256GCM: 16
        }
    }

    /// Bytes `protectRTCP` appends to an RTCP packet: the E flag and SRTCP index (4) plus the tag.
    ///
    /// SRTCP always uses an 80-bit HMAC tag with the HMAC suites, including `AES_CM_128_HMAC_SHA1_32`.
    public var rtcpTrailerLength: Int { 4 + (isAEAD ? 16 : 10) }

    /// Maximum key lifetime in packets allowed for SRTP by the suite (2^48, RFC 4568 / RFC 7714).
    public var maximumLifetime: UInt64 { 1 << 48 }

    public var description: String { rawValue }
}
