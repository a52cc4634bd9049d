import Foundation
import VoiceEngine
import VoiceLab

/// `voice-bench aec --devices DIR`: real-device far-end single talk (the `clips.json` of DIR, the shared test data's
/// `aec-devices`), the engine against WebRTC (moderate noise suppression, or none with `--no-noise-suppression`), per
/// clip: the residual over the background, the floor under far talk and the background against the microphone
/// (``ResidualOverBackground``), the microphone's echo-to-noise ratio and the classic ERLE over the far-talk blocks;
/// then the medians over the clips that have a background.
extension AECBench {
    func runDevices(folder: URL) throws {
        let clips = try DeviceEchoClip.load(folder: folder).filter { filter.map($0.name.contains) ?? true }
        var configuration = EchoCancellerConfiguration()
        if !noiseSuppression { configuration.preprocessor.noiseSuppressionDB = nil }
        let webrtcConfiguration =
            noiseSuppression ? WebRTCEchoReference.withNoiseSuppression : WebRTCEchoReference.aecOnly
        let webrtcSkipped = webrtc ? WebRTCEchoReference.unavailableReason : "not requested (--no-webrtc)"
        if let webrtcSkipped { print("note: WebRTC figures are null: \(webrtcSkipped)") }
        print(
            "voice-bench aec devices: far-end single talk on real devices, e engine / w WebRTC ("
                + (noiseSuppression ? "both with noise suppression" : "noise suppression off in both") + "); "
                + "resid: output energy in far talk over its energy in the background, dB (target <= 1, no clip over 3); "
                + "floor: output floor (20th pct of 10 ms levels) in far talk against the microphone's background floor "
                + "(target within 3); bg: the output's background floor against the microphone's; ENR: microphone echo "
                + "over its background; ERLE over the far-talk blocks")
        let widths = [24, 7, 11, 8, 14, 14, 14, 14]
        let header = ["clip", "s", "talk/bg", "ENR", "resid e/w", "floor e/w", "bg e/w", "ERLE e/w"]
        print(zip(header, widths).map { pad($0, $1) }.joined())
        let scratch = FileManager.default.temporaryDirectory
        let format = AudioFormat(sampleRate: 16_000, channels: 1)
        var engineFigures: [ResidualOverBackground] = []
        var webrtcFigures: [ResidualOverBackground] = []
        var rows: [String] = []
        for clip in clips {
            let (far, mic) = try clip.read(folder: folder)
            let run = try AECRunner.runEngine(
                far: far, mic: mic, configuration: configuration,
                transientSuppression: transientSuppression ? TransientSuppressorConfiguration() : nil)
            if run.transientSuppressedBlocks > 0 {
                print("note: \(clip.name): transient suppressor attenuated \(run.transientSuppressedBlocks) blocks")
            }
            let e = clip.measure(far: far, mic: mic, output: run.output)
            let talk = ResidualOverBackground.farTalkBlocks(
                far: far, blockSize: 160, singleTalkUntilBlock: clip.singleTalkUntilSeconds.map { Int($0 * 100) })
            let erleEngine = AECRunner.erle(mic: mic, output: run.output, blocks: talk, blockSize: 160)
            var w: ResidualOverBackground?
            var erleWebRTC: Double?
            if webrtcSkipped == nil {
                // Both files cut to the samples the engine ran, so WebRTC gets exactly the same input.
                let files = (
                    scratch.appendingPathComponent("voice-bench-device-far-\(getpid()).wav"),
                    scratch.appendingPathComponent("voice-bench-device-mic-\(getpid()).wav")
                )
                defer { for file in [files.0, files.1] { try? FileManager.default.removeItem(at: file) } }
                try WAVFile.write(pcm16: far, format: format, to: files.0.path)
                try WAVFile.write(pcm16: mic, format: format, to: files.1.path)
                let outcome = WebRTCEchoReference.process(
                    far: files.0, mic: files.1, micSamples: mic, sampleRate: 16_000, configuration: webrtcConfiguration)
                if let output = outcome.output {
                    w = clip.measure(far: far, mic: mic, output: output)
                    erleWebRTC = AECRunner.erle(mic: mic, output: output, blocks: talk, blockSize: 160)
                } else if let failure = outcome.failure {
                    print("note: \(clip.name) webrtc: \(failure)")
                }
            }
            if let e { engineFigures.append(e) }
            if let w { webrtcFigures.append(w) }
            let figures = e ?? w
            print(
                pad(clip.name, widths[0]) + pad(f(Double(far.count) / 16_000), widths[1])
                    + pad(figures.map { "\($0.farTalkBlocks)/\($0.backgroundBlocks)" } ?? "-/0", widths[2])
                    + pad(f(figures?.echoToNoiseDB), widths[3])
                    + pad("\(f(e?.residualOverBackgroundDB))/\(f(w?.residualOverBackgroundDB))", widths[4])
                    + pad("\(f(e?.floorUnderFarTalkDB))/\(f(w?.floorUnderFarTalkDB))", widths[5])
                    + pad("\(f(e?.backgroundAgainstMicrophoneDB))/\(f(w?.backgroundAgainstMicrophoneDB))", widths[6])
                    + pad("\(f(erleEngine))/\(f(erleWebRTC))", widths[7]))
            fflush(nil)
            rows.append(
                "{\"name\":\(quoted(clip.name)),\"engine\":\(Self.json(e, erle: erleEngine)),"
                    + "\"webrtc\":\(Self.json(w, erle: erleWebRTC))}")
        }
        for (name, figures) in [("engine", engineFigures), ("webrtc", webrtcFigures)] where !figures.isEmpty {
            let residuals = figures.map(\.residualOverBackgroundDB)
            print(
                "median \(name) over \(figures.count) clips with a background: resid \(f(Self.median(residuals))) "
                    + "(max \(f(residuals.max()))), floor \(f(Self.median(figures.map(\.floorUnderFarTalkDB)))), "
                    + "bg \(f(Self.median(figures.map(\.backgroundAgainstMicrophoneDB))))")
        }
        if json { print("{\"suite\":\"aec-devices\",\"clips\":[\(rows.joined(separator: ","))]}") }
    }

    static func median(_ values: [Double]) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let mid = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
    }

    private static func json(_ figures: ResidualOverBackground?, erle: Double?) -> String {
        func j(_ v: Double?) -> String { v.map { String(format: "%.2f", $0) } ?? "null" }
        guard let figures else { return "{\"erle_db\":\(j(erle))}" }
        return "{\"residual_over_background_db\":\(j(figures.residualOverBackgroundDB)),"
            + "\"floor_under_far_talk_db\":\(j(figures.floorUnderFarTalkDB)),"
            + "\"background_against_microphone_db\":\(j(figures.backgroundAgainstMicrophoneDB)),"
            + "\"echo_to_noise_db\":\(j(figures.echoToNoiseDB)),\"far_talk_blocks\":\(figures.farTalkBlocks),"
            + "\"background_blocks\":\(figures.backgroundBlocks),\"erle_db\":\(j(erle))}"
    }
}
