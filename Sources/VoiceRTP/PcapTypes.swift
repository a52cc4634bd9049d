import VoiceCore

/// An IPv4 or IPv6 address: of a capture's packets, and of the media transport's endpoints.
public enum IPAddress: Hashable, Sendable, CustomStringConvertible {
    /// IPv4, in host order (`0x7F000001` is 127.0.0.1).
    case v4(UInt32)
    /// IPv6, the 16 bytes as two big-endian halves.
    case v6(high: UInt64, low: UInt64)

    /// Parses dotted IPv4 (`192.0.2.1`) or full / `::`-compressed IPv6 text; nil if malformed.
    public init?(_ text: String) {
        if text.contains(":") {
            let halves = text.split(separator: "::", maxSplits: 1, omittingEmptySubsequences: false)
            guard halves.count <= 2 else { return nil }
            func groups(_ s: Substring) -> [UInt16]? {
                if s.isEmpty { return [] }
                var out: [UInt16] = []
                for g in s.split(separator: ":", omittingEmptySubsequences: false) {
                    guard (1...4).contains(g.count), let v = UInt16(g, radix: 16) else { return nil }
                    out.append(v)
                }
                return out
            }
            guard let head = groups(Substring(halves[0])) else { return nil }
            var all = head
            if halves.count == 2 {
                guard let tail = groups(Substring(halves[1])), head.count + tail.count < 8 else { return nil }
                all += [UInt16](repeating: 0, count: 8 - head.count - tail.count) + tail
            }
            guard all.count == 8 else { return nil }
            let high = all[0..<4].reduce(UInt64(0)) { $0 << 16 | UInt64($1) }
            let low = all[4..<8].reduce(UInt64(0)) { $0 << 16 | UInt64($1) }
            self = .v6(high: high, low: low)
        } else {
            let parts = text.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 4 else { return nil }
            var value: UInt32 = 0
            for p in parts {
                guard (1...3).contains(p.count), let b = UInt8(p) else { return nil }
                value = value << 8 | UInt32(b)
            }
            self = .v4(value)
        }
    }

    public var isIPv6: Bool { if case .v6 = self { true } else { false } }

    public var description: String {
        switch self {
        case .v4(let a):
            let octets: [UInt32] = [a >> 24, (a >> 16) & 0xFF, (a >> 8) & 0xFF, a & 0xFF]
            return octets.map { String($0) }.joined(separator: ".")
        case .v6(let high, let low):
            var groups: [UInt16] = []
            for word in [high, low] {
                for shift in stride(from: 48, through: 0, by: -16) {
                    groups.append(UInt16(truncatingIfNeeded: word >> UInt64(shift)))
                }
            }
            // RFC 5952 §4.2: the first longest run of two or more zero groups becomes "::".
            var best = (start: 0, count: 0)
            var run = (start: 0, count: 0)
            for (i, g) in groups.enumerated() {
                if g == 0 {
                    run = run.count == 0 ? (i, 1) : (run.start, run.count + 1)
                    if run.count > best.count { best = run }
                } else {
                    run = (0, 0)
                }
            }
            let text = { (part: ArraySlice<UInt16>) in part.map { String($0, radix: 16) }.joined(separator: ":") }
            guard best.count >= 2 else { return text(groups[...]) }
            return text(groups[..<best.start]) + "::" + text(groups[(best.start + best.count)...])
        }
    }

    /// Whether this is the unspecified address (`0.0.0.0` or `::`), which a socket binds to for every interface.
    public var isUnspecified: Bool { self == .v4(0) || self == .v6(high: 0, low: 0) }

    /// Whether this is a loopback address (`127.0.0.0/8` or `::1`).
    public var isLoopback: Bool {
        switch self {
        case .v4(let a): a >> 24 == 127
        case .v6(let high, let low): high == 0 && low == 1
        }
    }
}

/// An address and UDP port.
public struct PcapEndpoint: Hashable, Sendable, CustomStringConvertible {
    public var address: IPAddress
    public var port: UInt16

    public init(address: IPAddress, port: UInt16) {
        self.address = address
        self.port = port
    }

    public var description: String {
        address.isIPv6 ? "[\(address)]:\(port)" : "\(address):\(port)"
    }
}

/// One UDP datagram from (or for) a capture file, with its capture time.
public struct PcapUDPPacket: Hashable, Sendable {
    /// Capture time: whole seconds since the Unix epoch…
    public var seconds: Int64
    /// …plus nanoseconds (0 ..< 1_000_000_000). Microsecond files give multiples of 1000.
    public var nanoseconds: UInt32
    public var source: PcapEndpoint
    public var destination: PcapEndpoint
    /// The UDP payload (an RTP or RTCP packet, for the engine).
    public var payload: [UInt8]

    public init(seconds: Int64, nanoseconds: UInt32, source: PcapEndpoint, destination: PcapEndpoint, payload: [UInt8])
    {
        precondition(nanoseconds < 1_000_000_000, "nanoseconds must be below one second")
        precondition(source.address.isIPv6 == destination.address.isIPv6, "source and destination must share a family")
        self.seconds = seconds
        self.nanoseconds = nanoseconds
        self.source = source
        self.destination = destination
        self.payload = payload
    }

    /// Capture time as a media time since the Unix epoch.
    public var timestamp: MediaTime { MediaTime(nanoseconds: seconds &* 1_000_000_000 &+ Int64(nanoseconds)) }
}

/// Link-layer types (LINKTYPE_* values of the pcap and pcapng formats) the reader understands.
public enum PcapLinkType: UInt32, Sendable, CaseIterable {
    case ethernet = 1
    /// LINKTYPE_RAW: raw IPv4 or IPv6, told apart by the version nibble.
    case rawIP = 101
    /// DLT_RAW as some systems write it into files.
    case rawIPLegacy = 12
    case linuxCooked = 113
    case linuxCookedV2 = 276
    case ipv4 = 228
    case ipv6 = 229
}

/// Why a capture file could not be read or written. Frames that are not UDP over IP are not errors: the reader
/// skips and counts them.
public enum PcapError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The file starts with neither a pcap magic number nor a pcapng section header.
    case unknownFormat(magic: UInt32)
    /// The file ends inside a header, record or block starting at `offset`.
    case truncated(what: String, offset: Int)
    /// The pcap header's version is not 2.x.
    case unsupportedVersion(major: UInt16, minor: UInt16)
    /// A link-layer type the reader does not decode.
    case unsupportedLinkType(UInt32)
    /// A record claims more bytes than the format or the file allows.
    case recordTooLarge(length: UInt32, offset: Int)
    /// A pcapng block is malformed (the reason says how).
    case badBlock(reason: String, offset: Int)
    /// A pcapng packet refers to an interface no description block defined.
    case undefinedInterface(UInt32, offset: Int)
    /// Reading or writing the file failed (the reason is the system's).
    case io(String)

    public var description: String {
        switch self {
        case .unknownFormat(let magic): "not a pcap or pcapng file (magic 0x\(String(magic, radix: 16)))"
        case .truncated(let what, let offset): "capture truncated in \(what) at byte \(offset)"
        case .unsupportedVersion(let major, let minor): "unsupported pcap version \(major).\(minor)"
        case .unsupportedLinkType(let type): "unsupported link-layer type \(type)"
        case .recordTooLarge(let length, let offset): "record of \(length) bytes at byte \(offset) is too large"
        case .badBlock(let reason, let offset): "bad pcapng block at byte \(offset): \(reason)"
        case .undefinedInterface(let id, let offset): "packet at byte \(offset) uses undefined interface \(id)"
        case .io(let reason): "capture file I/O failed: \(reason)"
        }
    }
}
