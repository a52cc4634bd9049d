/// A TURN ChannelData message (RFC 8656 §12.4): a 4-byte header (channel number 0x4000…0x4FFF, length) in front of
/// application data, the compact framing a relay uses once a channel is bound.
public struct TURNChannelData: Equatable, Sendable {
    public static let channelRange: ClosedRange<UInt16> = 0x4000...0x4FFF
    public var channel: UInt16
    public var data: [UInt8]

    public init(channel: UInt16, data: [UInt8]) {
        precondition(Self.channelRange.contains(channel), "ChannelData channels are 0x4000…0x4FFF")
        self.channel = channel
        self.data = data
    }

    /// Parses one datagram. Over UDP the datagram may carry up to 3 padding bytes after the data (§12.5).
    public init(parsing bytes: [UInt8]) throws(STUNError) {
        guard bytes.count >= 4 else { throw .truncated(length: bytes.count) }
        let channel = STUNMessage.read16(bytes, 0)
        guard Self.channelRange.contains(channel) else { throw .notSTUN }
        let length = Int(STUNMessage.read16(bytes, 2))
        guard 4 + length <= bytes.count, bytes.count <= 4 + ((length + 3) & ~3) else {
            throw .truncated(length: bytes.count)
        }
        self.channel = channel
        self.data = Array(bytes[4..<4 + length])
    }

    /// Header and data, padded to a multiple of 4 (the padding RFC 8656 asks for over TCP, harmless over UDP).
    public func serialize() -> [UInt8] {
        var out = [UInt8(channel >> 8), UInt8(channel & 0xFF), UInt8(data.count >> 8), UInt8(data.count & 0xFF)]
        out += data
        out += [UInt8](repeating: 0, count: (4 - data.count % 4) % 4)
        return out
    }
}
