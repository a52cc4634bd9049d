#if canImport(Glibc)
import Glibc
#endif
import VoiceEngine

/// The addresses an agent gathers host candidates on (RFC 8445 §5.1.1.1): every interface that is up, IPv4 and
/// IPv6. Skipped: IPv6 link-local (fe80::/10, needs a scope the candidate cannot carry; browsers skip it too) and
/// loopback unless asked for (tests on one machine).
public enum HostCandidates {
    public static func addresses(includeLoopback: Bool = false) -> [TransportAddress] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(list) }
        var result: [TransportAddress] = []
        for entry in sequence(first: first, next: { $0.pointee.ifa_next }) {
            let flags = Int32(bitPattern: entry.pointee.ifa_flags)
            guard flags & Int32(IFF_UP) != 0, let sa = entry.pointee.ifa_addr,
                includeLoopback || flags & Int32(IFF_LOOPBACK) == 0,
                let address = TransportAddress(socketAddress: sa)
            else { continue }
            if address.family == .ipv6, address.withAddressBytes({ $0[0] == 0xFE && $0[1] & 0xC0 == 0x80 }) { continue }
            if !result.contains(address) { result.append(address) }
        }
        return result
    }

    /// The local address the kernel's routing picks to reach `remote` (a connected UDP socket's name, nothing
    /// sent): where a datagram from a socket bound to a wildcard address leaves from, so the host candidate that
    /// is the base of a check to `remote`. Nil when there is no route.
    public static func routedSource(towards remote: TransportAddress) -> TransportAddress? {
        let fd = socket(remote.family == .ipv4 ? AF_INET : AF_INET6, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        guard DatagramSocket.withSockaddr(remote, { connect(fd, $0, $1) }) == 0 else { return nil }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { return nil }
        return withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { TransportAddress(socketAddress: $0) }
        }
    }
}

extension TransportAddress {
    /// Reads an `AF_INET` or `AF_INET6` socket address (`recvfrom`, `getsockname`, `getifaddrs`); nil otherwise.
    /// Decoded by the engine's ``UDPEndpoint`` (one sockaddr reader for both transports).
    init?(socketAddress pointer: UnsafePointer<sockaddr>) {
        guard let endpoint = UDPEndpoint(socketAddress: pointer) else { return nil }
        self.init(endpoint)
    }

    /// The same address and port as the engine's SDES transport writes them.
    public init(_ endpoint: UDPEndpoint) {
        switch endpoint.address {
        case .v4(let address):
            self = withUnsafeBytes(of: address.bigEndian) { TransportAddress(rawAddress: $0, port: endpoint.port) }
        case .v6(let high, let low):
            self = withUnsafeBytes(of: (high.bigEndian, low.bigEndian)) {
                TransportAddress(rawAddress: $0, port: endpoint.port)
            }
        }
    }
}
