import ArgumentParser
import Foundation
import VoiceEngine
import VoiceLab

/// `voice-engine simulate`: one direction of a call through the full pipeline in fast time.
struct SimulateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract:
            "Send IN.wav through one direction of a call (voice processing, codec, RTP, SRTP, simulated network, jitter buffer, decoder) and write what the receiver plays.",
        discussion: """
            Runs in fast time. OUT.wav is at the input's rate and includes the mouth-to-ear delay. The network is \
            either a random model (--delay, --jitter, --loss, --burst, --drift, --seed) or a recorded trace \
            (--trace FILE, CSV 'send_ms,arrival_ms', one row per RTP packet in send order, empty arrival = lost). \
            The receiver asks for in-band FEC (useinbandfec=1, as the engine's SDP does), so the sender's Opus \
            carries FEC from the first packet (expecting 5 % loss, at a bitrate raised by 60 % until the first \
            report) and adapts it from the RTCP the receiver sends back over a clean path. With --codec pcmu, pcma (8 kHz) or g722 (16 kHz) the whole chain runs at that \
            codec's rate and a lost packet is concealed with spandsp's PLC.
            """)

    @Option(help: "Input speech: mono 16-bit or float WAV, 8000...48000 Hz.")
    var input: String
    @Option(help: "Where to write what the receiver played (16-bit WAV at the input's rate).")
    var out: String
    @Option(help: "Packet loss in percent (0...100).")
    var loss: Double = 0
    @Flag(
        help:
            "Make the loss bursty (Gilbert–Elliott, mean burst of 3 packets) at the same average rate.")
    var burst = false
    @Option(
        help:
            "Jitter in ms: extra one-way delay drawn from a normal distribution with this mean and standard deviation (clipped at 0)."
    )
    var jitter: Double = 0
    @Option(help: "Base one-way network delay in ms.")
    var delay: Double = 40
    @Option(help: "Sender clock error in ppm (positive: the sender's clock runs fast).")
    var drift: Double = 0
    @Option(help: "Replay this packet trace (CSV send_ms,arrival_ms) instead of the random model.")
    var trace: String?
    @Option(help: "Write what the network did to each RTP packet as a trace CSV.")
    var writeTrace: String?
    @Option(help: "Seed of every random draw (network, keys, SSRC).")
    var seed: UInt64 = 1
    @Option(help: "Write the receiver's end-of-call report (JSON) here.")
    var report: String?
    @Option(help: "Jitter buffer: adaptive or speexdsp.")
    var jitterBuffer: String = "adaptive"
    @Option(help: "Codec: opus, g722, pcmu or pcma.")
    var codec: String = "opus"
    @Option(help: "Opus bitrate in bits per second.")
    var bitrate: Int = 32_000
    @Option(help: "Packet time in ms: 10, 20, 40 or 60 (one Opus frame per packet).")
    var ptime: Int = 20
    @Option(
        help:
            "Expected loss (%) the sender's Opus FEC starts with, before the first loss report; 0: no FEC until a report shows loss."
    )
    var initialExpectedLoss = LossAdaptationPolicy().initialExpectedLossPercent
    @Option(
        help:
            "How much (%) the sender raises its bitrate while that start-up FEC runs, until the first loss report; 0: the FEC takes its bits from the speech."
    )
    var initialFECBitrateIncrease = LossAdaptationPolicy().initialFECBitrateIncreasePercent
    @Option(
        help:
            "How long (ms of a call without loss) the receiver's FEC look-ahead, on from the first packet, holds before it is released; 0: on only from the first loss."
    )
    var lookAheadRelease = AdaptiveJitterBuffer.Configuration.FECLookAhead().calmReleaseMilliseconds
    @Flag(help: "Send plain RTP instead of SRTP.")
    var plainRTP = false
    @Flag(help: "Skip voice processing (echo canceller, noise suppression) on the sender.")
    var noVoiceProcessing = false
    @Flag(
        inversion: .prefixedNo,
        help: "Run the transient suppressor (handling knocks while the far end plays) on the sender, as a call does.")
    var transientSuppression = true
    @Option(
        help: ArgumentHelp(
            "Write every datagram as it arrives (RTP at the receiver, RTCP back at the sender; SRTP as sent) into this "
                + "pcapng file, in simulated time.", valueName: "file.pcapng"))
    var capture: String?
    @Option(
        help: ArgumentHelp(
            "Also write what the ideal receiver plays (perfect timing, the same packets: FEC from the next packet, else "
                + "PLC) at the input's rate; reference of the spectral distance in the summary.", valueName: "file.wav")
    )
    var idealOut: String?

    /// Valid ranges: beyond 1 s of jitter or 5 s of delay the jitter buffer (at most 1 s) only conceals.
    static let lossRange = OptionRange("--loss", 0...100, "%")
    static let jitterRange = OptionRange("--jitter", 0...1_000, "ms")
    static let delayRange = OptionRange("--delay", 0...5_000, "ms")
    static let driftRange = OptionRange("--drift", -10_000...10_000, "ppm")
    static let bitrateRange = OptionRange("--bitrate", 6_000...510_000, "bits per second")
    static let initialExpectedLossRange = OptionRange("--initial-expected-loss", 0...100, "%")
    static let initialFECBitrateIncreaseRange = OptionRange("--initial-fec-bitrate-increase", 0...100, "%")
    static let lookAheadReleaseRange = OptionRange("--look-ahead-release", 0...600_000, "ms")

    static let codecs: [String: AudioCodec] = ["opus": .opus, "g722": .g722, "pcmu": .pcmu, "pcma": .pcma]

    func validate() throws {
        try Self.lossRange.check(loss)
        try Self.jitterRange.check(jitter)
        try Self.delayRange.check(delay)
        try Self.driftRange.check(drift)
        try Self.bitrateRange.check(bitrate)
        try Self.initialExpectedLossRange.check(Double(initialExpectedLoss))
        try Self.initialFECBitrateIncreaseRange.check(Double(initialFECBitrateIncrease))
        try Self.lookAheadReleaseRange.check(lookAheadRelease)
        guard OpusFrameDuration(rawValue: ptime) != nil else {
            throw ValidationError("--ptime \(ptime): use 10, 20, 40 or 60")
        }
        guard Self.codecs[codec] != nil else {
            throw ValidationError("--codec \(codec): use opus, g722, pcmu or pcma")
        }
        guard ["adaptive", "speexdsp"].contains(jitterBuffer) else {
            throw ValidationError("--jitter-buffer \(jitterBuffer): use adaptive or speexdsp")
        }
    }

    func run() throws {
        try OutputPaths.checkFile(out, option: "--out")
        try OutputPaths.checkFile(report, option: "--report")
        try OutputPaths.checkFile(writeTrace, option: "--write-trace")
        try OutputPaths.checkFile(capture, option: "--capture")
        let file: WAVFile
        do { file = try WAVFile.read(path: input) } catch { throw CommandFailure.badWAV(input, error) }
        guard file.format.channels == 1 else {
            throw CommandFailure.dataError("\(input): \(file.format) — the input must be mono")
        }
        let rate = file.format.sampleRate
        guard OneWaySimulation.supportedRates.contains(rate), rate % 100 == 0 else {
            throw CommandFailure.dataError(
                "\(input): \(rate) Hz is not supported; use a rate from 8000 to 48000 Hz (a multiple of 100)"
            )
        }
        var adaptive = AdaptiveJitterBuffer.Configuration()
        adaptive.fecLookAhead.calmReleaseMilliseconds = lookAheadRelease
        let strategy: MediaStreamJitterBuffer = jitterBuffer == "speexdsp" ? .speexdsp : .adaptive(adaptive)
        let network: CallNetwork
        if let trace {
            do { network = .trace(try NetworkTrace(contentsOf: URL(fileURLWithPath: trace))) } catch {
                // An unreadable file's message names it already; a parse error names only the line.
                if case .unreadableTrace = error { throw CommandFailure.dataError(error.description) }
                throw CommandFailure.dataError("\(trace): \(error)")
            }
        } else {
            let p = loss / 100
            let lossModel: LossModel
            if p == 0 {
                lossModel = .none
            } else if burst && p < 1 {
                let badToGood = 1.0 / 3
                lossModel = .gilbertElliott(
                    goodToBad: min(1, p * badToGood / (1 - p)), badToGood: badToGood)
            } else {
                lossModel = .bernoulli(probability: p)
            }
            network = .conditions(
                NetworkConditions(
                    baseDelayMilliseconds: delay,
                    jitter: jitter > 0
                        ? .normal(meanMilliseconds: jitter, standardDeviationMilliseconds: jitter) : .none,
                    loss: lossModel, senderClockSkewPPM: drift, seed: seed))
        }
        var opus = MediaStreamConfiguration.defaultOpus
        opus.bitrate = bitrate
        opus.frameDuration = OpusFrameDuration(rawValue: ptime) ?? .ms20
        opus.inbandFEC = true  // B's fmtp asks for it: FEC from the first packet (LossAdaptationPolicy)
        var options = OneWaySimulation.Options(
            network: network, srtpSuite: plainRTP ? nil : .aesCM128HmacSHA1_80,
            voiceProcessing: !noVoiceProcessing,
            jitterBuffer: strategy, opus: opus, seed: seed, capturePath: capture,
            // The ideal receiver decodes Opus (its FEC is what it measures against).
            scoresAgainstIdealReceiver: codec == "opus", codec: Self.codecs[codec] ?? .opus,
            lossAdaptation: LossAdaptationPolicy(
                initialExpectedLossPercent: initialExpectedLoss,
                initialFECBitrateIncreasePercent: initialFECBitrateIncrease))
        options.transientSuppression = transientSuppression
        let result: OneWaySimulation.Result
        do {
            result = try OneWaySimulation.run(
                input: file.int16Samples, sampleRate: rate, options: options)
        } catch let error as PcapError {
            throw CommandFailure.runtime("--capture: \(error)")
        } catch {
            throw CommandFailure.runtime("\(error)")
        }
        do {
            try WAVFile.write(pcm16: result.output, format: AudioFormat(sampleRate: rate), to: out)
        } catch {
            throw CommandFailure.runtime(error.description)
        }
        if let idealOut, let ideal = result.ideal {
            do {
                try WAVFile.write(pcm16: ideal.output, format: AudioFormat(sampleRate: rate), to: idealOut)
            } catch {
                throw CommandFailure.usage("\(idealOut): \(error)")
            }
        }
        if let writeTrace {
            try result.trace.csv.write(toFile: writeTrace, atomically: true, encoding: .utf8)
        }
        var r = result.receiverReport
        if let ideal = result.ideal, let distance = result.distanceToIdeal {
            var listening = CallReport.Listening()
            listening.distanceToIdealDecibels = distance.decibels
            listening.idealFECRecoveredFrames = ideal.fecRecoveredFrames
            listening.idealConcealedFrames = ideal.concealedFrames
            r.listening = listening
        }
        if let report { try r.jsonData().write(to: URL(fileURLWithPath: report)) }
        print(Self.summary(r, sender: result.senderReport))
        print(
            "wrote \(out)" + (report.map { ", \($0)" } ?? "") + (writeTrace.map { ", \($0)" } ?? "")
                + (capture.map { ", \($0)" } ?? "") + (idealOut.map { ", \($0)" } ?? ""))
    }

    static func summary(_ r: CallReport, sender: CallReport? = nil) -> String {
        func f(_ x: Double?, _ digits: Int = 1) -> String {
            x.map { String(format: "%.\(digits)f", $0) } ?? "-"
        }
        var lines = [
            "packets: expected \(r.rtp.expected), received \(r.rtp.received), lost \(r.rtp.lost) (\(f(r.rtp.lossPercent)) %), late \(r.jitterBuffer.latePackets), dropped \(r.drops.total)",
            "jitter (RFC 3550): \(f(r.jitter.interarrivalMilliseconds)) ms; buffer delay mean \(f(r.jitterBuffer.meanDelayMilliseconds)) ms, target \(f(r.jitterBuffer.targetDelayMilliseconds)) ms",
            "concealment: \(f(r.jitterBuffer.concealmentRatio * 100, 2)) % of samples; FEC recovered \(r.fec.recoveredFrames) frames; time-stretched \(f(r.jitterBuffer.stretchedSamplesPerMinute, 0)) samples/min",
            "E-model: R \(f(r.quality.rFactor)), MOS \(f(r.quality.mos, 2)) (one-way \(f(r.quality.oneWayDelayMilliseconds)) ms, residual loss \(f(r.quality.packetLossPercent, 2)) %, BurstR \(f(r.quality.burstRatio, 2)))"
        ]
        if let l = r.listening {
            lines.append(
                "listening: spectral distance to the ideal receiver \(f(l.distanceToIdealDecibels, 2)) dB (ideal: \(l.idealFECRecoveredFrames) frames from FEC, \(l.idealConcealedFrames) concealed)"
            )
        }
        if let s = sender {
            lines.append(
                "sender: RTT \(f(s.rtt.meanMilliseconds)) ms, FEC \(s.fec.encoderFECEnabled ? "on" : "off") (expected loss \(s.fec.encoderExpectedLossPercent) %), RTCP sent \(s.rtcp.sent)"
            )
        }
        return lines.joined(separator: "\n")
    }
}
