/// An ICE candidate as `a=candidate:` carries it (RFC 8839 §5.1).
public struct ICECandidate: Equatable, Sendable {
    public enum Kind: String, Sendable { case host, srflx, prflx, relay }

    public var foundation: String
    public var component: Int
    /// "udp" (case-insensitive in SDP); TCP candidates are kept but not used.
    public var transport: String
    public var priority: UInt32
    /// The connection address as written: an IP literal, or an mDNS name (`….local`) that browsers use to hide
    /// host addresses.
    public var host: String
    public var port: UInt16
    public var kind: Kind
    public var relatedHost: String?
    public var relatedPort: UInt16?

    public init(
        foundation: String, component: Int = 1, transport: String = "udp", priority: UInt32, host: String,
        port: UInt16, kind: Kind, relatedHost: String? = nil, relatedPort: UInt16? = nil
    ) {
        self.foundation = foundation
        self.component = component
        self.transport = transport
        self.priority = priority
        self.host = host
        self.port = port
        self.kind = kind
        self.relatedHost = relatedHost
        self.relatedPort = relatedPort
    }

    /// The address when `host` is an IP literal; nil for mDNS names.
    public var address: TransportAddress? { TransportAddress(host, port: port) }
    public var isUDP: Bool { transport.lowercased() == "udp" }

    /// Parses the attribute value, with or without the leading "candidate:" (trickle messages omit `a=`).
    public init?(sdpValue: some StringProtocol) {
        var text = Substring(sdpValue)
        if text.hasPrefix("candidate:") { text = text.dropFirst("candidate:".count) }
        let f = text.split(separator: " ", omittingEmptySubsequences: true)
        guard f.count >= 8, f[6] == "typ", let component = Int(f[1]), (1...256).contains(component),
            let priority = UInt32(f[3]), let port = UInt16(f[5]), let kind = Kind(rawValue: String(f[7]))
        else { return nil }
        self.init(
            foundation: String(f[0]), component: component, transport: String(f[2]), priority: priority,
            host: String(f[4]), port: port, kind: kind)
        var i = 8
        while i + 1 < f.count {
            switch f[i] {
            case "raddr": relatedHost = String(f[i + 1])
            case "rport": relatedPort = UInt16(f[i + 1])
            default: break  // generation, network-id, ufrag, tcptype…: extensions we do not use
            }
            i += 2
        }
    }

    /// "candidate:…" without `a=`.
    public var sdpValue: String {
        var s = "candidate:\(foundation) \(component) \(transport) \(priority) \(host) \(port) typ \(kind.rawValue)"
        if let relatedHost, let relatedPort { s += " raddr \(relatedHost) rport \(relatedPort)" }
        return s
    }

    /// RFC 8445 §5.1.2.1: (2^24)·type preference + (2^8)·local preference + (256 − component).
    public static func priority(kind: Kind, localPreference: UInt32 = 65_535, component: Int = 1) -> UInt32 {
        let typePreference: UInt32 =
            switch kind {
            case .host: 126
            case .prflx: 110
            case .srflx: 100
            case .relay: 0
            }
        return typePreference << 24 | (localPreference & 0xFFFF) << 8 | UInt32(256 - component)
    }
}
