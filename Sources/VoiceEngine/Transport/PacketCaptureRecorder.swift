import Foundation
import Synchronization
import VoiceCore
import VoiceRTP

#if canImport(Glibc)
import Glibc
#endif

/// Records every datagram a ``UDPMediaTransport`` sends and receives into a pcapng file (SRTP as on the wire),
/// so a live call can be opened in Wireshark and fed back to `voice-engine replay` / `rtp-dump`.
///
/// **Off the audio path.** The transport's threads only copy each datagram into a preallocated slot and queue the
/// slot index on an SPSC queue (`PacketSlotPool`, the same hand-over the transport's receive path uses): no
/// allocation, lock, syscall or I/O. Received datagrams come from the channel's event loop (one producer); sent
/// ones from whichever thread sends, admitted one at a time by an atomic flag that is tried, never waited for —
/// a datagram sent while another thread holds it is counted in ``Summary/notRecorded`` instead of blocking (the
/// live call sends from its one media thread, so this does not happen there). A writer thread of the recorder's
/// own drains both queues every 20 ms, orders the datagrams by time and writes them out.
///
/// **Times** are the transport clock's readings (the same arrival time the stream is given) shifted to the wall
/// clock as read when the recorder was made, so Wireshark shows real dates.
///
/// **Addresses**: the transport's local endpoint and the peer's, IPv4 or IPv6. A socket bound to the wildcard
/// address shows as the loopback address towards a loopback peer (what the kernel uses), else as the unspecified one.
///
/// Create it before the call (that opens the file, so an unwritable path fails first), give it to the transport in
/// ``UDPMediaTransport/Configuration/capture``, and always ``close()`` it after the transport is closed: the writer
/// thread keeps the recorder alive until then.
public final class PacketCaptureRecorder: Sendable {
    /// What was recorded.
    public struct Summary: Sendable, Hashable {
        public var path: String
        /// Datagrams written to the file.
        public var packets: Int
        /// Datagrams not recorded: their queue was full (the writer fell behind by a whole queue), they were larger
        /// than a slot, or two threads sent at once.
        public var notRecorded: Int
    }

    public let path: String
    private let received: PacketSlotPool
    private let sent: PacketSlotPool
    /// Admits one sender at a time to `sent` (tried, never waited for).
    private let sendLane = Atomic<Bool>(false)
    /// The transport's bound endpoint; set once when the recorder is attached.
    private let local = AtomicEndpoint()
    private let clock: any MediaClock
    /// Wall-clock nanoseconds since the epoch at the clock's zero.
    private let wallOffset: Int64
    private let dropped = Atomic<Int>(0)
    private let running = Atomic<Bool>(true)
    private let writer: Mutex<Writer>
    private let writerExited = DispatchSemaphore(value: 0)

    /// The file side, used by the writer thread and, after it exited, by ``close()``.
    private struct Writer: ~Copyable {
        var file: PcapFileWriter?
        var summary: Summary?
        var error: PcapError?
    }

    /// Opens `path` (created or truncated, pcapng with nanosecond times) and starts the writer thread.
    ///
    /// - Parameters:
    ///   - clock: the transport's clock (``UDPMediaTransport/Configuration/clock``), whose readings stamp packets.
    ///   - slots: datagrams each direction can queue before the writer drains them (~10 s of one voice stream).
    ///   - slotSize: the largest datagram recorded (the transport's ``UDPMediaTransport/Configuration/maxPacketSize``).
    /// - Throws: `PcapError.io` (VoiceRTP) when the file cannot be created.
    public init(path: String, clock: any MediaClock = MonotonicClock(), slots: Int = 1024, slotSize: Int = 1500)
        throws(PcapError)
    {
        let file = try PcapFileWriter(path: path)
        self.path = path
        self.clock = clock
        var realtime = timespec()
        clock_gettime(CLOCK_REALTIME, &realtime)
        wallOffset = Int64(realtime.tv_sec) * 1_000_000_000 + Int64(realtime.tv_nsec) - clock.now.nanoseconds
        received = PacketSlotPool(slotCount: slots, slotSize: slotSize)
        sent = PacketSlotPool(slotCount: slots, slotSize: slotSize)
        writer = Mutex(Writer(file: file))
        let thread = Thread { [self] in
            while running.load(ordering: .acquiring) {
                usleep(20_000)
                writer.withLock { drain(into: $0.file) }
            }
            writerExited.signal()
        }
        thread.name = "voice-engine.capture"
        thread.start()
    }

    // MARK: Producers (transport threads; no allocation, lock or I/O)

    /// Attached to a transport bound at `endpoint`.
    func setLocal(_ endpoint: UDPEndpoint) { local.store(endpoint, latched: false) }

    /// A datagram the transport read from `source` (the channel's event loop only).
    func recordReceived(_ bytes: UnsafeRawBufferPointer, from source: UDPEndpoint, at time: MediaTime) {
        guard bytes.count <= received.slotSize, received.deposit(bytes, source: source, arrival: time.nanoseconds)
        else {
            dropped.wrappingAdd(1, ordering: .relaxed)
            return
        }
    }

    /// A datagram the transport sent to `destination` (any thread).
    func recordSent(_ bytes: UnsafeRawBufferPointer, to destination: UDPEndpoint) {
        guard bytes.count <= sent.slotSize,
            sendLane.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged
        else {
            dropped.wrappingAdd(1, ordering: .relaxed)
            return
        }
        let queued = sent.deposit(bytes, source: destination, arrival: clock.now.nanoseconds)
        sendLane.store(false, ordering: .releasing)
        if !queued { dropped.wrappingAdd(1, ordering: .relaxed) }
    }

    // MARK: Writer side

    /// Moves everything queued into the file, in time order.
    private func drain(into file: PcapFileWriter?) {
        guard let file else { return }
        let localEndpoint = local.load()?.endpoint ?? UDPEndpoint(address: 0, port: 0)
        var batch: [(time: Int64, order: Int, packet: PcapUDPPacket)] = []
        func take(_ pool: PacketSlotPool, outgoing: Bool) {
            while pool.withNext({ (bytes: UnsafeRawBufferPointer, peer: UDPEndpoint, time: Int64) -> Void in
                let me = Self.shownLocal(localEndpoint, towards: peer)
                let wall = max(0, time + wallOffset)
                let (from, to) = outgoing ? (me, peer) : (peer, me)
                batch.append(
                    (
                        time, batch.count,
                        PcapUDPPacket(
                            seconds: wall / 1_000_000_000, nanoseconds: UInt32(wall % 1_000_000_000),
                            source: PcapEndpoint(address: from.address, port: from.port),
                            destination: PcapEndpoint(address: to.address, port: to.port), payload: Array(bytes))
                    ))
            }) != nil {}
        }
        take(received, outgoing: false)
        take(sent, outgoing: true)
        batch.sort { ($0.time, $0.order) < ($1.time, $1.order) }
        for item in batch { file.write(item.packet) }
        file.flush()
    }

    /// The local address to write towards `peer`: a socket bound to the wildcard address (or a dual-stack one
    /// talking IPv4) has no single address, so it shows as the loopback address towards a loopback peer (what the
    /// kernel uses) and as the unspecified address otherwise, always in the peer's family as a capture needs.
    static func shownLocal(_ local: UDPEndpoint, towards peer: UDPEndpoint) -> UDPEndpoint {
        guard local.address.isUnspecified || local.isIPv6 != peer.isIPv6 else { return local }
        let address: IPAddress =
            switch (peer.isIPv6, peer.address.isLoopback) {
            case (false, true): .v4(0x7F00_0001)
            case (false, false): .v4(0)
            case (true, true): .v6(high: 0, low: 1)
            case (true, false): .v6(high: 0, low: 0)
            }
        return UDPEndpoint(address: address, port: local.port)
    }

    /// Stops the writer thread, writes what is still queued and closes the file. Call it after the transport is
    /// closed (no producer may still record). Idempotent: later calls return the same summary.
    /// - Throws: `PcapError.io` (VoiceRTP) when writing failed (disk full…).
    @discardableResult
    public func close() throws(PcapError) -> Summary {
        if running.exchange(false, ordering: .acquiringAndReleasing) { writerExited.wait() }
        let outcome: Result<Summary, PcapError> = writer.withLock { w in
            if let summary = w.summary { return .success(summary) }
            if let error = w.error { return .failure(error) }
            drain(into: w.file)
            guard let file = w.file else { return .failure(.io("capture \(path) was not opened")) }
            w.file = nil
            do throws(PcapError) {
                try file.close()
            } catch {
                w.error = error
                return .failure(error)
            }
            let summary = Summary(path: path, packets: file.packetCount, notRecorded: dropped.load(ordering: .relaxed))
            w.summary = summary
            return .success(summary)
        }
        return try outcome.get()
    }
}
