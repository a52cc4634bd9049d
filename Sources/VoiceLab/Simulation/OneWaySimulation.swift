import VoiceEngine
import Foundation
import VoiceCodec
import VoiceCore
import VoiceDSP
import VoiceNetSim
import VoiceRTP
import VoiceSRTP

/// One direction of a call through the full pipeline, for `voice-engine simulate`: A captures the input (voice
/// processing, Opus, RTP, SRTP), the network simulator or a trace carries it, B receives it (SRTP, statistics,
/// jitter buffer, decoder) and plays it at the input's rate. B is on hold (sends no media) but sends RTCP, so A
/// gets receiver reports: RTT and loss feedback (FEC) work as in a real call.
public enum OneWaySimulation {
    public struct Options: Sendable {
        public var network: CallNetwork
        /// SRTP suite, or nil for plain RTP.
        public var srtpSuite: SRTPCryptoSuite?
        public var voiceProcessing: Bool
        /// The sender's transient suppressor (with voice processing on, as in a call).
        public var transientSuppression = true
        public var jitterBuffer: MediaStreamJitterBuffer
        public var opus: OpusEncoderConfiguration
        /// How the sender's FEC follows the receiver's loss reports (and what it starts with before the first).
        public var lossAdaptation: LossAdaptationPolicy
        /// The codec both ends use; a telephony codec runs both streams at its own rate.
        public var codec: AudioCodec
        public var seed: UInt64
        public var drainMilliseconds: Int
        /// Write every datagram as it arrives at A (RTCP) or B (RTP) into this pcapng file, A as 127.0.0.1:40000
        /// and B as 127.0.0.1:40002 (``CapturingPacketPath``).
        public var capturePath: String?
        /// Also render the ideal receiver (``IdealReceiver``) from the packets A sent and score B's output against
        /// it (``SpectralDistance``): what the listener loses beyond what the network took.
        public var scoresAgainstIdealReceiver: Bool

        public init(
            network: CallNetwork, srtpSuite: SRTPCryptoSuite? = .aesCM128HmacSHA1_80,
            voiceProcessing: Bool = true,
            jitterBuffer: MediaStreamJitterBuffer = .adaptive(),
            opus: OpusEncoderConfiguration = MediaStreamConfiguration.defaultOpus,
            seed: UInt64 = 1, drainMilliseconds: Int = 1_000, capturePath: String? = nil,
            scoresAgainstIdealReceiver: Bool = false, codec: AudioCodec = .opus,
            lossAdaptation: LossAdaptationPolicy = LossAdaptationPolicy()
        ) {
            self.codec = codec
            self.lossAdaptation = lossAdaptation
            self.scoresAgainstIdealReceiver = scoresAgainstIdealReceiver
            self.network = network
            self.srtpSuite = srtpSuite
            self.voiceProcessing = voiceProcessing
            self.jitterBuffer = jitterBuffer
            self.opus = opus
            self.seed = seed
            self.drainMilliseconds = drainMilliseconds
            self.capturePath = capturePath
        }
    }

    public struct Result: Sendable {
        /// What B played, at the input's rate.
        public var output: [Int16]
        public var sampleRate: Int
        /// The receiver's end-of-call report (B), and the sender's (A).
        public var receiverReport: CallReport
        public var senderReport: CallReport
        /// What the network did to each RTP packet A sent.
        public var trace: NetworkTrace
        /// With ``Options/scoresAgainstIdealReceiver``: the ideal receiver on A's packets (its output at the
        /// input's rate), and B's output scored against it.
        public var ideal: IdealReceiver.Result?
        public var distanceToIdeal: SpectralDistance?
    }

    /// Input sample rates accepted (the device rate of both ends).
    public static let supportedRates = 8_000...48_000

    /// Runs the call.
    /// - Parameters:
    ///   - input: mono PCM at `sampleRate`.
    /// - Throws: ``MediaStreamError`` (including an unsupported rate), `NetworkSimulatorError` for bad conditions,
    ///   ``PcapError`` when the capture file cannot be created or written (checked before the call runs).
    public static func run(input: [Int16], sampleRate: Int, options: Options) throws -> Result {
        let captureFile = try options.capturePath.map { path throws(PcapError) in try PcapFileWriter(path: path) }
        guard supportedRates.contains(sampleRate), sampleRate % 100 == 0 else {
            throw MediaStreamError.invalidConfiguration(
                field: "input",
                reason: "sample rate \(sampleRate) Hz is not supported (8000...48000 Hz, a multiple of 100)"
            )
        }
        var generator = SeededGenerator(seed: options.seed &+ 0xC0FFEE)
        var srtpA: MediaStreamSRTP?
        var srtpB: MediaStreamSRTP?
        if let suite = options.srtpSuite {
            let ka = SRTPMasterKey.random(for: suite, using: &generator)
            let kb = SRTPMasterKey.random(for: suite, using: &generator)
            srtpA = MediaStreamSRTP(suite: suite, localKey: ka, remoteKey: kb)
            srtpB = MediaStreamSRTP(suite: suite, localKey: kb, remoteKey: ka)
        }
        let device = AudioFormat(sampleRate: sampleRate)
        let rate = options.codec.fixedSampleRate ?? 16_000
        let payloadType = options.codec.staticPayloadType
        var a = MediaStreamConfiguration(
            opus: options.opus, codec: options.codec, processingRate: rate, deviceFormat: device,
            jitterBuffer: options.jitterBuffer, srtp: srtpA, voiceProcessing: options.voiceProcessing,
            payloadType: payloadType, lossAdaptation: options.lossAdaptation, seed: options.seed)
        if !options.transientSuppression { a.transientSuppression = nil }
        let b = MediaStreamConfiguration(
            opus: options.opus, codec: options.codec, processingRate: rate, deviceFormat: device,
            jitterBuffer: options.jitterBuffer, srtp: srtpB, voiceProcessing: false, payloadType: payloadType,
            seed: options.seed &+ 1)
        var back = NetworkConditions(baseDelayMilliseconds: 20)
        if case .conditions(let c) = options.network {
            back.baseDelayMilliseconds = c.baseDelayMilliseconds
            back.seed = c.seed &+ 17
        }
        let path = try SimulatedPacketPath(aToB: options.network, bToA: .conditions(back))
        path.recordsSentRTP = options.scoresAgainstIdealReceiver
        let loopback = IPAddress.v4(0x7F00_0001)
        let capturing = captureFile.map {
            CapturingPacketPath(
                wrapping: path, file: $0, endpointA: PcapEndpoint(address: loopback, port: 40_000),
                endpointB: PcapEndpoint(address: loopback, port: 40_002))
        }
        let simulation = try CallSimulation(
            configuration: .init(
                streamA: a, streamB: b, inputA: input, inputB: [],
                drainMilliseconds: options.drainMilliseconds),
            path: capturing ?? path)
        simulation.streamB.isOnHold = true
        let result = simulation.run()
        try captureFile?.close()
        let duration = Double(result.ticks) / 100
        let oneWay = Self.meanTransit(path.fates(from: .a))
        var ideal: IdealReceiver.Result?
        var distance: SpectralDistance?
        if options.scoresAgainstIdealReceiver {
            var rendered = try idealReceiver(
                sent: path.sentRTP[.a] ?? [], fates: path.fates(from: .a), srtp: srtpA, configuration: a)
            rendered.output = try IdealReceiver.resampled(rendered.output, from: a.processingRate, to: sampleRate)
            distance = SpectralDistance.measure(
                reference: rendered.output, degraded: result.playedB, sampleRate: sampleRate)
            ideal = rendered
        }
        return Result(
            output: result.playedB, sampleRate: sampleRate,
            receiverReport: CallReport(
                stream: simulation.streamB, durationSeconds: duration, networkOneWayMilliseconds: oneWay),
            senderReport: CallReport(stream: simulation.streamA, durationSeconds: duration),
            trace: NetworkTrace(fates: path.fates(from: .a)), ideal: ideal, distanceToIdeal: distance)
    }

    /// The ideal receiver on what A sent: each RTP datagram (SRTP removed with A's key) is a frame, arrived as
    /// its fate says.
    static func idealReceiver(
        sent: [[UInt8]], fates: [PacketFate], srtp: MediaStreamSRTP?, configuration: MediaStreamConfiguration
    ) throws -> IdealReceiver.Result {
        let session = try srtp.map { try SRTPSession(suite: $0.suite, key: $0.localKey, direction: .inbound) }
        var frames: [IdealReceiver.Frame] = []
        frames.reserveCapacity(sent.count)
        for (i, datagram) in sent.enumerated() {
            var bytes = datagram
            let length = try bytes.withUnsafeMutableBytes { b in try session?.unprotect(b, length: b.count) ?? b.count }
            let payload = try bytes.withUnsafeBytes { b in
                let view = try RTPPacketView(UnsafeRawBufferPointer(rebasing: b[0..<length]))
                return Array(b[view.payloadRange])
            }
            frames.append(IdealReceiver.Frame(payload: payload, arrived: i < fates.count && !fates[i].isLost))
        }
        let rate = configuration.processingRate
        return try IdealReceiver.render(
            frames: frames, frameSamples: rate * configuration.packetTimeMilliseconds / 1000, sampleRate: rate)
    }

    /// Mean one-way transit (ms) of the packets that arrived; what the receiver's report uses as network delay
    /// (RTT/2 is the sender's view; in a simulation the true figure is known).
    static func meanTransit(_ fates: [PacketFate]) -> Double? {
        let transits = fates.compactMap { $0.transit?.milliseconds }
        return transits.isEmpty ? nil : transits.reduce(0, +) / Double(transits.count)
    }
}
