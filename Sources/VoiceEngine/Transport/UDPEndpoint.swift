import Synchronization
import VoiceRTP

#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 or IPv6 UDP address and port as a plain value: no allocation to copy, compare or hand between threads,
/// so the audio threads can read packet sources and latch the remote without touching the heap.
///
/// IPv4 peers reached through a dual-stack IPv6 socket (`::ffff:a.b.c.d`) are shown and compared as the IPv4
/// address, so one peer has one endpoint whichever socket it came through.
public struct UDPEndpoint: Hashable, Sendable, CustomStringConvertible {
    public var address: IPAddress
    public var port: UInt16

    public init(address: IPAddress, port: UInt16) {
        if case .v6(let high, let low) = address, high == 0, low >> 32 == 0xFFFF {
            self.address = .v4(UInt32(truncatingIfNeeded: low))  // IPv4-mapped (RFC 4291 §2.5.5.2)
        } else {
            self.address = address
        }
        self.port = port
    }

    /// An IPv4 endpoint; `address` in host byte order (127.0.0.1 is 0x7F00_0001).
    public init(address: UInt32, port: UInt16) {
        self.init(address: .v4(address), port: port)
    }

    /// Parses a dotted IPv4 address or an IPv6 address (`::1`, `[::1]` or `fe80::1%eth0` without the zone).
    /// - Throws: ``UDPTransportError/badAddress(_:)`` for anything else (host names are resolved by the caller).
    public init(host: String, port: Int) throws(UDPTransportError) {
        guard (0...65535).contains(port) else { throw .badAddress("port \(port) is out of range") }
        var text = host
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            self.init(address: UInt32(bigEndian: v4.s_addr), port: UInt16(port))
        } else if inet_pton(AF_INET6, text, &v6) == 1 {
            self.init(address: Self.ipAddress(v6), port: UInt16(port))
        } else {
            throw .badAddress("'\(host)' is neither an IPv4 nor an IPv6 address")
        }
    }

    public var isIPv6: Bool { address.isIPv6 }

    /// The address as text: dotted IPv4, or IPv6 in RFC 5952 form (without brackets).
    public var host: String { address.description }

    /// `192.0.2.1:5004`, or `[2001:db8::1]:5004` for IPv6 (RFC 3986 brackets).
    public var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    // MARK: Socket addresses

    /// This endpoint as a socket address of `family` (an IPv4 endpoint becomes IPv4-mapped for an `AF_INET6`
    /// socket), written into `storage`; returns its length, or nil when an IPv6 endpoint meets an IPv4 socket.
    func socketAddress(family: Int32, into storage: inout sockaddr_storage) -> socklen_t? {
        switch (address, family) {
        case (.v4(let a), AF_INET):
            return withUnsafeMutableBytes(of: &storage) { raw in
                let sa = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)
                sa.pointee = sockaddr_in()
                sa.pointee.sin_family = sa_family_t(AF_INET)
                sa.pointee.sin_port = port.bigEndian
                sa.pointee.sin_addr.s_addr = a.bigEndian
                return socklen_t(MemoryLayout<sockaddr_in>.size)
            }
        case (.v4(let a), AF_INET6):
            return Self.write(high: 0, low: 0xFFFF_0000_0000 | UInt64(a), port: port, into: &storage)
        case (.v6(let high, let low), AF_INET6):
            return Self.write(high: high, low: low, port: port, into: &storage)
        default:
            return nil
        }
    }

    private static func write(high: UInt64, low: UInt64, port: UInt16, into storage: inout sockaddr_storage)
        -> socklen_t
    {
        withUnsafeMutableBytes(of: &storage) { raw in
            let sa = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self)
            sa.pointee = sockaddr_in6()
            sa.pointee.sin6_family = sa_family_t(AF_INET6)
            sa.pointee.sin6_port = port.bigEndian
            withUnsafeMutableBytes(of: &sa.pointee.sin6_addr) { bytes in
                bytes.storeBytes(of: high.bigEndian, toByteOffset: 0, as: UInt64.self)
                bytes.storeBytes(of: low.bigEndian, toByteOffset: 8, as: UInt64.self)
            }
            return socklen_t(MemoryLayout<sockaddr_in6>.size)
        }
    }

    /// Reads the `AF_INET` or `AF_INET6` socket address `pointer` points at (`getaddrinfo`'s `ai_addr`,
    /// `getifaddrs`' `ifa_addr`); nil for other families.
    public init?(socketAddress pointer: UnsafePointer<sockaddr>) {
        switch Int32(pointer.pointee.sa_family) {
        case AF_INET:
            let sa = UnsafeRawPointer(pointer).load(as: sockaddr_in.self)
            self.init(address: UInt32(bigEndian: sa.sin_addr.s_addr), port: UInt16(bigEndian: sa.sin_port))
        case AF_INET6:
            let sa = UnsafeRawPointer(pointer).load(as: sockaddr_in6.self)
            self.init(address: Self.ipAddress(sa.sin6_addr), port: UInt16(bigEndian: sa.sin6_port))
        default:
            return nil
        }
    }

    /// Reads an `AF_INET` or `AF_INET6` socket address filled by `recvmsg`/`getsockname`; nil for other families.
    public init?(socketAddress storage: sockaddr_storage) {
        let endpoint = withUnsafePointer(to: storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { UDPEndpoint(socketAddress: $0) }
        }
        guard let endpoint else { return nil }
        self = endpoint
    }

    static func ipAddress(_ address: in6_addr) -> IPAddress {
        var copy = address
        return withUnsafeBytes(of: &copy) { bytes in
            .v6(
                high: UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                low: UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
        }
    }
}

/// An optional ``UDPEndpoint`` plus a "latched" flag that any thread can read and write without a lock or an
/// allocation: IPv6 needs more than one atomic word, so the words are guarded by a sequence counter (a seqlock).
/// Readers never block — they retry while a write is in flight; writers (rare: signalling, latching) take turns by
/// making the counter odd.
final class AtomicEndpoint: Sendable {
    private let sequence = Atomic<UInt64>(0)
    private let high = Atomic<UInt64>(0)
    private let low = Atomic<UInt64>(0)
    /// Bit 63: present; bit 62: latched; bit 61: IPv6; bits 0–15: the port.
    private let meta = Atomic<UInt64>(0)

    private static let presentBit: UInt64 = 1 << 63
    private static let latchedBit: UInt64 = 1 << 62
    private static let ipv6Bit: UInt64 = 1 << 61

    init() {}

    /// The endpoint and whether it was latched; nil when none was set.
    func load() -> (endpoint: UDPEndpoint, latched: Bool)? {
        var spins = 0
        while true {
            let before = sequence.load(ordering: .acquiring)
            if before & 1 != 0 {  // a writer is between its stores: its words may be torn
                spins += 1
                if spins & 63 == 0 { sched_yield() }  // the writer was preempted mid-write on a busy machine
                continue
            }
            let (h, l, m) = (high.load(ordering: .relaxed), low.load(ordering: .relaxed), meta.load(ordering: .relaxed))
            atomicMemoryFence(ordering: .acquiring)
            guard sequence.load(ordering: .relaxed) == before else { continue }
            return Self.decode(high: h, low: l, meta: m)
        }
    }

    /// Replaces the value; returns the previous one.
    @discardableResult
    func store(_ endpoint: UDPEndpoint?, latched: Bool) -> (endpoint: UDPEndpoint, latched: Bool)? {
        write { _ in (endpoint, latched) }
    }

    /// Latches to `endpoint` only when nothing is latched yet; returns whether it did.
    func latchIfUnlatched(_ endpoint: UDPEndpoint) -> Bool {
        var did = false
        write { current in
            if current?.latched == true { return current.map { ($0.endpoint, $0.latched) } ?? (nil, false) }
            did = true
            return (endpoint, true)
        }
        return did
    }

    /// Runs `change` on the current value as the only writer and stores what it returns; returns the old value.
    @discardableResult
    private func write(
        _ change: ((endpoint: UDPEndpoint, latched: Bool)?) -> (UDPEndpoint?, Bool)
    ) -> (endpoint: UDPEndpoint, latched: Bool)? {
        var current = sequence.load(ordering: .relaxed)
        while true {
            if current & 1 == 0 {
                let (exchanged, original) = sequence.compareExchange(
                    expected: current, desired: current + 1, ordering: .acquiring)
                if exchanged { break }
                current = original
            } else {
                current = sequence.load(ordering: .relaxed)
            }
        }
        atomicMemoryFence(ordering: .releasing)  // the odd counter is visible before any of the new words
        let old = Self.decode(
            high: high.load(ordering: .relaxed), low: low.load(ordering: .relaxed), meta: meta.load(ordering: .relaxed))
        let (endpoint, latched) = change(old)
        if let endpoint {
            var m = Self.presentBit | UInt64(endpoint.port) | (latched ? Self.latchedBit : 0)
            switch endpoint.address {
            case .v4(let a):
                high.store(0, ordering: .relaxed)
                low.store(UInt64(a), ordering: .relaxed)
            case .v6(let h, let l):
                m |= Self.ipv6Bit
                high.store(h, ordering: .relaxed)
                low.store(l, ordering: .relaxed)
            }
            meta.store(m, ordering: .relaxed)
        } else {
            meta.store(0, ordering: .relaxed)
        }
        sequence.store(current + 2, ordering: .releasing)
        return old
    }

    private static func decode(high: UInt64, low: UInt64, meta: UInt64) -> (endpoint: UDPEndpoint, latched: Bool)? {
        guard meta & presentBit != 0 else { return nil }
        let address: IPAddress =
            meta & ipv6Bit != 0 ? .v6(high: high, low: low) : .v4(UInt32(truncatingIfNeeded: low))
        return (UDPEndpoint(address: address, port: UInt16(truncatingIfNeeded: meta)), meta & latchedBit != 0)
    }
}

/// Why the UDP transport could not be set up or used.
public enum UDPTransportError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The host or port is not usable (an IPv4 or IPv6 address is needed; host names are resolved by the caller).
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
