import Foundation
import NIOCore

/// Whether the client's network changed under it, from one look at the interfaces: the local address the kernel
/// would use towards the service now (its routing decides what is "better": a new default route, a VPN, wired
/// over Wi-Fi) against the one the client's flow uses. Pure: the observation in, the verdict out; the client
/// polls (``InterfaceAddresses``) and acts.
package struct NetworkWatch: Equatable, Sendable {
    package enum Verdict: Equatable, Sendable {
        case unchanged
        /// The address in use is gone and there is no route to the service (yet): the flow is dead.
        case lost(String)
        /// The kernel would now use `to` (the old address went away, or a preferred one came): register again
        /// on a new connection from there.
        case changed(from: String?, to: String)
    }

    /// The address the flow uses (nil: none known yet, or lost).
    package private(set) var inUse: String?

    package init(inUse: String?) { self.inUse = inUse }

    /// - Parameters:
    ///   - route: the local address the kernel picks towards the service now; nil when it has no route.
    ///   - addresses: every address on the host's interfaces now.
    package mutating func observe(route: String?, addresses: Set<String>) -> Verdict {
        guard let route else {
            guard let old = inUse, !addresses.contains(old) else { return .unchanged }
            inUse = nil
            return .lost(old)
        }
        guard route != inUse else { return .unchanged }
        let old = inUse
        inUse = route
        return .changed(from: old, to: route)
    }
}

/// The addresses on the host's interfaces that are up (`getifaddrs`), IPv4 and IPv6.
package enum InterfaceAddresses {
    package static func current() -> Set<String> {
        var first: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&first) == 0, let first else { return [] }
        defer { freeifaddrs(first) }
        var addresses: Set<String> = []
        var next: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = next {
            next = entry.pointee.ifa_next
            guard entry.pointee.ifa_flags & UInt32(IFF_UP) != 0, let raw = entry.pointee.ifa_addr else { continue }
            let family = Int32(raw.pointee.sa_family)
            let address: SocketAddress
            if family == AF_INET {
                address = raw.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                    SocketAddress($0.pointee, host: "")
                }
            } else if family == AF_INET6 {
                address = raw.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    SocketAddress($0.pointee, host: "")
                }
            } else {
                continue
            }
            if let ip = address.ipAddress { addresses.insert(ip) }
        }
        return addresses
    }
}
