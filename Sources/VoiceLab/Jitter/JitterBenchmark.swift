import VoiceEngine
import Foundation
import VoiceCore
import VoiceDSP
import VoiceNetSim

/// The jitter-buffer comparison as a library, so `voice-bench jitter` and the tests run the very same
/// thing: Opus-encoded speech through the seeded network simulator into the adaptive buffer and the speexdsp
/// buffer on identical input, and per scenario and strategy the figures that say how good a jitter buffer is.
///
/// Definitions (identical for both strategies):
/// - *delay*: end-to-end, play time − send time of the audio being played (``JitterSimulation/Result``), over
///   ticks that play received audio. A fixed playout delay D gives exactly D, so it compares with the oracle.
/// - *late loss*: packets that arrived after their playout time (dropped, or played only after playout had
///   concealed in place waiting for them; see ``JitterBufferStatistics/latePackets``) ÷ packets received.
/// - *oracle floor*: on the same trace, the smallest fixed playout delay with no more late packets than the
///   strategy had (``NetworkTrace/oracleDelayMilliseconds(latePackets:)``), computed per strategy.
public enum JitterBenchmark {
    /// The bound on the adaptive buffer's mean delay, as a multiple of its oracle floor.
    public static let oracleFactor = 1.25

    /// A named network condition (or recorded trace) and how much speech to send through it.
    public struct Scenario: Sendable {
        public var name: String
        public var network: JitterSimulation.Network
        public var seconds: Double

        public init(name: String, network: JitterSimulation.Network, seconds: Double = 30) {
            self.name = name
            self.network = network
            self.seconds = seconds
        }
    }

    /// One strategy's figures on one scenario.
    public struct StrategyResult: Sendable {
        public var meanDelayMilliseconds: Double
        public var p95DelayMilliseconds: Double
        public var latePackets: Int
        public var receivedPackets: Int
        /// Late packets ÷ received packets, in percent.
        public var lateLossPercent: Double
        /// Concealed samples ÷ played samples, in percent.
        public var concealmentPercent: Double
        public var fecRecoveredFrames: Int
        /// What a listener hears, against the ideal receiver on the same packets (``SpectralDistance``, dB; lower
        /// is better, 0 is the ideal receiver itself).
        public var distanceToIdeal: SpectralDistance
        /// Samples time-stretched (accelerated plus slowed down) per minute of playout.
        public var stretchedSamplesPerMinute: Double
        /// The fixed playout delay that reaches this strategy's late loss on this trace (ms).
        public var oracleMilliseconds: Double
        /// The whole simulation, for deeper checks (timeline, operations, statistics).
        public var simulation: JitterSimulation.Result

        /// Mean delay ÷ oracle floor.
        public var oracleRatio: Double {
            oracleMilliseconds > 0 ? meanDelayMilliseconds / oracleMilliseconds : .infinity
        }

        init(_ r: JitterSimulation.Result, ideal: [Int16]) {
            let s = r.statistics
            distanceToIdeal = SpectralDistance.measure(reference: ideal, degraded: r.output, sampleRate: 16_000)
            let minutes = Double(max(1, s.playedSamples)) / 16_000 / 60
            stretchedSamplesPerMinute = Double(s.acceleratedSamples + s.slowedDownSamples) / minutes
            meanDelayMilliseconds = r.meanEndToEndDelayMilliseconds
            p95DelayMilliseconds = r.p95EndToEndDelayMilliseconds
            latePackets = s.latePackets
            receivedPackets = s.packetsReceived
            lateLossPercent = s.lateLossRate * 100
            concealmentPercent = s.concealmentRatio * 100
            fecRecoveredFrames = s.fecRecoveredFrames
            oracleMilliseconds = r.trace.oracleDelayMilliseconds(latePackets: s.latePackets) ?? 0
            simulation = r
        }
    }

    /// Both strategies on one scenario.
    public struct ScenarioResult: Sendable {
        public var name: String
        public var adaptive: StrategyResult
        public var speex: StrategyResult
        /// The ideal receiver on the same packets (``IdealReceiver``): the reference of both distances.
        public var ideal: IdealReceiver.Result

        /// The criterion for this scenario: the adaptive buffer's mean delay is ≤ `oracleFactor` × its
        /// oracle floor, and no worse than speexdsp's while its late loss is equal or lower. Strict: no tolerance on
        /// either figure.
        public func adaptiveMeetsCriteria(oracleFactor: Double = JitterBenchmark.oracleFactor) -> Bool {
            adaptive.meanDelayMilliseconds <= oracleFactor * adaptive.oracleMilliseconds
                && adaptive.latePackets <= speex.latePackets
                && adaptive.meanDelayMilliseconds <= speex.meanDelayMilliseconds
        }

        /// Whether speexdsp is better on one figure and no worse on the other: fewer or equally many late packets
        /// *and* a lower mean delay, or strictly fewer late packets at no more delay. The weaker reading of the
        /// comparison ("no worse than speexdsp wherever speexdsp has equal or lower late loss") fails
        /// exactly when this is true.
        public var speexDominatesAdaptive: Bool {
            (speex.latePackets <= adaptive.latePackets && speex.meanDelayMilliseconds < adaptive.meanDelayMilliseconds)
                || (speex.latePackets < adaptive.latePackets
                    && speex.meanDelayMilliseconds <= adaptive.meanDelayMilliseconds)
        }
    }

    /// The standard scenarios, seeded: clean; 2 % random loss + 20 ms normal jitter; 5 % bursty loss + 40 ms Pareto
    /// jitter; a 3 s outage then recovery; ±200 ppm sender drift; a delay step 20 → 150 → 20 ms. Base one-way
    /// delay 30 ms (20 ms for the step); the path is FIFO (jitter delays the packets behind, as a queue does).
    ///
    /// `seedOffset` moves every seed: other draws of the same network models, to see how much a figure owes to one
    /// trace. `clean` and `step20_150_20` draw nothing at random, so they do not change.
    public static func standardScenarios(seconds: Double = 30, seedOffset: UInt64 = 0) -> [Scenario] {
        let calm = JitterModel.normal(meanMilliseconds: 0, standardDeviationMilliseconds: 5)
        let list: [(String, NetworkConditions)] = [
            ("clean", NetworkConditions(baseDelayMilliseconds: 30, seed: 1)),
            (
                "loss2_normal20",
                NetworkConditions(
                    baseDelayMilliseconds: 30, jitter: .normal(meanMilliseconds: 0, standardDeviationMilliseconds: 20),
                    loss: .bernoulli(probability: 0.02), seed: 2)
            ),
            (
                "burst5_pareto40",
                NetworkConditions(
                    baseDelayMilliseconds: 30, jitter: .pareto(scaleMilliseconds: 40, shape: 2.5),
                    loss: .gilbertElliott(goodToBad: 0.0125, badToGood: 0.25), seed: 3)
            ),
            (
                "outage3s",
                NetworkConditions(
                    baseDelayMilliseconds: 30, jitter: calm,
                    outages: [Outage(start: .seconds(10), duration: .seconds(3))],
                    seed: 4)
            ),
            (
                "drift+200ppm",
                NetworkConditions(baseDelayMilliseconds: 30, jitter: calm, senderClockSkewPPM: 200, seed: 5)
            ),
            (
                "drift-200ppm",
                NetworkConditions(baseDelayMilliseconds: 30, jitter: calm, senderClockSkewPPM: -200, seed: 6)
            ),
            (
                "step20_150_20",
                NetworkConditions(
                    baseDelayMilliseconds: 20,
                    phases: [
                        DelayPhase(start: .seconds(10), baseDelayMilliseconds: 150),
                        DelayPhase(start: .seconds(20), baseDelayMilliseconds: 20)
                    ], seed: 7)
            )
        ]
        return list.map { name, conditions in
            var moved = conditions
            moved.seed &+= seedOffset
            return Scenario(name: name, network: .conditions(moved), seconds: seconds)
        }
    }

    /// The conditions of the listening-quality table (Benchmarks/README.md section 7), each at `seed`: 40 ms base
    /// delay; random loss 0/5/10 % without jitter; the same with normal jitter of mean and deviation 30 ms (as
    /// `voice-engine simulate --jitter 30` draws it); Gilbert–Elliott bursts of mean length 3 at 5 and 10 %.
    /// `seconds` is the length of the speech sent (the whole speech set, not looped).
    public static func qualityScenarios(seconds: Double, seed: UInt64 = 1) -> [Scenario] {
        let jitter = JitterModel.normal(meanMilliseconds: 30, standardDeviationMilliseconds: 30)
        func bursty(_ p: Double) -> LossModel { .gilbertElliott(goodToBad: p / 3 / (1 - p), badToGood: 1.0 / 3) }
        let list: [(String, JitterModel, LossModel)] = [
            ("loss0", .none, .none), ("loss5", .none, .bernoulli(probability: 0.05)),
            ("loss10", .none, .bernoulli(probability: 0.10)), ("jitter30", jitter, .none),
            ("jitter30_loss5", jitter, .bernoulli(probability: 0.05)),
            ("jitter30_loss10", jitter, .bernoulli(probability: 0.10)),
            ("burst5", .none, bursty(0.05)), ("burst10", .none, bursty(0.10))
        ]
        return list.map { name, jitter, loss in
            Scenario(
                name: name,
                network: .conditions(
                    NetworkConditions(baseDelayMilliseconds: 40, jitter: jitter, loss: loss, seed: seed)),
                seconds: seconds)
        }
    }

    /// How the comparison with speexdsp holds up over several draws of each standard scenario (see
    /// ``standardScenarios(seconds:seedOffset:)``), per scenario name.
    public struct SeedSweepRow: Sendable {
        public var name: String
        public var draws = 0
        /// Draws meeting ``ScenarioResult/adaptiveMeetsCriteria(oracleFactor:)``: within 1.25 × the oracle floor,
        /// no more late packets than speexdsp and no more delay.
        public var meetsCriteria = 0
        /// Draws within 1.25 × the oracle floor where speexdsp does not dominate (``ScenarioResult/speexDominatesAdaptive``).
        public var notDominated = 0
        /// Sums of mean delay ÷ oracle floor at the strategy's own late loss: how close each gets to the best fixed
        /// delay for the late loss it chose, whatever that late loss is.
        public var adaptiveOracleRatioSum = 0.0
        public var speexOracleRatioSum = 0.0

        mutating func add(_ r: ScenarioResult) {
            draws += 1
            if r.adaptiveMeetsCriteria() { meetsCriteria += 1 }
            if r.adaptive.oracleRatio <= JitterBenchmark.oracleFactor && !r.speexDominatesAdaptive { notDominated += 1 }
            adaptiveOracleRatioSum += r.adaptive.oracleRatio
            speexOracleRatioSum += r.speex.oracleRatio
        }
    }

    /// Folds the results of several draws into one row per scenario, in first-seen order.
    public static func seedSweep(_ draws: [[ScenarioResult]]) -> [SeedSweepRow] {
        var rows: [SeedSweepRow] = []
        for results in draws {
            for r in results {
                if let i = rows.firstIndex(where: { $0.name == r.name }) {
                    rows[i].add(r)
                } else {
                    var row = SeedSweepRow(name: r.name)
                    row.add(r)
                    rows.append(row)
                }
            }
        }
        return rows
    }

    /// A fixed-width table of ``seedSweep(_:)``.
    public static func seedSweepTable(_ rows: [SeedSweepRow]) -> String {
        var lines = [
            "scenario".padding(toLength: 17, withPad: " ", startingAt: 0) + "draws".leftPadded(6)
                + "meets".leftPadded(7)
                + "not dominated".leftPadded(15) + "mean/oracle adaptive".leftPadded(22) + "speex".leftPadded(7)
        ]
        for row in rows {
            let n = Double(max(1, row.draws))
            lines.append(
                row.name.padding(toLength: 17, withPad: " ", startingAt: 0) + String(row.draws).leftPadded(6)
                    + String(row.meetsCriteria).leftPadded(7) + String(row.notDominated).leftPadded(15)
                    + fixed(row.adaptiveOracleRatioSum / n, 2).leftPadded(22)
                    + fixed(row.speexOracleRatioSum / n, 2).leftPadded(7))
        }
        return lines.joined(separator: "\n")
    }

    /// A scenario replaying a recorded trace: as many 20 ms frames as the trace has rows.
    public static func traceScenario(_ trace: NetworkTrace, name: String = "trace") -> Scenario {
        Scenario(name: name, network: .trace(trace), seconds: Double(trace.records.count) * 0.02)
    }

    /// Where the speech came from.
    public struct Speech: Sendable {
        /// 16 kHz mono PCM.
        public var samples: [Int16]
        public var source: String
        /// Why a fallback was used, if one was.
        public var note: String?
    }

    /// Loads real speech for the benchmark: the first readable 16 kHz mono WAV among `candidates` (recordings
    /// outside the repository, e.g. `shared/testdata/speech/jfk_16k_mono.wav` beside the clone), else `fallback` (the project's own
    /// speech-like test vector) with a note saying so.
    /// - Throws: `WAVError` when the fallback cannot be read, `JitterBenchmark.SpeechError` when it is not 16 kHz
    ///   mono.
    public static func loadSpeech(candidates: [String], fallback: String) throws -> Speech {
        var skipped: [String] = []
        for path in candidates {
            guard FileManager.default.fileExists(atPath: path) else {
                skipped.append("\(path) absent")
                continue
            }
            do {
                let wav = try WAVFile(contentsOfFile: path)
                guard wav.format.sampleRate == 16_000, wav.format.channels == 1 else {
                    skipped.append("\(path) is not 16 kHz mono")
                    continue
                }
                return Speech(samples: wav.int16Samples, source: path, note: nil)
            } catch {
                skipped.append("\(path): \(error)")
            }
        }
        let wav = try WAVFile(contentsOfFile: fallback)
        guard wav.format.sampleRate == 16_000, wav.format.channels == 1 else {
            throw SpeechError(path: fallback, reason: "must be 16 kHz mono, is \(wav.format)")
        }
        let note = "real speech not found (\(skipped.joined(separator: "; "))): using the speech-like test vector"
        return Speech(samples: wav.int16Samples, source: fallback, note: note)
    }

    /// The shared real-speech recordings, in this order, for the quality figures: together 65 s of several
    /// talkers (the jitter figures loop one clip; the quality figures need more than one voice and at least a
    /// minute). File names are relative to a `speech/` folder.
    public static let speechSetFiles = [
        "jfk_16k_mono.wav", "mediastreamer2_hello_16k.wav", "pjsip_input_16k.wav", "pystoi_clean_16k.wav",
        "webrtcvad_leaktest_8k.wav", "mediastreamer2_silence_voice_16k.wav"
    ]

    /// The shared noisy real-speech recordings (a `speech-noisy/` folder; its README names the sources): a hissy old
    /// recording, two real devices' microphones with a talker in the room's noise, and speech over a recorded café
    /// background at 10 dB SNR, together 43 s. Noisy input is where the codec spends its bits on the noise and
    /// concealment has a background to continue.
    public static let noisySpeechSetFiles = [
        "jfk_16k_mono.wav", "device1_nearend_16k.wav", "device2_doubletalk_16k.wav", "cafe_mix_16k.wav"
    ]

    /// Every file of `files` under `directory` that can be read, mono, joined end to end at 16 kHz (8 kHz clips
    /// resampled), or nil when none is there.
    /// - Throws: `ResamplerError` when the resampler cannot be made.
    public static func loadSpeechSet(directory: String, files: [String] = speechSetFiles) throws -> Speech? {
        var samples: [Int16] = []
        var used: [String] = []
        for name in files {
            let path = "\(directory)/\(name)"
            guard FileManager.default.fileExists(atPath: path), let wav = try? WAVFile(contentsOfFile: path),
                wav.format.channels == 1
            else { continue }
            samples += try IdealReceiver.resampled(wav.int16Samples, from: wav.format.sampleRate, to: 16_000)
            used.append(name)
        }
        guard !samples.isEmpty else { return nil }
        return Speech(samples: samples, source: "\(directory) (\(used.joined(separator: ", ")))", note: nil)
    }

    /// The benchmark's speech input is not 16 kHz mono.
    public struct SpeechError: Error, Sendable, CustomStringConvertible {
        public var path: String
        public var reason: String
        public var description: String { "\(path): \(reason)" }
    }

    /// `speech` repeated (or cut) to `seconds`.
    public static func looped(_ speech: [Int16], seconds: Double, sampleRate: Int = 16_000) -> [Int16] {
        precondition(!speech.isEmpty, "no speech to loop")
        let count = Int(seconds * Double(sampleRate))
        var out = [Int16]()
        out.reserveCapacity(count)
        while out.count < count { out += speech.prefix(count - out.count) }
        return out
    }

    /// Runs one scenario through both strategies on identical input (same encoded packets, same fates).
    /// - Parameters:
    ///   - speech: 16 kHz mono PCM; looped to the scenario's length.
    ///   - adaptiveConfiguration: lets tests and tuning try other settings.
    /// - Throws: `OpusError` from the codec, `NetworkSimulatorError` from invalid conditions.
    public static func run(
        _ scenario: Scenario, speech: [Int16],
        adaptiveConfiguration: AdaptiveJitterBuffer.Configuration = .init()
    ) throws -> ScenarioResult {
        let input = looped(speech, seconds: scenario.seconds)
        let configuration = JitterSimulation.Configuration(network: scenario.network)
        let adaptive = try JitterSimulation.run(
            input: input, configuration: configuration,
            strategy: AdaptiveJitterBuffer(configuration: adaptiveConfiguration))
        // Same input, same seeded conditions: the simulator is deterministic, so both see the same fates.
        let speex = try JitterSimulation.run(input: input, configuration: configuration, strategy: SpeexJitterBuffer())
        let enc = configuration.encoder
        let ideal = try IdealReceiver.render(
            frames: adaptive.sentFrames, frameSamples: enc.samplesPerChannelPerFrame, sampleRate: enc.sampleRate)
        return ScenarioResult(
            name: scenario.name, adaptive: StrategyResult(adaptive, ideal: ideal.output),
            speex: StrategyResult(speex, ideal: ideal.output), ideal: ideal)
    }

    /// A fixed-width table, one line per scenario and strategy.
    public static func table(_ results: [ScenarioResult]) -> String {
        func pad(_ s: String, _ w: Int) -> String { s.leftPadded(w) }
        var lines = [
            "scenario".padding(toLength: 17, withPad: " ", startingAt: 0)
                + "strategy".padding(toLength: 9, withPad: " ", startingAt: 0)
                + pad("mean ms", 9) + pad("p95 ms", 8) + pad("late %", 8) + pad("conceal %", 10) + pad("FEC", 5)
                + pad("oracle ms", 10) + pad("mean/oracle", 12) + pad("stretch/min", 12) + pad("dist dB", 8)
        ]
        for r in results {
            for (name, s) in [("adaptive", r.adaptive), ("speex", r.speex)] {
                lines.append(
                    r.name.padding(toLength: 17, withPad: " ", startingAt: 0)
                        + name.padding(toLength: 9, withPad: " ", startingAt: 0)
                        + pad(fixed(s.meanDelayMilliseconds, 1), 9) + pad(fixed(s.p95DelayMilliseconds, 1), 8)
                        + pad(fixed(s.lateLossPercent, 2), 8) + pad(fixed(s.concealmentPercent, 2), 10)
                        + pad(String(s.fecRecoveredFrames), 5) + pad(fixed(s.oracleMilliseconds, 1), 10)
                        + pad(fixed(s.oracleRatio, 2), 12) + pad(String(Int(s.stretchedSamplesPerMinute.rounded())), 12)
                        + pad(fixed(s.distanceToIdeal.decibels, 2), 8))
            }
        }
        return lines.joined(separator: "\n")
    }

    /// The one-line JSON `voice-bench jitter --json` ends with:
    /// `{"suite":"jitter","scenarios":[{"name":…,"oracle_ms":…,"strategies":{"adaptive":{"mean_delay_ms":…,
    /// "p95_delay_ms":…,"late_loss_pct":…,"concealment_pct":…,"fec_recovered":…},"speex":{…}}}]}`.
    /// The scenario's `oracle_ms` is the floor at the adaptive buffer's late loss (the one the acceptance
    /// criterion uses); the table shows each strategy's own.
    public static func json(_ results: [ScenarioResult]) -> String {
        func strategy(_ s: StrategyResult) -> String {
            "{\"mean_delay_ms\":\(fixed(s.meanDelayMilliseconds, 2)),\"p95_delay_ms\":\(fixed(s.p95DelayMilliseconds, 2)),"
                + "\"late_loss_pct\":\(fixed(s.lateLossPercent, 3)),\"concealment_pct\":\(fixed(s.concealmentPercent, 3)),"
                + "\"fec_recovered\":\(s.fecRecoveredFrames),\"stretched_per_min\":\(fixed(s.stretchedSamplesPerMinute, 0)),"
                + "\"distance_to_ideal_db\":\(fixed(s.distanceToIdeal.decibels, 3))}"
        }
        let items = results.map { r in
            "{\"name\":\(quoted(r.name)),\"oracle_ms\":\(fixed(r.adaptive.oracleMilliseconds, 2)),"
                + "\"strategies\":{\"adaptive\":\(strategy(r.adaptive)),\"speex\":\(strategy(r.speex))}}"
        }
        return "{\"suite\":\"jitter\",\"scenarios\":[\(items.joined(separator: ","))]}"
    }

    private static func fixed(_ value: Double, _ decimals: Int) -> String {
        guard value.isFinite else { return "null" }
        return String(format: "%.\(decimals)f", value)
    }

    private static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? " " + self : String(repeating: " ", count: width - count) + self
    }
}
