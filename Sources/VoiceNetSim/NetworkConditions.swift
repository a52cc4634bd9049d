import VoiceCore

/// How packets are lost on the simulated path.
public enum LossModel: Sendable, Hashable {
    /// No random loss (outages still drop packets).
    case none
    /// Each packet is lost independently with `probability` (0...1).
    case bernoulli(probability: Double)
    /// Gilbert–Elliott two-state bursts: the channel moves between a good and a bad state once per packet and
    /// loses packets with a state-dependent probability. Mean burst length is `1 / badToGood` packets.
    case gilbertElliott(goodToBad: Double, badToGood: Double, lossInGood: Double = 0, lossInBad: Double = 1)

    /// The long-run loss rate the model produces, for checks and reports.
    public var expectedLossRate: Double {
        switch self {
        case .none: return 0
        case .bernoulli(let p): return p
        case .gilbertElliott(let gb, let bg, let lg, let lb):
            let bad = gb / max(gb + bg, .leastNonzeroMagnitude)
            return (1 - bad) * lg + bad * lb
        }
    }
}

/// The random part of one-way delay, added to the base delay of the current `DelayPhase`.
public enum JitterModel: Sendable, Hashable {
    /// No jitter: every packet takes exactly the base delay.
    case none
    /// Normally distributed extra delay with `mean` and `standardDeviation` ms, clipped at 0.
    case normal(meanMilliseconds: Double, standardDeviationMilliseconds: Double)
    /// Heavy-tailed (Pareto type II / Lomax) extra delay: `scale * (U^(-1/shape) - 1)` ms, capped at
    /// `capMilliseconds`. Smaller `shape` means a heavier tail; the mean is `scale / (shape - 1)` for shape > 1.
    case pareto(scaleMilliseconds: Double, shape: Double, capMilliseconds: Double = 2_000)
}

/// From `start` on (sender time), packets take `baseDelayMilliseconds` plus `jitter`. Phases model delay steps
/// (20 → 150 → 20 ms) and jitter spikes (two seconds of heavy jitter).
public struct DelayPhase: Sendable, Hashable {
    public var start: MediaTime
    public var baseDelayMilliseconds: Double
    public var jitter: JitterModel

    public init(start: MediaTime, baseDelayMilliseconds: Double, jitter: JitterModel = .none) {
        self.start = start
        self.baseDelayMilliseconds = baseDelayMilliseconds
        self.jitter = jitter
    }
}

/// A time during which the path carries nothing.
public struct Outage: Sendable, Hashable {
    /// What happens to packets sent during the outage.
    public enum Behaviour: Sendable, Hashable {
        /// They are lost (a dead link).
        case drop
        /// They are queued and all delivered when the outage ends (a stalled Wi-Fi or cellular bearer).
        case hold
    }

    public var start: MediaTime
    public var duration: MediaTime
    public var behaviour: Behaviour

    public init(start: MediaTime, duration: MediaTime, behaviour: Behaviour = .drop) {
        self.start = start
        self.duration = duration
        self.behaviour = behaviour
    }

    /// Whether a packet sent at `time` falls into the outage.
    public func contains(_ time: MediaTime) -> Bool { time >= start && time < start + duration }
}

/// Everything the simulated path does to packets, reproducible from `seed`.
public struct NetworkConditions: Sendable, Hashable {
    /// Base delay and jitter before the first phase starts.
    public var baseDelayMilliseconds: Double
    public var jitter: JitterModel
    /// Later delay phases (step changes, jitter spikes), in increasing `start` order.
    public var phases: [DelayPhase]
    public var loss: LossModel
    public var outages: [Outage]
    /// When true the path is a FIFO queue: jitter never makes a packet overtake an earlier one (a delayed
    /// packet delays those behind it). Explicit `reorderProbability` still reorders.
    public var preservesOrder: Bool
    /// Probability that a packet is held back by `reorderDelayMilliseconds` extra, so later packets overtake it.
    public var reorderProbability: Double
    public var reorderDelayMilliseconds: Double
    /// Probability that a packet is delivered twice; the copy arrives `duplicateDelayMilliseconds` later.
    public var duplicateProbability: Double
    public var duplicateDelayMilliseconds: Double
    /// Sender clock error in parts per million: at +1000 the sender's media clock runs 0.1 % fast, so it sends
    /// 1.001 s of audio per real second (the receiver must play faster or grow its buffer).
    public var senderClockSkewPPM: Double
    /// Seed of every random draw.
    public var seed: UInt64

    public init(
        baseDelayMilliseconds: Double = 20, jitter: JitterModel = .none, phases: [DelayPhase] = [],
        loss: LossModel = .none, outages: [Outage] = [], preservesOrder: Bool = true,
        reorderProbability: Double = 0, reorderDelayMilliseconds: Double = 50,
        duplicateProbability: Double = 0, duplicateDelayMilliseconds: Double = 5,
        senderClockSkewPPM: Double = 0, seed: UInt64 = 1
    ) {
        self.baseDelayMilliseconds = baseDelayMilliseconds
        self.jitter = jitter
        self.phases = phases
        self.loss = loss
        self.outages = outages
        self.preservesOrder = preservesOrder
        self.reorderProbability = reorderProbability
        self.reorderDelayMilliseconds = reorderDelayMilliseconds
        self.duplicateProbability = duplicateProbability
        self.duplicateDelayMilliseconds = duplicateDelayMilliseconds
        self.senderClockSkewPPM = senderClockSkewPPM
        self.seed = seed
    }

    /// Longest delay (ms) any delay or jitter parameter may give: one minute. Beyond it a voice path is not
    /// simulated but broken, and the nanosecond arithmetic of arrival times would overflow near 10^13 ms.
    public static let maximumDelayMilliseconds = 60_000.0

    /// Checks probabilities, delays and durations: every number finite and in range (nan, inf and huge values
    /// are refused here rather than trapping inside ``NetworkSimulator``).
    /// - Throws: `NetworkSimulatorError.invalidConditions` naming the first bad field.
    public func validate() throws(NetworkSimulatorError) {
        func probability(_ p: Double, _ name: String) throws(NetworkSimulatorError) {
            if !(0...1).contains(p) { throw .invalidConditions(field: name, reason: "must be within 0...1, got \(p)") }
        }
        func delay(_ ms: Double, _ name: String, allowNegative: Bool = false) throws(NetworkSimulatorError) {
            let limit = Self.maximumDelayMilliseconds
            if !((allowNegative ? -limit : 0)...limit).contains(ms) {
                throw .invalidConditions(
                    field: name, reason: "must be within \(allowNegative ? "±" : "0...")\(Int(limit)) ms, got \(ms)")
            }
        }
        try delay(baseDelayMilliseconds, "baseDelayMilliseconds")
        try delay(reorderDelayMilliseconds, "reorderDelayMilliseconds")
        try delay(duplicateDelayMilliseconds, "duplicateDelayMilliseconds")
        switch loss {
        case .none: break
        case .bernoulli(let p): try probability(p, "loss.probability")
        case .gilbertElliott(let gb, let bg, let lg, let lb):
            try probability(gb, "loss.goodToBad")
            try probability(bg, "loss.badToGood")
            try probability(lg, "loss.lossInGood")
            try probability(lb, "loss.lossInBad")
        }
        try probability(reorderProbability, "reorderProbability")
        try probability(duplicateProbability, "duplicateProbability")
        for phase in [DelayPhase(start: .zero, baseDelayMilliseconds: baseDelayMilliseconds, jitter: jitter)] + phases {
            try delay(phase.baseDelayMilliseconds, "phases.baseDelayMilliseconds")
            switch phase.jitter {
            case .none: break
            case .pareto(let scale, let shape, let cap):
                try delay(scale, "jitter.pareto.scaleMilliseconds")
                try delay(cap, "jitter.pareto.capMilliseconds")
                if !(shape > 0 && shape.isFinite) {
                    throw .invalidConditions(
                        field: "jitter.pareto.shape", reason: "must be positive and finite, got \(shape)")
                }
            case .normal(let mean, let sd):
                try delay(mean, "jitter.normal.meanMilliseconds", allowNegative: true)
                try delay(sd, "jitter.normal.standardDeviationMilliseconds")
            }
        }
        if zip(phases, phases.dropFirst()).contains(where: { $0.start > $1.start }) {
            throw .invalidConditions(field: "phases", reason: "must be in increasing start order")
        }
        if outages.contains(where: { $0.duration.nanoseconds < 0 }) {
            throw .invalidConditions(field: "outages.duration", reason: "must not be negative")
        }
        if !(abs(senderClockSkewPPM) < 100_000) {
            throw .invalidConditions(field: "senderClockSkewPPM", reason: "must be within ±100000")
        }
    }
}

/// Errors of the network simulator and its trace files.
public enum NetworkSimulatorError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A `NetworkConditions` field is out of range.
    case invalidConditions(field: String, reason: String)
    /// A trace file is malformed at `line` (1-based).
    case malformedTrace(line: Int, reason: String)
    /// A trace file cannot be read at all (missing, unreadable, or not UTF-8 text): nothing was parsed.
    case unreadableTrace(path: String, reason: String)

    public var description: String {
        switch self {
        case .invalidConditions(let field, let reason): "invalid network conditions: \(field) \(reason)"
        case .malformedTrace(let line, let reason): "malformed trace, line \(line): \(reason)"
        case .unreadableTrace(let path, let reason): "cannot read trace \(path): \(reason)"
        }
    }
}
