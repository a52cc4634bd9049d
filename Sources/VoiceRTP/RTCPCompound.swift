/// RTCP packet types (RFC 3550 12.1, RFC 3611, RFC 4585).
public enum RTCPPacketType {
    public static let senderReport: UInt8 = 200
    public static let receiverReport: UInt8 = 201
    public static let sourceDescription: UInt8 = 202
    public static let bye: UInt8 = 203
    public static let app: UInt8 = 204
    public static let transportFeedback: UInt8 = 205
    public static let payloadFeedback: UInt8 = 206
    public static let extendedReport: UInt8 = 207
}

/// One RTCP packet inside a compound packet, viewed in place (valid while the buffer is).
public struct RTCPPacketView {
    /// The whole packet, header and padding included.
    public let bytes: UnsafeRawBufferPointer
    /// Byte offset of this packet in its compound packet (for error messages).
    public let offset: Int
    /// The 5-bit count field (report count, source count, or APP subtype).
    public var count: Int { Int(bytes[0] & 0x1F) }
    public var hasPadding: Bool { bytes[0] & 0x20 != 0 }
    public var packetType: UInt8 { bytes[1] }
    /// The body after the 4-byte header, without padding.
    public let body: UnsafeRawBufferPointer
}

/// How a compound packet is validated.
public struct RTCPValidation: Sendable, Hashable {
    /// RFC 3550 A.2: the first packet must be SR or RR. RFC 5506 reduced-size RTCP relaxes this.
    public var requireReportFirst: Bool

    public init(requireReportFirst: Bool = true) { self.requireReportFirst = requireReportFirst }

    public static let rfc3550 = RTCPValidation()
    public static let reducedSize = RTCPValidation(requireReportFirst: false)
}

/// A validated compound RTCP packet over the caller's buffer (RFC 3550 6.1, A.2), iterated without allocation.
///
/// `init` walks every header: versions are 2, the first packet is SR or RR, each length field stays inside the
/// buffer and the lengths add up to the total, and only the last packet is padded (by a multiple of 4 bytes).
public struct RTCPCompoundView: Sequence {
    public let bytes: UnsafeRawBufferPointer
    /// Number of packets in the compound.
    public let packetCount: Int
    /// Padding bytes of the last packet (0 when none).
    let lastPadding: Int

    public init(_ bytes: UnsafeRawBufferPointer, validation: RTCPValidation = .rfc3550) throws(RTCPParseError) {
        var offset = 0
        var count = 0
        var lastPadding = 0
        guard bytes.count >= 4 else { throw .tooShort(offset: 0, length: bytes.count) }
        while offset < bytes.count {
            let remaining = bytes.count - offset
            guard remaining >= 4 else { throw .tooShort(offset: offset, length: remaining) }
            let b0 = bytes[offset]
            guard b0 >> 6 == 2 else { throw .badVersion(b0 >> 6, offset: offset) }
            let pt = bytes[offset + 1]
            if count == 0 && validation.requireReportFirst
                && pt != RTCPPacketType.senderReport && pt != RTCPPacketType.receiverReport
            {
                throw .firstPacketNotReport(packetType: pt)
            }
            let length = (Int(bytes.be16(offset + 2)) + 1) * 4
            guard length <= remaining else {
                throw .lengthOverrun(offset: offset, declaredBytes: length, available: remaining)
            }
            if b0 & 0x20 != 0 {
                guard offset + length == bytes.count else { throw .paddingNotLast(offset: offset) }
                let padding = Int(bytes[offset + length - 1])
                guard padding != 0 else { throw .emptyPaddingCount }
                // RFC 3550 6.4.1: the count "will be a multiple of four". Any other count leaves a body that is not
                // whole 32-bit words, which no RTCP packet can be (and which RTCPPacket could not serialize again).
                guard padding <= length - 4, padding % 4 == 0 else {
                    throw .badPadding(count: padding, available: length - 4)
                }
                lastPadding = padding
            }
            offset += length
            count += 1
        }
        self.bytes = bytes
        self.packetCount = count
        self.lastPadding = lastPadding
    }

    public struct Iterator: IteratorProtocol {
        let bytes: UnsafeRawBufferPointer
        let lastPadding: Int
        var offset = 0

        public mutating func next() -> RTCPPacketView? {
            guard offset < bytes.count else { return nil }
            let length = (Int(bytes.be16(offset + 2)) + 1) * 4
            let isLast = offset + length == bytes.count
            let padding = isLast && bytes[offset] & 0x20 != 0 ? lastPadding : 0
            defer { offset += length }
            return RTCPPacketView(
                bytes: bytes.sub(offset, offset + length), offset: offset,
                body: bytes.sub(offset + 4, offset + length - padding))
        }
    }

    public func makeIterator() -> Iterator { Iterator(bytes: bytes, lastPadding: lastPadding) }
}
