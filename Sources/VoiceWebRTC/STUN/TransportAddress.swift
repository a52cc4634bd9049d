#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 or IPv6 address and a port: what STUN's address attributes, ICE candidates and the WebRTC socket carry.
///
/// Kept as raw network-order bytes (4 or 16) so comparing and hashing never formats a string.
public struct TransportAddress: Hashable, Sendable, CustomStringConvertible {
    public enum Family: UInt8, Sendable { case ipv4 = 1, ipv6 = 2 }

    /// The 16 address bytes (an IPv4 address in the first 4), held inline so that receiving a datagram, which
    /// yields its source address, allocates nothing.
    private let high: UInt64
    private let low: UInt64
    public let family: Family
    public let port: UInt16

    /// 4 bytes for IPv4, 16 for IPv6, network order (a fresh array: not for the per-packet path).
    public var addressBytes: [UInt8] { withAddressBytes { Array($0) } }

    /// The address bytes (4 or 16, network order) without copying them to the heap.
    public func withAddressBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeBytes(of: (high, low)) {
            try body(UnsafeRawBufferPointer(rebasing: $0[0..<(family == .ipv4 ? 4 : 16)]))
        }
    }

    /// From raw bytes in network order; nil unless there are exactly 4 or 16 of them.
    public init?(addressBytes: some Collection<UInt8>, port: UInt16) {
        guard addressBytes.count == 4 || addressBytes.count == 16 else { return nil }
        var pair: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &pair) { raw in
            for (i, b) in addressBytes.enumerated() { raw[i] = b }
        }
        (high, low) = pair
        family = addressBytes.count == 4 ? .ipv4 : .ipv6
        self.port = port
    }

    /// From a sockaddr's address field (4 or 16 bytes) without an intermediate array.
    init(rawAddress: UnsafeRawBufferPointer, port: UInt16) {
        var pair: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &pair) { $0.copyMemory(from: rawAddress) }
        (high, low) = pair
        family = rawAddress.count == 4 ? .ipv4 : .ipv6
        self.port = port
    }

    /// From a numeric literal ("192.0.2.1", "::1", "fe80::1%eth0" without the zone); nil for anything else.
    public init?(_ text: some StringProtocol, port: UInt16) {
        let literal = String(text.split(separator: "%", maxSplits: 1).first ?? "")
        var v4 = in_addr()
        if inet_pton(AF_INET, literal, &v4) == 1 {
            self.init(rawAddress: withUnsafeBytes(of: &v4) { UnsafeRawBufferPointer($0) }, port: port)
            return
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, literal, &v6) == 1 else { return nil }
        self = withUnsafeBytes(of: &v6) { TransportAddress(rawAddress: $0, port: port) }
    }

    /// The numeric form of the address without the port ("192.0.2.1", "2001:db8::1").
    public var host: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let af = family == .ipv4 ? AF_INET : AF_INET6
        let ok = withAddressBytes { inet_ntop(af, $0.baseAddress, &buffer, socklen_t(buffer.count)) }
        guard ok != nil else { return "?" }
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public var description: String { family == .ipv4 ? "\(host):\(port)" : "[\(host)]:\(port)" }
}
