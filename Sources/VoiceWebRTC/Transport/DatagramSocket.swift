#if canImport(Glibc)
import Glibc
#endif

/// Why a socket operation failed (errno and the call).
public struct SocketError: Error, Equatable, Sendable, CustomStringConvertible {
    public var call: String
    public var errno: Int32
    public var description: String { "\(call): \(String(cString: strerror(errno)))" }
}

/// A blocking UDP socket for IPv4 or IPv6 with a receive timeout: the one port on which STUN, DTLS and SRTP
/// of a WebRTC call travel (RFC 7983). Its own small file so the SDES transport (UDPMediaTransport) stays as it is.
///
/// One thread receives; sends may come from another (sendto on a UDP socket is thread-safe).
public final class DatagramSocket: @unchecked Sendable {
    public let descriptor: Int32
    public let localAddress: TransportAddress

    /// Binds to `address` (port 0 for an ephemeral one). IPv6 sockets are IPv6-only, so v4 and v6 candidates are
    /// separate sockets as ICE gathers them.
    public init(bind address: TransportAddress) throws(SocketError) {
        let af = address.family == .ipv4 ? AF_INET : AF_INET6
        let fd = socket(af, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw SocketError(call: "socket", errno: errno) }
        if af == AF_INET6 {
            var on: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &on, socklen_t(MemoryLayout<Int32>.size))
        }
        let bound = Self.withSockaddr(address) { bind(fd, $0, $1) }
        guard bound == 0 else {
            let e = errno
            close(fd)
            throw SocketError(call: "bind \(address)", errno: e)
        }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.descriptor = fd
        self.localAddress = Self.address(from: storage) ?? address
    }

    deinit { close(descriptor) }

    /// Sends one datagram; false when the kernel refused it (counted by the caller, never fatal).
    @discardableResult
    public func send(_ bytes: UnsafeRawBufferPointer, to address: TransportAddress) -> Bool {
        Self.withSockaddr(address) { sendto(descriptor, bytes.baseAddress, bytes.count, 0, $0, $1) } == bytes.count
    }

    @discardableResult
    public func send(_ bytes: [UInt8], to address: TransportAddress) -> Bool {
        bytes.withUnsafeBytes { send($0, to: address) }
    }

    /// Reads a datagram that is already waiting (after `poll` said so); nil when there is none.
    public func read(into buffer: UnsafeMutableRawBufferPointer) -> (count: Int, from: TransportAddress)? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let n = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                recvfrom(descriptor, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT), $0, &length)
            }
        }
        guard n >= 0, let from = Self.address(from: storage) else { return nil }
        return (n, from)
    }

    /// Waits up to `timeoutMilliseconds` for a datagram and reads it into `buffer`; nil on timeout (or EINTR).
    public func receive(into buffer: UnsafeMutableRawBufferPointer, timeoutMilliseconds: Int32)
        -> (count: Int, from: TransportAddress)?
    {
        var pfd = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&pfd, 1, timeoutMilliseconds) > 0 else { return nil }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let n = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                recvfrom(descriptor, buffer.baseAddress, buffer.count, 0, $0, &length)
            }
        }
        guard n >= 0, let from = Self.address(from: storage) else { return nil }
        return (n, from)
    }

    static func withSockaddr<R>(_ address: TransportAddress, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        if address.family == .ipv4 {
            var sa = sockaddr_in()
            sa.sin_family = sa_family_t(AF_INET)
            sa.sin_port = address.port.bigEndian
            address.withAddressBytes { bytes in withUnsafeMutableBytes(of: &sa.sin_addr) { $0.copyMemory(from: bytes) }
            }
            return withUnsafePointer(to: &sa) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    body($0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        var sa = sockaddr_in6()
        sa.sin6_family = sa_family_t(AF_INET6)
        sa.sin6_port = address.port.bigEndian
        address.withAddressBytes { bytes in withUnsafeMutableBytes(of: &sa.sin6_addr) { $0.copyMemory(from: bytes) } }
        return withUnsafePointer(to: &sa) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                body($0, socklen_t(MemoryLayout<sockaddr_in6>.size))
            }
        }
    }

    static func address(from storage: sockaddr_storage) -> TransportAddress? {
        withUnsafePointer(to: storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { TransportAddress(socketAddress: $0) }
        }
    }
}
