#if canImport(Glibc)
import Glibc
#endif

/// Writes UDP datagrams into a pcap or pcapng capture, so the engine's calls can be opened in Wireshark.
///
/// Each datagram is wrapped in a synthetic IPv4 or IPv6 header (valid header checksum, TTL 64) and UDP header
/// (real checksum over the pseudo-header, mandatory for IPv6), inside an Ethernet frame with locally administered
/// MAC addresses or as raw IP. The file is built in memory (``bytes``); ``write(toFile:)`` saves it.
public struct PcapWriter: Sendable {
    /// The container format.
    public enum Format: Sendable, Hashable {
        /// Classic pcap (little-endian); nanosecond timestamps use the 0xA1B23C4D magic.
        case pcap(nanosecondTimestamps: Bool)
        /// pcapng: one section, one interface with nanosecond `if_tsresol`, enhanced packet blocks.
        case pcapng
    }

    /// The link layer around each IP packet.
    public enum LinkLayer: Sendable, Hashable {
        case ethernet
        /// LINKTYPE_RAW (101): the IP header comes first.
        case rawIP

        var linkType: PcapLinkType { self == .ethernet ? .ethernet : .rawIP }
    }

    public let format: Format
    public let linkLayer: LinkLayer
    /// The capture so far.
    public private(set) var bytes: [UInt8] = []
    private var ipIdentification: UInt16 = 0

    /// Snap length written into the headers (the largest frame a reader should expect).
    public static let snapLength: UInt32 = 65_535

    public init(format: Format = .pcap(nanosecondTimestamps: false), linkLayer: LinkLayer = .ethernet) {
        self.format = format
        self.linkLayer = linkLayer
        switch format {
        case .pcap(let nanos):
            append32(nanos ? 0xA1B2_3C4D : 0xA1B2_C3D4)
            append16(2)
            append16(4)
            append32(0)  // thiszone
            append32(0)  // sigfigs
            append32(Self.snapLength)
            append32(linkLayer.linkType.rawValue)
        case .pcapng:
            // Section Header Block: byte-order magic, version 1.0, section length unknown (-1), no options.
            append32(0x0A0D_0D0A)
            append32(28)
            append32(0x1A2B_3C4D)
            append16(1)
            append16(0)
            append32(0xFFFF_FFFF)
            append32(0xFFFF_FFFF)
            append32(28)
            // Interface Description Block with if_tsresol = 9 (nanoseconds) and opt_endofopt.
            append32(1)
            append32(32)
            append16(UInt16(linkLayer.linkType.rawValue))
            append16(0)
            append32(Self.snapLength)
            append16(9)
            append16(1)
            bytes += [9, 0, 0, 0]
            append32(0)  // opt_endofopt
            append32(32)
        }
    }

    /// Appends one datagram with its capture time.
    ///
    /// - Precondition: the payload fits one unfragmented IP packet (at most 65,487 bytes over IPv6, 65,507 over
    ///   IPv4), and for classic pcap the time is within 0 ..< 2^32 seconds.
    public mutating func write(_ packet: PcapUDPPacket) {
        let frame = makeFrame(packet)
        switch format {
        case .pcap(let nanos):
            precondition(packet.seconds >= 0 && packet.seconds <= Int64(UInt32.max), "pcap time is 0 ..< 2^32 s")
            append32(UInt32(packet.seconds))
            append32(nanos ? packet.nanoseconds : packet.nanoseconds / 1000)
            append32(UInt32(frame.count))
            append32(UInt32(frame.count))
            bytes += frame
        case .pcapng:
            precondition(packet.seconds >= 0, "pcapng time must not precede the epoch")
            let ts = UInt64(packet.seconds) * 1_000_000_000 + UInt64(packet.nanoseconds)
            let padded = (frame.count + 3) & ~3
            let total = UInt32(32 + padded)
            append32(6)
            append32(total)
            append32(0)  // interface 0
            append32(UInt32(truncatingIfNeeded: ts >> 32))
            append32(UInt32(truncatingIfNeeded: ts))
            append32(UInt32(frame.count))
            append32(UInt32(frame.count))
            bytes += frame
            bytes += [UInt8](repeating: 0, count: padded - frame.count)
            append32(total)
        }
    }

    /// Hands over the bytes built so far and starts an empty buffer, for writers that stream to a file
    /// (``PcapFileWriter``); the next packets continue the same capture.
    public mutating func takeBytes() -> [UInt8] {
        defer { bytes = [] }
        return bytes
    }

    /// Saves the capture.
    public func write(toFile path: String) throws(PcapError) {
        guard let file = fopen(path, "wb") else {
            throw .io("cannot create \(path): \(String(cString: strerror(errno)))")
        }
        let written = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        let closed = fclose(file)
        guard written == bytes.count, closed == 0 else { throw .io("cannot write \(path)") }
    }

    // MARK: Frames

    private mutating func makeFrame(_ packet: PcapUDPPacket) -> [UInt8] {
        let udpLength = 8 + packet.payload.count
        var frame: [UInt8] = []
        frame.reserveCapacity(14 + 40 + udpLength)
        let isIPv6 = packet.source.address.isIPv6
        if linkLayer == .ethernet {
            frame += [0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01]  // destination, source (locally administered)
            frame += isIPv6 ? [0x86, 0xDD] : [0x08, 0x00]
        }
        let ipStart = frame.count
        switch (packet.source.address, packet.destination.address) {
        case (.v4(let src), .v4(let dst)):
            precondition(udpLength + 20 <= 65_535, "UDP payload too large for one IPv4 packet")
            ipIdentification &+= 1
            frame += [0x45, 0]
            frame += be16(UInt16(20 + udpLength))
            frame += be16(ipIdentification)
            frame += [0x40, 0x00, 64, 17, 0, 0]  // DF, TTL 64, UDP, checksum placeholder
            frame += be32(src) + be32(dst)
            let checksum = Self.internetChecksum(frame[ipStart..<ipStart + 20])
            frame[ipStart + 10] = UInt8(checksum >> 8)
            frame[ipStart + 11] = UInt8(checksum & 0xFF)
        case (.v6(let sh, let sl), .v6(let dh, let dl)):
            precondition(udpLength <= 65_535, "UDP payload too large for one IPv6 packet")
            frame += [0x60, 0, 0, 0]
            frame += be16(UInt16(udpLength))
            frame += [17, 64]
            frame += be64(sh) + be64(sl) + be64(dh) + be64(dl)
        default:
            preconditionFailure("source and destination must share an address family")
        }
        let udpStart = frame.count
        frame += be16(packet.source.port) + be16(packet.destination.port) + be16(UInt16(udpLength)) + [0, 0]
        frame += packet.payload
        // UDP checksum over the pseudo-header (addresses, protocol, length) and the datagram (RFC 768 / 8200).
        var pseudo: [UInt8] = []
        if isIPv6 {
            pseudo += frame[ipStart + 8..<ipStart + 40]
            pseudo += be32(UInt32(udpLength)) + [0, 0, 0, 17]
        } else {
            pseudo += frame[ipStart + 12..<ipStart + 20]
            pseudo += [0, 17] + be16(UInt16(udpLength))
        }
        var checksum = Self.internetChecksum(pseudo[...], frame[udpStart...])
        if checksum == 0 { checksum = 0xFFFF }  // 0 means "no checksum" in UDP
        frame[udpStart + 6] = UInt8(checksum >> 8)
        frame[udpStart + 7] = UInt8(checksum & 0xFF)
        return frame
    }

    /// RFC 1071 one's-complement checksum over the concatenation of `parts` (each but the last of even length).
    static func internetChecksum(_ parts: ArraySlice<UInt8>...) -> UInt16 {
        var sum: UInt32 = 0
        for part in parts {
            var i = part.startIndex
            while i + 1 < part.endIndex {
                sum += UInt32(part[i]) << 8 | UInt32(part[i + 1])
                i += 2
            }
            if i < part.endIndex { sum += UInt32(part[i]) << 8 }
        }
        while sum >> 16 != 0 { sum = (sum & 0xFFFF) + (sum >> 16) }
        return ~UInt16(sum)
    }

    private mutating func append16(_ v: UInt16) { bytes += [UInt8(v & 0xFF), UInt8(v >> 8)] }
    private mutating func append32(_ v: UInt32) {
        bytes += [UInt8(v & 0xFF), UInt8((v >> 8) & 0xFF), UInt8((v >> 16) & 0xFF), UInt8(v >> 24)]
    }
    private func be16(_ v: UInt16) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xFF)] }
    private func be32(_ v: UInt32) -> [UInt8] {
        [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)]
    }
    private func be64(_ v: UInt64) -> [UInt8] { be32(UInt32(v >> 32)) + be32(UInt32(truncatingIfNeeded: v)) }
}

/// A pcap/pcapng capture written to a file as packets come, for calls too long to hold in memory.
///
/// Opening creates (or truncates) the file and writes its header at once, so an unwritable path fails before any
/// work starts. Packets are buffered and written in chunks; ``close()`` writes the rest and reports the first write
/// error. Not thread-safe: one thread writes (the engine's live capture hands packets to such a thread,
/// ``PacketCaptureRecorder``).
public final class PcapFileWriter {
    public let path: String
    private var writer: PcapWriter
    private var file: UnsafeMutablePointer<FILE>?
    private var firstError: PcapError?
    /// Packets written so far.
    public private(set) var packetCount = 0

    /// Buffered bytes written out once they exceed this.
    static let chunkBytes = 64 * 1024

    /// - Throws: ``PcapError/io(_:)`` naming the path and the system's reason when it cannot be created.
    public init(path: String, format: PcapWriter.Format = .pcapng, linkLayer: PcapWriter.LinkLayer = .ethernet)
        throws(PcapError)
    {
        self.path = path
        guard let file = fopen(path, "wb") else {
            throw .io("cannot create \(path): \(String(cString: strerror(errno)))")
        }
        self.file = file
        writer = PcapWriter(format: format, linkLayer: linkLayer)
        flush()
        if let firstError {
            fclose(file)
            self.file = nil
            throw firstError
        }
    }

    deinit { try? close() }

    /// Appends one datagram (see ``PcapWriter/write(_:)`` for its preconditions).
    public func write(_ packet: PcapUDPPacket) {
        guard file != nil else { return }
        writer.write(packet)
        packetCount += 1
        if writer.bytes.count >= Self.chunkBytes { flush() }
    }

    /// Writes the buffered bytes to the file.
    public func flush() {
        guard let file else { return }
        let bytes = writer.takeBytes()
        let written = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        if written != bytes.count, firstError == nil {
            firstError = .io("cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// Writes the rest and closes the file. Idempotent.
    /// - Throws: the first write error, if any.
    public func close() throws(PcapError) {
        if let file {
            flush()
            if fclose(file) != 0, firstError == nil {
                firstError = .io("cannot write \(path): \(String(cString: strerror(errno)))")
            }
            self.file = nil
        }
        if let firstError { throw firstError }
    }
}
