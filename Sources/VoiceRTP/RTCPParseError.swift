/// Why an RTCP packet or compound packet was rejected (RFC 3550 6.1, A.2; RFC 3611). Length fields are never
/// trusted: every count and length is checked against the bytes actually present.
public enum RTCPParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Fewer bytes than an RTCP header (or than the packet's fixed part), at byte `offset` of the compound.
    case tooShort(offset: Int, length: Int)
    /// Version field not 2.
    case badVersion(UInt8, offset: Int)
    /// A packet's length field runs past the end of the compound packet.
    case lengthOverrun(offset: Int, declaredBytes: Int, available: Int)
    /// The first packet of a compound packet is not SR or RR (RFC 3550 6.1, A.2).
    case firstPacketNotReport(packetType: UInt8)
    /// The P bit is set on a packet other than the last of the compound (RFC 3550 6.4.1, A.2).
    case paddingNotLast(offset: Int)
    /// The padding count exceeds the packet's body or is not a multiple of 4 (RFC 3550 6.4.1).
    case badPadding(count: Int, available: Int)
    /// The P bit is set but the padding count is 0.
    case emptyPaddingCount
    /// The report count claims more 24-byte report blocks than the packet holds.
    case reportBlocksOverrun(count: Int, available: Int)
    /// An SDES chunk or item runs past the packet, or a chunk is not null-terminated.
    case sdesOverrun(chunk: Int)
    /// The source count of a BYE claims more SSRCs than the packet holds.
    case byeOverrun(count: Int, available: Int)
    /// A BYE reason's length byte runs past the packet.
    case byeReasonOverrun(length: Int, available: Int)
    /// An APP packet without its SSRC and 4-byte name.
    case appTooShort(length: Int)
    /// An XR report block's length runs past the packet.
    case xrBlockOverrun(blockType: UInt8, offset: Int)
    /// An XR VoIP Metrics block whose block length is not 8 (RFC 3611 4.7).
    case voipMetricsBadLength(Int)

    public var description: String {
        switch self {
        case .tooShort(let offset, let length):
            "RTCP packet at offset \(offset) too short (\(length) bytes)"
        case .badVersion(let v, let offset):
            "RTCP version \(v) at offset \(offset), expected 2"
        case .lengthOverrun(let offset, let declared, let available):
            "RTCP length field at offset \(offset) declares \(declared) bytes, only \(available) remain"
        case .firstPacketNotReport(let pt):
            "RTCP compound packet starts with packet type \(pt), not SR (200) or RR (201)"
        case .paddingNotLast(let offset):
            "RTCP padding bit set on packet at offset \(offset), which is not the last of the compound"
        case .badPadding(let count, let available):
            count % 4 != 0
                ? "RTCP padding count \(count) is not a multiple of 4"
                : "RTCP padding count \(count) exceeds the \(available)-byte body"
        case .emptyPaddingCount:
            "RTCP padding bit set but the padding count is 0"
        case .reportBlocksOverrun(let count, let available):
            "RTCP report count \(count) needs \(24 * count) bytes of blocks, \(available) available"
        case .sdesOverrun(let chunk):
            "RTCP SDES chunk \(chunk) runs past the packet or lacks its terminating null"
        case .byeOverrun(let count, let available):
            "RTCP BYE source count \(count) needs \(4 * count) bytes, \(available) available"
        case .byeReasonOverrun(let length, let available):
            "RTCP BYE reason of \(length) bytes exceeds the \(available) bytes left"
        case .appTooShort(let length):
            "RTCP APP packet body of \(length) bytes lacks SSRC and name"
        case .xrBlockOverrun(let bt, let offset):
            "RTCP XR block type \(bt) at offset \(offset) runs past the packet"
        case .voipMetricsBadLength(let length):
            "RTCP XR VoIP Metrics block length \(length), expected 8"
        }
    }
}
