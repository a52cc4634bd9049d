/// Writes the compound packet a media stream sends on its RTCP schedule — an SR or RR with at most one report
/// block, an SDES CNAME chunk, optionally a BYE — straight into a caller's buffer.
///
/// Why not ``RTCPPacket``: that enum carries its report blocks, SDES items and BYE sources in arrays, so building
/// one allocates; a stream sends a report every few seconds on the audio thread, which must not allocate (a
/// 50-participant conference room sends ten reports a second). Both write through ``RTCPWire``, so the bytes are
/// the same as ``RTCPPacket/serialize(compound:into:)`` writes for the same content (`RTCPReportWriterTests`).
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

    /// The SDES packet: header and one chunk holding the CNAME item.
    static func sdesLength(cnameLength: Int) -> Int { 4 + RTCPWire.sdesChunkLength(itemBytes: 2 + cnameLength) }

    /// Appends a sender report (PT 200) with `block`, if any. Returns false (nothing written) if it does not fit.
    public mutating func senderReport(
        ssrc: UInt32, ntpTimestamp: NTPTimestamp, rtpTimestamp: UInt32, packetCount: UInt32, octetCount: UInt32,
        block: RTCPReportBlock?
    ) -> Bool {
        let size = 28 + (block == nil ? 0 : RTCPReportBlock.size)
        guard length + size <= buffer.count else { return false }
        RTCPWire.header(buffer, at: length, count: block == nil ? 0 : 1, type: RTCPPacketType.senderReport, size: size)
        RTCPWire.senderInfo(
            buffer, at: length + 4, ssrc: ssrc, ntpTimestamp: ntpTimestamp, rtpTimestamp: rtpTimestamp,
            packetCount: packetCount, octetCount: octetCount)
        block?.write(into: buffer, at: length + 28)
        length += size
        return true
    }

    /// Appends a receiver report (PT 201) with `block`, if any. Returns false (nothing written) if it does not fit.
    public mutating func receiverReport(ssrc: UInt32, block: RTCPReportBlock?) -> Bool {
        let size = 8 + (block == nil ? 0 : RTCPReportBlock.size)
        guard length + size <= buffer.count else { return false }
        RTCPWire.header(
            buffer, at: length, count: block == nil ? 0 : 1, type: RTCPPacketType.receiverReport, size: size)
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
        RTCPWire.header(buffer, at: length, count: 1, type: RTCPPacketType.sourceDescription, size: size)
        buffer.put32(ssrc, at: length + 4)
        let end = RTCPWire.sdesItem(buffer, at: length + 8, type: RTCPSDESItemType.cname, value: cname)
        _ = buffer.zero(length + size - end, at: end)
        length += size
        return true
    }

    /// Appends a BYE (PT 203) for one source, without a reason. Returns false (nothing written) if it does not fit.
    public mutating func bye(ssrc: UInt32) -> Bool {
        guard length + 8 <= buffer.count else { return false }
        RTCPWire.header(buffer, at: length, count: 1, type: RTCPPacketType.bye, size: 8)
        buffer.put32(ssrc, at: length + 4)
        length += 8
        return true
    }
}
