import NIOCore
import NIOPosix
import Synchronization
import VoiceCore

#if canImport(Glibc)
import Glibc
#endif

/// Which of the two multiplexed flows a datagram belongs to (RFC 5761 §4).
public enum MediaPacketKind: Sendable, Hashable {
    case rtp, rtcp
}

/// A received datagram lent to the consumer inside ``UDPMediaTransport/withNextPacket(_:_:)``.
///
/// `bytes` points into the transport's preallocated slot and is valid only inside that closure.
public struct ReceivedPacket {
    public let kind: MediaPacketKind
    public let bytes: UnsafeRawBufferPointer
    /// Where it came from: the candidate for symmetric-RTP latching.
    public let source: UDPEndpoint
    /// When the event loop read it, on the transport's ``UDPMediaTransport/Configuration/clock``.
    public let arrival: MediaTime
}

/// Outcome of a send; never thrown, because the audio thread sending cannot do anything but count it.
public enum UDPSendResult: Sendable, Equatable {
    case sent
    /// No remote set or latched yet.
    case noRemote
    /// The socket's send buffer is full (`EAGAIN`): the packet is dropped, as a late audio packet would be.
    case wouldBlock
    /// The transport is closed.
    case closed
    /// `sendto` failed with this errno (e.g. `ECONNREFUSED` after an ICMP port-unreachable).
    case failed(errno: Int32)
}

/// How the send address follows the peer (symmetric RTP, RFC 4961).
public enum LatchPolicy: Sendable, Hashable {
    /// The transport latches by itself on the first well-formed RTP/RTCP datagram. For plain RTP, or when any
    /// first packet is trusted; the receive path can still re-latch with ``UDPMediaTransport/latchRemote(to:)``.
    case firstPacket
    /// The transport never latches by itself: the receive path calls ``UDPMediaTransport/latchRemote(to:)`` with
    /// the source of the first packet that passed SRTP authentication, so a spoofed datagram cannot steer media.
    case manual
}

/// Counters of a ``UDPMediaTransport``; a snapshot, read from any thread.
public struct UDPTransportCounters: Sendable, Equatable {
    /// Datagrams queued for the consumer.
    public var receivedRTP = 0
    public var receivedRTCP = 0
    /// Dropped because the consumer's queue was full (it fell `queueCapacity` packets behind).
    public var droppedRTPQueueFull = 0
    public var droppedRTCPQueueFull = 0
    /// Dropped: zero-length datagram.
    public var droppedEmpty = 0
    /// Dropped: shorter than an RTP (12) or RTCP (8) header.
    public var droppedTooShort = 0
    /// Dropped: not RTP version 2 (STUN, DTLS, garbage).
    public var droppedNotRTP = 0
    /// Dropped: longer than the slot size.
    public var droppedOversize = 0
    /// Dropped: from a source that is not an IP address (never expected from a UDP socket).
    public var droppedOtherAddressFamily = 0
    /// Read errors the event loop reported (e.g. ECONNREFUSED after ICMP); the channel stays open.
    public var receiveErrors = 0
    public var sent = 0
    public var sendWouldBlock = 0
    public var sendFailed = 0
    public var sendNoRemote = 0
    /// Times the remote changed by latching (first latch included).
    public var latches = 0

    /// Every datagram that was read, queued or dropped.
    public var datagramsRead: Int {
        receivedRTP + receivedRTCP + droppedRTPQueueFull + droppedRTCPQueueFull + droppedEmpty + droppedTooShort
            + droppedNotRTP + droppedOversize + droppedOtherAddressFamily
    }
}

/// UDP for one media stream on SwiftNIO: one socket, RTP and RTCP multiplexed on it (RFC 5761) unless the peer
/// keeps RTCP on a port of its own (then a second socket, ``bindRTCPPort(port:)``), symmetric RTP, and packets
/// handed to the audio threads through fixed-capacity queues.
///
/// **Receive.** The socket lives on a NIO event loop (`DatagramBootstrap`). NIO reads each datagram into a
/// `ByteBuffer` (its allocator's business, on the event loop, not the audio thread); the handler classifies it —
/// second byte 192…223 is RTCP, anything else RTP —, copies it into a preallocated fixed-size slot and queues the
/// slot on the RTP or RTCP SPSC queue. The consumer borrows packets with ``withNextPacket(_:_:)``: no allocation,
/// lock or copy on its side. A full queue, an oversize, empty, short or non-RTP datagram is counted and dropped.
/// Each queue has one consumer thread (RTP and RTCP may be consumed by different threads). With
/// ``ReceiveMode/consumerPolls`` there is no event loop: the consumer reads the socket itself with
/// ``receiveFromSocket()`` at its own tick (a live call's media thread), so no thread wakes per packet.
///
/// **Send.** ``send(_:)`` calls `sendto(2)` with `MSG_DONTWAIT` directly on the channel's socket from the calling
/// (audio) thread. `channel.writeAndFlush` from a foreign thread would be legal in NIO, but allocates a
/// `ByteBuffer`, an envelope and a promise and enqueues a task under the event loop's lock for every packet, and
/// adds a thread hop of latency; one non-blocking syscall does none of that. UDP `sendto` is atomic per datagram,
/// so concurrent senders (RTP from the capture thread, RTCP from the control plane) and NIO's reads on the same
/// socket do not interfere. NIO never writes to this socket. A lock-free in-flight count keeps ``close()`` from
/// closing the descriptor under a running `sendto`.
///
/// **Symmetric RTP.** Media goes to ``remote``: set from signalling with ``setRemote(_:)``, then latched to where
/// the peer's packets actually come from — by the transport on the first packet (``LatchPolicy/firstPacket``) or by
/// the receive path after SRTP authentication (``LatchPolicy/manual``, the safe choice with SRTP).
///
/// **IPv4 and IPv6.** The socket's family follows the bound address; bound to `::` it is dual-stack and IPv4 peers
/// appear as plain IPv4 endpoints. An IPv6 remote on an IPv4 socket cannot be reached: those sends fail with
/// `EAFNOSUPPORT` (counted in ``UDPTransportCounters/sendFailed``). Call ``close()`` when the stream ends.
public final class UDPMediaTransport: Sendable {
    public struct Configuration: Sendable {
        /// Largest datagram accepted, bytes; longer ones are dropped as oversize. 1500 covers any Ethernet MTU.
        public var maxPacketSize: Int
        /// Packets the RTP queue holds before it drops.
        public var rtpQueueCapacity: Int
        /// Packets the RTCP queue holds before it drops.
        public var rtcpQueueCapacity: Int
        public var latchPolicy: LatchPolicy
        /// Stamps arrival times (monotonic by default; a manual clock in simulations).
        public var clock: any MediaClock
        /// `SO_RCVBUF` request in bytes, or nil for the system default.
        public var receiveBufferBytes: Int?
        /// Records every datagram sent and received (as on the wire) into a capture file, off the audio path.
        public var capture: PacketCaptureRecorder?
        /// Who reads the socket: an event loop (the default) or the consumer with ``receiveFromSocket()``.
        public var receive: ReceiveMode

        public init(
            maxPacketSize: Int = 1500, rtpQueueCapacity: Int = 256, rtcpQueueCapacity: Int = 32,
            latchPolicy: LatchPolicy = .manual, clock: any MediaClock = MonotonicClock(),
            receiveBufferBytes: Int? = 256 * 1024, capture: PacketCaptureRecorder? = nil,
            receive: ReceiveMode = .eventLoop
        ) {
            self.receive = receive
            precondition(maxPacketSize >= 12 && rtpQueueCapacity > 0 && rtcpQueueCapacity > 0)
            self.maxPacketSize = maxPacketSize
            self.rtpQueueCapacity = rtpQueueCapacity
            self.rtcpQueueCapacity = rtcpQueueCapacity
            self.latchPolicy = latchPolicy
            self.clock = clock
            self.receiveBufferBytes = receiveBufferBytes
            self.capture = capture
        }
    }

    /// Who reads the socket.
    public enum ReceiveMode: Sendable, Hashable {
        /// A NIO event loop reads each datagram as it arrives and queues it (one wake-up per readable moment);
        /// any thread consumes with ``withNextPacket(_:_:)``.
        case eventLoop
        /// No event loop: the consumer calls ``receiveFromSocket()`` before draining the queues, at its own
        /// tick, and reads what the kernel queued meanwhile (non-blocking, kernel arrival timestamps). A live
        /// call's media thread does this, so received packets wake no thread at all. Both queues then have the
        /// one consumer thread that polls.
        case consumerPolls
    }

    /// The bound address (with the port the system chose when bound to port 0).
    public let localEndpoint: UDPEndpoint
    public let configuration: Configuration
    /// nil when the consumer polls the socket (``ReceiveMode/consumerPolls``).
    private let channel: (any Channel)?
    let state: TransportState
    /// The socket for RTCP when the peer does not multiplex it (``bindRTCPPort(port:)``); polled, drained, latched
    /// and closed with this one. Set at most once, read lock-free on the audio path.
    let rtcpPort = AtomicLazyReference<UDPMediaTransport>()
    /// The peer's RTCP address the last offer/answer gave (``setRemote(negotiated:)``), so that a re-negotiation
    /// moves RTCP only when the peer moved it, not away from a latched address.
    let negotiatedRemoteRTCP = Mutex<UDPEndpoint?>(nil)

    init(channel: (any Channel)?, state: TransportState, local: UDPEndpoint, configuration: Configuration) {
        self.channel = channel
        self.state = state
        self.localEndpoint = local
        self.configuration = configuration
    }

    /// The event loop every transport registers on unless told otherwise: one loop of NIO's singleton group, so
    /// the packets of all calls of a process are read by one thread, which wakes once for all the sockets that
    /// are readable together instead of the calls' sockets being spread over one thread per core.
    public static let sharedReceiveLoop: any EventLoop = MultiThreadedEventLoopGroup.singleton.next()

    /// Opens a UDP socket bound to `host:port` (port 0: any free port) and registers it on `group`.
    ///
    /// - Parameters:
    ///   - host: the IPv4 or IPv6 address to bind, e.g. `127.0.0.1`, `0.0.0.0`, `::1`, or `::` (dual stack: IPv6
    ///     and IPv4 peers on one socket).
    ///   - remote: where to send until latching changes it (from the peer's SDP), if known.
    /// - Throws: ``UDPTransportError``.
    public static func bind(
        host: String, port: Int = 0, remote: UDPEndpoint? = nil, configuration: Configuration = Configuration(),
        group: any EventLoopGroup = UDPMediaTransport.sharedReceiveLoop
    ) async throws(UDPTransportError) -> UDPMediaTransport {
        let (fd, family, local) = try openSocket(host: host, port: port, configuration: configuration)
        var handedToNIO = false
        defer { if !handedToNIO { Glibc.close(fd) } }
        configuration.capture?.setLocal(local)
        let state = TransportState(fd: fd, family: family, configuration: configuration)
        if let remote { state.setRemote(remote) }
        if configuration.receive == .consumerPolls {
            handedToNIO = true  // owned by the transport: closed by close() or deinit
            return UDPMediaTransport(channel: nil, state: state, local: local, configuration: configuration)
        }
        let channel: any Channel
        do {
            handedToNIO = true  // from here NIO owns and closes the descriptor
            channel = try await DatagramBootstrap(group: group)
                // One byte more than a slot, so an oversize datagram shows as longer than a slot instead of being
                // silently truncated to fit.
                .channelOption(
                    .recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: configuration.maxPacketSize + 1)
                )
                .channelOption(.maxMessagesPerRead, value: 16)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(MediaDatagramHandler(state: state))
                    }
                }
                .withBoundSocket(fd)
                .get()
        } catch {
            throw .channelSetup(String(describing: error))
        }
        return UDPMediaTransport(
            channel: channel, state: state, local: local, configuration: configuration)
    }

    /// A non-blocking UDP socket bound to `host:port`, with the receive buffer and dual-stack options the
    /// configuration asks for; closed again when any step fails.
    static func openSocket(host: String, port: Int, configuration: Configuration) throws(UDPTransportError)
        -> (fd: Int32, family: Int32, local: UDPEndpoint)
    {
        let endpoint = try UDPEndpoint(host: host, port: port)
        let family = endpoint.isIPv6 ? AF_INET6 : AF_INET
        let fd = socket(
            family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .socketCall("socket", errno: errno) }
        var keep = false
        defer { if !keep { Glibc.close(fd) } }

        if var bytes = configuration.receiveBufferBytes.map(Int32.init) {
            // Best effort: the kernel caps it at rmem_max; a failure here only means a smaller buffer.
            _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, socklen_t(MemoryLayout<Int32>.size))
        }
        if family == AF_INET6 {
            // Dual stack: bound to `::`, the socket also carries IPv4 (as ::ffff:a.b.c.d), whatever the system's
            // bindv6only default is.
            var v6Only: Int32 = 0
            _ = setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &v6Only, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_storage()
        let length = endpoint.socketAddress(family: family, into: &address)!
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, length) }
        }
        guard bound == 0 else { throw .socketCall("bind", errno: errno) }
        var named = sockaddr_storage()
        var namedLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let gotName = withUnsafeMutablePointer(to: &named) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &namedLength) }
        }
        guard gotName == 0, let local = UDPEndpoint(socketAddress: named) else {
            throw .socketCall("getsockname", errno: errno)
        }
        keep = true
        return (fd, family, local)
    }

    deinit {
        // A transport dropped without close(): nobody can be sending any more (no references), so just close.
        if state.markClosed() { closeSocket() }
    }

    private func closeSocket() {
        if let channel { channel.close(promise: nil) } else { Glibc.close(state.fd) }
    }

    // MARK: Receiving (one consumer thread per kind)

    /// Consumer, with ``ReceiveMode/consumerPolls``: reads every datagram waiting on the socket into the queues
    /// (classified, counted and dropped as the event loop would) and returns how many were read; 0 at once with
    /// an event loop or after ``close()``. No allocation or lock; one `recvmsg` per datagram plus one.
    @discardableResult
    public func receiveFromSocket() -> Int { state.pollSocket() + (rtcpPort.load()?.receiveFromSocket() ?? 0) }

    /// Consumer: lends the oldest queued packet of `kind` to `body` and then recycles its slot.
    /// Returns nil (without calling `body`) when none is queued. No allocation, lock or syscall.
    /// RTCP from a separate RTCP port (``bindRTCPPort(port:)``) comes after what the RTP port queued.
    public func withNextPacket<R>(_ kind: MediaPacketKind, _ body: (ReceivedPacket) throws -> R) rethrows -> R? {
        let next = try state.pool(kind).withNext { bytes, source, arrival in
            try body(
                ReceivedPacket(
                    kind: kind, bytes: bytes, source: source,
                    arrival: MediaTime(nanoseconds: arrival)))
        }
        guard next == nil, kind == .rtcp, let separate = rtcpPort.load() else { return next }
        return try separate.withNextPacket(.rtcp, body)
    }

    /// Packets of `kind` waiting (a snapshot).
    public func pendingPackets(_ kind: MediaPacketKind) -> Int { state.pool(kind).pending }

    /// Consumer: discards every queued packet of `kind` (after an interruption, stale audio must not play).
    @discardableResult
    public func discardPending(_ kind: MediaPacketKind) -> Int { state.pool(kind).discardAll() }

    // MARK: Remote and latching (any thread, lock-free)

    /// Where ``send(_:)`` sends: set by signalling or latched; nil until one of those happened.
    public var remote: UDPEndpoint? { state.remote.load()?.endpoint }

    /// Whether the remote has been latched to a received packet's source (by policy or ``latchRemote(to:)``).
    public var isLatched: Bool { state.remote.load()?.latched ?? false }

    /// Sets the remote from signalling (the peer's SDP `c=`/`m=`) and clears the latch, so the next qualifying
    /// packet latches again.
    public func setRemote(_ endpoint: UDPEndpoint) { state.setRemote(endpoint) }

    /// Symmetric RTP: sends from now on to `source`, normally a packet's source that just passed SRTP
    /// authentication. Cheap and allocation-free; safe on the audio thread. Returns whether the remote changed.
    /// RTCP that arrived on a separate RTCP port latches that port's remote instead (pass its `kind`).
    @discardableResult
    public func latchRemote(to source: UDPEndpoint, for kind: MediaPacketKind = .rtp) -> Bool {
        if kind == .rtcp, let separate = rtcpPort.load() { return separate.latchRemote(to: source) }
        return state.latch(to: source)
    }

    /// A datagram that is not RTP/RTCP and not STUN or ZRTP (first byte 20…63: a DTLS record, RFC 7983 §7).
    public typealias DTLSRecordHandler = @Sendable (UnsafeRawBufferPointer, UDPEndpoint) -> Void

    /// Hands DTLS records arriving on this socket to `handler` (still counted in `droppedNotRTP`), on the thread
    /// that reads the socket; nil stops it. For a DTLS-SRTP handshake on the media port (RFC 5764 §5.1.2): the
    /// records are rare control traffic, so the RTP path is untouched (one relaxed check per non-RTP datagram).
    public func setDTLSRecordHandler(_ handler: DTLSRecordHandler?) { state.dtlsHandler.withLock { $0 = handler } }

    /// A STUN message (first byte 0…3, RFC 7983 §7) and where it came from.
    public typealias STUNMessageHandler = @Sendable (UnsafeRawBufferPointer, UDPEndpoint) -> Void

    /// Hands STUN messages (first byte 0…3, RFC 7983 §7) arriving on this socket to `handler` (still counted in
    /// `droppedNotRTP`), on the thread that reads the socket; nil stops it. For ICE connectivity and consent checks
    /// on the media port (RFC 8445, RFC 7675): rare control traffic, like the DTLS records.
    public func setSTUNHandler(_ handler: STUNMessageHandler?) { state.stunHandler.withLock { $0 = handler } }

    // MARK: Sending (any thread)

    /// Sends one datagram to ``remote`` without blocking: one `sendto(2)`, no allocation, no lock.
    public func send(_ datagram: UnsafeRawBufferPointer) -> UDPSendResult {
        guard let remote else {
            state.counters.sendNoRemote.wrappingAdd(1, ordering: .relaxed)
            return .noRemote
        }
        return send(datagram, to: remote)
    }

    /// Sends one datagram to `destination` without blocking (for RTCP to a non-muxed port, or tests).
    public func send(_ datagram: UnsafeRawBufferPointer, to destination: UDPEndpoint) -> UDPSendResult {
        state.send(datagram, to: destination)
    }

    // MARK: Counters and closing

    /// A snapshot of the counters.
    public var counters: UDPTransportCounters { state.counters.snapshot }

    /// Stops sending (senders get ``UDPSendResult/closed``), waits for a `sendto` in progress to return, then
    /// closes the channel and its socket. Queued packets stay readable. Idempotent.
    public func close() async {
        await rtcpPort.load()?.close()
        guard state.markClosed() else { return }
        if let channel { try? await channel.close().get() } else { Glibc.close(state.fd) }
    }

    /// Completes when the channel is closed (after ``close()`` or a fatal socket error); with
    /// ``ReceiveMode/consumerPolls`` at once (there is no channel to wait for).
    public var closed: Void {
        get async { try? await channel?.closeFuture.get() }
    }
}

/// State shared by the transport (senders, consumers) and its channel handler (the event loop).
final class TransportState: Sendable {
    private static let closedBit = 1 << 40

    let fd: Int32
    /// `AF_INET` or `AF_INET6` (dual stack).
    let family: Int32
    let rtp: PacketSlotPool
    let rtcp: PacketSlotPool
    let slotSize: Int
    let latchPolicy: LatchPolicy
    let clock: any MediaClock
    let capture: PacketCaptureRecorder?
    /// With ``UDPMediaTransport/ReceiveMode/consumerPolls``: the consumer's reader of the socket.
    let poller: SocketReceivePoller?
    /// Where media goes, and whether it was latched.
    let remote = AtomicEndpoint()
    /// Senders in `sendto` plus `closedBit` once closing began.
    private let sendGate = Atomic<Int>(0)
    let counters = AtomicCounters()
    /// ``UDPMediaTransport/setDTLSRecordHandler(_:)``; consulted only for datagrams that are not RTP.
    let dtlsHandler = Mutex<UDPMediaTransport.DTLSRecordHandler?>(nil)
    /// ``UDPMediaTransport/setSTUNHandler(_:)``; consulted only for datagrams that are not RTP.
    let stunHandler = Mutex<UDPMediaTransport.STUNMessageHandler?>(nil)
    /// Media through a TURN relay (UDPMediaTransport+Relay.swift): the peer, the server, the channel (0: none), and
    /// the channels whose data is taken from the server whether or not media is relayed on them.
    let relayPeer = AtomicEndpoint(), relayServer = AtomicEndpoint()
    let relayChannel = Atomic<Int>(0), acceptedChannels = AcceptedChannels()
    let relayedSent = Atomic<Int>(0), relayedReceived = Atomic<Int>(0)

    init(fd: Int32, family: Int32, configuration: UDPMediaTransport.Configuration) {
        self.fd = fd
        self.family = family
        slotSize = configuration.maxPacketSize
        rtp = PacketSlotPool(slotCount: configuration.rtpQueueCapacity, slotSize: configuration.maxPacketSize)
        rtcp = PacketSlotPool(slotCount: configuration.rtcpQueueCapacity, slotSize: configuration.maxPacketSize)
        latchPolicy = configuration.latchPolicy
        clock = configuration.clock
        capture = configuration.capture
        poller =
            configuration.receive == .consumerPolls
            ? SocketReceivePoller(fd: fd, capacity: configuration.maxPacketSize + 1) : nil
    }

    /// Consumer: reads the socket through the poller, holding the send gate so close() cannot close the
    /// descriptor under the read.
    func pollSocket() -> Int {
        guard let poller else { return 0 }
        let gate = sendGate.wrappingAdd(1, ordering: .acquiring).newValue
        defer { sendGate.wrappingSubtract(1, ordering: .releasing) }
        guard gate & Self.closedBit == 0 else { return 0 }
        return poller.poll(clock: clock) { bytes, source, arrival in
            receive(bytes, from: source, arrival: arrival)
        }
    }

    func pool(_ kind: MediaPacketKind) -> PacketSlotPool { kind == .rtp ? rtp : rtcp }

    func setRemote(_ endpoint: UDPEndpoint) { remote.store(endpoint, latched: false) }

    func latch(to source: UDPEndpoint) -> Bool {
        let old = remote.store(source, latched: true)
        guard old?.endpoint != source || old?.latched != true else { return false }
        counters.latches.wrappingAdd(1, ordering: .relaxed)
        return true
    }

    /// Event loop: latches on a packet when the policy says so and nothing is latched yet.
    func latchOnArrival(_ source: UDPEndpoint) {
        guard latchPolicy == .firstPacket, remote.load()?.latched != true else { return }
        if remote.latchIfUnlatched(source) { counters.latches.wrappingAdd(1, ordering: .relaxed) }
    }

    /// Returns true for the one caller that moved the gate to closed, after in-flight sends drained.
    func markClosed() -> Bool {
        let before = sendGate.bitwiseOr(Self.closedBit, ordering: .acquiringAndReleasing).oldValue
        guard before & Self.closedBit == 0 else { return false }
        // A sendto takes microseconds; closing is control plane, so a short yield loop is fine here.
        while sendGate.load(ordering: .acquiring) & ~Self.closedBit != 0 { sched_yield() }
        return true
    }

    func send(_ datagram: UnsafeRawBufferPointer, to destination: UDPEndpoint) -> UDPSendResult {
        let gate = sendGate.wrappingAdd(1, ordering: .acquiring).newValue
        defer { sendGate.wrappingSubtract(1, ordering: .releasing) }
        guard gate & Self.closedBit == 0 else { return .closed }
        var address = sockaddr_storage()
        let relay = relayRoute(for: destination)
        guard let length = (relay?.server ?? destination).socketAddress(family: family, into: &address) else {
            counters.sendFailed.wrappingAdd(1, ordering: .relaxed)  // an IPv6 peer from an IPv4 socket
            return .failed(errno: EAFNOSUPPORT)
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                if let relay { return sendChannelData(datagram, channel: relay.channel, to: $0, length: length) }
                return sendto(fd, datagram.baseAddress, datagram.count, Int32(MSG_DONTWAIT), $0, length)
            }
        }
        if result >= 0 {
            capture?.recordSent(datagram, to: destination)
            counters.sent.wrappingAdd(1, ordering: .relaxed)
            return .sent
        }
        let code = errno
        if code == EAGAIN || code == EWOULDBLOCK {
            counters.sendWouldBlock.wrappingAdd(1, ordering: .relaxed)
            return .wouldBlock
        }
        counters.sendFailed.wrappingAdd(1, ordering: .relaxed)
        return .failed(errno: code)
    }

    /// Producer (event loop or polling consumer): classifies one datagram (RFC 5761 §4) and queues or counts it.
    /// `source` nil: not from an IP address. `arrival`: when it arrived on `clock`.
    func receive(_ bytes: UnsafeRawBufferPointer, from source: UDPEndpoint?, arrival: Int64) {
        guard let source else {
            counters.droppedOtherAddressFamily.wrappingAdd(1, ordering: .relaxed)
            return
        }
        let count = bytes.count
        // Everything the socket delivered, also what is dropped below: the capture shows the wire.
        capture?.recordReceived(bytes, from: source, at: MediaTime(nanoseconds: arrival))
        if count == 0 {
            counters.droppedEmpty.wrappingAdd(1, ordering: .relaxed)
            return
        }
        if count > slotSize {
            counters.droppedOversize.wrappingAdd(1, ordering: .relaxed)
            return
        }
        if bytes[0] >> 6 != 2 {
            if receiveChannelData(bytes, from: source, arrival: arrival) { return }
            counters.droppedNotRTP.wrappingAdd(1, ordering: .relaxed)
            if (20...63).contains(bytes[0]), let handler = dtlsHandler.withLock({ $0 }) { handler(bytes, source) }
            if bytes[0] < 4, let handler = stunHandler.withLock({ $0 }) { handler(bytes, source) }
            return
        }
        let isRTCP = count >= 2 && (192...223).contains(bytes[1])
        if count < (isRTCP ? 8 : 12) {
            counters.droppedTooShort.wrappingAdd(1, ordering: .relaxed)
            return
        }
        latchOnArrival(source)
        if isRTCP {
            if rtcp.deposit(bytes, source: source, arrival: arrival) {
                counters.receivedRTCP.wrappingAdd(1, ordering: .relaxed)
            } else {
                counters.droppedRTCPQueueFull.wrappingAdd(1, ordering: .relaxed)
            }
        } else {
            if rtp.deposit(bytes, source: source, arrival: arrival) {
                counters.receivedRTP.wrappingAdd(1, ordering: .relaxed)
            } else {
                counters.droppedRTPQueueFull.wrappingAdd(1, ordering: .relaxed)
            }
        }
    }
}

/// Relaxed atomic counters: each written by one side, read by anyone as a snapshot.
final class AtomicCounters: Sendable {
    let receivedRTP = Atomic<Int>(0), receivedRTCP = Atomic<Int>(0)
    let droppedRTPQueueFull = Atomic<Int>(0), droppedRTCPQueueFull = Atomic<Int>(0)
    let droppedEmpty = Atomic<Int>(0), droppedTooShort = Atomic<Int>(0), droppedNotRTP = Atomic<Int>(0)
    let droppedOversize = Atomic<Int>(0), droppedOtherAddressFamily = Atomic<Int>(0), receiveErrors = Atomic<Int>(0)
    let sent = Atomic<Int>(0), sendWouldBlock = Atomic<Int>(0), sendFailed = Atomic<Int>(0)
    let sendNoRemote = Atomic<Int>(0), latches = Atomic<Int>(0)

    var snapshot: UDPTransportCounters {
        var c = UDPTransportCounters()
        c.receivedRTP = receivedRTP.load(ordering: .relaxed)
        c.receivedRTCP = receivedRTCP.load(ordering: .relaxed)
        c.droppedRTPQueueFull = droppedRTPQueueFull.load(ordering: .relaxed)
        c.droppedRTCPQueueFull = droppedRTCPQueueFull.load(ordering: .relaxed)
        c.droppedEmpty = droppedEmpty.load(ordering: .relaxed)
        c.droppedTooShort = droppedTooShort.load(ordering: .relaxed)
        c.droppedNotRTP = droppedNotRTP.load(ordering: .relaxed)
        c.droppedOversize = droppedOversize.load(ordering: .relaxed)
        c.droppedOtherAddressFamily = droppedOtherAddressFamily.load(ordering: .relaxed)
        c.receiveErrors = receiveErrors.load(ordering: .relaxed)
        c.sent = sent.load(ordering: .relaxed)
        c.sendWouldBlock = sendWouldBlock.load(ordering: .relaxed)
        c.sendFailed = sendFailed.load(ordering: .relaxed)
        c.sendNoRemote = sendNoRemote.load(ordering: .relaxed)
        c.latches = latches.load(ordering: .relaxed)
        return c
    }
}

/// The channel handler: runs on the event loop, the single producer of both queues.
final class MediaDatagramHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    private let state: TransportState

    init(state: TransportState) { self.state = state }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = Self.unwrapInboundIn(data)
        let source: UDPEndpoint?
        switch envelope.remoteAddress {
        case .v4(let v4):
            source = UDPEndpoint(
                address: UInt32(bigEndian: v4.address.sin_addr.s_addr), port: UInt16(bigEndian: v4.address.sin_port))
        case .v6(let v6):
            source = UDPEndpoint(
                address: UDPEndpoint.ipAddress(v6.address.sin6_addr), port: UInt16(bigEndian: v6.address.sin6_port))
        case .unixDomainSocket:
            source = nil
        }
        envelope.data.withUnsafeReadableBytes {
            state.receive($0, from: source, arrival: state.clock.now.nanoseconds)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Datagram read errors (ECONNREFUSED after an ICMP unreachable) are not fatal; NIO closes the channel
        // itself on the fatal ones. Counted, never logged from here (it may be per packet).
        state.counters.receiveErrors.wrappingAdd(1, ordering: .relaxed)
    }
}
