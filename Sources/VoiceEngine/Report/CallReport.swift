import Foundation
import VoiceSession

/// The end-of-call statistics report of one media stream: what a calling SDK uploads for call-quality
/// monitoring. Codable; ``jsonData()`` writes it with sorted keys.
///
/// JSON schema (version 1). Times in milliseconds unless named otherwise; counts are integers; `null` where a
/// figure was not available (no RTCP from the peer yet, no voice processing):
/// ```
/// {
///   "schemaVersion": 1,
///   "durationSeconds": Double,              // media time the stream ran
///   "stream": { "ssrc", "remoteSSRC"?, "payloadType", "processingRate", "deviceRate", "packetTimeMilliseconds",
///               "bitrate", "dtx", "srtpSuite"?, "voiceProcessing", "jitterBuffer": "adaptive"|"speexdsp" },
///   "rtp":  { "packetsSent", "bytesSent", "framesSuppressed", "packetsReceived", "bytesReceived",
///             "expected", "received", "lost", "duplicates", "lossPercent", "lossRuns" },
///             // RFC 3550 A.3: received + lost == expected (received counts duplicates, as RFC 3550 does)
///   "rtcp": { "sent", "bytesSent", "received", "byeReceived", "senderReportsAnswered" },
///             // byeReceived: the peer hung up (RFC 3550 §6.6); senderReportsAnswered: its report blocks with our LSR
///   "drops": { "empty", "tooLarge", "notRTP", "malformedRTP", "malformedRTCP", "authenticationFailed",
///              "replayed", "rtcpAuthenticationFailed", "unknownSSRC", "wrongPayloadType", "badSequence", "total" },
///   "jitter": { "interarrivalMilliseconds",           // RFC 3550 jitter of the stream we received
///               "remoteInterarrivalMilliseconds"? },  // what the peer reported about ours
///   "rtt": { "lastMilliseconds"?, "meanMilliseconds"?, "minMilliseconds"?, "maxMilliseconds"?, "samples" },
///   "remote": { "fractionLost"?, "cumulativeLost"?, "smoothedLossPercent" },
///   "jitterBuffer": { "meanDelayMilliseconds", "currentDelayMilliseconds", "targetDelayMilliseconds",
///                     "playedSamples", "concealedSamples", "concealmentRatio", "comfortNoiseSamples",
///                     "latePackets", "lateLossRate", "acceleratedSamples", "slowedDownSamples",
///                     "stretchedSamplesPerMinute", "flushes" },
///   "fec": { "recoveredFrames", "encoderFECEnabled", "encoderExpectedLossPercent", "adaptations" },
///   "echo": { "erleDecibels"?, "estimatedDelayMilliseconds"? },
///   "quality": { "rFactor", "mos", "oneWayDelayMilliseconds", "delayImpairment", "effectiveEquipmentImpairment",
///                "packetLossPercent", "burstRatio", "model": EModel, "assumptions": [String] },
///   "processingErrors": Int,
///   "listening"?: { "distanceToIdealDecibels", "idealFECRecoveredFrames", "idealConcealedFrames" },
///   "session": CallStatisticsReport?     // the audio session's part, when the caller attaches it
/// }
/// ```
/// The quality block follows ``EModel`` (ITU-T G.107): one-way delay = mean jitter-buffer delay + packet time +
/// codec lookahead + network one-way delay (RTT/2 when measured, else 0), residual loss Ppl = (lost + late −
/// FEC-recovered) / expected, burst ratio from the observed loss runs.
public struct CallReport: Sendable, Codable {
    public struct Stream: Sendable, Codable {
        public var ssrc: UInt32
        public var remoteSSRC: UInt32?
        public var payloadType: UInt8
        public var processingRate: Int
        public var deviceRate: Int
        public var packetTimeMilliseconds: Int
        public var bitrate: Int
        public var dtx: Bool
        public var srtpSuite: String?
        public var voiceProcessing: Bool
        public var jitterBuffer: String
    }

    public struct RTP: Sendable, Codable {
        public var packetsSent: Int
        public var bytesSent: Int
        public var framesSuppressed: Int
        public var packetsReceived: Int
        public var bytesReceived: Int
        public var expected: Int
        public var received: Int
        public var lost: Int
        public var duplicates: Int
        public var lossPercent: Double
        public var lossRuns: Int
    }

    public struct RTCP: Sendable, Codable {
        public var sent: Int
        public var bytesSent: Int
        public var received: Int
        /// The peer's authenticated RTCP BYE arrived: it ended the call.
        public var byeReceived: Bool
        /// The peer's report blocks that answer our sender reports: our RTCP reached it.
        public var senderReportsAnswered: Int
    }

    public struct Drops: Sendable, Codable {
        public var counts: MediaStreamDrops
        public var total: Int
    }

    public struct Jitter: Sendable, Codable {
        public var interarrivalMilliseconds: Double
        public var remoteInterarrivalMilliseconds: Double?
    }

    public struct RoundTrip: Sendable, Codable {
        public var lastMilliseconds: Double?
        public var meanMilliseconds: Double?
        public var minMilliseconds: Double?
        public var maxMilliseconds: Double?
        public var samples: Int
    }

    public struct Remote: Sendable, Codable {
        public var fractionLost: Double?
        public var cumulativeLost: Int?
        public var smoothedLossPercent: Double
    }

    public struct JitterBuffer: Sendable, Codable {
        public var meanDelayMilliseconds: Double
        public var currentDelayMilliseconds: Double
        public var targetDelayMilliseconds: Double
        public var playedSamples: Int
        public var concealedSamples: Int
        public var concealmentRatio: Double
        public var comfortNoiseSamples: Int
        public var latePackets: Int
        public var lateLossRate: Double
        public var acceleratedSamples: Int
        public var slowedDownSamples: Int
        /// Accelerated plus slowed-down samples per minute of playout: how much time-stretching a listener hears.
        public var stretchedSamplesPerMinute: Double
        public var flushes: Int
    }

    public struct FEC: Sendable, Codable {
        public var recoveredFrames: Int
        public var encoderFECEnabled: Bool
        public var encoderExpectedLossPercent: Int
        public var adaptations: Int
    }

    /// What the listener heard against the ideal receiver on the same packets (perfect timing, FEC from the next
    /// packet, else PLC): set by simulations, which know every packet the sender sent; nil in a real call.
    public struct Listening: Sendable, Codable {
        /// Mean log-spectral distance (dB) of the played audio from the ideal receiver's over active speech.
        public var distanceToIdealDecibels = 0.0
        public var idealFECRecoveredFrames = 0
        public var idealConcealedFrames = 0

        public init() {}
    }

    public struct Echo: Sendable, Codable {
        public var erleDecibels: Double?
        public var estimatedDelayMilliseconds: Double?
    }

    public struct Quality: Sendable, Codable {
        public var rFactor: Double
        public var mos: Double
        public var oneWayDelayMilliseconds: Double
        public var delayImpairment: Double
        public var effectiveEquipmentImpairment: Double
        public var packetLossPercent: Double
        public var burstRatio: Double
        public var model: EModel
        public var assumptions: [String]
    }

    public var schemaVersion = 1
    public var durationSeconds: Double
    public var stream: Stream
    public var rtp: RTP
    public var rtcp: RTCP
    public var drops: Drops
    public var jitter: Jitter
    public var rtt: RoundTrip
    public var remote: Remote
    public var jitterBuffer: JitterBuffer
    public var fec: FEC
    public var echo: Echo
    public var quality: Quality
    public var processingErrors: Int
    public var session: CallStatisticsReport?
    /// Set by simulations (``Listening``); nil otherwise.
    public var listening: Listening?

    /// Builds the report from a stream's statistics.
    /// - Parameters:
    ///   - networkOneWayMilliseconds: the network's one-way delay if known otherwise; nil: RTT/2 when measured.
    public init(
        statistics s: MediaStreamStatistics, configuration c: MediaStreamConfiguration, ssrc: UInt32,
        remoteSSRC: UInt32?,
        durationSeconds: Double, codecLookaheadMilliseconds: Double,
        echoDelayMilliseconds: Double? = nil,
        networkOneWayMilliseconds: Double? = nil, model: EModel = .opus,
        session: CallStatisticsReport? = nil
    ) {
        self.durationSeconds = durationSeconds
        let jitterBufferName: String
        switch c.jitterBuffer {
        case .adaptive: jitterBufferName = "adaptive"
        case .speexdsp: jitterBufferName = "speexdsp"
        }
        stream = Stream(
            ssrc: ssrc, remoteSSRC: remoteSSRC, payloadType: c.payloadType,
            processingRate: c.processingRate,
            deviceRate: c.deviceFormat.sampleRate, packetTimeMilliseconds: c.packetTimeMilliseconds,
            bitrate: c.opus.bitrate,
            dtx: c.opus.dtx, srtpSuite: c.srtp?.suite.rawValue, voiceProcessing: c.voiceProcessing,
            jitterBuffer: jitterBufferName)
        rtp = RTP(
            packetsSent: s.packetsSent, bytesSent: s.bytesSent, framesSuppressed: s.framesSuppressed,
            packetsReceived: s.packetsReceived, bytesReceived: s.bytesReceived,
            expected: s.expectedPackets,
            received: s.receivedPackets, lost: s.lostPackets, duplicates: s.duplicatePackets,
            lossPercent: s.lossRate * 100, lossRuns: s.lossRuns)
        rtcp = RTCP(
            sent: s.rtcpSent, bytesSent: s.rtcpBytesSent, received: s.rtcpReceived, byeReceived: s.remoteSentBye,
            senderReportsAnswered: s.senderReportsAnswered)
        drops = Drops(counts: s.drops, total: s.drops.total)
        jitter = Jitter(
            interarrivalMilliseconds: s.jitterMilliseconds,
            remoteInterarrivalMilliseconds: s.remoteJitterMilliseconds)
        let haveRTT = s.roundTripSamples > 0
        rtt = RoundTrip(
            lastMilliseconds: s.roundTripMilliseconds, meanMilliseconds: s.meanRoundTripMilliseconds,
            minMilliseconds: haveRTT ? s.roundTripMinMilliseconds : nil,
            maxMilliseconds: haveRTT ? s.roundTripMaxMilliseconds : nil,
            samples: s.roundTripSamples)
        remote = Remote(
            fractionLost: s.remoteFractionLost, cumulativeLost: s.remoteCumulativeLost,
            smoothedLossPercent: s.smoothedRemoteLossPercent)
        let j = s.jitterBuffer
        jitterBuffer = JitterBuffer(
            meanDelayMilliseconds: j.meanDelayMilliseconds,
            currentDelayMilliseconds: j.currentDelayMilliseconds,
            targetDelayMilliseconds: j.targetDelayMilliseconds, playedSamples: j.playedSamples,
            concealedSamples: j.concealedSamples, concealmentRatio: j.concealmentRatio,
            comfortNoiseSamples: j.comfortNoiseSamples, latePackets: j.latePackets,
            lateLossRate: j.lateLossRate,
            acceleratedSamples: j.acceleratedSamples, slowedDownSamples: j.slowedDownSamples,
            stretchedSamplesPerMinute: j.playedSamples > 0
                ? Double(j.acceleratedSamples + j.slowedDownSamples) * 60 * Double(c.processingRate)
                    / Double(j.playedSamples) : 0,
            flushes: j.flushes)
        fec = FEC(
            recoveredFrames: j.fecRecoveredFrames, encoderFECEnabled: s.encoderFECEnabled,
            encoderExpectedLossPercent: s.encoderExpectedLossPercent, adaptations: s.fecAdaptations)
        echo = Echo(erleDecibels: s.erleDecibels, estimatedDelayMilliseconds: echoDelayMilliseconds)
        processingErrors = s.processingErrors
        self.session = session

        let network = networkOneWayMilliseconds ?? (s.meanRoundTripMilliseconds.map { $0 / 2 } ?? 0)
        let oneWay =
            j.meanDelayMilliseconds + Double(c.packetTimeMilliseconds) + codecLookaheadMilliseconds
            + network
        let residualLost = max(0, max(s.lostPackets, 0) + j.latePackets - j.fecRecoveredFrames)
        let ppl = s.expectedPackets == 0 ? 0 : 100 * Double(residualLost) / Double(s.expectedPackets)
        let burst = EModel.burstRatio(
            lostPackets: max(s.lostPackets, 0), lossRuns: s.lossRuns, expectedPackets: s.expectedPackets)
        let r = model.rating(oneWayDelayMilliseconds: oneWay, lossPercent: ppl, burstRatio: burst)
        var assumptions = [
            "R0 - Is = \(model.baseR) (ITU-T G.107 default parameters; acoustic terms not measured)",
            "Ie = \(model.equipmentImpairment), Bpl = \(model.packetLossRobustness) for wideband Opus (not in G.113 Appendix I; common practice, conservative against G.711+PLC Bpl 25.1)",
            "A = \(model.advantage)",
            "one-way delay = mean jitter-buffer delay + packet time + codec lookahead + network one-way delay; device and resampler latency not included",
            "Ppl = (lost + late - FEC recovered) / expected"
        ]
        assumptions.append(
            networkOneWayMilliseconds != nil
                ? "network one-way delay given by the caller"
                : (haveRTT
                    ? "network one-way delay = mean RTCP RTT / 2"
                    : "network one-way delay unknown (no RTT): 0"))
        quality = Quality(
            rFactor: r, mos: EModel.mos(r: r), oneWayDelayMilliseconds: oneWay,
            delayImpairment: EModel.delayImpairment(oneWayMilliseconds: oneWay),
            effectiveEquipmentImpairment: model.effectiveEquipmentImpairment(
                lossPercent: ppl, burstRatio: burst),
            packetLossPercent: ppl, burstRatio: burst, model: model, assumptions: assumptions)
    }

    /// The report of `stream` now.
    public init(
        stream: MediaStream, durationSeconds: Double, networkOneWayMilliseconds: Double? = nil,
        session: CallStatisticsReport? = nil
    ) {
        self.init(
            statistics: stream.statistics, configuration: stream.configuration, ssrc: stream.ssrc,
            remoteSSRC: stream.remoteSSRC, durationSeconds: durationSeconds,
            codecLookaheadMilliseconds: stream.codecLookaheadMilliseconds,
            echoDelayMilliseconds: stream.echoCancellerStatistics?.estimatedDelayMilliseconds,
            networkOneWayMilliseconds: networkOneWayMilliseconds, session: session)
    }

    /// Pretty-printed JSON with sorted keys.
    public func jsonData() throws -> Data { try ReportJSON.encode(self) }
}

/// How every report the engine and its tools write is encoded, so they read alike and diff cleanly.
public enum ReportJSON {
    /// Pretty-printed JSON with sorted keys; non-finite numbers as the strings `inf`, `-inf`, `nan` (a report
    /// may hold a ratio over nothing, and JSON has no literal for it).
    public static func encode(_ value: some Encodable) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return try encoder.encode(value)
    }
}
