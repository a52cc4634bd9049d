/// Why a datagram is not an acceptable STUN message, or why a STUN exchange failed. Receivers count and drop.
public enum STUNError: Error, Equatable, Sendable {
    /// Fewer than the 20 bytes of a header, or a length field that disagrees with the datagram.
    case truncated(length: Int)
    /// The first two bits are not zero or the magic cookie is wrong: not STUN (RFC 8489 §5).
    case notSTUN
    /// The header's length is not a multiple of 4.
    case misalignedLength(Int)
    /// An attribute runs past the end of the message.
    case attributeOverrun(type: UInt16)
    /// An attribute's value has the wrong size or content for its type.
    case malformedAttribute(type: UInt16, reason: String)
    /// FINGERPRINT is present but not last, or its CRC-32 does not match.
    case badFingerprint
    /// MESSAGE-INTEGRITY is absent where it is required, or its HMAC does not match the key.
    case integrityCheckFailed
    /// The peer answered with an error response (ERROR-CODE).
    case errorResponse(code: Int, reason: String)
}
