import VoiceEngine
import Foundation
import VoiceCore
import VoiceNetSim

#if canImport(Glibc)
import Glibc
#endif

/// A ``CallPacketPath`` over real UDP: A and B each own a ``UDPMediaTransport`` bound on loopback, each sending to
/// the other's socket, while a network simulator decides what the "network" does to every datagram.
///
/// Why both: real sockets exercise what a call really does (SRTP-protected datagrams through `sendto`, the kernel,
/// the NIO event loop, the RFC 5761 demux and the SPSC packet slots), and the simulator gives a reproducible bad
/// network on top of a loopback that never loses anything, in fast time.
///
/// How a datagram travels:
/// 1. ``send(_:kind:from:now:)`` draws the datagram's fate from the direction's simulator (lost, or the simulated
///    arrival time), remembers the fate under a 64-bit hash of the datagram's bytes, and sends it over the sender's
///    socket at once: every datagram goes over UDP, lost ones included.
/// 2. It then waits (bounded by ``arrivalTimeout``; loopback takes microseconds) until the receiving transport has
///    read that datagram, and drains the receiver's queue: each datagram read is matched to its fate by hash and
///    either dropped (the simulator lost it) or put into a small schedule ordered by simulated arrival. A datagram
///    that does not come off the socket within the timeout is counted as ``Counters/transportLost``; one that
///    matches no fate is counted as ``Counters/stray`` and dropped.
/// 3. ``deliver(to:until:_:)`` hands over the scheduled datagrams whose simulated arrival is due, in arrival order.
///
/// RTCP gets its own simulator per direction with the RTP conditions' delay and jitter but no loss (as
/// ``SimulatedPacketPath`` does), so reports, RTT and loss feedback work on a lossy media path.
///
/// Real time: with ``pacer`` set, ``deliver(to:until:_:)`` first sleeps until the wall clock reaches the media time
/// of the tick (absolute sleeps on the monotonic clock), so a ``CallSimulation`` driven through this path runs at
/// wall-clock pace.
///
/// Not thread-safe: all calls come from the one thread driving the call. Allocates per datagram (a copy in the
/// schedule): a harness, not the audio path.
public final class UDPCallPacketPath: CallPacketPath {
    /// What happened to the datagrams of one direction.
    public struct Counters: Sendable, Hashable, Codable {
        /// Datagrams handed to `sendto` (RTP and RTCP), and those `sendto` did not accept.
        public var sent = 0
        public var sendFailures = 0
        /// Datagrams read back from the receiver's socket and matched to their fate.
        public var arrived = 0
        /// Arrived over UDP but dropped on receipt because the simulator lost them (network loss).
        public var droppedBySimulator = 0
        /// Datagrams (copies included when the simulator duplicates) handed to the receiving stream.
        public var delivered = 0
        /// Sent but never read from the receiver's socket within ``UDPCallPacketPath/arrivalTimeout``.
        public var transportLost = 0
        /// Read from the receiver's socket but matching no sent datagram (or arriving after its timeout).
        public var stray = 0
        /// Wall-clock time from `sendto` until the datagram was read from the receiver's queue (kernel loopback
        /// plus the NIO event loop's wake-up): total and worst, microseconds.
        public var loopbackWaitMicroseconds = 0.0
        public var maxLoopbackWaitMicroseconds = 0.0

        public init() {}
    }

    private struct Pending {
        var id: Int
        var fate: PacketFate
    }

    private struct Scheduled {
        var arrival: MediaTime
        var order: Int
        var bytes: [UInt8]
    }

    /// Each side's transport (A's socket and B's socket).
    public let transports: [CallSide: UDPMediaTransport]
    /// The longest wait for a sent datagram to come off the receiver's socket.
    public let arrivalTimeout: MediaTime
    /// Sleeps until each tick's wall-clock time, for real-time runs; nil: fast time.
    public var pacer: RealtimePacer?
    /// Called at the start of every ``deliver(to:until:_:)`` (once per side and tick in a ``CallSimulation``),
    /// after pacing and before delivering: where an observer samples the streams' figures at tick boundaries.
    public var onDeliver: ((CallSide, MediaTime) -> Void)?

    private var rtpSimulators: [CallSide: NetworkSimulator] = [:]
    private var rtcpSimulators: [CallSide: NetworkSimulator] = [:]
    private var rtpFates: [CallSide: [PacketFate]] = [.a: [], .b: []]
    /// Fates of datagrams on their way to a side, keyed by the hash of their bytes.
    private var pending: [CallSide: [UInt64: [Pending]]] = [.a: [:], .b: [:]]
    /// Datagrams that arrived at a side over UDP and wait for their simulated arrival time, in arrival order.
    private var schedule: [CallSide: [Scheduled]] = [.a: [], .b: []]
    /// Counters by sending side.
    private var directionCounters: [CallSide: Counters] = [.a: Counters(), .b: Counters()]
    private var nextID = 0
    private var isClosed = false

    private init(
        transports: [CallSide: UDPMediaTransport], aToB: CallNetwork, bToA: CallNetwork, arrivalTimeout: MediaTime
    ) throws(NetworkSimulatorError) {
        self.transports = transports
        self.arrivalTimeout = arrivalTimeout
        for (side, network) in [(CallSide.a, aToB), (.b, bToA)] {
            switch network {
            case .conditions(let c):
                rtpSimulators[side] = try NetworkSimulator(conditions: c)
                var r = c
                r.loss = .none
                r.outages = []
                r.duplicateProbability = 0
                r.seed = c.seed &+ 0x5EED
                rtcpSimulators[side] = try NetworkSimulator(conditions: r)
            case .trace(let t):
                rtpSimulators[side] = NetworkSimulator(trace: t)
                let delays = t.records.compactMap { r in r.arrival.map { ($0 - r.send).milliseconds } }.sorted()
                let median = delays.isEmpty ? 20 : delays[delays.count / 2]
                rtcpSimulators[side] = try NetworkSimulator(
                    conditions: NetworkConditions(baseDelayMilliseconds: median))
            }
        }
    }

    /// Binds A's and B's sockets on `host` (any free ports), points each at the other, and sets up the simulators.
    ///
    /// - Parameters:
    ///   - aToB: fates of A's RTP towards B.
    ///   - bToA: fates of B's RTP towards A.
    ///   - host: a dotted IPv4 address both sockets bind to; loopback by default.
    ///   - arrivalTimeout: the longest wait for a datagram to come off the receiver's socket.
    /// - Throws: ``UDPTransportError`` when a socket cannot be bound, `NetworkSimulatorError` for bad conditions.
    public static func open(
        aToB: CallNetwork, bToA: CallNetwork, host: String = "127.0.0.1",
        arrivalTimeout: MediaTime = .milliseconds(1_000)
    ) async throws -> UDPCallPacketPath {
        // Arrival stamps come from the simulator; the transport's own clock is unused here.
        let configuration = UDPMediaTransport.Configuration(
            rtpQueueCapacity: 256, rtcpQueueCapacity: 64, latchPolicy: .manual)
        let a = try await UDPMediaTransport.bind(host: host, configuration: configuration)
        let b: UDPMediaTransport
        do {
            b = try await UDPMediaTransport.bind(host: host, configuration: configuration)
        } catch {
            await a.close()
            throw error
        }
        a.setRemote(b.localEndpoint)
        b.setRemote(a.localEndpoint)
        do {
            return try UDPCallPacketPath(
                transports: [.a: a, .b: b], aToB: aToB, bToA: bToA, arrivalTimeout: arrivalTimeout)
        } catch {
            await a.close()
            await b.close()
            throw error
        }
    }

    /// Closes both sockets. Idempotent.
    public func close() async {
        guard !isClosed else { return }
        isClosed = true
        for side in CallSide.allCases { await transports[side]!.close() }
    }

    /// Where `side`'s socket is bound.
    public func endpoint(of side: CallSide) -> UDPEndpoint { transports[side]!.localEndpoint }

    /// The counters of datagrams sent by `side`.
    public func counters(from side: CallSide) -> Counters { directionCounters[side]! }

    /// What the simulated network did to each RTP packet `side` sent, in send order.
    public func fates(from side: CallSide) -> [PacketFate] { rtpFates[side]! }

    /// Datagrams on their way to `side`: sent but not yet read from its socket, or read and waiting for their
    /// simulated arrival.
    public func inFlight(to side: CallSide) -> Int {
        pending[side]!.values.reduce(0) { $0 + $1.count } + schedule[side]!.count
    }

    // MARK: CallPacketPath

    public func send(_ datagram: UnsafeRawBufferPointer, kind: MediaPacketKind, from side: CallSide, now: MediaTime) {
        let destination = side.peer
        let fate: PacketFate
        switch kind {
        case .rtp:
            fate = rtpSimulators[side]!.nextFate(nominalSendTime: now)
            rtpFates[side]!.append(fate)
        case .rtcp:
            fate = rtcpSimulators[side]!.nextFate(nominalSendTime: now)
        }
        let key = Self.hash(datagram)
        let id = nextID
        nextID += 1
        pending[destination]![key, default: []].append(Pending(id: id, fate: fate))
        directionCounters[side]!.sent += 1
        guard case .sent = transports[side]!.send(datagram) else {
            directionCounters[side]!.sendFailures += 1
            remove(id: id, key: key, at: destination)
            return
        }
        awaitArrival(id: id, key: key, kind: kind, at: destination)
    }

    public func deliver(to side: CallSide, until now: MediaTime, _ body: (UnsafeRawBufferPointer, MediaTime) -> Void) {
        pacer?.wait(until: now)
        onDeliver?(side, now)
        drain(side, .rtp)
        drain(side, .rtcp)
        var due = 0
        while due < schedule[side]!.count, schedule[side]![due].arrival <= now { due += 1 }
        guard due > 0 else { return }
        let ready = schedule[side]![0..<due]
        schedule[side]!.removeFirst(due)
        directionCounters[side.peer]!.delivered += due
        for item in ready { item.bytes.withUnsafeBytes { body($0, item.arrival) } }
    }

    // MARK: Receiving from the sockets

    /// Waits until datagram `id` has been read from `side`'s socket (bounded), draining the queue meanwhile.
    private func awaitArrival(id: Int, key: UInt64, kind: MediaPacketKind, at side: CallSide) {
        let clock = MonotonicClock()
        let started = clock.now
        let deadline = started + arrivalTimeout
        var polls = 0
        while true {
            drain(side, kind)
            guard pending[side]![key]?.contains(where: { $0.id == id }) == true else {
                let waited = (clock.now - started).nanoseconds / 1_000
                directionCounters[side.peer]!.loopbackWaitMicroseconds += Double(waited)
                directionCounters[side.peer]!.maxLoopbackWaitMicroseconds = max(
                    directionCounters[side.peer]!.maxLoopbackWaitMicroseconds, Double(waited))
                return
            }
            if clock.now >= deadline {
                remove(id: id, key: key, at: side)
                directionCounters[side.peer]!.transportLost += 1
                return
            }
            polls += 1
            if polls < 64 {
                sched_yield()
            } else {
                usleep(20)
            }
        }
    }

    /// Reads every queued datagram of `kind` at `side` and matches it to its fate.
    private func drain(_ side: CallSide, _ kind: MediaPacketKind) {
        let transport = transports[side]!
        while transport.withNextPacket(kind, { packet in accept(packet.bytes, at: side) }) != nil {}
    }

    private func accept(_ bytes: UnsafeRawBufferPointer, at side: CallSide) {
        let key = Self.hash(bytes)
        guard var list = pending[side]![key], !list.isEmpty else {
            directionCounters[side.peer]!.stray += 1
            return
        }
        let entry = list.removeFirst()
        pending[side]![key] = list.isEmpty ? nil : list
        directionCounters[side.peer]!.arrived += 1
        guard let arrival = entry.fate.arrival else {
            directionCounters[side.peer]!.droppedBySimulator += 1
            return
        }
        let copy = Array(bytes)
        insert(Scheduled(arrival: arrival, order: 2 * entry.id, bytes: copy), at: side)
        if let duplicate = entry.fate.duplicateArrival {
            insert(Scheduled(arrival: duplicate, order: 2 * entry.id + 1, bytes: copy), at: side)
        }
    }

    /// Inserts keeping (arrival, order) order; the schedule holds a few packets, so a linear search from the end.
    private func insert(_ item: Scheduled, at side: CallSide) {
        var index = schedule[side]!.count
        while index > 0 {
            let previous = schedule[side]![index - 1]
            if previous.arrival < item.arrival || (previous.arrival == item.arrival && previous.order < item.order) {
                break
            }
            index -= 1
        }
        schedule[side]!.insert(item, at: index)
    }

    private func remove(id: Int, key: UInt64, at side: CallSide) {
        guard var list = pending[side]![key] else { return }
        list.removeAll { $0.id == id }
        pending[side]![key] = list.isEmpty ? nil : list
    }

    /// FNV-1a, 64 bits: SRTP datagrams differ in sequence number, index and tag, so collisions do not happen in
    /// practice (and a colliding pair would only swap fates, both being kept in send order).
    static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            h ^= UInt64(byte)
            h &*= 0x0000_0100_0000_01B3
        }
        return h
    }
}

/// Paces a fast-time loop at wall-clock speed: ``wait(until:)`` sleeps until the monotonic clock reaches the
/// wall-clock instant of a media time (absolute sleeps, so the per-tick work does not accumulate as drift).
public final class RealtimePacer {
    private let mediaStart: MediaTime
    private let wallStart: MediaTime

    /// - Parameter mediaStart: the media time that corresponds to "now" on the wall clock.
    public init(mediaStart: MediaTime) {
        self.mediaStart = mediaStart
        wallStart = MonotonicClock().now
    }

    /// Sleeps until the wall clock reaches `mediaTime` (returns at once when it already has).
    public func wait(until mediaTime: MediaTime) {
        let target = wallStart + (mediaTime - mediaStart)
        var ts = timespec(
            tv_sec: Int(target.nanoseconds / 1_000_000_000), tv_nsec: Int(target.nanoseconds % 1_000_000_000))
        // EINTR: sleep again towards the same absolute deadline.
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
    }
}
