import Foundation
import VoiceCore

/// What the simulated path did to one packet.
public struct PacketFate: Sendable, Hashable {
    /// When the packet left the sender, on the receiver's time line (sender clock skew applied).
    public var sendTime: MediaTime
    /// When it arrived, or nil when it was lost.
    public var arrival: MediaTime?
    /// When a duplicate copy arrived, if the path duplicated it.
    public var duplicateArrival: MediaTime?

    public init(sendTime: MediaTime, arrival: MediaTime?, duplicateArrival: MediaTime? = nil) {
        self.sendTime = sendTime
        self.arrival = arrival
        self.duplicateArrival = duplicateArrival
    }

    /// Whether the packet never arrived.
    public var isLost: Bool { arrival == nil }
    /// One-way delay of the first copy, or nil when lost.
    public var transit: MediaTime? { arrival.map { $0 - sendTime } }
}

/// A deterministic model of a one-way network path: send times in, arrival times (or loss) out.
///
/// It schedules opaque packets, so it is independent of what they carry; ``SimulatedLink`` wraps it with a
/// payload queue. Packets must be presented in send order (packet `i` is the `i`-th call), because the loss
/// chain and the FIFO queue have memory. The same conditions and seed always give the same fates.
public struct NetworkSimulator: Sendable {
    private enum Source: Sendable {
        case model(NetworkConditions)
        case trace(NetworkTrace)
    }

    private let source: Source
    private var rng: SeededGenerator
    private var inBadState = false
    private var lastInOrderArrival = MediaTime(nanoseconds: .min)
    private var nextIndex = 0

    /// A simulator driven by random models.
    /// - Throws: `NetworkSimulatorError.invalidConditions` when `conditions` fail `validate()`.
    public init(conditions: NetworkConditions) throws(NetworkSimulatorError) {
        try conditions.validate()
        source = .model(conditions)
        rng = SeededGenerator(seed: conditions.seed)
    }

    /// A simulator replaying a recorded trace: packet `i` gets row `i`'s send and arrival time; packets past the
    /// end of the trace are lost.
    public init(trace: NetworkTrace) {
        source = .trace(trace)
        rng = SeededGenerator(seed: 0)
    }

    /// The fate of the next packet.
    /// - Parameter nominalSendTime: when the sender's own clock says the packet is sent (frame index × frame
    ///   duration for a constant-rate stream). Ignored for traces, which carry their own send times.
    public mutating func nextFate(nominalSendTime: MediaTime) -> PacketFate {
        let index = nextIndex
        nextIndex += 1
        switch source {
        case .trace(let trace):
            guard index < trace.records.count else { return PacketFate(sendTime: nominalSendTime, arrival: nil) }
            let record = trace.records[index]
            return PacketFate(sendTime: record.send, arrival: record.arrival)
        case .model(let conditions):
            return modelFate(conditions, nominalSendTime: nominalSendTime)
        }
    }

    private mutating func modelFate(_ c: NetworkConditions, nominalSendTime: MediaTime) -> PacketFate {
        let sendTime = MediaTime(
            nanoseconds: Int64((Double(nominalSendTime.nanoseconds) / (1 + c.senderClockSkewPPM * 1e-6)).rounded()))
        // Draw every random number for every packet in a fixed order, so changing one probability does not
        // shift the other models' sequences more than necessary.
        let lossDraw = rng.nextUnit()
        let transitionDraw = rng.nextUnit()
        let jitterDraw = rng.nextUnit()
        let gaussian = rng.nextGaussian()
        let reorderDraw = rng.nextUnit()
        let duplicateDraw = rng.nextUnit()

        var lost: Bool
        switch c.loss {
        case .none: lost = false
        case .bernoulli(let p): lost = lossDraw < p
        case .gilbertElliott(let gb, let bg, let lg, let lb):
            inBadState = inBadState ? !(transitionDraw < bg) : transitionDraw < gb
            lost = lossDraw < (inBadState ? lb : lg)
        }

        var phase = DelayPhase(start: .zero, baseDelayMilliseconds: c.baseDelayMilliseconds, jitter: c.jitter)
        for candidate in c.phases where candidate.start <= sendTime { phase = candidate }
        var delayMs = phase.baseDelayMilliseconds
        switch phase.jitter {
        case .none: break
        case .normal(let mean, let sd): delayMs += max(0, mean + sd * gaussian)
        case .pareto(let scale, let shape, let cap):
            delayMs += min(cap, scale * (pow(max(jitterDraw, 1e-12), -1 / shape) - 1))
        }
        var arrival = sendTime + MediaTime(nanoseconds: Int64((delayMs * 1e6).rounded()))

        for outage in c.outages where outage.contains(sendTime) {
            switch outage.behaviour {
            case .drop: lost = true
            case .hold:
                let released =
                    outage.start + outage.duration
                    + MediaTime(nanoseconds: Int64((phase.baseDelayMilliseconds * 1e6).rounded()))
                if arrival < released { arrival = released }
            }
        }
        if lost { return PacketFate(sendTime: sendTime, arrival: nil) }

        let reordered = reorderDraw < c.reorderProbability
        if reordered {
            arrival += MediaTime(nanoseconds: Int64((c.reorderDelayMilliseconds * 1e6).rounded()))
        } else if c.preservesOrder {
            if arrival < lastInOrderArrival { arrival = lastInOrderArrival }
            lastInOrderArrival = arrival
        }
        var duplicate: MediaTime?
        if duplicateDraw < c.duplicateProbability {
            duplicate = arrival + MediaTime(nanoseconds: Int64((c.duplicateDelayMilliseconds * 1e6).rounded()))
        }
        return PacketFate(sendTime: sendTime, arrival: arrival, duplicateArrival: duplicate)
    }

    /// Fates of `count` packets sent every `interval` from time zero: a quick way to turn conditions into a trace.
    public mutating func fates(count: Int, interval: MediaTime) -> [PacketFate] {
        (0..<count).map { nextFate(nominalSendTime: MediaTime(nanoseconds: Int64($0) * interval.nanoseconds)) }
    }
}

/// A simulated path carrying payloads: `send` them in order, then `receive` what has arrived by a given time,
/// in arrival order (ties in send order). Time is whatever the caller's `MediaClock` says, so a 60 s call runs
/// in fast time.
public struct SimulatedLink<Payload> {
    private struct Event {
        var arrival: MediaTime
        var order: Int
        var payload: Payload
    }

    private var simulator: NetworkSimulator
    private var heap: [Event] = []
    private var sent = 0
    /// Every fate so far, in send order (for oracle and delay analysis).
    public private(set) var fates: [PacketFate] = []

    public init(simulator: NetworkSimulator) {
        self.simulator = simulator
        heap.reserveCapacity(1024)
    }

    /// Sends `payload` at the sender's `nominalSendTime`; returns what the path will do to it.
    @discardableResult
    public mutating func send(_ payload: Payload, nominalSendTime: MediaTime) -> PacketFate {
        let fate = simulator.nextFate(nominalSendTime: nominalSendTime)
        fates.append(fate)
        if let arrival = fate.arrival { push(Event(arrival: arrival, order: sent * 2, payload: payload)) }
        if let dup = fate.duplicateArrival { push(Event(arrival: dup, order: sent * 2 + 1, payload: payload)) }
        sent += 1
        return fate
    }

    /// Packets still in flight.
    public var inFlight: Int { heap.count }

    /// Calls `body` with every payload that has arrived at or before `time`, in arrival order.
    public mutating func receive(until time: MediaTime, _ body: (Payload, MediaTime) throws -> Void) rethrows {
        while let first = heap.first, first.arrival <= time {
            let event = pop()
            try body(event.payload, event.arrival)
        }
    }

    private static func before(_ a: Event, _ b: Event) -> Bool {
        a.arrival < b.arrival || (a.arrival == b.arrival && a.order < b.order)
    }

    private mutating func push(_ event: Event) {
        heap.append(event)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            if !Self.before(heap[child], heap[parent]) { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func pop() -> Event {
        let top = heap[0]
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            var parent = 0
            while true {
                let left = parent * 2 + 1
                let right = left + 1
                var best = parent
                if left < heap.count && Self.before(heap[left], heap[best]) { best = left }
                if right < heap.count && Self.before(heap[right], heap[best]) { best = right }
                if best == parent { break }
                heap.swapAt(parent, best)
                parent = best
            }
        }
        return top
    }
}
