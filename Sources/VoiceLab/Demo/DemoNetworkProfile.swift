import VoiceEngine
import VoiceCore
import VoiceNetSim

/// A named network for the demo call: what both directions of the call go through (each direction with its own
/// seed). The figures are deliberately simple, so the report can be read against them.
public struct DemoNetworkProfile: Sendable, Hashable, Codable {
    /// The profile's name (`clean`, `wifi`, `lte`, `congested`, or `custom` after overrides).
    public var name: String
    /// Fixed one-way delay, ms.
    public var baseDelayMilliseconds: Double
    /// Extra one-way delay per packet, drawn from a normal distribution with this mean and standard deviation
    /// (clipped at 0; the path stays FIFO, so a delayed packet delays those behind it). Same meaning as
    /// `voice-engine simulate --jitter`.
    public var jitterMilliseconds: Double
    /// Average packet loss, percent.
    public var lossPercent: Double
    /// Mean loss-burst length in packets: 1 is independent (Bernoulli) loss, more is Gilbert–Elliott bursts.
    public var meanBurstPackets: Double

    public init(
        name: String, baseDelayMilliseconds: Double, jitterMilliseconds: Double, lossPercent: Double,
        meanBurstPackets: Double
    ) {
        self.name = name
        self.baseDelayMilliseconds = baseDelayMilliseconds
        self.jitterMilliseconds = jitterMilliseconds
        self.lossPercent = lossPercent
        self.meanBurstPackets = meanBurstPackets
    }

    /// A wired LAN: 20 ms, no jitter, no loss.
    public static let clean = DemoNetworkProfile(
        name: "clean", baseDelayMilliseconds: 20, jitterMilliseconds: 0, lossPercent: 0, meanBurstPackets: 1)
    /// Busy Wi-Fi, the default: 3 % loss in bursts (3 packets on average) and 30 ms jitter over 20 ms.
    public static let wifi = DemoNetworkProfile(
        name: "wifi", baseDelayMilliseconds: 20, jitterMilliseconds: 30, lossPercent: 3, meanBurstPackets: 3)
    /// A mobile bearer: 50 ms, 15 ms jitter, 1 % loss in short bursts.
    public static let lte = DemoNetworkProfile(
        name: "lte", baseDelayMilliseconds: 50, jitterMilliseconds: 15, lossPercent: 1, meanBurstPackets: 2)
    /// A congested uplink: 80 ms, 60 ms jitter, 8 % loss in long bursts.
    public static let congested = DemoNetworkProfile(
        name: "congested", baseDelayMilliseconds: 80, jitterMilliseconds: 60, lossPercent: 8,
        meanBurstPackets: 4)

    /// Every named profile, in order of increasing trouble.
    public static let all: [DemoNetworkProfile] = [.clean, .wifi, .lte, .congested]

    /// The named profile, or nil.
    public static func named(_ name: String) -> DemoNetworkProfile? { all.first { $0.name == name } }

    /// Checks the figures.
    /// - Throws: ``DemoError/invalidOption(_:_:)`` naming the bad figure.
    public func validate() throws(DemoError) {
        guard (0...100).contains(lossPercent) else {
            throw .invalidOption("--loss", "\(lossPercent) must be within 0...100 (percent)")
        }
        guard jitterMilliseconds >= 0, jitterMilliseconds <= 2_000 else {
            throw .invalidOption("--jitter", "\(jitterMilliseconds) must be within 0...2000 (ms)")
        }
        guard baseDelayMilliseconds >= 0, baseDelayMilliseconds <= 2_000 else {
            throw .invalidOption("delay", "\(baseDelayMilliseconds) must be within 0...2000 (ms)")
        }
        guard meanBurstPackets >= 1 else {
            throw .invalidOption("burst", "\(meanBurstPackets) must be at least 1 packet")
        }
    }

    /// The simulator's conditions for one direction.
    public func conditions(seed: UInt64) -> NetworkConditions {
        let p = lossPercent / 100
        let loss: LossModel
        if p <= 0 {
            loss = .none
        } else if meanBurstPackets > 1 && p < 1 {
            // Gilbert–Elliott with certain loss in the bad state: mean burst 1/badToGood, stationary loss p.
            let badToGood = 1 / meanBurstPackets
            loss = .gilbertElliott(goodToBad: min(1, p * badToGood / (1 - p)), badToGood: badToGood)
        } else {
            loss = .bernoulli(probability: min(1, p))
        }
        return NetworkConditions(
            baseDelayMilliseconds: baseDelayMilliseconds,
            jitter: jitterMilliseconds > 0
                ? .normal(meanMilliseconds: jitterMilliseconds, standardDeviationMilliseconds: jitterMilliseconds)
                : .none,
            loss: loss, seed: seed)
    }

    /// One line for summaries: `wifi: 20 ms + 30 ms jitter, 3 % loss (bursts of 3)`.
    public var summary: String {
        func n(_ x: Double) -> String { x == x.rounded() ? String(Int(x)) : String(format: "%.1f", x) }
        var text = "\(name): \(n(baseDelayMilliseconds)) ms"
        if jitterMilliseconds > 0 { text += " + \(n(jitterMilliseconds)) ms jitter" }
        text += ", \(n(lossPercent)) % loss"
        if lossPercent > 0 {
            text += meanBurstPackets > 1 ? " (bursts of \(n(meanBurstPackets)))" : " (independent)"
        }
        return text
    }
}
