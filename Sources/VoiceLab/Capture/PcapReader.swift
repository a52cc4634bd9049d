#if canImport(Glibc)
import Glibc
import VoiceRTP
#endif

/// Reads the UDP datagrams (IPv4 and IPv6) of a pcap or pcapng capture, so captured calls can be replayed.
///
/// Both pcap timestamp precisions (microsecond and nanosecond magic) in either byte order, and pcapng sections
/// (SHB, IDB with `if_tsresol`, EPB, SPB; other blocks are skipped) are understood. Link types: Ethernet (with
/// 802.1Q/802.1ad VLAN tags), Linux cooked SLL and SLL2, raw IP. Frames that are not UDP over IP, IP fragments and
/// frames cut short by the snap length are skipped and counted in ``skippedFrames``; a malformed *file* is a
/// ``PcapError``. Never traps on any input: every length is checked before it is used.
public struct PcapReader: Sendable {
    private let data: [UInt8]
    private var offset: Int
    private let format: Format
    /// pcap: the file's link type; pcapng: per interface of the current section.
    private var pcapLinkType: UInt32 = 0
    private var pcapNanoseconds = false
    private var bigEndian = false
    private var interfaces: [Interface] = []

    /// Frames skipped because they are not complete UDP datagrams over IPv4/IPv6 (ARP, TCP, fragments, cut off).
    public private(set) var skippedFrames = 0

    private enum Format: Sendable { case pcap, pcapng }
    private struct Interface: Sendable {
        var linkType: UInt32
        var snapLength: UInt32
        /// Timestamp units per second (10^n or 2^n from `if_tsresol`; 10^6 by default).
        var unitsPerSecond: UInt64
    }

    /// Largest record accepted (256 KiB, the largest snap length tools use); anything bigger is a corrupt file.
    public static let maximumRecordLength: UInt32 = 262_144

    /// Starts reading a capture held in memory.
    ///
    /// - Throws: ``PcapError`` if the file header is not a supported pcap or pcapng header.
    public init(bytes: [UInt8]) throws(PcapError) {
        data = bytes
        guard bytes.count >= 4 else { throw .truncated(what: "file header", offset: 0) }
        let magicLE = Self.u32(bytes, 0, bigEndian: false)
        switch magicLE {
        case 0xA1B2_C3D4, 0xA1B2_3C4D, 0xD4C3_B2A1, 0x4D3C_B2A1:
            format = .pcap
            bigEndian = magicLE == 0xD4C3_B2A1 || magicLE == 0x4D3C_B2A1
            pcapNanoseconds = magicLE == 0xA1B2_3C4D || magicLE == 0x4D3C_B2A1
            guard bytes.count >= 24 else { throw .truncated(what: "pcap file header", offset: 0) }
            let major = Self.u16(bytes, 4, bigEndian: bigEndian), minor = Self.u16(bytes, 6, bigEndian: bigEndian)
            guard major == 2 else { throw .unsupportedVersion(major: major, minor: minor) }
            pcapLinkType = Self.u32(bytes, 20, bigEndian: bigEndian) & 0x0FFF_FFFF  // upper bits: FCS flags
            guard PcapLinkType(rawValue: pcapLinkType) != nil else { throw .unsupportedLinkType(pcapLinkType) }
            offset = 24
        case 0x0A0D_0D0A:
            format = .pcapng
            offset = 0
            try readSectionHeader()
        default:
            throw .unknownFormat(magic: Self.u32(bytes, 0, bigEndian: true))
        }
    }

    /// Reads a capture file.
    public init(contentsOfFile path: String) throws(PcapError) {
        try self.init(bytes: try Self.readFile(path))
    }

    /// Every UDP datagram of a capture held in memory.
    public static func readAll(bytes: [UInt8]) throws(PcapError) -> [PcapUDPPacket] {
        var reader = try PcapReader(bytes: bytes)
        var packets: [PcapUDPPacket] = []
        while let packet = try reader.next() { packets.append(packet) }
        return packets
    }

    /// The next UDP datagram, or nil at the end of the file.
    ///
    /// - Throws: ``PcapError`` for a malformed record or block; the packets before it have been returned.
    public mutating func next() throws(PcapError) -> PcapUDPPacket? {
        while true {
            let frame: (linkType: UInt32, start: Int, count: Int, seconds: Int64, nanos: UInt32)?
            switch format {
            case .pcap: frame = try nextPcapRecord()
            case .pcapng: frame = try nextPcapngPacket()
            }
            guard let frame else { return nil }
            if let packet = Self.decodeFrame(
                data, linkType: frame.linkType, start: frame.start, count: frame.count, seconds: frame.seconds,
                nanoseconds: frame.nanos)
            {
                return packet
            }
            skippedFrames += 1
        }
    }

    // MARK: pcap

    private mutating func nextPcapRecord() throws(PcapError)
        -> (linkType: UInt32, start: Int, count: Int, seconds: Int64, nanos: UInt32)?
    {
        while true {
            if offset == data.count { return nil }
            guard data.count - offset >= 16 else { throw .truncated(what: "pcap record header", offset: offset) }
            let seconds = Self.u32(data, offset, bigEndian: bigEndian)
            let fraction = Self.u32(data, offset + 4, bigEndian: bigEndian)
            let captured = Self.u32(data, offset + 8, bigEndian: bigEndian)
            let original = Self.u32(data, offset + 12, bigEndian: bigEndian)
            guard captured <= Self.maximumRecordLength else { throw .recordTooLarge(length: captured, offset: offset) }
            guard data.count - offset - 16 >= Int(captured) else {
                throw .truncated(what: "pcap record", offset: offset)
            }
            let limit: UInt32 = pcapNanoseconds ? 1_000_000_000 : 1_000_000
            guard fraction < limit else {
                throw .badBlock(reason: "sub-second timestamp \(fraction) out of range", offset: offset)
            }
            let start = offset + 16
            offset = start + Int(captured)
            if captured < original {
                skippedFrames += 1  // cut off by the snap length: the datagram is incomplete
                continue
            }
            return (pcapLinkType, start, Int(captured), Int64(seconds), pcapNanoseconds ? fraction : fraction * 1000)
        }
    }

    // MARK: pcapng

    private mutating func readSectionHeader() throws(PcapError) {
        let blockStart = offset
        guard data.count - offset >= 28 else { throw .truncated(what: "pcapng section header", offset: offset) }
        let byteOrder = Self.u32(data, offset + 8, bigEndian: false)
        switch byteOrder {
        case 0x1A2B_3C4D: bigEndian = false
        case 0x4D3C_2B1A: bigEndian = true
        default: throw .badBlock(reason: "bad byte-order magic", offset: offset)
        }
        let major = Self.u16(data, offset + 12, bigEndian: bigEndian)
        let minor = Self.u16(data, offset + 14, bigEndian: bigEndian)
        guard major == 1 else { throw .unsupportedVersion(major: major, minor: minor) }
        let length = try checkedBlockLength(at: blockStart)
        interfaces = []
        offset = blockStart + length
    }

    /// Validates the block at `start` (total length ≥ 12, multiple of 4, inside the file, trailer equal) and
    /// returns its length.
    private func checkedBlockLength(at start: Int) throws(PcapError) -> Int {
        guard data.count - start >= 12 else { throw .truncated(what: "pcapng block header", offset: start) }
        let length = Self.u32(data, start + 4, bigEndian: bigEndian)
        guard length >= 12, length % 4 == 0 else {
            throw .badBlock(reason: "block length \(length) is not a multiple of 4 of at least 12", offset: start)
        }
        guard length <= Self.maximumRecordLength + 64 || Self.u32(data, start, bigEndian: bigEndian) != 6 else {
            throw .recordTooLarge(length: length, offset: start)
        }
        guard UInt64(length) <= UInt64(data.count - start) else {
            throw .truncated(what: "pcapng block", offset: start)
        }
        let trailer = Self.u32(data, start + Int(length) - 4, bigEndian: bigEndian)
        guard trailer == length else {
            throw .badBlock(reason: "trailing length \(trailer) differs from \(length)", offset: start)
        }
        return Int(length)
    }

    private mutating func nextPcapngPacket() throws(PcapError)
        -> (linkType: UInt32, start: Int, count: Int, seconds: Int64, nanos: UInt32)?
    {
        while offset < data.count {
            let start = offset
            guard data.count - start >= 4 else { throw .truncated(what: "pcapng block header", offset: start) }
            if Self.u32(data, start, bigEndian: false) == 0x0A0D_0D0A {
                try readSectionHeader()
                continue
            }
            let length = try checkedBlockLength(at: start)
            let type = Self.u32(data, start, bigEndian: bigEndian)
            let bodyStart = start + 8, bodyEnd = start + length - 4
            offset = start + length
            switch type {
            case 1:  // Interface Description Block
                guard bodyEnd - bodyStart >= 8 else { throw .badBlock(reason: "short interface block", offset: start) }
                let linkType = UInt32(Self.u16(data, bodyStart, bigEndian: bigEndian))
                let snap = Self.u32(data, bodyStart + 4, bigEndian: bigEndian)
                var units: UInt64 = 1_000_000
                var o = bodyStart + 8
                while bodyEnd - o >= 4 {
                    let code = Self.u16(data, o, bigEndian: bigEndian)
                    let optionLength = Int(Self.u16(data, o + 2, bigEndian: bigEndian))
                    if code == 0 { break }
                    guard bodyEnd - o - 4 >= optionLength else {
                        throw .badBlock(reason: "option runs past the block", offset: start)
                    }
                    if code == 9 {  // if_tsresol
                        guard optionLength == 1 else { throw .badBlock(reason: "if_tsresol length", offset: start) }
                        let v = data[o + 4]
                        let exponent = UInt64(v & 0x7F)
                        if v & 0x80 != 0 {
                            guard exponent <= 63 else {
                                throw .badBlock(reason: "if_tsresol 2^-\(exponent)", offset: start)
                            }
                            units = 1 << exponent
                        } else {
                            guard exponent <= 19 else {
                                throw .badBlock(reason: "if_tsresol 10^-\(exponent)", offset: start)
                            }
                            units = (0..<exponent).reduce(UInt64(1)) { r, _ in r * 10 }
                        }
                    }
                    o += 4 + (optionLength + 3) & ~3
                }
                interfaces.append(Interface(linkType: linkType, snapLength: snap, unitsPerSecond: units))
            case 6:  // Enhanced Packet Block
                guard bodyEnd - bodyStart >= 20 else {
                    throw .badBlock(reason: "short enhanced packet block", offset: start)
                }
                let interfaceID = Self.u32(data, bodyStart, bigEndian: bigEndian)
                guard interfaceID < interfaces.count else { throw .undefinedInterface(interfaceID, offset: start) }
                let interface = interfaces[Int(interfaceID)]
                let ts =
                    UInt64(Self.u32(data, bodyStart + 4, bigEndian: bigEndian)) << 32
                    | UInt64(Self.u32(data, bodyStart + 8, bigEndian: bigEndian))
                let captured = Self.u32(data, bodyStart + 12, bigEndian: bigEndian)
                let original = Self.u32(data, bodyStart + 16, bigEndian: bigEndian)
                guard UInt64(captured) <= UInt64(bodyEnd - bodyStart - 20) else {
                    throw .badBlock(reason: "captured length \(captured) exceeds the block", offset: start)
                }
                guard PcapLinkType(rawValue: interface.linkType) != nil else {
                    skippedFrames += 1
                    continue
                }
                if captured < original {
                    skippedFrames += 1
                    continue
                }
                let seconds = ts / interface.unitsPerSecond
                let remainder = ts % interface.unitsPerSecond
                let product = remainder.multipliedFullWidth(by: 1_000_000_000)
                let nanos = interface.unitsPerSecond.dividingFullWidth((product.high, product.low)).quotient
                guard seconds <= UInt64(Int64.max / 1_000_000_000) else {
                    throw .badBlock(reason: "timestamp out of range", offset: start)
                }
                return (interface.linkType, bodyStart + 20, Int(captured), Int64(seconds), UInt32(nanos))
            case 3:  // Simple Packet Block: no timestamp, interface 0
                guard bodyEnd - bodyStart >= 4 else {
                    throw .badBlock(reason: "short simple packet block", offset: start)
                }
                guard let interface = interfaces.first else { throw .undefinedInterface(0, offset: start) }
                let original = Self.u32(data, bodyStart, bigEndian: bigEndian)
                let available = UInt32(bodyEnd - bodyStart - 4)
                let captured = min(original, available, interface.snapLength == 0 ? .max : interface.snapLength)
                guard PcapLinkType(rawValue: interface.linkType) != nil, captured == original else {
                    skippedFrames += 1
                    continue
                }
                return (interface.linkType, bodyStart + 4, Int(captured), 0, 0)
            default:
                continue  // name resolution, statistics, custom and unknown blocks
            }
        }
        return nil
    }

    // MARK: Frames

    /// Decodes link layer, IP and UDP; nil for anything that is not a complete, unfragmented UDP datagram.
    static func decodeFrame(
        _ d: [UInt8], linkType: UInt32, start: Int, count: Int, seconds: Int64, nanoseconds: UInt32
    ) -> PcapUDPPacket? {
        let end = start + count
        var p = start
        var etherType: UInt16
        switch PcapLinkType(rawValue: linkType) {
        case .ethernet:
            guard end - p >= 14 else { return nil }
            etherType = u16(d, p + 12, bigEndian: true)
            p += 14
            var tags = 0
            while etherType == 0x8100 || etherType == 0x88A8 || etherType == 0x9100 {
                guard end - p >= 4, tags < 4 else { return nil }
                etherType = u16(d, p + 2, bigEndian: true)
                p += 4
                tags += 1
            }
        case .linuxCooked:
            guard end - p >= 16 else { return nil }
            etherType = u16(d, p + 14, bigEndian: true)
            p += 16
        case .linuxCookedV2:
            guard end - p >= 20 else { return nil }
            etherType = u16(d, p, bigEndian: true)
            p += 20
        case .rawIP, .rawIPLegacy:
            guard end - p >= 1 else { return nil }
            etherType = d[p] >> 4 == 6 ? 0x86DD : 0x0800
        case .ipv4: etherType = 0x0800
        case .ipv6: etherType = 0x86DD
        case nil: return nil
        }

        let source: IPAddress, destination: IPAddress
        var udpEnd: Int
        switch etherType {
        case 0x0800:
            guard end - p >= 20, d[p] >> 4 == 4 else { return nil }
            let headerLength = Int(d[p] & 0x0F) * 4
            let totalLength = Int(u16(d, p + 2, bigEndian: true))
            guard headerLength >= 20, totalLength >= headerLength, end - p >= totalLength else { return nil }
            let fragment = u16(d, p + 6, bigEndian: true)
            guard fragment & 0x3FFF == 0, d[p + 9] == 17 else { return nil }  // no fragments; UDP only
            source = .v4(u32(d, p + 12, bigEndian: true))
            destination = .v4(u32(d, p + 16, bigEndian: true))
            udpEnd = p + totalLength
            p += headerLength
        case 0x86DD:
            guard end - p >= 40, d[p] >> 4 == 6 else { return nil }
            let payloadLength = Int(u16(d, p + 4, bigEndian: true))
            var next = d[p + 6]
            source = .v6(high: u64(d, p + 8), low: u64(d, p + 16))
            destination = .v6(high: u64(d, p + 24), low: u64(d, p + 32))
            guard end - p - 40 >= payloadLength else { return nil }
            udpEnd = p + 40 + payloadLength
            p += 40
            var headers = 0
            while next != 17 {
                guard headers < 8, udpEnd - p >= 8 else { return nil }
                switch next {
                case 0, 43, 60:  // hop-by-hop, routing, destination options
                    let length = (Int(d[p + 1]) + 1) * 8
                    guard udpEnd - p >= length else { return nil }
                    next = d[p]
                    p += length
                case 44:  // fragment header: only an atomic fragment (offset 0, no more fragments) is whole
                    guard u16(d, p + 2, bigEndian: true) & 0xFFF9 == 0 else { return nil }
                    next = d[p]
                    p += 8
                default: return nil
                }
                headers += 1
            }
        default: return nil
        }

        guard udpEnd - p >= 8 else { return nil }
        let udpLength = Int(u16(d, p + 4, bigEndian: true))
        guard udpLength >= 8, udpLength <= udpEnd - p else { return nil }
        return PcapUDPPacket(
            seconds: seconds, nanoseconds: nanoseconds,
            source: PcapEndpoint(address: source, port: u16(d, p, bigEndian: true)),
            destination: PcapEndpoint(address: destination, port: u16(d, p + 2, bigEndian: true)),
            payload: Array(d[(p + 8)..<(p + udpLength)]))
    }

    // MARK: Bytes

    static func u16(_ d: [UInt8], _ i: Int, bigEndian: Bool) -> UInt16 {
        bigEndian ? UInt16(d[i]) << 8 | UInt16(d[i + 1]) : UInt16(d[i + 1]) << 8 | UInt16(d[i])
    }

    static func u32(_ d: [UInt8], _ i: Int, bigEndian: Bool) -> UInt32 {
        let b = (UInt32(d[i]), UInt32(d[i + 1]), UInt32(d[i + 2]), UInt32(d[i + 3]))
        return bigEndian ? b.0 << 24 | b.1 << 16 | b.2 << 8 | b.3 : b.3 << 24 | b.2 << 16 | b.1 << 8 | b.0
    }

    static func u64(_ d: [UInt8], _ i: Int) -> UInt64 {
        UInt64(u32(d, i, bigEndian: true)) << 32 | UInt64(u32(d, i + 4, bigEndian: true))
    }

    /// The bytes of a capture file (the reader keeps the whole file in memory).
    public static func readFile(_ path: String) throws(PcapError) -> [UInt8] {
        guard let file = fopen(path, "rb") else {
            throw .io("cannot open \(path): \(String(cString: strerror(errno)))")
        }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
            if n > 0 { bytes.append(contentsOf: chunk[0..<n]) }
            if n < chunk.count {
                if ferror(file) != 0 { throw .io("cannot read \(path)") }
                return bytes
            }
        }
    }
}
