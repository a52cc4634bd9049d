import VoiceCore

#if canImport(Glibc)
import Glibc
#endif

/// Reads a transport's socket from the consumer thread itself (``UDPMediaTransport/ReceiveMode/consumerPolls``):
/// the media thread, at its tick, takes every datagram the kernel queued since the last one with non-blocking
/// `recvmsg` calls, so no event-loop thread wakes for packets at all. The jitter buffer still sees when each
/// datagram really arrived: the socket has `SO_TIMESTAMPNS` on, and the kernel's receive time is moved onto the
/// transport's clock by the datagram's age. (The kernel enables timestamping in deferred work when the first socket
/// asks; a datagram that arrives before that is stamped when it is read, as it would be without the option.)
///
/// Everything — the message header, address, control and data buffers — is allocated once at bind; a poll
/// allocates nothing and takes no lock. One thread polls at a time (the consumer of both queues).
final class SocketReceivePoller {
    // SO_TIMESTAMPNS / SCM_TIMESTAMPNS on 64-bit Linux (asm-generic/socket.h: SO_TIMESTAMPNS_OLD, 35).
    static let timestampOption: Int32 = 35
    /// The control buffer: CMSG_SPACE(sizeof(struct timespec)) = 16-byte header + 16-byte timespec.
    private static let controlBytes = 32

    private let fd: Int32
    private let capacity: Int
    private let data: UnsafeMutableRawPointer
    private let control: UnsafeMutableRawPointer
    private let address: UnsafeMutablePointer<sockaddr_storage>
    private let vector: UnsafeMutablePointer<iovec>
    private let header: UnsafeMutablePointer<msghdr>

    /// `capacity`: bytes of the largest datagram to tell apart from an oversize one (a slot plus one byte).
    init(fd: Int32, capacity: Int) {
        self.fd = fd
        self.capacity = capacity
        data = .allocate(byteCount: capacity, alignment: 16)
        control = .allocate(byteCount: Self.controlBytes, alignment: 16)
        address = .allocate(capacity: 1)
        address.initialize(to: sockaddr_storage())
        vector = .allocate(capacity: 1)
        vector.initialize(to: iovec(iov_base: data, iov_len: capacity))
        header = .allocate(capacity: 1)
        header.initialize(to: msghdr())
        var on: Int32 = 1
        // Best effort: without kernel timestamps the arrival is the poll time (at most one tick late).
        _ = setsockopt(fd, SOL_SOCKET, Self.timestampOption, &on, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit {
        data.deallocate()
        control.deallocate()
        address.deallocate()
        vector.deallocate()
        header.deallocate()
    }

    /// Reads every queued datagram and hands each to `deliver(bytes, source, arrival)` (source nil: not an IP address;
    /// arrival in nanoseconds on `clock`). Returns how many were read; stops at `EAGAIN` or any error.
    func poll(clock: any MediaClock, _ deliver: (UnsafeRawBufferPointer, UDPEndpoint?, Int64) -> Void) -> Int {
        var count = 0
        var offset: Int64?  // clock now minus the wall clock now, taken once per poll when a datagram came
        while true {
            header.pointee = msghdr(
                msg_name: UnsafeMutableRawPointer(address), msg_namelen: socklen_t(MemoryLayout<sockaddr_storage>.size),
                msg_iov: vector, msg_iovlen: 1, msg_control: control, msg_controllen: Self.controlBytes, msg_flags: 0)
            let got = recvmsg(fd, header, Int32(MSG_DONTWAIT))
            guard got >= 0 else { return count }
            count += 1
            if offset == nil {
                var wall = timespec()
                clock_gettime(CLOCK_REALTIME, &wall)
                offset = clock.now.nanoseconds - (Int64(wall.tv_sec) * 1_000_000_000 + Int64(wall.tv_nsec))
            }
            let source = UDPEndpoint(socketAddress: address.pointee)
            let arrival = kernelTimestamp().map { $0 + offset! } ?? clock.now.nanoseconds
            // A datagram longer than the buffer comes back cut to it: longer than a slot, so counted as oversize.
            deliver(UnsafeRawBufferPointer(start: data, count: min(got, capacity)), source, arrival)
        }
    }

    /// The `SCM_TIMESTAMPNS` of the last datagram (wall clock, ns), if the kernel attached one.
    private func kernelTimestamp() -> Int64? {
        guard header.pointee.msg_controllen >= Self.controlBytes else { return nil }
        let cmsg = control.assumingMemoryBound(to: cmsghdr.self).pointee
        guard cmsg.cmsg_level == SOL_SOCKET, cmsg.cmsg_type == Self.timestampOption else { return nil }
        let time = (control + MemoryLayout<cmsghdr>.size).loadUnaligned(as: timespec.self)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }
}

// @unchecked Sendable: its buffers are used only inside poll(), which one consumer thread calls at a time (the
// transport's send gate keeps close() from closing the descriptor meanwhile).
extension SocketReceivePoller: @unchecked Sendable {}
