#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 or IPv6 address and a port: what STUN's address attributes, ICE candidates and the WebRTC socket carry.
///
/// Kept as raw network-order bytes (4 or 16) so comparing and hashing never formats a string.
public struct TransportAddress: Hashable, Sendable, CustomStringConvertible {
    public enum Family: UInt8, Sendable { case ipv4 = 1, ipv6 = 2 }

    /// 4 bytes for IPv4, 16 for IPv6, network order.
    public let addressBytes: [UInt8]
    public let port: UInt16

    public var family: Family { addressBytes.count == 4 ? .ipv4 : .ipv6 }

    /// From raw bytes; nil unless there are exactly 4 or 16 of them.
    public init?(addressBytes: [UInt8], port: UInt16) {
        guard addressBytes.count == 4 || addressBytes.count == 16 else { return nil }
        self.addressBytes = addressBytes
        self.port = port
    }

    /// From a numeric literal ("192.0.2.1", "::1", "fe80::1%eth0" without the zone); nil for anything else.
    public init?(_ text: some StringProtocol, port: UInt16) {
        let literal = String(text.split(separator: "%", maxSplits: 1).first ?? "")
        var v4 = in_addr()
        if inet_pton(AF_INET, literal, &v4) == 1 {
            self.addressBytes = withUnsafeBytes(of: &v4) { Array($0) }
        } else {
            var v6 = in6_addr()
            guard inet_pton(AF_INET6, literal, &v6) == 1 else { return nil }
            self.addressBytes = withUnsafeBytes(of: &v6) { Array($0) }
        }
        self.port = port
    }

    /// The numeric form of the address without the port ("192.0.2.1", "2001:db8::1").
    public var host: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let af = family == .ipv4 ? AF_INET : AF_INET6
        let ok = addressBytes.withUnsafeBytes { inet_ntop(af, $0.baseAddress, &buffer, socklen_t(buffer.count)) }
        guard ok != nil else { return "?" }
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public var description: String { family == .ipv4 ? "\(host):\(port)" : "[\(host)]:\(port)" }
}
