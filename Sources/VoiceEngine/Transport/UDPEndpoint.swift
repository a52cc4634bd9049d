#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 UDP address and port as a plain value: no allocation to copy, compare or hand between threads, so the
/// audio threads can read packet sources and latch the remote without touching the heap.
public struct UDPEndpoint: Hashable, Sendable, CustomStringConvertible {
    /// IPv4 address in host byte order (127.0.0.1 is 0x7F00_0001).
    public var address: UInt32
    public var port: UInt16

    public init(address: UInt32, port: UInt16) {
        self.address = address
        self.port = port
    }

    /// Parses a dotted IPv4 address.
    /// - Throws: ``UDPTransportError/badAddress(_:)`` for anything else (host names and IPv6 are not supported).
    public init(host: String, port: Int) throws(UDPTransportError) {
        guard (0...65535).contains(port) else { throw .badAddress("port \(port) is out of range") }
        var addr = in_addr()
        guard inet_pton(AF_INET, host, &addr) == 1 else {
            throw .badAddress("'\(host)' is not a dotted IPv4 address")
        }
        self.init(address: UInt32(bigEndian: addr.s_addr), port: UInt16(port))
    }

    /// Dotted text of ``address``.
    public var host: String {
        "\(address >> 24).\(address >> 16 & 0xFF).\(address >> 8 & 0xFF).\(address & 0xFF)"
    }

    public var description: String { "\(host):\(port)" }

    var sockaddr: sockaddr_in {
        var sa = sockaddr_in()
        sa.sin_family = sa_family_t(AF_INET)
        sa.sin_port = port.bigEndian
        sa.sin_addr.s_addr = address.bigEndian
        return sa
    }

    init(_ sa: sockaddr_in) {
        self.init(address: UInt32(bigEndian: sa.sin_addr.s_addr), port: UInt16(bigEndian: sa.sin_port))
    }

    /// One word, so it can live in an atomic: bit 48 marks "present".
    var packed: UInt64 { 1 << 48 | UInt64(address) << 16 | UInt64(port) }

    init?(packed: UInt64) {
        guard packed & (1 << 48) != 0 else { return nil }
        self.init(address: UInt32(truncatingIfNeeded: packed >> 16), port: UInt16(truncatingIfNeeded: packed))
    }
}

/// Why the UDP transport could not be set up or used.
public enum UDPTransportError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The host or port is not usable (only dotted IPv4 addresses are supported).
    case badAddress(String)
    /// A socket call failed: the call's name and `errno`.
    case socketCall(String, errno: Int32)
    /// SwiftNIO could not set up the channel (its error, described).
    case channelSetup(String)

    public var description: String {
        switch self {
        case .badAddress(let reason): "bad address: \(reason)"
        case .socketCall(let call, let code): "\(call) failed: \(String(cString: strerror(code))) (errno \(code))"
        case .channelSetup(let reason): "could not set up the UDP channel: \(reason)"
        }
    }
}
