/// Why an RTP packet was rejected. Every rejection names its reason so a receiver can count malformed packets
/// by cause and drop them without losing the stream.
public enum RTPParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Fewer bytes than the 12-byte fixed header.
    case tooShort(length: Int)
    /// The version field is not 2.
    case badVersion(UInt8)
    /// The CSRC count claims more identifiers than the packet holds.
    case csrcOverrun(count: Int, length: Int)
    /// The X bit is set but the extension header or its declared length runs past the packet.
    case extensionOverrun(declaredBytes: Int, available: Int)
    /// The P bit is set and the padding count is larger than what follows the header.
    case badPadding(count: Int, available: Int)
    /// The P bit is set but the padding count (the last byte) is zero; RFC 3550 5.1 counts the count byte itself.
    case emptyPaddingCount
    /// An RFC 8285 element runs past the end of the header extension.
    case extensionElementOverrun(id: UInt8, offset: Int)
    /// An RFC 8285 one-byte element uses ID 15, or ID 0 with a non-zero length, both reserved by RFC 8285 4.2
    /// (only with strict parsing).
    case reservedExtensionID(UInt8)

    public var description: String {
        switch self {
        case .tooShort(let length):
            "RTP packet too short: \(length) bytes, the fixed header needs 12"
        case .badVersion(let version):
            "RTP version \(version), expected 2"
        case .csrcOverrun(let count, let length):
            "RTP CSRC count \(count) needs \(12 + 4 * count) bytes, packet has \(length)"
        case .extensionOverrun(let declared, let available):
            "RTP header extension needs \(declared) bytes, only \(available) remain"
        case .badPadding(let count, let available):
            "RTP padding count \(count) exceeds the \(available) bytes after the header"
        case .emptyPaddingCount:
            "RTP padding bit set but the padding count is 0"
        case .extensionElementOverrun(let id, let offset):
            "RTP header extension element id \(id) at offset \(offset) runs past the extension"
        case .reservedExtensionID(let id):
            "RTP one-byte header extension uses reserved id \(id)"
        }
    }
}

/// How strictly an RTP packet is checked.
public struct RTPParseOptions: Sendable, Hashable {
    /// RFC 8285 4.2 says a one-byte element with ID 15 ends extension processing (elements before it still count);
    /// so does a reserved ID 0 with a non-zero length.
    /// When `true`, such a packet is rejected with ``RTPParseError/reservedExtensionID(_:)`` instead.
    public var rejectReservedExtensionID: Bool

    public init(rejectReservedExtensionID: Bool = false) {
        self.rejectReservedExtensionID = rejectReservedExtensionID
    }
}
