import Foundation
import Testing
import VoiceCore
import VoiceDSP
import VoiceLab
import VoiceTestSupport

/// Whether `Benchmarks/scripts/aec-realistic.py` can run here.
enum RealisticSetGenerator {
    /// Why the generator cannot run here (nil: it can).
    static let unavailableReason = PythonModules.unavailableReason(["numpy", "scipy", "pyroomacoustics", "pesq"])
}

/// Near-end single talk on the realistic set: "the suppressor must leave a lone near-end talker
/// untouched". The ten `nst` clips of `Benchmarks/scripts/aec-realistic.py` (seeds 15001, 15005, ..., 15037; real
/// speech, background noise at 0-40 dB SNR, the far end silent) are generated at test time and scored with PESQ-WB
/// against both of the generator's references:
/// - the microphone without the echo (in near-end single talk: the microphone itself, near talker plus noise) —
///   what a perfect echo canceller would output. With noise suppression off, the canceller and its residual-echo
///   suppressor must keep it (≥ 4.0 on every clip; measured 4.64, the score of a file against itself); with the
///   default noise suppression it must too where the background is under the suppressor's threshold (SNR ≥ 30 dB;
///   measured 4.63-4.64), since below that the suppressor is meant to change the noise;
/// - the near talker without noise (the AEC-Challenge's target): the output must never score below the microphone
///   (0.1 tolerance), whatever the noise (measured by band: +0.00 at 30-40 dB SNR, +0.16 to +0.46 below).
/// And the `hand` clips' lone near talker after the far end has played (`nst°`, the second test).
/// Needs python3 with numpy, scipy, pyroomacoustics and pesq (PyPI), and ../shared/testdata/speech.
@Suite(
    "Near-end single talk on the realistic set", .tags(.slow), .scheduledByTags,
    .enabled(if: SharedTestData.isPresent, "../shared/testdata/speech absent"),
    .enabled(
        if: RealisticSetGenerator.unavailableReason == nil,
        "needs python3 with numpy, scipy, pyroomacoustics and pesq (pip install pyroomacoustics pesq)"))
struct RealisticNearEndTests {

    struct Clip {
        var name: String
        var snr: Double
        var far: [Int16]
        var mic: [Int16]
        var near: [Int16]
        var nearWithNoise: [Int16]
        /// Where the near talker speaks alone after the far end (hand clips; nil for the others).
        var nearAloneFrom: Int?
    }

    /// The generator's clips of `group` (`extra`: more generator options), written into `folder`.
    static func generate(into folder: URL, group: String = "nst", extra: [String] = []) throws -> [Clip] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments =
            [
                "python3", "Benchmarks/scripts/aec-realistic.py", folder.path, "--speech", SharedTestData.speech,
                "--only",
                group
            ] + extra
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "aec-realistic.py exited \(process.terminationStatus)")
        let data = try Data(contentsOf: folder.appendingPathComponent("manifest.json"))
        let root = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let clips = try #require(root["clips"] as? [[String: Any]])
        func read(_ entry: [String: Any], _ key: String) throws -> [Int16] {
            let name = try #require(entry[key] as? String, "manifest: no \(key)")
            return try WAVFile.read(path: folder.appendingPathComponent(name).path).int16Samples
        }
        return try clips.map { c in
            Clip(
                name: try #require(c["name"] as? String), snr: try #require(c["snr_db"] as? Double),
                far: try read(c, "far"), mic: try read(c, "mic"), near: try read(c, "near"),
                nearWithNoise: try read(c, "near_with_noise"), nearAloneFrom: c["near_alone_from_sample"] as? Int)
        }
    }

    @Test func aLoneNearEndTalkerIsLeftAlone() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("realistic-nst-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let clips = try Self.generate(into: folder)
        #expect(clips.count == 10)
        var withoutNoiseSuppression = EchoCancellerConfiguration()
        withoutNoiseSuppression.preprocessor.noiseSuppressionDB = nil
        func pesq(_ reference: [Int16], _ degraded: [Int16], _ name: String) throws -> Double? {
            try VoiceProcessingTransparencyTests.pesq(
                reference: reference, degraded: degraded, folder: folder, name: name
            ).0
        }
        for clip in clips {
            let out = try VoiceProcessingTransparencyTests.processed(clip.mic)
            let bare = try VoiceProcessingTransparencyTests.processed(clip.mic, withoutNoiseSuppression)
            let mic = try #require(try pesq(clip.near, clip.mic, clip.name + "_mic"))
            let outClean = try #require(try pesq(clip.near, out, clip.name + "_out"))
            let outNoisy = try #require(try pesq(clip.nearWithNoise, out, clip.name + "_out_n"))
            let bareNoisy = try #require(try pesq(clip.nearWithNoise, bare, clip.name + "_bare_n"))
            func f(_ v: Double) -> String { String(format: "%.2f", v) }
            print(
                "\(clip.name) SNR \(f(clip.snr)) dB: against the clean talker mic \(f(mic)), out \(f(outClean)); "
                    + "against the microphone without echo out \(f(outNoisy)), without noise suppression \(f(bareNoisy))"
            )
            #expect(
                outClean >= mic - 0.1,
                "\(clip.name): the output scores \(outClean) against the talker, the microphone \(mic)")
            #expect(
                bareNoisy >= 4.0,
                "\(clip.name): without noise suppression \(bareNoisy) against the microphone without echo")
            if clip.snr >= 30 {
                #expect(
                    outNoisy >= 4.0,
                    "\(clip.name) at \(clip.snr) dB SNR: \(outNoisy) against the microphone without echo")
            }
        }
    }

    /// `nst°` of `voice-bench aec --realistic`: the ten `hand` clips (seeds 15100-15109: far end for 4 s, then the
    /// near talker alone from 4.3 s, 0-40 dB SNR), where the canceller and its suppressor have learned an echo path
    /// when the near talker starts. The default configuration's output on the microphone is scored against the same
    /// canceller's output on the microphone without echo (far end still fed), from the near talker's start: what the
    /// echo and its removal did to a lone near talker, with noise suppression and AGC acting alike on both sides, so
    /// the background noise does not cap the score. Must be ≥ 4.0 on every clip (measured 4.31-4.64, WebRTC's APM
    /// 4.50 on average; 4.64 is a file against itself).
    @Test func aLoneNearTalkerAfterTheFarEndIsLeftAlone() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("realistic-hand-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let clips = try Self.generate(into: folder, group: "hand", extra: ["--handover", "10"])
        #expect(clips.count == 10)
        for clip in clips {
            let from = try #require(clip.nearAloneFrom, "\(clip.name): the manifest has no near_alone_from_sample")
            let count = min(clip.far.count, clip.mic.count, clip.nearWithNoise.count)
            let far = Array(clip.far[..<count])
            let configuration = EchoCancellerConfiguration()
            let out = try AECRunner.runEngine(far: far, mic: Array(clip.mic[..<count]), configuration: configuration)
            let own = try AECRunner.runEngine(
                far: far, mic: Array(clip.nearWithNoise[..<count]), configuration: configuration)
            let score = try #require(
                try VoiceProcessingTransparencyTests.pesq(
                    reference: Array(own.output[from...]), degraded: Array(out.output[from...]), folder: folder,
                    name: clip.name
                ).0)
            print(
                "\(clip.name) SNR \(String(format: "%.1f", clip.snr)) dB: the lone near talker after the far end "
                    + "\(String(format: "%.2f", score)) against the same canceller without echo")
            #expect(score >= 4.0, "\(clip.name): \(score) against the same canceller's output without echo")
        }
    }
}
