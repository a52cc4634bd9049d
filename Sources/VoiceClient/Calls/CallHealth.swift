import VoiceEngine

/// How good the call's network is, from the estimated MOS, with hysteresis (see ``CallHealthMonitor``).
public enum NetworkQuality: Int, Sendable, Hashable, Comparable, CaseIterable, CustomStringConvertible {
    /// MOS below 3.1: many listeners are dissatisfied.
    case bad
    /// MOS 3.1 to 3.6: audible impairment.
    case poor
    /// MOS 3.6 to 4.0: slight impairment.
    case fair
    /// MOS 4.0 and above: toll quality or better.
    case good

    public static func < (a: NetworkQuality, b: NetworkQuality) -> Bool { a.rawValue < b.rawValue }

    /// The lowest MOS of the level.
    var lowerMOS: Double {
        switch self {
        case .bad: 1.0
        case .poor: 3.1
        case .fair: 3.6
        case .good: 4.0
        }
    }

    public var description: String {
        switch self {
        case .bad: "bad"
        case .poor: "poor"
        case .fair: "fair"
        case .good: "good"
        }
    }
}

/// A call's receive quality over the last quality interval, as ``CallEffect/qualityUpdated(_:)`` reports it.
public struct CallQuality: Sendable, Hashable, CustomStringConvertible {
    /// Packets of the peer's stream the network lost in the interval, in percent.
    public var lossPercent: Double
    /// RFC 3550 interarrival jitter at the end of the interval.
    public var jitterMilliseconds: Double
    /// The latest round-trip time from RTCP; nil before the peer answered a sender report.
    public var roundTripMilliseconds: Double?
    /// Share of the played audio that loss concealment synthesised in the interval, in percent.
    public var concealmentPercent: Double
    /// The E-model's estimate of the listener's mean opinion score, 1 to 4.5 (``CallHealthMonitor/estimatedMOS(lossFraction:jitterMilliseconds:roundTripMilliseconds:)``).
    public var mos: Double
    public var networkQuality: NetworkQuality

    public init(
        lossPercent: Double, jitterMilliseconds: Double, roundTripMilliseconds: Double?, concealmentPercent: Double,
        mos: Double, networkQuality: NetworkQuality
    ) {
        self.lossPercent = lossPercent
        self.jitterMilliseconds = jitterMilliseconds
        self.roundTripMilliseconds = roundTripMilliseconds
        self.concealmentPercent = concealmentPercent
        self.mos = mos
        self.networkQuality = networkQuality
    }

    public var description: String {
        let rtt = roundTripMilliseconds.map { "\(Int($0.rounded())) ms" } ?? "-"
        return "\(networkQuality) (MOS \((mos * 100).rounded() / 100), loss \((lossPercent * 10).rounded() / 10) %, "
            + "jitter \(Int(jitterMilliseconds.rounded())) ms, RTT \(rtt), "
            + "concealed \((concealmentPercent * 10).rounded() / 10) %)"
    }
}

/// When a call's media is declared dead and how often its quality is reported.
public struct CallHealthConfiguration: Sendable, Hashable {
    /// An established call that received nothing (neither RTP nor RTCP) for this long ends with
    /// `CallEndCause.timeout`. 20 s by default: longer than RTCP's 5 s interval with margin for a held call,
    /// which still sends RTCP.
    public var mediaTimeout: MediaTime
    /// How often ``CallEffect/qualityUpdated(_:)`` is reported while the call is established (2 s by default;
    /// the SDKs report every 1 to 5 s).
    public var qualityInterval: MediaTime

    public static let defaultMediaTimeout = MediaTime.seconds(20)
    public static let defaultQualityInterval = MediaTime.seconds(2)

    public init(
        mediaTimeout: MediaTime = defaultMediaTimeout, qualityInterval: MediaTime = defaultQualityInterval
    ) {
        precondition(mediaTimeout > .zero && qualityInterval > .zero, "health intervals must be positive")
        self.mediaTimeout = mediaTimeout
        self.qualityInterval = qualityInterval
    }
}

/// Decides a running call's health from its media counters, pure: cumulative receive figures and their time in,
/// quality reports and the media timeout out. The call's link samples the media (``VoiceEngine/LiveCall/reception``)
/// and feeds it here; nothing in this type reads a clock.
///
/// - Media timeout: the time of the last sample whose arrivals (RTP, RTCP, or datagrams an interruption dropped)
///   grew is remembered; once ``CallHealthConfiguration/mediaTimeout`` passed after it (or after the first
///   sample, when nothing ever arrived), ``Output/mediaTimedOut(silence:)`` is given, once.
/// - Quality: every ``CallHealthConfiguration/qualityInterval`` the differences since the previous report give
///   the interval's loss and concealment, and ``estimatedMOS(lossFraction:jitterMilliseconds:roundTripMilliseconds:)``
///   the MOS. The level follows the MOS with hysteresis: it rises to a better level only once the MOS is
///   ``hysteresis`` above that level's lower bound, and falls only once the MOS is ``hysteresis`` below the
///   current level's lower bound, so a MOS wavering on a boundary does not make the level flap. An interval in
///   which no packet was expected (the peer holds the call, or sends nothing) gives no report and keeps the level.
public struct CallHealthMonitor: Sendable, Hashable {
    public enum Output: Sendable, Hashable {
        case quality(CallQuality)
        /// Nothing arrived for `silence` (at least the media timeout).
        case mediaTimedOut(silence: MediaTime)
    }

    /// MOS margin around each level's bound.
    public static let hysteresis = 0.1

    public let configuration: CallHealthConfiguration
    private var lastArrivals: Int?
    private var lastArrivalAt: MediaTime?
    private var timedOut = false
    private var reportedAt: MediaTime?
    private var reportedReception = LiveCallReception()
    public private(set) var level: NetworkQuality?

    public init(configuration: CallHealthConfiguration = CallHealthConfiguration()) {
        self.configuration = configuration
    }

    /// Takes the media's cumulative figures at `time` (times never decrease).
    public mutating func observe(_ reception: LiveCallReception, at time: MediaTime) -> [Output] {
        var outputs: [Output] = []
        if lastArrivals == nil || reception.datagramsArrived > lastArrivals! {
            // The first sample starts the silence clock: a peer that never sends times out too.
            lastArrivals = reception.datagramsArrived
            lastArrivalAt = time
        }
        if !timedOut, let since = lastArrivalAt, time - since >= configuration.mediaTimeout {
            timedOut = true
            outputs.append(.mediaTimedOut(silence: time - since))
        }
        guard let previousTime = reportedAt else {
            (reportedAt, reportedReception) = (time, reception)
            return outputs
        }
        guard time - previousTime >= configuration.qualityInterval else { return outputs }
        let previous = reportedReception
        (reportedAt, reportedReception) = (time, reception)
        let expected = reception.expectedPackets - previous.expectedPackets
        let lost = reception.lostPackets - previous.lostPackets
        let played = reception.playedSamples - previous.playedSamples
        let concealed = reception.concealedSamples - previous.concealedSamples
        let loss = expected > 0 ? min(max(Double(lost) / Double(expected), 0), 1) : 0
        let mos = Self.estimatedMOS(
            lossFraction: loss, jitterMilliseconds: reception.jitterMilliseconds,
            roundTripMilliseconds: reception.roundTripMilliseconds)
        // No packet expected (the peer holds the call, or sends nothing at all): nothing to judge, no report.
        guard expected > 0 else { return outputs }
        level = Self.level(from: level, mos: mos)
        outputs.append(
            .quality(
                CallQuality(
                    lossPercent: loss * 100, jitterMilliseconds: reception.jitterMilliseconds,
                    roundTripMilliseconds: reception.roundTripMilliseconds,
                    concealmentPercent: played > 0 ? min(max(Double(concealed) / Double(played), 0), 1) * 100 : 0,
                    mos: mos, networkQuality: level!)))
        return outputs
    }

    /// The level after `current` for `mos`, with ``hysteresis``; without a current level, the MOS's own.
    public static func level(from current: NetworkQuality?, mos: Double) -> NetworkQuality {
        guard var level = current else {
            return NetworkQuality.allCases.last { mos >= $0.lowerMOS } ?? .bad
        }
        while let better = NetworkQuality(rawValue: level.rawValue + 1), mos >= better.lowerMOS + hysteresis {
            level = better
        }
        while let worse = NetworkQuality(rawValue: level.rawValue - 1), mos < level.lowerMOS - hysteresis {
            level = worse
        }
        return level
    }

    /// The ITU-T G.107 E-model, simplified as pjsip's and WebRTC-based monitors use it (Cole and Rosenbluth,
    /// "Voice over IP performance monitoring", 2001), for a codec with packet-loss concealment:
    ///
    /// - one-way delay d = RTT / 2 + 2 × jitter + 10 ms (packetisation and the jitter buffer's share; RTT 0 when
    ///   not yet measured),
    /// - delay impairment Id = 0.024 d + 0.11 (d − 177.3) H(d − 177.3), H the step function,
    /// - equipment impairment Ie,eff = Ie + (95 − Ie) × Ppl / (Ppl + Bpl), Ppl the loss in percent, with G.113's
    ///   figures for G.711 with concealment (Ie = 0, Bpl = 25.1) standing in for Opus, which G.113 does not list,
    /// - R = 93.2 − Id − Ie,eff (G.107's default R0 − Is, advantage A = 0),
    /// - MOS = 1 + 0.035 R + 7 × 10⁻⁶ R (R − 60)(100 − R), 1 for R ≤ 0 and 4.5 for R ≥ 100.
    ///
    /// A clean path gives 4.4, 5 % loss 3.9, 10 % loss 3.4, 20 % loss 2.6; a 600 ms RTT alone 3.65.
    public static func estimatedMOS(lossFraction: Double, jitterMilliseconds: Double, roundTripMilliseconds: Double?)
        -> Double
    {
        let delay = (roundTripMilliseconds ?? 0) / 2 + 2 * jitterMilliseconds + 10
        let delayImpairment = 0.024 * delay + (delay > 177.3 ? 0.11 * (delay - 177.3) : 0)
        let lossPercent = min(max(lossFraction, 0), 1) * 100
        let equipmentImpairment = 95 * lossPercent / (lossPercent + 25.1)
        let r = 93.2 - delayImpairment - equipmentImpairment
        if r <= 0 { return 1 }
        if r >= 100 { return 4.5 }
        return 1 + 0.035 * r + 7e-6 * r * (r - 60) * (100 - r)
    }
}
