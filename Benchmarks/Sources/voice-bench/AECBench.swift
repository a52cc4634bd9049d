import ArgumentParser
import Foundation
import VoiceEngine

/// `voice-bench aec`: echo-cancellation quality and cost per scenario, on the project's AEC test vectors
/// (`TestVectors/aec`, the files the manifest checks use).
///
/// For every vector it runs (a) raw speex MDF with no alignment, drift compensation or residual suppression
/// (tail ``AECBenchmark/rawTailMilliseconds``), (b) the engine's `EchoCanceller` exactly as a live call runs it, and
/// (c) with `--webrtc`, WebRTC audio processing through GStreamer's `webrtcechoprobe` / `webrtcdsp` when the plugin
/// is installed (it runs in real time, 20 s per vector, so it is opt-in; `null` otherwise). Experimental: on this
/// machine (GStreamer 1.x, webrtc-audio-processing from Debian) the file-driven pipeline measured about 1 dB, i.e.
/// the canceller never got a usable far end — a pipeline timing problem, not WebRTC's quality; do not quote it. It prints ERLE over the
/// far-end single-talk blocks of the second half (steady state), the engine's time to converge, near-end segmental
/// SNR against the clean near end in double talk, the drift estimate and µs per 10 ms block. This is a quality
/// bench, not a Swift-vs-C timing (`SideBySideSuite`): both cancellers call the same speexdsp MDF; the per-block
/// times show what alignment, drift tracking and the preprocessor add. Build in release for meaningful times.
struct AECBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "aec",
        abstract: "Echo-canceller ERLE per scenario: raw speex MDF vs the engine (vs WebRTC with --webrtc).")

    @Flag(help: "End the output with one JSON line: {\"suite\":\"aec\",\"scenarios\":[…]}.")
    var json = false

    @Option(help: "Folder holding the AEC manifest.json and WAV files (default: the repository's TestVectors/aec).")
    var directory: String?

    @Option(help: "Run only scenarios whose name contains this text.")
    var filter: String?

    @Flag(help: "Also run WebRTC AEC through GStreamer webrtcdsp (experimental, real time: 20 s per scenario).")
    var webrtc = false

    @Option(help: "Steady state starts here, seconds into each vector.")
    var steadyStateFrom = 10.0

    func run() throws {
        let folder = directory.map { URL(fileURLWithPath: $0) } ?? Self.defaultDirectory
        let manifest = try AECVectorManifest.load(from: folder.appendingPathComponent("manifest.json"))
        let webrtcAvailable = webrtc && WebRTCRunner.isAvailable
        if webrtc && !webrtcAvailable { print("note: GStreamer webrtcdsp not found; webrtc figures are null") }
        print("voice-bench aec: ERLE (dB) over far-end single talk from \(steadyStateFrom) s; raw MDF tail "
            + "\(AECBenchmark.rawTailMilliseconds) ms, no alignment")
        print(
            pad("scenario", 24) + pad("raw", 7) + pad("engine", 8) + pad("webrtc", 8) + pad("conv s", 8)
                + pad("nearSNR e/r", 14) + pad("drift ppm", 11) + pad("µs/10ms e/r", 14))
        var rows: [String] = []
        for vector in manifest.vectors where filter.map({ vector.scenario.name.contains($0) }) ?? true {
            let rate = vector.scenario.sampleRate
            let far = try Self.read(folder, vector.far, rate: rate)
            let mic = try Self.read(folder, vector.mic, rate: rate)
            let near = try vector.near.map { try Self.read(folder, $0, rate: rate) }
            let result = try AECBenchmark.run(
                name: vector.scenario.name, far: far, mic: mic, near: near, sampleRate: rate,
                configuration: vector.configuration, steadyStateSeconds: steadyStateFrom)
            var erleWebRTC: Double?
            if webrtcAvailable {
                let output = try WebRTCRunner.process(
                    far: folder.appendingPathComponent(vector.far), mic: folder.appendingPathComponent(vector.mic),
                    sampleRate: rate)
                erleWebRTC = AECRunner.erle(
                    mic: mic, output: output, blocks: result.singleTalkBlocks, blockSize: rate / 100,
                    fromBlock: Int(steadyStateFrom * 100))
            }
            print(
                pad(result.name, 24) + pad(f(result.erleRaw), 7) + pad(f(result.erleEngine), 8) + pad(f(erleWebRTC), 8)
                    + pad(f(result.convergenceSeconds, 0), 8)
                    + pad(result.nearEndSegSNREngine == nil
                        ? "-" : "\(f(result.nearEndSegSNREngine))/\(f(result.nearEndSegSNRRaw))", 14)
                    + pad(f(result.estimatedDriftPPM), 11)
                    + pad("\(f(result.microsecondsPerBlockEngine))/\(f(result.microsecondsPerBlockRaw))", 14))
            fflush(nil)  // all streams: progress shows when piped too
            rows.append(
                "{\"name\":\(quoted(result.name)),\"erle_db\":{\"speex_raw\":\(j(result.erleRaw)),"
                    + "\"engine\":\(j(result.erleEngine)),\"webrtc\":\(j(erleWebRTC))},"
                    + "\"convergence_s\":\(j(result.convergenceSeconds)),"
                    + "\"near_end_segsnr_db\":{\"speex_raw\":\(j(result.nearEndSegSNRRaw)),"
                    + "\"engine\":\(j(result.nearEndSegSNREngine))},"
                    + "\"drift_ppm\":{\"true\":\(j(vector.scenario.driftPPM)),\"estimated\":\(j(result.estimatedDriftPPM))},"
                    + "\"us_per_10ms\":{\"speex_raw\":\(j(result.microsecondsPerBlockRaw)),"
                    + "\"engine\":\(j(result.microsecondsPerBlockEngine))}}")
        }
        if json { print("{\"suite\":\"aec\",\"scenarios\":[\(rows.joined(separator: ","))]}") }
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

    private func f(_ v: Double?, _ decimals: Int = 1) -> String {
        guard let v, v.isFinite else { return "-" }
        return String(format: "%.\(decimals)f", v)
    }

    private func j(_ v: Double?) -> String {
        guard let v, v.isFinite else { return "null" }
        return String(format: "%.2f", v)
    }

    private func pad(_ s: String, _ width: Int) -> String {
        s.count >= width ? s + " " : s + String(repeating: " ", count: width - s.count)
    }

    private func quoted(_ s: String) -> String {
        "\"" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}

/// WebRTC AEC (the audio-processing module inside GStreamer's `webrtcdsp`), run on a far/mic pair: the far end
/// plays through `webrtcechoprobe` into a synchronised fake sink while the microphone goes through `webrtcdsp`
/// (echo cancellation only: no noise suppression, gain control or high-pass), both on the pipeline clock, so the
/// probe hands the canceller the far end as a live call would.
enum WebRTCRunner {
    static var isAvailable: Bool {
        guard let inspect = which("gst-inspect-1.0"), which("gst-launch-1.0") != nil else { return false }
        return (try? run(inspect, ["webrtcdsp"])) == 0
    }

    static func process(far: URL, mic: URL, sampleRate: Int) throws -> [Int16] {
        guard let launch = which("gst-launch-1.0") else { throw ValidationError("gst-launch-1.0 not found") }
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("voice-bench-webrtc-\(getpid()).wav")
        defer { try? FileManager.default.removeItem(at: out) }
        let caps = "audio/x-raw,format=S16LE,rate=\(sampleRate),channels=1,layout=interleaved"
        let pipeline =
            "filesrc location=\(far.path) ! wavparse ! audioconvert ! audioresample ! \(caps) ! "
            + "webrtcechoprobe ! fakesink sync=true "
            + "filesrc location=\(mic.path) ! wavparse ! audioconvert ! audioresample ! \(caps) ! "
            + "webrtcdsp echo-cancel=true noise-suppression=false gain-control=false high-pass-filter=false "
            + "experimental-agc=false extended-filter=true delay-agnostic=true ! audioconvert ! \(caps) ! "
            + "wavenc ! filesink sync=true location=\(out.path)"
        let status = try run(launch, ["-q"] + pipeline.split(separator: " ").map(String.init))
        guard status == 0 else { throw ValidationError("gst-launch-1.0 exited with \(status)") }
        return try WAVFile.read(path: out.path).int16Samples
    }

    private static func which(_ tool: String) -> String? {
        for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let path = "\(folder)/\(tool)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    private static func run(_ tool: String, _ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }
}
