import Foundation

/// The ITU-T G.107 E-model, reduced to what a media engine can measure: delay and packet loss.
///
/// `R = (R0 − Is) − Id − Ie,eff + A`, then MOS from R (G.107 Annex B):
/// - `R0 − Is` = 93.2: the G.107 default values of every parameter (signal-to-noise, loudness ratings, sidetone,
///   talker and listener echo with TELR = 65 dB, WEPL = 110 dB) give R = 93.2 at zero delay and no codec
///   impairment; the engine cannot measure those acoustic parameters, so it keeps their defaults.
/// - `Id` = Idd, the G.107 delay impairment for an absolute one-way delay Ta: 0 up to 100 ms, above it
///   `Idd = 25·{(1 + X⁶)^(1/6) − 3·(1 + (X/3)⁶)^(1/6) + 2}` with `X = log₂(Ta/100)`. The echo terms Idte/Idle
///   are left at their default contribution (echo is the canceller's job, measured separately as ERLE).
/// - `Ie,eff = Ie + (95 − Ie) · Ppl / (Ppl/BurstR + Bpl)`, with Ppl the residual packet loss in % (after FEC, late
///   losses included) and BurstR the burst ratio (1 for random loss, > 1 for bursty loss).
/// - `A` = 0 (advantage factor; 0 for wired/fixed, as G.107 recommends for conventional use).
///
/// Opus parameters (assumptions): Opus is not listed in G.113 Appendix I. By common practice for wideband Opus
/// at speech bitrates (≥ 16 kb/s) rated on the narrowband-equivalent scale, `Ie = 0` (it is not worse than G.711)
/// and `Bpl = 20`: more robust than codecs without concealment, and conservative against G.113's Bpl = 25.1 for
/// G.711 with its Appendix I PLC, because Opus's PLC is at least as good. Both are parameters, so a caller with
/// better figures (or the wideband E-model of G.107.1, R up to 129) can substitute them.
public struct EModel: Sendable, Hashable, Codable {
    /// `R0 − Is` (93.2 with G.107 defaults).
    public var baseR: Double
    /// Equipment impairment of the codec, Ie.
    public var equipmentImpairment: Double
    /// Packet-loss robustness, Bpl.
    public var packetLossRobustness: Double
    /// Advantage factor A.
    public var advantage: Double

    public init(
        baseR: Double = 93.2, equipmentImpairment: Double = 0, packetLossRobustness: Double = 20,
        advantage: Double = 0
    ) {
        self.baseR = baseR
        self.equipmentImpairment = equipmentImpairment
        self.packetLossRobustness = packetLossRobustness
        self.advantage = advantage
    }

    /// The defaults stated above, for wideband Opus.
    public static let opus = EModel()

    /// Delay impairment Idd (G.107 §7.4) for a one-way (mouth-to-ear) delay in ms.
    public static func delayImpairment(oneWayMilliseconds ta: Double) -> Double {
        guard ta > 100 else { return 0 }
        let x = log2(ta / 100)
        return 25 * (pow(1 + pow(x, 6), 1.0 / 6) - 3 * pow(1 + pow(x / 3, 6), 1.0 / 6) + 2)
    }

    /// Effective equipment impairment Ie,eff for `lossPercent` (0...100) and `burstRatio` (≥ 0; 1 for random loss).
    public func effectiveEquipmentImpairment(lossPercent ppl: Double, burstRatio: Double = 1)
        -> Double
    {
        let ie = equipmentImpairment
        let p = max(0, min(100, ppl))
        guard p > 0 else { return ie }
        let burstR = max(burstRatio, 1e-6)
        return ie + (95 - ie) * p / (p / burstR + packetLossRobustness)
    }

    /// The rating factor R for a call.
    public func rating(oneWayDelayMilliseconds: Double, lossPercent: Double, burstRatio: Double = 1)
        -> Double
    {
        baseR - Self.delayImpairment(oneWayMilliseconds: oneWayDelayMilliseconds)
            - effectiveEquipmentImpairment(lossPercent: lossPercent, burstRatio: burstRatio) + advantage
    }

    /// MOS (conversational quality estimate, 1...4.5) from R (G.107 Annex B, equation B-4).
    public static func mos(r: Double) -> Double {
        if r <= 0 { return 1 }
        if r >= 100 { return 4.5 }
        return 1 + 0.035 * r + r * (r - 60) * (100 - r) * 7e-6
    }

    /// Burst ratio from a loss pattern: mean observed loss-run length divided by the mean run length random loss
    /// of the same rate would give, `1 / (1 − p)`. 1 when there is no loss.
    public static func burstRatio(lostPackets: Int, lossRuns: Int, expectedPackets: Int) -> Double {
        guard lostPackets > 0, lossRuns > 0, expectedPackets > 0 else { return 1 }
        let p = min(Double(lostPackets) / Double(expectedPackets), 0.999)
        let meanRun = Double(lostPackets) / Double(lossRuns)
        return max(1, meanRun * (1 - p))
    }
}
