/// Writes the compound packet a media stream sends on its RTCP schedule — an SR or RR with at most one report
/// block, an SDES CNAME chunk, optionally a BYE — straight into a caller's buffer.
///
/// Why not ``RTCPPacket``: that enum carries its report blocks, SDES items and BYE sources in arrays, so building
/// one allocates; a stream sends a report every few seconds on the audio thread, which must not allocate (a
/// 50-participant conference room sends ten reports a second). The bytes are the same as
/// ``RTCPPacket/serialize(compound:into:)`` writes for the same content (`RTCPReportWriterTests`).
public struct RTCPReportWriter {
    /// Where the compound is written.
    public let buffer: UnsafeMutableRawBufferPointer
    /// Bytes written so far.
    public private(set) var length = 0

    public init(_ buffer: UnsafeMutableRawBufferPointer) { self.buffer = buffer }

    /// Bytes an SR (`sender`) or RR with `blocks` report blocks, an SDES CNAME of `cnameLength` bytes and
    /// optionally a one-source BYE take on the wire.
    public static func compoundLength(sender: Bool, blocks: Int, cnameLength: Int, bye: Bool) -> Int {
        (sender ? 28 : 8) + RTCPReportBlock.size * blocks + sdesLength(cnameLength: cnameLength) + (bye ? 8 : 0)
    }

    /// One chunk: SSRC, CNAME item (type, length, text), at least one null octet, padded to 32 bits.
    static func sdesLength(cnameLength: Int) -> Int { 4 + (4 + 2 + cnameLength + 1 + 3) / 4 * 4 }

    /// Appends a sender report (PT 200) with `block`, if any. Returns false (nothing written) if it does not fit.
    public mutating func senderReport(
        ssrc: UInt32, ntpTimestamp: NTPTimestamp, rtpTimestamp: UInt32, packetCount: UInt32, octetCount: UInt32,
        block: RTCPReportBlock?
    ) -> Bool {
        let size = 28 + (block == nil ? 0 : RTCPReportBlock.size)
        guard length + size <= buffer.count else { return false }
        header(count: block == nil ? 0 : 1, type: RTCPPacketType.senderReport, size: size)
        buffer.put32(ssrc, at: length + 4)
        buffer.put32(ntpTimestamp.seconds, at: length + 8)
        buffer.put32(ntpTimestamp.fraction, at: length + 12)
        buffer.put32(rtpTimestamp, at: length + 16)
        buffer.put32(packetCount, at: length + 20)
        buffer.put32(octetCount, at: length + 24)
        block?.write(into: buffer, at: length + 28)
        length += size
        return true
    }

    /// Appends a receiver report (PT 201) with `block`, if any. Returns false (nothing written) if it does not fit.
    public mutating func receiverReport(ssrc: UInt32, block: RTCPReportBlock?) -> Bool {
        let size = 8 + (block == nil ? 0 : RTCPReportBlock.size)
        guard length + size <= buffer.count else { return false }
        header(count: block == nil ? 0 : 1, type: RTCPPacketType.receiverReport, size: size)
        buffer.put32(ssrc, at: length + 4)
        block?.write(into: buffer, at: length + 8)
        length += size
        return true
    }

    /// Appends an SDES (PT 202) with one chunk holding the CNAME (at most 255 bytes of UTF-8). Returns false
    /// (nothing written) if it does not fit or the CNAME is too long.
    public mutating func sourceDescription(ssrc: UInt32, cname: UnsafeRawBufferPointer) -> Bool {
        let size = Self.sdesLength(cnameLength: cname.count)
        guard cname.count <= 255, length + size <= buffer.count else { return false }
        header(count: 1, type: RTCPPacketType.sourceDescription, size: size)
        buffer.put32(ssrc, at: length + 4)
        buffer.put8(RTCPSDESItemType.cname, at: length + 8)
        buffer.put8(UInt8(cname.count), at: length + 9)
        let end = buffer.put(cname, at: length + 10)
        _ = buffer.zero(length + size - end, at: end)
        length += size
        return true
    }

    /// Appends a BYE (PT 203) for one source, without a reason. Returns false (nothing written) if it does not fit.
    public mutating func bye(ssrc: UInt32) -> Bool {
        guard length + 8 <= buffer.count else { return false }
        header(count: 1, type: RTCPPacketType.bye, size: 8)
        buffer.put32(ssrc, at: length + 4)
        length += 8
        return true
    }

    private func header(count: Int, type: UInt8, size: Int) {
        buffer.put8(0x80 | UInt8(count), at: length)
        buffer.put8(type, at: length + 1)
        buffer.put16(UInt16(size / 4 - 1), at: length + 2)
    }
}
