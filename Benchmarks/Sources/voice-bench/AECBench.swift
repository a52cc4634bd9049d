import ArgumentParser
import Foundation
import VoiceEngine
import VoiceLab

/// `voice-bench aec`: echo-cancellation quality and cost per scenario, on the project's AEC test vectors
/// (`TestVectors/aec`, the files the manifest checks use).
///
/// For every vector it runs (a) raw speex MDF with no alignment, drift compensation or residual suppression
/// (tail ``AECBenchmark/rawTailMilliseconds``), (b) the engine's `EchoCanceller` exactly as a live call runs it, and
/// (c) WebRTC audio processing through GStreamer's `webrtcechoprobe` / `webrtcdsp` when installed
/// (``WebRTCEchoReference``: far and microphone in lockstep through one `audiointerleave` / `deinterleave`, so every
/// microphone block meets the far block of the same running time; deterministic, well under a second per vector;
/// `--no-webrtc` skips it, and every figure it cannot measure is `null` with the reason). All three outputs are
/// measured by the same ``AECRunner/erle(mic:output:blocks:blockSize:fromBlock:toBlock:)`` on the same far-end
/// single-talk blocks, each output first shifted by its own latency. It prints ERLE over the far-end single-talk
/// blocks of the second half (steady state), the engine's time to converge, near-end segmental
/// SNR against the clean near end in double talk, the drift estimate and µs per 10 ms block. This is a quality
/// bench, not a Swift-vs-C timing (`SideBySideSuite`): both cancellers call the same speexdsp MDF; the per-block
/// times show what alignment, drift tracking and the preprocessor add. Build in release for meaningful times.
struct AECBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "aec",
        abstract: "Echo-canceller ERLE per scenario: raw speex MDF vs the engine vs WebRTC (GStreamer webrtcdsp).")

    @Flag(help: "End the output with one JSON line: {\"suite\":\"aec\",\"scenarios\":[…]}.")
    var json = false

    @Option(help: "Folder holding the AEC manifest.json and WAV files (default: the repository's TestVectors/aec).")
    var directory: String?

    @Option(help: "Run only scenarios whose name contains this text.")
    var filter: String?

    @Flag(
        inversion: .prefixedNo,
        help: "Run WebRTC AEC through GStreamer webrtcdsp when installed (--no-webrtc: skip, figures null).")
    var webrtc = true

    @Option(help: "Steady state starts here, seconds into each vector.")
    var steadyStateFrom = 10.0

    @Option(
        help: ArgumentHelp(
            "Score the realistic set instead of the vectors: a folder written by Benchmarks/scripts/aec-realistic.py.",
            valueName: "dir"))
    var realistic: String?

    @Option(
        help: ArgumentHelp(
            "Score the AEC-Challenge recordings in this folder (echo_double_talk.wav, *_lpb.wav / *_mic.wav).",
            valueName: "dir"))
    var real: String?

    @Option(
        help: ArgumentHelp(
            "Score real-device far-end single talk: a folder with clips.json (the shared test data's aec-devices): "
                + "residual echo over the background and the background against the microphone's noise floor.",
            valueName: "dir"))
    var devices: String?

    @Option(
        help: ArgumentHelp(
            "Floor of the engine's per-band residual-echo suppressor in dB, or 'off' (default: the configuration's).",
            valueName: "dB"))
    var suppressorFloor: String?

    @Flag(inversion: .prefixedNo, help: "Score near-end PESQ-WB in the realistic mode (--no-pesq: figures null).")
    var pesq = true

    @Flag(
        inversion: .prefixedNo,
        help: ArgumentHelp(
            "The engine's noise suppression in the realistic and device modes (--no-noise-suppression: the canceller and its "
                + "residual-echo suppressor alone, to score what they change against the microphone without echo)."))
    var noiseSuppression = true

    @Flag(inversion: .prefixedNo, help: "Run the transient suppressor after the canceller, as a call does.")
    var transientSuppression = true

    func validate() throws {
        try requireOption("--steady-state-from", steadyStateFrom, within: 0...3_600, "s")
    }

    func run() throws {
        if let devices { return try runDevices(folder: URL(fileURLWithPath: devices)) }
        if realistic != nil || real != nil { return try runRealistic(realistic: realistic, real: real) }
        let folder = directory.map { URL(fileURLWithPath: $0) } ?? Self.defaultDirectory
        let manifest = try AECVectorManifest.load(from: folder.appendingPathComponent("manifest.json"))
        var webrtcSkipped: String? = webrtc ? WebRTCEchoReference.unavailableReason : "not requested (--no-webrtc)"
        var selfTestERLE: Double?
        if webrtcSkipped == nil, let first = manifest.vectors.first {
            let rate = first.scenario.sampleRate
            (selfTestERLE, webrtcSkipped) = WebRTCEchoReference.selfTest(
                far: folder.appendingPathComponent(first.far), farSamples: try Self.read(folder, first.far, rate: rate),
                sampleRate: rate)
            if webrtcSkipped == nil {
                print(
                    "WebRTC self-test (far end as its own echo): \(f(selfTestERLE)) dB removed, pass mark "
                        + "\(f(WebRTCEchoReference.minimumSelfTestERLE, 0))")
            }
        }
        if let webrtcSkipped { print("note: WebRTC figures are null: \(webrtcSkipped)") }
        let webrtcConfigurations = webrtcSkipped == nil ? WebRTCEchoReference.configurations : []
        print(
            "voice-bench aec: ERLE (dB) over far-end single talk from \(steadyStateFrom) s; raw MDF tail "
                + "\(AECBenchmark.rawTailMilliseconds) ms, no alignment")
        let headerRate = manifest.vectors.first?.scenario.sampleRate ?? 16_000
        for configuration in webrtcConfigurations {
            print(
                "  \(configuration.key): gst-launch-1.0 "
                    + WebRTCEchoReference.describe(configuration, sampleRate: headerRate))
        }
        print(
            pad("scenario", 24) + pad("raw", 7) + pad("engine", 8) + pad("webrtc ns/aec", 15) + pad("conv s", 8)
                + pad("nearSNR e/r/w", 17) + pad("drift ppm", 11) + pad("µs/10ms e/r", 14))
        var rows: [String] = []
        var engineCost: [Double] = []  // per vector, against raw MDF
        var transientCost: [Double] = []
        for vector in manifest.vectors where filter.map({ vector.scenario.name.contains($0) }) ?? true {
            let rate = vector.scenario.sampleRate
            let far = try Self.read(folder, vector.far, rate: rate)
            let mic = try Self.read(folder, vector.mic, rate: rate)
            let near = try vector.near.map { try Self.read(folder, $0, rate: rate) }
            let result = try AECBenchmark.run(
                name: vector.scenario.name, far: far, mic: mic, near: near, sampleRate: rate,
                configuration: vector.configuration, steadyStateSeconds: steadyStateFrom,
                transientSuppression: transientSuppression ? TransientSuppressorConfiguration() : nil)
            // WebRTC: same ERLE function, same blocks, same steady-state start as the engine and raw columns.
            var webrtcERLE: [String: Double] = [:]
            var webrtcNearSNR: [String: Double] = [:]
            var webrtcDetails: [String] = []
            for configuration in webrtcConfigurations {
                let outcome = WebRTCEchoReference.process(
                    far: folder.appendingPathComponent(vector.far), mic: folder.appendingPathComponent(vector.mic),
                    micSamples: mic, sampleRate: rate, configuration: configuration)
                var failure = outcome.failure
                if let output = outcome.output {
                    webrtcERLE[configuration.key] = AECRunner.erle(
                        mic: mic, output: output, blocks: result.singleTalkBlocks, blockSize: rate / 100,
                        fromBlock: Int(steadyStateFrom * 100))
                    if webrtcERLE[configuration.key] == nil { failure = "no far-end single-talk block to measure" }
                    if let near {
                        webrtcNearSNR[configuration.key] = AECRunner.nearEndSegmentalSNR(
                            near: near, output: output, sampleRate: rate)
                    }
                }
                webrtcDetails.append(
                    "\(quoted(configuration.key)):"
                        + "{\"latency_samples\":\(outcome.latencySamples.map(String.init) ?? "null"),"
                        + "\"null_reason\":\(failure.map(quoted) ?? "null")}")
                if let failure { print("note: \(result.name) \(configuration.key): \(failure)") }
            }
            let nullReason = webrtcSkipped.map(quoted) ?? "null"
            let webrtcColumn =
                webrtcSkipped == nil
                ? "\(f(webrtcERLE["webrtc"]))/\(f(webrtcERLE["webrtc_aec_only"]))" : "-"
            print(
                pad(result.name, 24) + pad(f(result.erleRaw), 7) + pad(f(result.erleEngine), 8) + pad(webrtcColumn, 15)
                    + pad(f(result.convergenceSeconds, 0), 8)
                    + pad(
                        result.nearEndSegSNREngine == nil
                            ? "-"
                            : "\(f(result.nearEndSegSNREngine))/\(f(result.nearEndSegSNRRaw))/"
                                + f(webrtcNearSNR["webrtc"]),
                        17)
                    + pad(f(result.estimatedDriftPPM), 11)
                    + pad("\(f(result.microsecondsPerBlockEngine))/\(f(result.microsecondsPerBlockRaw))", 14))
            fflush(nil)  // all streams: progress shows when piped too
            engineCost.append(result.microsecondsPerBlockEngine / result.microsecondsPerBlockRaw)
            transientCost.append((result.microsecondsPerBlockTransient ?? 0) / result.microsecondsPerBlockRaw)
            rows.append(
                "{\"name\":\(quoted(result.name)),\"erle_db\":{\"speex_raw\":\(j(result.erleRaw)),"
                    + "\"engine\":\(j(result.erleEngine)),\"webrtc\":\(j(webrtcERLE["webrtc"])),"
                    + "\"webrtc_aec_only\":\(j(webrtcERLE["webrtc_aec_only"]))},"
                    + "\"webrtc\":"
                    + (webrtcSkipped == nil
                        ? "{\(webrtcDetails.joined(separator: ","))}"
                        : "{\"null_reason\":\(nullReason)}") + ","
                    + "\"convergence_s\":\(j(result.convergenceSeconds)),"
                    + "\"near_end_segsnr_db\":{\"speex_raw\":\(j(result.nearEndSegSNRRaw)),"
                    + "\"engine\":\(j(result.nearEndSegSNREngine)),\"webrtc\":\(j(webrtcNearSNR["webrtc"])),"
                    + "\"webrtc_aec_only\":\(j(webrtcNearSNR["webrtc_aec_only"]))},"
                    + "\"drift_ppm\":{\"true\":\(j(vector.scenario.driftPPM)),\"estimated\":\(j(result.estimatedDriftPPM))},"
                    + "\"us_per_10ms\":{\"speex_raw\":\(j(result.microsecondsPerBlockRaw)),"
                    + "\"engine\":\(j(result.microsecondsPerBlockEngine)),"
                    + "\"transient_suppressor\":\(j(result.microsecondsPerBlockTransient))}}")
        }
        if transientSuppression, let engine = Self.median(engineCost), let transient = Self.median(transientCost) {
            print(
                "cost per 10 ms block against raw MDF, median over the vectors: engine \(f(engine, 2))x, of which the "
                    + "transient suppressor \(f(transient, 3))x")
        }
        if json {
            let webrtcSetup = webrtcConfigurations.map {
                quoted($0.key) + ":"
                    + quoted("gst-launch-1.0 " + WebRTCEchoReference.describe($0, sampleRate: headerRate))
            }
            print(
                "{\"suite\":\"aec\",\"webrtc_pipelines\":{\(webrtcSetup.joined(separator: ","))},"
                    + "\"webrtc_self_test_erle_db\":\(j(selfTestERLE)),"
                    + "\"scenarios\":[\(rows.joined(separator: ","))]}")
        }
    }

    /// `TestVectors/aec` of the repository this file is in (Benchmarks/Sources/voice-bench/ → repository root).
    static var defaultDirectory: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("TestVectors/aec")
    }

    static func read(_ folder: URL, _ name: String, rate: Int) throws -> [Int16] {
        let wav = try WAVFile.read(path: folder.appendingPathComponent(name).path)
        guard wav.format == AudioFormat(sampleRate: rate, channels: 1) else {
            throw ValidationError("\(name): \(wav.format); expected mono at \(rate) Hz")
        }
        return wav.int16Samples
    }

    func f(_ v: Double?, _ decimals: Int = 1) -> String {
        guard let v, v.isFinite else { return "-" }
        return String(format: "%.\(decimals)f", v)
    }

    func j(_ v: Double?) -> String {
        guard let v, v.isFinite else { return "null" }
        return String(format: "%.2f", v)
    }

    func pad(_ s: String, _ width: Int) -> String {
        s.count >= width ? s + " " : s + String(repeating: " ", count: width - s.count)
    }

    func quoted(_ s: String) -> String {
        "\"" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}
