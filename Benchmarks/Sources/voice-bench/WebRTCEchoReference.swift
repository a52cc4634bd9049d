import Foundation
import VoiceEngine
import VoiceLab

/// WebRTC's echo canceller (webrtc-audio-processing inside GStreamer's `webrtcdsp`, fed by `webrtcechoprobe`) run on
/// a far-end / microphone file pair, as the reference column of `voice-bench aec`.
///
/// Why the pipeline looks the way it does: `webrtcdsp` takes the far end from the probe for every 10 ms microphone
/// block it processes — by running time (`delay-agnostic=false`: it skips or drops probe data until the probe's
/// buffer time equals the microphone block's) or, with `delay-agnostic=true`, by draining whatever the probe holds.
/// Two independent file branches race: the far branch either runs ahead (the drain then hands the canceller the
/// whole file at once) or behind (silence), and `sync=true` sinks only make the race slower, not deterministic (the
/// earlier attempt measured ~1 dB that way). Here both files go into one `audiointerleave` (10 ms output buffers,
/// one running time for both channels) and a `deinterleave` pushes, from one streaming thread, channel 0 (far) into
/// the probe and then channel 1 (microphone) into `webrtcdsp`: every microphone block finds exactly the far block of
/// the same running time in the probe, in either mode, with no clock involved — so the run is deterministic
/// (bit-identical output run to run) and takes a fraction of a second instead of 20 s. Both sinks are
/// `sync=false async=false`: nothing waits for a preroll that the single thread could not deliver to both.
///
/// The canceller's own latency (its block buffering; the noise suppressor adds more) is found by cross-correlating
/// the element's output against its input in a calibration run with a silent far end (the canceller then passes the
/// microphone through), and removed before measuring, as the engine's one-block preprocessor latency is.
enum WebRTCEchoReference {
    /// One `webrtcdsp` property set, reported under `key` in `erle_db`.
    struct Configuration: Sendable {
        /// JSON key (`webrtc`, `webrtc_aec_only`).
        var key: String
        /// `noise-suppression-level` when noise suppression is on.
        var noiseSuppressionLevel: String?

        /// Echo cancellation as asked of the element; gain control and the high-pass filter off (the engine runs
        /// neither). `extended-filter` and `delay-agnostic` are set as a deployment with an unknown device delay
        /// would set them — but the Debian build (GStreamer 1.22 + webrtc-audio-processing 0.3) never passes them on:
        /// `WebRtcAec_enable_extended_filter` and `WebRtcAec_enable_delay_agnostic` are called with 0 whatever the
        /// properties say (seen in gdb; outputs are bit-identical either way), so the canceller runs its normal
        /// filter with the stream delay GStreamer reports, 0 ms for files.
        var properties: [String] {
            [
                "echo-cancel=true", "extended-filter=true", "delay-agnostic=true", "gain-control=false",
                "high-pass-filter=false", "experimental-agc=false"
            ]
                + (noiseSuppressionLevel.map { ["noise-suppression=true", "noise-suppression-level=\($0)"] }
                    ?? ["noise-suppression=false"])
        }
    }

    /// Like with like: the engine's figures include its preprocessor's noise suppression (-15 dB), so the main
    /// column runs WebRTC's noise suppressor too (element default level, moderate); the second runs its echo
    /// canceller (with its built-in non-linear suppressor) alone.
    static let withNoiseSuppression = Configuration(key: "webrtc", noiseSuppressionLevel: "moderate")
    static let aecOnly = Configuration(key: "webrtc_aec_only", noiseSuppressionLevel: nil)
    static let configurations = [withNoiseSuppression, aecOnly]

    /// Result for one scenario and configuration: the output aligned to the microphone, or why there is none.
    struct Outcome: Sendable {
        var output: [Int16]?
        var latencySamples: Int?
        var failure: String?
    }

    /// Why the reference cannot run here, or `nil` when it can.
    static var unavailableReason: String? {
        guard let inspect = which("gst-inspect-1.0") else { return "gst-inspect-1.0 not found (gstreamer1.0-tools)" }
        guard which("gst-launch-1.0") != nil else { return "gst-launch-1.0 not found (gstreamer1.0-tools)" }
        for (element, package) in [
            ("webrtcdsp", "gstreamer1.0-plugins-bad"), ("webrtcechoprobe", "gstreamer1.0-plugins-bad"),
            ("audiointerleave", "gstreamer1.0-plugins-base"), ("deinterleave", "gstreamer1.0-plugins-good"),
            ("wavparse", "gstreamer1.0-plugins-good"), ("wavenc", "gstreamer1.0-plugins-good")
        ] where (try? run(inspect, [element]).status) != 0 {
            return "GStreamer element \(element) not found (\(package))"
        }
        return nil
    }

    /// The `gst-launch-1.0` arguments that run `configuration` on `far`/`mic` into `out`.
    static func launchArguments(far: String, mic: String, out: String, sampleRate: Int, configuration: Configuration)
        -> [String]
    {
        let caps = "audio/x-raw,format=S16LE,rate=\(sampleRate),channels=1,layout=interleaved"
        let decode = ["wavparse", "!", "audioconvert", "!", "audioresample", "!", caps]
        return [
            "-q", "audiointerleave", "name=interleave", "output-buffer-duration=10000000", "!",
            "deinterleave", "name=split"
        ]
            + ["filesrc", "location=\(far)", "!"] + decode + ["!", "interleave.sink_0"]
            + ["filesrc", "location=\(mic)", "!"] + decode + ["!", "interleave.sink_1"]
            + [
                "split.src_0", "!", "audioconvert", "!", caps, "!", "webrtcechoprobe", "name=farprobe", "!",
                "fakesink", "sync=false", "async=false"
            ]
            + ["split.src_1", "!", "audioconvert", "!", caps, "!", "webrtcdsp", "probe=farprobe"]
            + configuration.properties
            + ["!", "wavenc", "!", "filesink", "location=\(out)", "sync=false", "async=false"]
    }

    /// One line describing `configuration`'s pipeline, for the report.
    static func describe(_ configuration: Configuration, sampleRate: Int) -> String {
        launchArguments(
            far: "FAR.wav", mic: "MIC.wav", out: "OUT.wav", sampleRate: sampleRate,
            configuration: configuration
        ).dropFirst().joined(separator: " ")
    }

    /// Runs `configuration` on the pair and returns its output shifted earlier by the element's latency (the last
    /// `latency` samples zero), so it lines up with `micSamples` exactly as the engine's output does.
    static func process(
        far: URL, mic: URL, micSamples: [Int16], sampleRate: Int, configuration: Configuration
    ) -> Outcome {
        let folder = FileManager.default.temporaryDirectory
        let tag = "voice-bench-webrtc-\(getpid())-\(configuration.key)"
        let silent = folder.appendingPathComponent("\(tag)-silent-far.wav")
        let calibration = folder.appendingPathComponent("\(tag)-calibration.wav")
        let out = folder.appendingPathComponent("\(tag)-out.wav")
        defer { for file in [silent, calibration, out] { try? FileManager.default.removeItem(at: file) } }
        do {
            try WAVFile.write(
                pcm16: [Int16](repeating: 0, count: micSamples.count),
                format: AudioFormat(sampleRate: sampleRate, channels: 1), to: silent.path)
            let passThrough = try launch(
                far: silent, mic: mic, out: calibration, sampleRate: sampleRate,
                configuration: configuration, expectedCount: micSamples.count)
            let (latency, correlation) = bestLag(input: micSamples, output: passThrough, sampleRate: sampleRate)
            guard correlation >= 0.8 else {
                return Outcome(
                    failure: String(
                        format:
                            "latency not found: with a silent far end the output matches the microphone at best %.2f (lag %d)",
                        correlation, latency))
            }
            let output = try launch(
                far: far, mic: mic, out: out, sampleRate: sampleRate,
                configuration: configuration, expectedCount: micSamples.count)
            let aligned = Array(output[latency...]) + [Int16](repeating: 0, count: latency)
            return Outcome(output: aligned, latencySamples: latency)
        } catch {
            return Outcome(failure: "\(error)")
        }
    }

    /// End-to-end check that the far end reaches the canceller aligned, run once before the scenarios: the far file
    /// as its own echo (microphone = far, no delay). Aligned, the canceller removes ~16 dB over the second half of
    /// `far_16k.wav`; a far end that never arrives leaves 0 dB, one that arrives 10 ms late (after its echo) ~8 dB,
    /// later or all at once less — figures that would otherwise pass for a poor canceller. Returns the ERLE measured
    /// and why the reference must not be trusted (`nil` when it passed).
    static func selfTest(far: URL, farSamples: [Int16], sampleRate: Int) -> (erle: Double?, failure: String?) {
        let outcome = process(
            far: far, mic: far, micSamples: farSamples, sampleRate: sampleRate, configuration: aecOnly)
        guard let output = outcome.output else {
            return (nil, "self-test (far end as its own echo) failed: \(outcome.failure ?? "?")")
        }
        let n = sampleRate / 100
        let energy = (0..<farSamples.count / n).map { b in
            farSamples[b * n..<(b + 1) * n].reduce(0.0) { $0 + Double($1) * Double($1) } / Double(n)
        }
        let blocks = AECRunner.singleTalkBlocks(referenceMeanSquare: energy, near: nil, blockSize: n)
        let erle = AECRunner.erle(
            mic: farSamples, output: output, blocks: blocks, blockSize: n, fromBlock: blocks.count / 2)
        guard let erle, erle >= minimumSelfTestERLE else {
            let reason = String(
                format: "self-test failed: with the far end as its own echo webrtcdsp removed %.1f dB (< %.0f): the "
                    + "far end does not reach webrtcechoprobe aligned with the microphone",
                erle ?? .nan, minimumSelfTestERLE)
            return (erle, reason)
        }
        return (erle, nil)
    }

    /// Pass mark of ``selfTest(far:farSamples:sampleRate:)``, dB: between what an aligned far end gives (~16) and
    /// what one arriving a block late does (~8).
    static let minimumSelfTestERLE = 12.0

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private static func launch(
        far: URL, mic: URL, out: URL, sampleRate: Int, configuration: Configuration, expectedCount: Int
    ) throws -> [Int16] {
        guard let tool = which("gst-launch-1.0") else { throw Failure(description: "gst-launch-1.0 not found") }
        let arguments = launchArguments(
            far: far.path, mic: mic.path, out: out.path, sampleRate: sampleRate, configuration: configuration)
        let result = try run(tool, arguments, timeoutSeconds: 300)
        guard result.status == 0 else {
            throw Failure(description: "gst-launch-1.0 exited with \(result.status): \(result.errorLine)")
        }
        let samples = try WAVFile.read(path: out.path).int16Samples
        guard samples.count == expectedCount else {
            throw Failure(description: "webrtcdsp wrote \(samples.count) samples for \(expectedCount) in")
        }
        return samples
    }

    /// The lag (0 ..< 64 ms) at which `output` best matches `input` (normalised cross-correlation over 0.5-3.5 s).
    static func bestLag(input: [Int16], output: [Int16], sampleRate: Int) -> (lag: Int, correlation: Double) {
        let start = sampleRate / 2
        let length = min(3 * sampleRate, max(0, min(input.count, output.count) - start - sampleRate))
        let maxLag = sampleRate * 64 / 1000
        guard length > 0 else { return (0, 0) }
        let x = input[start..<start + length].map(Double.init)
        let xx = x.reduce(0) { $0 + $1 * $1 }
        var best = (lag: 0, correlation: -1.0)
        for lag in 0..<maxLag {
            var xy = 0.0
            var yy = 0.0
            for i in 0..<length {
                let y = Double(output[start + lag + i])
                xy += x[i] * y
                yy += y * y
            }
            let c = xx > 0 && yy > 0 ? xy / (xx * yy).squareRoot() : 0
            if c > best.correlation { best = (lag, c) }
        }
        return best
    }

    private static func which(_ tool: String) -> String? {
        for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let path = "\(folder)/\(tool)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    /// Runs `tool` with its standard error in a temporary file (read afterwards, so a chatty child never blocks on
    /// a full pipe), terminating it after `timeoutSeconds`.
    private static func run(_ tool: String, _ arguments: [String], timeoutSeconds: Double = 60) throws
        -> (status: Int32, errorLine: String)
    {
        let errors = FileManager.default.temporaryDirectory
            .appendingPathComponent("voice-bench-webrtc-\(getpid())-stderr.txt")
        guard FileManager.default.createFile(atPath: errors.path, contents: nil) else {
            throw Failure(description: "cannot create \(errors.path)")
        }
        defer { try? FileManager.default.removeItem(at: errors) }
        let handle = try FileHandle(forWritingTo: errors)
        defer { try? handle.close() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = handle
        try process.run()
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
            return (-1, "timed out after \(Int(timeoutSeconds)) s")
        }
        process.waitUntilExit()
        let text = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
        let line =
            text.split(separator: "\n").first { $0.contains("ERROR") || $0.contains("rror") }
            ?? text
            .split(separator: "\n").first ?? ""
        return (process.terminationStatus, String(line.prefix(300)))
    }
}
