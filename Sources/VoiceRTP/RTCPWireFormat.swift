/// The RTCP wire format of SR, RR, SDES and BYE (RFC 3550 6.4–6.6), written in place. Both encoders use it:
/// ``RTCPPacket/serialize(into:)`` (any content, from arrays) and ``RTCPReportWriter`` (the audio path's
/// allocation-free report with at most one block), so their bytes cannot drift apart. Report blocks are written by
/// ``RTCPReportBlock`` itself.
enum RTCPWire {
    /// The common header: version 2, no padding, `count` (report blocks, chunks or sources), `type`, and the length
    /// of a `size`-byte packet in 32-bit words minus one.
    static func header(_ b: UnsafeMutableRawBufferPointer, at o: Int, count: Int, type: UInt8, size: Int) {
        precondition(count <= 31, "RTCP count \(count) exceeds 31")
        b.put8(0x80 | UInt8(count), at: o)
        b.put8(type, at: o + 1)
        b.put16(UInt16(size / 4 - 1), at: o + 2)
    }

    /// An SR's sender SSRC and sender info: the 24 bytes after its header.
    static func senderInfo(
        _ b: UnsafeMutableRawBufferPointer, at o: Int, ssrc: UInt32, ntpTimestamp: NTPTimestamp, rtpTimestamp: UInt32,
        packetCount: UInt32, octetCount: UInt32
    ) {
        b.put32(ssrc, at: o)
        b.put32(ntpTimestamp.seconds, at: o + 4)
        b.put32(ntpTimestamp.fraction, at: o + 8)
        b.put32(rtpTimestamp, at: o + 12)
        b.put32(packetCount, at: o + 16)
        b.put32(octetCount, at: o + 20)
    }

    /// Bytes of an SDES chunk whose items take `itemBytes` (2 + value each): SSRC, items, at least one null octet,
    /// padded to 32 bits.
    static func sdesChunkLength(itemBytes: Int) -> Int { (4 + itemBytes + 1 + 3) / 4 * 4 }

    /// One SDES item (type, length, value); returns where the next one goes.
    static func sdesItem(_ b: UnsafeMutableRawBufferPointer, at o: Int, type: UInt8, value: UnsafeRawBufferPointer)
        -> Int
    {
        precondition(type != RTCPSDESItemType.end && value.count <= 255, "SDES item type 0 or longer than 255")
        b.put8(type, at: o)
        b.put8(UInt8(value.count), at: o + 1)
        return b.put(value, at: o + 2)
    }
}
