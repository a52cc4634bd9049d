import Foundation
import Testing
import VoiceLab
import VoiceRTP

@Suite struct PcapTests {
    // MARK: Hand-built frames (independent of PcapWriter)

    static func be16(_ v: Int) -> [UInt8] { [UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
    static func le32(_ v: UInt32) -> [UInt8] {
        [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)]
    }
    static func be32(_ v: UInt32) -> [UInt8] { Array(le32(v).reversed()) }
    static func w16(_ v: Int, _ big: Bool) -> [UInt8] { big ? be16(v) : Array(be16(v).reversed()) }
    static func w32(_ v: UInt32, _ big: Bool) -> [UInt8] { big ? be32(v) : le32(v) }

    static let rtp: [UInt8] = [0x80, 0x6F, 0x00, 0x01, 0, 0, 0x03, 0xC0, 0x12, 0x34, 0x56, 0x78, 1, 2, 3]

    /// IPv4 + UDP with zero checksums (allowed: the reader does not verify them).
    static func ipv4UDP(
        _ payload: [UInt8], src: [UInt8] = [10, 0, 0, 1], dst: [UInt8] = [10, 0, 0, 2],
        sport: Int = 5004, dport: Int = 5006, protocolNumber: UInt8 = 17, fragment: Int = 0
    ) -> [UInt8] {
        [0x45, 0] + be16(28 + payload.count) + [0, 1] + be16(fragment) + [64, protocolNumber, 0, 0] + src + dst
            + be16(sport) + be16(dport) + be16(8 + payload.count) + [0, 0] + payload
    }

    static func ipv6UDP(_ payload: [UInt8], extensionHeader: Bool = false) -> [UInt8] {
        let src: [UInt8] = [0x20, 0x01, 0x0D, 0xB8] + [UInt8](repeating: 0, count: 11) + [1]
        let dst: [UInt8] = [0x20, 0x01, 0x0D, 0xB8] + [UInt8](repeating: 0, count: 11) + [2]
        let udp = be16(4000) + be16(4002) + be16(8 + payload.count) + [0, 0] + payload
        let ext: [UInt8] = extensionHeader ? [17, 0, 1, 4, 0, 0, 0, 0] : []  // hop-by-hop, PadN
        return [0x60, 0, 0, 0] + be16(ext.count + udp.count) + [extensionHeader ? 0 : 17, 64] + src + dst + ext + udp
    }

    static func ethernet(_ ip: [UInt8], vlan: Bool = false, etherType: Int = 0x0800) -> [UInt8] {
        [UInt8](repeating: 0xAA, count: 6) + [UInt8](repeating: 0xBB, count: 6)
            + (vlan ? [0x81, 0x00, 0x00, 0x64] : []) + be16(etherType) + ip
    }

    /// A classic pcap file; `bigEndian` writes every header field big-endian.
    static func pcapFile(
        linkType: UInt32, nanos: Bool = false, bigEndian: Bool = false,
        records: [(UInt32, UInt32, [UInt8])], originalLength: ((Int) -> Int)? = nil
    ) -> [UInt8] {
        var file =
            w32(nanos ? 0xA1B2_3C4D : 0xA1B2_C3D4, bigEndian) + w16(2, bigEndian) + w16(4, bigEndian)
            + w32(0, bigEndian) + w32(0, bigEndian) + w32(65535, bigEndian) + w32(linkType, bigEndian)
        for (i, (sec, frac, frame)) in records.enumerated() {
            file +=
                w32(sec, bigEndian) + w32(frac, bigEndian) + w32(UInt32(frame.count), bigEndian)
                + w32(UInt32(originalLength?(i) ?? frame.count), bigEndian) + frame
        }
        return file
    }

    static let src4 = PcapEndpoint(address: .v4(0x0A00_0001), port: 5004)
    static let dst4 = PcapEndpoint(address: .v4(0x0A00_0002), port: 5006)

    // MARK: Writer: exact bytes

    @Test func writerProducesHandComputedPcapBytesWithValidChecksums() {
        var writer = PcapWriter(format: .pcap(nanosecondTimestamps: false), linkLayer: .ethernet)
        writer.write(
            PcapUDPPacket(
                seconds: 1_700_000_000, nanoseconds: 123_456_000, source: Self.src4,
                destination: Self.dst4, payload: Self.rtp))
        // Computed independently (Python struct + RFC 1071): IPv4 checksum 0x26bf, UDP checksum 0xd3c4.
        let expected = hex(
            """
            d4c3b2a1020004000000000000000000ffff000001000000 00f1536540e20100390000003900000002000000000202000000000108
            004500002b00014000401126bf0a0000010a000002138c138e0017d3c4806f0001000003c012345678010203
            """)
        #expect(writer.bytes == expected)
    }

    // MARK: Round trips

    static let mixedPackets: [PcapUDPPacket] = [
        PcapUDPPacket(seconds: 1_700_000_000, nanoseconds: 123_456_789, source: src4, destination: dst4, payload: rtp),
        PcapUDPPacket(
            seconds: 1_700_000_000, nanoseconds: 143_456_789, source: dst4, destination: src4,
            payload: [0x81, 0xC9, 0, 1, 0, 0, 0, 9]),
        PcapUDPPacket(
            seconds: 1_700_000_001, nanoseconds: 999_999_999,
            source: PcapEndpoint(address: IPAddress("2001:db8::1")!, port: 4000),
            destination: PcapEndpoint(address: IPAddress("2001:db8::2")!, port: 4002), payload: rtp + rtp),
        PcapUDPPacket(seconds: 1_700_000_002, nanoseconds: 0, source: src4, destination: dst4, payload: [])
    ]

    @Test(
        arguments: [PcapWriter.Format.pcap(nanosecondTimestamps: true), .pcapng],
        [PcapWriter.LinkLayer.ethernet, .rawIP])
    func writtenPacketsReadBackIdentically(format: PcapWriter.Format, link: PcapWriter.LinkLayer) throws {
        var writer = PcapWriter(format: format, linkLayer: link)
        for p in Self.mixedPackets { writer.write(p) }
        #expect(try PcapReader.readAll(bytes: writer.bytes) == Self.mixedPackets)
    }

    @Test func microsecondPcapKeepsMicroseconds() throws {
        var writer = PcapWriter(format: .pcap(nanosecondTimestamps: false))
        for p in Self.mixedPackets { writer.write(p) }
        let read = try PcapReader.readAll(bytes: writer.bytes)
        #expect(read.map(\.nanoseconds) == [123_456_000, 143_456_000, 999_999_000, 0])
        #expect(read.map(\.payload) == Self.mixedPackets.map(\.payload))
        #expect(read[0].timestamp.nanoseconds == 1_700_000_000_123_456_000)
    }

    @Test func writesAndReadsAFileOnDisk() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "voiceengine-pcap-\(UInt64.random(in: 0 ... .max)).pcapng"
        ).path
        defer { try? FileManager.default.removeItem(atPath: path) }
        var writer = PcapWriter(format: .pcapng)
        for p in Self.mixedPackets { writer.write(p) }
        try writer.write(toFile: path)
        var reader = try PcapReader(contentsOfFile: path)
        var count = 0
        while let p = try reader.next() {
            #expect(p == Self.mixedPackets[count])
            count += 1
        }
        #expect(count == 4)
        #expect(throws: PcapError.self) { _ = try PcapReader(contentsOfFile: path + ".missing") }
    }

    // MARK: Reader: link types and byte orders

    @Test func readsBigEndianNanosecondPcap() throws {
        let file = Self.pcapFile(
            linkType: 1, nanos: true, bigEndian: true,
            records: [(1_600_000_000, 5, Self.ethernet(Self.ipv4UDP(Self.rtp)))])
        let packets = try PcapReader.readAll(bytes: file)
        #expect(packets.count == 1)
        #expect(packets[0].seconds == 1_600_000_000 && packets[0].nanoseconds == 5)
        #expect(packets[0].source == Self.src4 && packets[0].destination == Self.dst4)
        #expect(packets[0].payload == Self.rtp)
    }

    @Test func readsEveryLinkType() throws {
        let v4 = Self.ipv4UDP(Self.rtp), v6 = Self.ipv6UDP(Self.rtp)
        let sll = [0, 0, 0, 1, 0, 6] + [UInt8](repeating: 1, count: 8) + [0x08, 0x00] + v4
        let sll2 = [0x86, 0xDD, 0, 0, 0, 0, 0, 2, 0, 1, 0, 6] + [UInt8](repeating: 1, count: 8) + v6
        let cases: [(UInt32, [UInt8], Bool)] = [
            (1, Self.ethernet(v4), false), (1, Self.ethernet(v4, vlan: true), false),
            (1, Self.ethernet(v6, etherType: 0x86DD), true),
            (1, Self.ethernet(Self.ipv6UDP(Self.rtp, extensionHeader: true), etherType: 0x86DD), true),
            (113, sll, false), (276, sll2, true), (101, v4, false), (101, v6, true), (12, v4, false), (228, v4, false),
            (229, v6, true)
        ]
        for (linkType, frame, isV6) in cases {
            let packets = try PcapReader.readAll(bytes: Self.pcapFile(linkType: linkType, records: [(1, 2, frame)]))
            #expect(packets.count == 1, "link type \(linkType)")
            #expect(packets.first?.payload == Self.rtp, "link type \(linkType)")
            #expect(packets.first?.source.address.isIPv6 == isV6)
            #expect(packets.first?.nanoseconds == 2000)
            if isV6 { #expect(packets.first?.source == PcapEndpoint(address: IPAddress("2001:db8::1")!, port: 4000)) }
        }
    }

    @Test func skipsAndCountsFramesThatAreNotWholeUDPDatagrams() throws {
        let frames: [[UInt8]] = [
            Self.ethernet(Self.ipv4UDP(Self.rtp)),
            Self.ethernet([0, 1, 8, 0, 6, 4, 0, 1], etherType: 0x0806),  // ARP
            Self.ethernet(Self.ipv4UDP(Self.rtp, protocolNumber: 6)),  // TCP
            Self.ethernet(Self.ipv4UDP(Self.rtp, fragment: 0x2000)),  // first fragment (MF)
            Self.ethernet(Array(Self.ipv4UDP(Self.rtp).prefix(30))),  // IP total length beyond the frame
            [0x01, 0x02],  // runt
            Self.ethernet(Self.ipv4UDP(Self.rtp, sport: 7000))
        ]
        var reader = try PcapReader(bytes: Self.pcapFile(linkType: 1, records: frames.map { (1, 0, $0) }))
        var ports: [UInt16] = []
        while let p = try reader.next() { ports.append(p.source.port) }
        #expect(ports == [5004, 7000])
        #expect(reader.skippedFrames == 5)
    }

    @Test func snapLengthTruncatedRecordIsSkipped() throws {
        let frame = Self.ethernet(Self.ipv4UDP(Self.rtp))
        var reader = try PcapReader(
            bytes: Self.pcapFile(
                linkType: 1, records: [(1, 0, frame), (2, 0, frame)],
                originalLength: { $0 == 0 ? 1500 : frame.count }))
        #expect(try reader.next()?.seconds == 2)
        #expect(reader.skippedFrames == 1)
    }

    // MARK: pcapng specifics

    /// A pcapng block: type, total length, body padded to 4, total length.
    static func block(_ type: UInt32, _ body: [UInt8], bigEndian: Bool = false) -> [UInt8] {
        let padded = body + [UInt8](repeating: 0, count: (4 - body.count % 4) % 4)
        return w32(type, bigEndian) + w32(UInt32(12 + padded.count), bigEndian) + padded
            + w32(UInt32(12 + padded.count), bigEndian)
    }
    static func shb(bigEndian: Bool = false) -> [UInt8] {
        return block(
            0x0A0D_0D0A,
            w32(0x1A2B_3C4D, bigEndian) + w16(1, bigEndian) + w16(0, bigEndian) + [UInt8](repeating: 0xFF, count: 8),
            bigEndian: bigEndian)
    }
    static func idb(linkType: Int, tsresol: UInt8?, bigEndian: Bool = false) -> [UInt8] {
        var body = w16(linkType, bigEndian) + w16(0, bigEndian) + w32(0, bigEndian)
        body += w16(2, bigEndian) + w16(3, bigEndian) + [0x65, 0x74, 0x68, 0]  // if_name "eth", padded
        if let tsresol { body += w16(9, bigEndian) + w16(1, bigEndian) + [tsresol, 0, 0, 0] }
        body += w16(0, bigEndian) + w16(0, bigEndian)
        return block(1, body, bigEndian: bigEndian)
    }
    static func epb(interface: UInt32, timestamp: UInt64, frame: [UInt8], bigEndian: Bool = false) -> [UInt8] {
        return block(
            6,
            w32(interface, bigEndian) + w32(UInt32(timestamp >> 32), bigEndian)
                + w32(UInt32(timestamp & 0xFFFF_FFFF), bigEndian)
                + w32(UInt32(frame.count), bigEndian) + w32(UInt32(frame.count), bigEndian) + frame
                + [UInt8](repeating: 0, count: (4 - frame.count % 4) % 4), bigEndian: bigEndian)
    }

    @Test func pcapngHonoursTimestampResolutionPerInterfaceAndSkipsUnknownBlocks() throws {
        let frame4 = Self.ethernet(Self.ipv4UDP(Self.rtp))
        let file =
            Self.shb()
            + Self.idb(linkType: 1, tsresol: nil)  // default: microseconds
            + Self.idb(linkType: 101, tsresol: 3)  // milliseconds
            + Self.idb(linkType: 229, tsresol: 0x80 | 20)  // 2^-20 s
            + Self.block(4, [1, 0, 4, 0, 10, 0, 0, 1] + Array("host".utf8) + [0, 0, 0, 0])  // name resolution: skipped
            + Self.block(0x0BAD, [1, 2, 3])  // unknown: skipped
            + Self.epb(interface: 0, timestamp: 1_700_000_000_250_000, frame: frame4)
            + Self.epb(interface: 1, timestamp: 1_700_000_000_250, frame: Self.ipv4UDP(Self.rtp))
            + Self.epb(
                interface: 2, timestamp: (UInt64(1_700_000_000) << 20) | (1 << 19), frame: Self.ipv6UDP(Self.rtp))
            + Self.block(3, Self.le32(UInt32(frame4.count)) + frame4)  // simple packet block on interface 0
            + Self.block(5, [UInt8](repeating: 0, count: 12))  // interface statistics: skipped
        let packets = try PcapReader.readAll(bytes: file)
        #expect(packets.count == 4)
        #expect(packets.map(\.seconds) == [1_700_000_000, 1_700_000_000, 1_700_000_000, 0])
        #expect(packets.map(\.nanoseconds) == [250_000_000, 250_000_000, 500_000_000, 0])
        #expect(packets.allSatisfy { $0.payload == Self.rtp })
    }

    @Test func readsBigEndianPcapngAndASecondSection() throws {
        let frame = Self.ethernet(Self.ipv4UDP(Self.rtp))
        let file =
            Self.shb(bigEndian: true) + Self.idb(linkType: 1, tsresol: 9, bigEndian: true)
            + Self.epb(interface: 0, timestamp: 7_000_000_001, frame: frame, bigEndian: true)
            + Self.shb() + Self.idb(linkType: 1, tsresol: nil) + Self.epb(interface: 0, timestamp: 3, frame: frame)
        let packets = try PcapReader.readAll(bytes: file)
        #expect(packets.map(\.seconds) == [7, 0])
        #expect(packets.map(\.nanoseconds) == [1, 3000])
    }

    // MARK: Malformed files

    @Test func malformedFilesGiveTypedReasons() {
        let frame = Self.ethernet(Self.ipv4UDP(Self.rtp))
        let good = Self.pcapFile(linkType: 1, records: [(1, 0, frame)])
        func error(_ bytes: [UInt8]) -> PcapError? {
            do {
                _ = try PcapReader.readAll(bytes: bytes)
                return nil
            } catch { return error }
        }
        #expect(error([]) == .truncated(what: "file header", offset: 0))
        #expect(error(Array("GIF89a-not-a-capture-file".utf8)) == .unknownFormat(magic: 0x4749_4638))
        #expect(error(Array(good.prefix(20))) == .truncated(what: "pcap file header", offset: 0))
        #expect(error(Array(good.dropLast(3))) == .truncated(what: "pcap record", offset: 24))
        #expect(error(Array(good.prefix(30))) == .truncated(what: "pcap record header", offset: 24))
        #expect(error(Self.pcapFile(linkType: 147, records: [])) == .unsupportedLinkType(147))
        var version = good
        version[4] = 3
        #expect(error(version) == .unsupportedVersion(major: 3, minor: 4))
        var huge = good
        huge[32..<36] = [0, 0, 0, 0x10]
        #expect(error(huge) == .recordTooLarge(length: 0x1000_0000, offset: 24))
        var fraction = good
        fraction[28..<32] = [0x40, 0x42, 0x0F, 0]  // 1_000_000 µs
        #expect(error(fraction) == .badBlock(reason: "sub-second timestamp 1000000 out of range", offset: 24))

        let ng = Self.shb() + Self.idb(linkType: 1, tsresol: nil) + Self.epb(interface: 0, timestamp: 1, frame: frame)
        var trailer = ng
        trailer[trailer.count - 1] = 9
        let epbLength = ng.count - 60  // SHB 28 bytes, IDB 32 bytes
        #expect(
            error(trailer)
                == .badBlock(reason: "trailing length \(0x0900_0000 + epbLength) differs from \(epbLength)", offset: 60)
        )
        #expect(
            error(Self.shb() + Self.epb(interface: 0, timestamp: 1, frame: frame)) == .undefinedInterface(0, offset: 28)
        )
        #expect(error(Array(ng.dropLast(4))) == .truncated(what: "pcapng block", offset: 60))
        var misaligned = ng
        misaligned[32] = 33
        #expect(
            error(misaligned) == .badBlock(reason: "block length 33 is not a multiple of 4 of at least 12", offset: 28))
        var order = ng
        order[8] = 0
        #expect(error(order) == .badBlock(reason: "bad byte-order magic", offset: 0))
        #expect(
            error(Self.shb() + Self.idb(linkType: 1, tsresol: 25)) == .badBlock(reason: "if_tsresol 10^-25", offset: 28)
        )
    }

    /// Bounded random mutation of valid captures: the reader returns packets or a typed error, never traps.
    @Test func randomMutationsNeverCrashTheReader() {
        var pcap = PcapWriter(format: .pcap(nanosecondTimestamps: false))
        var ng = PcapWriter(format: .pcapng, linkLayer: .rawIP)
        for p in Self.mixedPackets {
            pcap.write(p)
            ng.write(p)
        }
        let seeds = [
            pcap.bytes, ng.bytes,
            Self.shb() + Self.idb(linkType: 276, tsresol: 0x85)
                + Self.block(3, Self.le32(60) + [UInt8](repeating: 0x45, count: 60))
        ]
        var state: UInt64 = 0x9E37_79B9
        func random(_ n: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(n))
        }
        var outcomes = (packets: 0, errors: 0)
        for i in 0..<3000 {
            var bytes = seeds[i % seeds.count]
            for _ in 0..<1 + random(8) {
                switch random(4) {
                case 0: bytes[random(bytes.count)] = UInt8(random(256))
                case 1: bytes[random(bytes.count)] ^= UInt8(1 << random(8))
                case 2: if bytes.count > 1 { bytes.removeLast(random(bytes.count)) }
                default: bytes.insert(UInt8(random(256)), at: random(bytes.count + 1))
                }
                if bytes.isEmpty { bytes = [0] }
            }
            do { outcomes.packets += try PcapReader.readAll(bytes: bytes).count } catch { outcomes.errors += 1 }
        }
        #expect(outcomes.errors > 0 && outcomes.packets > 0, "mutations both break and preserve files")
    }

    @Test func addressesParseAndPrint() {
        #expect(IPAddress("192.0.2.10") == .v4(0xC000_020A))
        #expect(IPAddress("192.0.2.10")?.description == "192.0.2.10")
        #expect(IPAddress("2001:db8::1")?.description == "2001:db8::1")
        #expect(IPAddress("::1") == .v6(high: 0, low: 1))
        // RFC 5952 text: the first longest run of zero groups (two or more) shortened, lowercase hex.
        for text in [
            "::", "::1", "1::", "2001:db8:0:1::1", "1:0:0:2::3", "2001:db8::1:0:0:1", "fe80::1:2:3:4:5",
            "1:2:3:4:5:6:7:8"
        ] {
            #expect(IPAddress(text)?.description == text)
        }
        #expect(IPAddress("2001:0DB8:0:0:1:0:0:1")?.description == "2001:db8::1:0:0:1")
        #expect(IPAddress("::1")?.isLoopback == true && IPAddress("127.9.0.1")?.isLoopback == true)
        #expect(IPAddress("::")?.isUnspecified == true && IPAddress("0.0.0.0")?.isUnspecified == true)
        #expect(IPAddress("256.0.0.1") == nil)
        #expect(IPAddress("1::2::3") == nil)
        #expect(PcapEndpoint(address: IPAddress("::1")!, port: 5).description == "[::1]:5")
    }
}

private func hex(_ string: String) -> [UInt8] {
    let digits = Array(string.filter(\.isHexDigit))
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
}
