import Foundation
import VoiceEngine

#if canImport(Glibc)
import Glibc
#endif

/// A peer's `HOST:PORT` from the command line: an IPv4 address, an IPv6 address in brackets (`[::1]:5004`, RFC 3986)
/// or a host name, resolved here (IPv4 first where a name has both, as most peers listen on IPv4).
enum PeerAddress {
    /// `HOST:PORT` split at the last colon (so `[::1]:5060` gives `[::1]`), or nil when no integer port follows it.
    static func split(_ text: String) -> (host: String, port: Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]) else { return nil }
        return (String(text[..<colon]), port)
    }

    /// Whether this host can open IPv6 sockets (the kernel may have IPv6 off).
    static var hostHasIPv6: Bool {
        let fd = socket(AF_INET6, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { return false }
        close(fd)
        return true
    }

    static func resolve(_ text: String, option: String) throws -> UDPEndpoint {
        let usage = "expected HOST:PORT (an IPv4 address, [IPv6 address] or a host name; port 1...65535)"
        guard let (host, port) = split(text), (1...65_535).contains(port) else {
            throw CommandFailure.usage("\(option) \(text): \(usage)")
        }
        if host.hasPrefix("[") != host.hasSuffix("]") || (!host.hasPrefix("[") && host.contains(":")) {
            throw CommandFailure.usage(
                "\(option) \(text): \(usage) — an IPv6 address goes in brackets, e.g. [::1]:5004")
        }
        if host.hasPrefix("[") {
            guard let endpoint = try? UDPEndpoint(host: host, port: port), endpoint.isIPv6 else {
                throw CommandFailure.usage("\(option) \(text): \(host) is not an IPv6 address")
            }
            return endpoint
        }
        if let endpoint = try? UDPEndpoint(host: host, port: port) { return endpoint }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        defer { if list != nil { freeaddrinfo(list) } }
        var found: [UDPEndpoint] = []
        var cursor = status == 0 ? list : nil
        while let entry = cursor {
            cursor = entry.pointee.ai_next
            if let address = entry.pointee.ai_addr, let endpoint = UDPEndpoint(socketAddress: address) {
                found.append(UDPEndpoint(address: endpoint.address, port: UInt16(port)))
            }
        }
        guard let endpoint = found.first(where: { !$0.isIPv6 }) ?? found.first else {
            let reason = status == 0 ? "no address" : String(cString: gai_strerror(status))
            throw CommandFailure.runtime("\(option) \(text): cannot resolve \(host): \(reason)")
        }
        return endpoint
    }
}
