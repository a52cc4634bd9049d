import ArgumentParser
import Foundation
import VoiceEngine
import VoiceLab

/// `voice-engine aec`: runs a far-end / microphone recording pair through the echo canceller exactly as a live
/// call does, writes the processed microphone and reports ERLE, the delay track and the drift.
struct AECCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "aec",
        abstract: "Echo-cancel MIC.wav against FAR.wav (what was played) and report ERLE, delay and drift.")

    @Option(help: "The far-end reference: what was played through the loudspeaker (mono WAV).")
    var far: String
    @Option(help: "The microphone recording (mono WAV, 8, 16, 32 or 48 kHz).")
    var mic: String
    @Option(help: "Where to write the processed microphone (16-bit WAV at the microphone's rate).")
    var out: String
    @Option(help: "Write a JSON report here.")
    var report: String?
    @Option(
        help:
            "Optional clean near-end talker (aligned with MIC) to exclude double talk from ERLE and measure near-end preservation."
    )
    var near: String?
    @Option(help: "Echo tail after alignment, ms.")
    var tailMs: Int = EchoCancellerConfiguration().tailMilliseconds
    @Option(help: "ERLE is also reported from this many seconds on (steady state).")
    var steadyStateFrom: Double = 10
    @Option(
        help:
            "Far-end single talk ends here, seconds (a double-talk recording's near talker enters): the residual over the background is measured before it."
    )
    var singleTalkUntil: Double?
    @Option(help: "Start of a stretch with both ends silent, seconds: the background (default: far-end pauses).")
    var backgroundFrom: Double?
    @Option(help: "End of that stretch, seconds.")
    var backgroundTo: Double?
    @Option(help: "AGC target in dBFS (off when not given).")
    var agc: Double?
    @Option(help: "Noise suppression in dB (negative); 0 switches it off.")
    var noiseSuppression: Int = -15
    @Flag(help: "Disable delay alignment and drift compensation (raw MDF with residual suppression).")
    var noAlignment = false
    @Flag(help: "Disable drift estimation and compensation.")
    var noDrift = false
    @Flag(help: "Disable the per-band residual-echo suppressor and the broadband residual-echo gain (stage bypass).")
    var noResidualSuppressor = false
    @Flag(help: "Disable the preprocessor's own residual-echo suppression (SPEEX_PREPROCESS_SET_ECHO_STATE).")
    var noEchoState = false
    @Flag(
        inversion: .prefixedNo,
        help:
            "Run the transient suppressor after the canceller (handling knocks while the far end plays), as a call does."
    )
    var transientSuppression = true

    func validate() throws {
        try OptionRange("--tail-ms", 10...1_000, "ms").check(tailMs)
        try OptionRange("--steady-state-from", 0...86_400, "seconds").check(steadyStateFrom)
        try OptionRange("--agc", -60...0, "dBFS").check(agc)
        try OptionRange("--single-talk-until", 0...86_400, "seconds").check(singleTalkUntil)
        try OptionRange("--background-from", 0...86_400, "seconds").check(backgroundFrom)
        try OptionRange("--background-to", 0...86_400, "seconds").check(backgroundTo)
        guard (backgroundFrom == nil) == (backgroundTo == nil) else {
            throw ValidationError("--background-from and --background-to go together")
        }
        if let from = backgroundFrom, let to = backgroundTo, to <= from {
            throw ValidationError("--background-to (\(to) s) must be after --background-from (\(from) s)")
        }
        try OptionRange("--noise-suppression", -100...0, "dB").check(noiseSuppression)
    }

    func run() throws {
        try OutputPaths.checkFile(out, option: "--out")
        try OutputPaths.checkFile(report, option: "--report")
        let farFile: WAVFile
        let micFile: WAVFile
        do { farFile = try WAVFile.read(path: far) } catch { throw CommandFailure.badWAV(far, error) }
        do { micFile = try WAVFile.read(path: mic) } catch { throw CommandFailure.badWAV(mic, error) }
        guard farFile.format.channels == 1 else {
            throw CommandFailure.dataError("\(far): \(farFile.format) — the far end must be mono")
        }
        guard micFile.format.channels == 1 else {
            throw CommandFailure.dataError("\(mic): \(micFile.format) — the microphone must be mono")
        }
        let rate = micFile.format.sampleRate
        guard SpeexDSPError.supportedRates.contains(rate) else {
            throw CommandFailure.dataError(
                "\(mic): \(rate) Hz is not a processing rate; use 8000, 16000, 32000 or 48000 Hz")
        }
        var farSamples = farFile.int16Samples
        var notes: [String] = []
        if farFile.format.sampleRate != rate {
            farSamples = try Self.resample(farSamples, from: farFile.format.sampleRate, to: rate)
            notes.append("far end resampled from \(farFile.format.sampleRate) Hz to the microphone's \(rate) Hz")
        }
        var micSamples = micFile.int16Samples
        var nearSamples: [Int16]?
        if let near {
            let nearFile: WAVFile
            do { nearFile = try WAVFile.read(path: near) } catch { throw CommandFailure.badWAV(near, error) }
            guard nearFile.format == micFile.format else {
                throw CommandFailure.dataError(
                    "\(near): \(nearFile.format) — must match the microphone (\(micFile.format))")
            }
            nearSamples = nearFile.int16Samples
        }
        let common = min(farSamples.count, micSamples.count, nearSamples?.count ?? .max)
        if farSamples.count != micSamples.count || (nearSamples.map { $0.count != common } ?? false) {
            notes.append(
                "inputs differ in length (far \(farSamples.count), mic \(micSamples.count) samples); processing the common \(common) samples (\(String(format: "%.2f", Double(common) / Double(rate))) s)"
            )
        }
        // The canceller works in whole 10 ms blocks: the last partial block is completed with silence so that its
        // samples are processed too rather than written as zeros, and the output is cut back to `common`.
        let padded = (common + rate / 100 - 1) / (rate / 100) * (rate / 100)
        func cut(_ x: [Int16]) -> [Int16] { Array(x.prefix(common)) + [Int16](repeating: 0, count: padded - common) }
        farSamples = cut(farSamples)
        micSamples = cut(micSamples)
        nearSamples = nearSamples.map(cut)
        for note in notes { print("note: \(note)") }

        var configuration = EchoCancellerConfiguration(sampleRate: rate, tailMilliseconds: tailMs)
        configuration.preprocessor.noiseSuppressionDB = noiseSuppression == 0 ? nil : noiseSuppression
        configuration.preprocessor.agcTargetDBFS = agc
        if noDrift { configuration.stages.remove(.driftCompensation) }
        if noResidualSuppressor {
            configuration.residualEchoSuppressorFloorDB = nil
            configuration.residualEchoGainFloorDB = nil
        }
        if noEchoState { configuration.stages.remove(.preprocessorEchoSuppression) }
        if noAlignment { configuration.stages.subtract([.delayAlignment, .driftCompensation]) }
        let run = try AECRunner.runEngine(
            far: farSamples, mic: micSamples, configuration: configuration,
            transientSuppression: transientSuppression ? TransientSuppressorConfiguration() : nil)
        let raw = try AECRunner.runRawMDF(
            far: farSamples, mic: micSamples, sampleRate: rate, tailMilliseconds: AECBenchmark.rawTailMilliseconds)
        do { try WAVFile.write(pcm16: Array(run.output.prefix(common)), format: micFile.format, to: out) } catch {
            throw CommandFailure.runtime(error.description)
        }

        let n = rate / 100
        let mask = AECRunner.singleTalkBlocks(
            referenceMeanSquare: run.referenceMeanSquare, near: nearSamples, blockSize: n)
        let from = Int(steadyStateFrom * 100)
        let erleAll = AECRunner.erle(mic: micSamples, output: run.output, blocks: mask, blockSize: n)
        let erleSteady = AECRunner.erle(
            mic: micSamples, output: run.output, blocks: mask, blockSize: n, fromBlock: from)
        let rawAll = AECRunner.erle(mic: micSamples, output: raw.output, blocks: mask, blockSize: n)
        let rawSteady = AECRunner.erle(mic: micSamples, output: raw.output, blocks: mask, blockSize: n, fromBlock: from)
        let perSecond: [Double?] = stride(from: 0, to: mask.count, by: 100).map {
            AECRunner.erle(
                mic: micSamples, output: run.output, blocks: mask, blockSize: n, fromBlock: $0, toBlock: $0 + 100)
        }
        // The first 2 s of far-end speech (from the first single-talk block): what a user hears while it converges.
        let onset = mask.firstIndex(of: true) ?? mask.count
        let erleFirst2s = AECRunner.erle(
            mic: micSamples, output: run.output, blocks: mask, blockSize: n, fromBlock: onset, toBlock: onset + 200)
        func blocks(from: Int, to: Int = .max) -> Int {
            mask.indices.filter { $0 >= from && $0 < to && mask[$0] }.count
        }
        let stats = run.statistics
        func f(_ v: Double?) -> String { v.map { String(format: "%.1f", $0) } ?? "n/a" }
        let until = singleTalkUntil.map { Int($0 * 100) }
        let backgroundRange = backgroundFrom.flatMap { from in backgroundTo.map { Int(from * 100)..<Int($0 * 100) } }
        let residual = ResidualOverBackground.measure(
            mic: micSamples, output: run.output,
            farTalk: ResidualOverBackground.farTalkBlocks(far: farSamples, blockSize: n, singleTalkUntilBlock: until),
            background: ResidualOverBackground.backgroundBlocks(
                far: farSamples, blockSize: n, range: backgroundRange, singleTalkUntilBlock: until),
            blockSize: n)
        print("processed \(String(format: "%.2f", Double(common) / Double(rate))) s at \(rate) Hz -> \(out)")
        print(
            "single-talk regions: \(mask.filter { $0 }.count) of \(mask.count) blocks"
                + (nearSamples == nil ? " (far end active; no --near given, so double talk is not excluded)" : ""))
        print(
            "ERLE engine: \(f(erleAll)) dB overall (\(blocks(from: 0)) blocks), \(f(erleSteady)) dB from "
                + "\(steadyStateFrom) s (\(blocks(from: from)) blocks), \(f(erleFirst2s)) dB in the first 2 s of far-end "
                + "speech from \(f(Double(onset) / 100)) s (\(blocks(from: onset, to: onset + 200)) blocks)")
        print(
            "ERLE raw speex MDF (no alignment): \(f(rawAll)) dB overall, \(f(rawSteady)) dB from \(steadyStateFrom) s")
        print(
            "delay: estimated \(f(stats.estimatedDelayMilliseconds)) ms, applied \(f(stats.appliedDelayMilliseconds)) ms, realignments \(stats.realignments)"
        )
        print("drift: estimated \(f(stats.estimatedDriftPPM)) ppm, compensated \(f(stats.compensatedDriftPPM)) ppm")
        if let residual {
            print(
                "residual over background: \(f(residual.residualOverBackgroundDB)) dB (output in far talk, "
                    + "\(residual.farTalkBlocks) blocks, against its background, \(residual.backgroundBlocks) blocks); floor "
                    + "under far talk \(f(residual.floorUnderFarTalkDB)) dB and background \(f(residual.backgroundAgainstMicrophoneDB)) dB "
                    + "against the microphone's noise floor; microphone echo-to-noise \(f(residual.echoToNoiseDB)) dB")
        } else {
            print(
                "residual over background: n/a (no far-talk blocks, or the far end never pauses for 300 ms: give "
                    + "--background-from/--background-to)")
        }
        var nearSNR: Double?
        var nearPESQ: Double?
        if let nearSamples {
            nearSNR = AECRunner.nearEndSegmentalSNR(near: nearSamples, output: run.output, sampleRate: rate)
            let frame = rate / 50
            let active = stride(from: 0, to: nearSamples.count - frame + 1, by: frame).filter { start in
                let sum = nearSamples[start..<start + frame].reduce(0.0) { $0 + Double($1) * Double($1) }
                return 10 * log10(max(sum / Double(frame), 1e-20) / (32768.0 * 32768.0)) > -40
            }.count
            print("near-end segmental SNR: \(f(nearSNR)) dB (\(active) near-end-active 20 ms frames)")
            if let near {
                let scored = NearEndPESQ.score(reference: near, degraded: out, sampleRate: rate)
                nearPESQ = scored.mos
                print(
                    "near-end PESQ-WB (P.862.2): " + (scored.mos.map { String(format: "%.2f", $0) } ?? "n/a")
                        + (scored.reason.map { " (\($0); the segmental SNR above stands in)" }
                            ?? " (whole file, \(f(Double(nearSamples.count) / Double(rate))) s)"))
            }
        }
        if let report {
            let body = Report(
                far: far, mic: mic, out: out, sampleRate: rate, processedSeconds: Double(common) / Double(rate),
                notes: notes, singleTalkBlocks: mask.filter { $0 }.count, nearEndGiven: nearSamples != nil,
                erleDB: erleAll, erleSteadyStateDB: erleSteady, steadyStateFromSeconds: steadyStateFrom,
                erleRawMDFDB: rawAll, erleRawMDFSteadyStateDB: rawSteady, erlePerSecondDB: perSecond,
                nearEndSegmentalSNRDB: nearSNR, nearEndPESQWB: nearPESQ, erleFirst2sDB: erleFirst2s,
                erleFirst2sBlocks: blocks(from: onset, to: onset + 200), estimatedDriftPPM: stats.estimatedDriftPPM,
                compensatedDriftPPM: stats.compensatedDriftPPM, realignments: stats.realignments,
                residualOverBackground: residual, track: run.track)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(body).write(to: URL(fileURLWithPath: report))
            print("report -> \(report)")
        }
    }

    struct Report: Encodable {
        var far, mic, out: String
        var sampleRate: Int
        var processedSeconds: Double
        var notes: [String]
        var singleTalkBlocks: Int
        var nearEndGiven: Bool
        var erleDB, erleSteadyStateDB: Double?
        var steadyStateFromSeconds: Double
        var erleRawMDFDB, erleRawMDFSteadyStateDB: Double?
        var erlePerSecondDB: [Double?]
        var nearEndSegmentalSNRDB: Double?
        var nearEndPESQWB: Double?
        var erleFirst2sDB: Double?
        var erleFirst2sBlocks: Int
        var estimatedDriftPPM: Double?
        var compensatedDriftPPM: Double
        var realignments: Int
        var residualOverBackground: ResidualOverBackground?
        var track: [AECRunner.TrackPoint]
    }

    static func resample(_ x: [Int16], from: Int, to: Int) throws -> [Int16] {
        let resampler = try Resampler(inputRate: from, outputRate: to)
        resampler.skipZeros()
        var out: [Int16] = []
        var buffer = [Int16](
            repeating: 0, count: resampler.maximumOutputCount(forInput: x.count) + resampler.outputLatency + 16)
        let produced = try x.withUnsafeBufferPointer { i in
            try buffer.withUnsafeMutableBufferPointer { try resampler.process(i, into: $0).produced }
        }
        out += buffer[0..<produced]
        let tail = try buffer.withUnsafeMutableBufferPointer { try resampler.drain(into: $0) }
        out += buffer[0..<tail]
        return out
    }
}
