import VoiceEngine
import Foundation
import VoiceCore
import VoiceDSP
import VoiceNetSim
import VoiceRTP

/// One of the two parties of a ``CallSimulation``.
public enum CallSide: String, Sendable, Hashable, CaseIterable, Codable {
    case a, b

    /// The other party.
    public var peer: CallSide { self == .a ? .b : .a }
}

/// The network between the two streams of a ``CallSimulation``: datagrams go in when a stream sends them and come
/// out at the other side when they arrive. A simulated path (``SimulatedPacketPath``) runs in fast time; a UDP
/// transport can implement the same protocol to run the same harness over real sockets.
public protocol CallPacketPath: AnyObject {
    /// A datagram sent by `side` at `now` (bytes valid only during the call).
    func send(
        _ datagram: UnsafeRawBufferPointer, kind: MediaPacketKind, from side: CallSide, now: MediaTime)
    /// Calls `body` with every datagram that has arrived at `side` by `now`, in arrival order, with its arrival time.
    func deliver(
        to side: CallSide, until now: MediaTime, _ body: (UnsafeRawBufferPointer, MediaTime) -> Void)
}

/// Where the packet fates of one direction come from.
public enum CallNetwork: Sendable, Hashable {
    /// Random models (loss, jitter, drift…), reproducible from their seed.
    case conditions(NetworkConditions)
    /// A recorded trace: RTP packet `i` (in send order) gets row `i`'s send and arrival times.
    case trace(NetworkTrace)

    /// A clean path with a fixed one-way delay.
    public static func clean(delayMilliseconds: Double = 20) -> CallNetwork {
        .conditions(NetworkConditions(baseDelayMilliseconds: delayMilliseconds))
    }
}

/// Two ``SimulatedLink``s per direction: one for RTP, whose fates come from the direction's ``CallNetwork``, and one
/// for RTCP with the same delay and jitter but no loss (so reports, and therefore RTT and loss feedback, arrive
/// even on a lossy media path; a trace's RTCP link uses the trace's median transit). Keeps every RTP fate per
/// direction for analysis (``fates(from:)``). Copies each datagram (allocates per packet: a test harness).
public final class SimulatedPacketPath: CallPacketPath {
    private struct Datagram {
        var bytes: [UInt8]
        var kind: MediaPacketKind
    }

    private var rtpLinks: [CallSide: SimulatedLink<Datagram>] = [:]
    private var rtcpLinks: [CallSide: SimulatedLink<Datagram>] = [:]
    /// Every datagram delivered to each side, in arrival order, with its arrival time (when recording is on).
    public private(set) var delivered: [CallSide: [(bytes: [UInt8], kind: MediaPacketKind, arrival: MediaTime)]] = [:]
    /// Keep delivered datagrams in ``delivered``.
    public var recordsDeliveries: Bool
    /// Every RTP datagram each side sent, in send order (lost ones too), when ``recordsSentRTP`` is on: index `i`
    /// goes with ``fates(from:)``'s `i`. What ``IdealReceiver`` needs.
    public private(set) var sentRTP: [CallSide: [[UInt8]]] = [.a: [], .b: []]
    public var recordsSentRTP = false

    /// - Parameters:
    ///   - aToB: fates of A's RTP towards B.
    ///   - bToA: fates of B's RTP towards A.
    /// - Throws: `NetworkSimulatorError` for invalid conditions.
    public init(aToB: CallNetwork, bToA: CallNetwork, recordsDeliveries: Bool = false)
        throws(NetworkSimulatorError)
    {
        self.recordsDeliveries = recordsDeliveries
        for (side, network) in [(CallSide.a, aToB), (.b, bToA)] {
            switch network {
            case .conditions(let c):
                rtpLinks[side] = SimulatedLink(simulator: try NetworkSimulator(conditions: c))
                var r = c
                r.loss = .none
                r.outages = []
                r.duplicateProbability = 0
                r.seed = c.seed &+ 0x5EED
                rtcpLinks[side] = SimulatedLink(simulator: try NetworkSimulator(conditions: r))
            case .trace(let t):
                rtpLinks[side] = SimulatedLink(simulator: NetworkSimulator(trace: t))
                let delays = t.records.compactMap { r in r.arrival.map { ($0 - r.send).milliseconds } }
                    .sorted()
                let median = delays.isEmpty ? 20 : delays[delays.count / 2]
                rtcpLinks[side] = SimulatedLink(
                    simulator: try NetworkSimulator(
                        conditions: NetworkConditions(baseDelayMilliseconds: median)))
            }
        }
        delivered = [.a: [], .b: []]
    }

    public func send(
        _ datagram: UnsafeRawBufferPointer, kind: MediaPacketKind, from side: CallSide, now: MediaTime
    ) {
        let d = Datagram(bytes: Array(datagram), kind: kind)
        if recordsSentRTP && kind == .rtp { sentRTP[side]!.append(d.bytes) }
        switch kind {
        case .rtp: rtpLinks[side]!.send(d, nominalSendTime: now)
        case .rtcp: rtcpLinks[side]!.send(d, nominalSendTime: now)
        }
    }

    public func deliver(
        to side: CallSide, until now: MediaTime, _ body: (UnsafeRawBufferPointer, MediaTime) -> Void
    ) {
        let from = side.peer
        // Merge both links in arrival order.
        var arrived: [(Datagram, MediaTime)] = []
        rtpLinks[from]!.receive(until: now) { d, t in arrived.append((d, t)) }
        rtcpLinks[from]!.receive(until: now) { d, t in arrived.append((d, t)) }
        if arrived.count > 1 { arrived.sort { $0.1 < $1.1 } }
        for (d, t) in arrived {
            if recordsDeliveries { delivered[side]!.append((d.bytes, d.kind, t)) }
            d.bytes.withUnsafeBytes { body($0, t) }
        }
    }

    /// What the network did to each RTP packet `side` sent, in send order.
    public func fates(from side: CallSide) -> [PacketFate] { rtpLinks[side]!.fates }

    /// RTP packets from `side` still in flight.
    public func inFlight(from side: CallSide) -> Int {
        rtpLinks[side]!.inFlight + rtcpLinks[side]!.inFlight
    }
}

/// A loudspeaker-to-microphone echo path: a sparse room impulse response (direct sound after the device and
/// air delay, then decaying reflections) applied to what a side plays, added to its microphone.
public struct EchoPath: Sendable, Hashable {
    /// Taps: delay in samples at `sampleRate` and linear gain.
    public var taps: [Tap]
    public var sampleRate: Int

    public struct Tap: Sendable, Hashable {
        public var delay: Int
        public var gain: Float
        public init(delay: Int, gain: Float) {
            self.delay = delay
            self.gain = gain
        }
    }

    public init(taps: [Tap], sampleRate: Int) {
        precondition(
            !taps.isEmpty && taps.allSatisfy { $0.delay >= 0 }, "an echo path needs taps with delays >= 0"
        )
        self.taps = taps
        self.sampleRate = sampleRate
    }

    /// A short synthetic room: direct sound after `delayMilliseconds` at `gainDecibels`, then `reflections`
    /// reflections spread over the next `tailMilliseconds` with an exponential decay (−30 dB at the end of the tail)
    /// and random signs, from `seed`.
    public static func syntheticRoom(
        sampleRate: Int, delayMilliseconds: Double = 40, gainDecibels: Double = -6,
        tailMilliseconds: Double = 40,
        reflections: Int = 12, seed: UInt64 = 7
    ) -> EchoPath {
        var rng = SeededGenerator(seed: seed)
        let direct = Int(delayMilliseconds * Double(sampleRate) / 1000)
        let g0 = Float(pow(10, gainDecibels / 20))
        var taps = [Tap(delay: direct, gain: g0)]
        for _ in 0..<reflections {
            let u = rng.nextUnit()
            let offset = 1 + Int(u * tailMilliseconds * Double(sampleRate) / 1000)
            let decay = Float(pow(10, -1.5 * u)) * 0.5
            taps.append(Tap(delay: direct + offset, gain: g0 * decay * (rng.nextUnit() < 0.5 ? -1 : 1)))
        }
        return EchoPath(taps: taps, sampleRate: sampleRate)
    }

    /// Longest tap delay.
    public var length: Int { (taps.map(\.delay).max() ?? 0) + 1 }
}
