import Foundation
import Testing
import VoiceCore
import VoiceDSP
import VoiceLab
import VoiceTestSupport

private let devices = URL(fileURLWithPath: SharedTestData.path("aec-devices"))
private let allDevices = URL(fileURLWithPath: SharedTestData.path("aec-devices-all"))

/// Residual echo under the background on real devices (../shared/testdata/aec-devices, its README names every
/// recording): the engine's output in far-end single talk against its own background and against the microphone's
/// noise floor, measured by ``ResidualOverBackground`` as `voice-bench aec --devices` measures it. Ceilings a little
/// over what the default configuration measures, so a regression fails; the WebRTC comparison is the benchmark's.
@Suite(
    "Echo canceller on real-device far-end single talk", .tags(.slow), .scheduledByTags,
    .enabled(if: SharedTestData.exists("aec-devices/clips.json"), "../shared/testdata/aec-devices absent"))
struct DeviceEchoTests {
    @Test func residualEchoStaysNearTheBackground() throws {
        let clips = try DeviceEchoClip.load(folder: devices)
        var residuals: [Double] = []
        for clip in clips {
            let (far, mic) = try clip.read(folder: devices)
            let run = try AECRunner.runEngine(
                far: far, mic: mic, configuration: EchoCancellerConfiguration(),
                transientSuppression: TransientSuppressorConfiguration())
            guard let figures = clip.measure(far: far, mic: mic, output: run.output) else { continue }
            print(
                "\(clip.name): residual over background \(figures.residualOverBackgroundDB) dB, floor under far talk "
                    + "\(figures.floorUnderFarTalkDB) dB, background \(figures.backgroundAgainstMicrophoneDB) dB")
            residuals.append(figures.residualOverBackgroundDB)
            let ceiling = try #require(DeviceEchoCeilings.residualPerClip[clip.name], "no ceiling for \(clip.name)")
            #expect(
                figures.residualOverBackgroundDB <= ceiling,
                "\(clip.name): output in far talk \(figures.residualOverBackgroundDB) dB over its background")
            #expect(
                figures.floorUnderFarTalkDB >= DeviceEchoCeilings.floorUnderFarTalk,
                "\(clip.name): floor under far talk \(figures.floorUnderFarTalkDB) dB against the microphone's")
            // No pumping: the floor under far talk against the same output's floor with nobody talking (what noise
            // suppression takes from the background counts on both sides).
            let pumping = figures.floorUnderFarTalkDB - figures.backgroundAgainstMicrophoneDB
            #expect(
                pumping >= DeviceEchoCeilings.floorUnderFarTalkAgainstBackground, "\(clip.name): pumping \(pumping) dB")
        }
        try #require(residuals.count >= DeviceEchoCeilings.clipsWithBackground, "clips with a background: \(residuals)")
        let median = residuals.sorted()[residuals.count / 2]
        #expect(median <= DeviceEchoCeilings.residualMedian, "median residual over background \(median) dB")
    }

    /// The measure itself: the microphone scored as its own output shows the echo over the background it holds
    /// (the echo-to-noise ratio), and an output that is the microphone's background alone scores 0.
    @Test func measureSeesTheEchoInTheMicrophone() throws {
        let clip = try #require(try DeviceEchoClip.load(folder: devices).first { $0.name == "challenge-9mkQ-fst" })
        let (far, mic) = try clip.read(folder: devices)
        let unprocessed = try #require(clip.measure(far: far, mic: mic, output: mic))
        #expect(unprocessed.residualOverBackgroundDB == unprocessed.echoToNoiseDB)
        #expect(unprocessed.residualOverBackgroundDB > 20, "echo over the background: \(unprocessed)")
        #expect(abs(unprocessed.backgroundAgainstMicrophoneDB) < 1e-9)
    }
}

/// Bounds of `DeviceEchoTests` (dB), about 1.5 dB past the default configuration's figures, the transient suppressor
/// on as in a call (residual over background 2.9, 1.1, 1.8, 0.2 dB on the four clips with a background, upper median
/// 1.8; floor under far talk +1.9, -2.2, +0.2, -9.8 dB, the last clip's background being the suppressor's start-up
/// hold over the far end's -50 dBFS lead-in, its comfort noise 9 dB short of the microphone; that floor against the
/// output's own background +3.4, -2.2, +0.2, -1.1 dB). 9mkQ's ceiling is the target, 3 dB: it meets it (2.90).
enum DeviceEchoCeilings {
    static let clipsWithBackground = 4
    static let residualPerClip: [String: Double] = [
        "challenge-9mkQ-fst": 3.0, "challenge-0woD-dt": 2.6, "challenge-0woD-dt-move": 3.3, "challenge-DMTg-dt": 1.7
    ]
    static let residualMedian = 3.0
    static let floorUnderFarTalk = -11.0
    /// The target: the background under far talk within 3 dB of the background with nobody talking.
    static let floorUnderFarTalkAgainstBackground = -3.0
}

/// The same measure on the 24-clip `aec-devices-all` (its `clips.json`; the ten clips with a background): the
/// residual target's median and no pumping, where the default configuration meets them, and a per-clip regression
/// guard on the residual. With noise suppression on, the floor under far talk is held against the output's own
/// background (what the suppression leaves with nobody talking), not against the microphone's.
@Suite(
    "Echo canceller on the 24 real-device recordings", .tags(.slow), .scheduledByTags,
    .enabled(if: SharedTestData.exists("aec-devices-all/clips.json"), "../shared/testdata/aec-devices-all absent"))
struct DeviceEchoAllClipsTests {
    @Test func residualMedianAndSteadyBackground() throws {
        let clips = try DeviceEchoClip.load(folder: allDevices).filter {
            DeviceEchoAllClipsCeilings.residualPerClip[$0.name] != nil
        }
        try #require(clips.count == DeviceEchoAllClipsCeilings.residualPerClip.count, "clips: \(clips.map(\.name))")
        var residuals: [Double] = []
        for clip in clips {
            let (far, mic) = try clip.read(folder: allDevices)
            let run = try AECRunner.runEngine(
                far: far, mic: mic, configuration: EchoCancellerConfiguration(),
                transientSuppression: TransientSuppressorConfiguration())
            let figures = try #require(
                clip.measure(far: far, mic: mic, output: run.output), "\(clip.name): no background")
            let pumping = figures.floorUnderFarTalkDB - figures.backgroundAgainstMicrophoneDB
            print(
                "\(clip.name): residual over background \(figures.residualOverBackgroundDB) dB, pumping \(pumping) dB")
            residuals.append(figures.residualOverBackgroundDB)
            let ceiling = try #require(DeviceEchoAllClipsCeilings.residualPerClip[clip.name])
            #expect(
                figures.residualOverBackgroundDB <= ceiling,
                "\(clip.name): output in far talk \(figures.residualOverBackgroundDB) dB over its background")
            let least =
                DeviceEchoAllClipsCeilings.pumpingPerClip[clip.name]
                ?? DeviceEchoCeilings.floorUnderFarTalkAgainstBackground
            #expect(
                pumping >= least, "\(clip.name): floor under far talk \(pumping) dB against the output's background")
        }
        let sorted = residuals.sorted()
        let median = (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
        #expect(median <= DeviceEchoAllClipsCeilings.residualMedian, "median residual over background \(median) dB")
    }
}

/// Bounds of `DeviceEchoAllClipsTests` (dB). Residual over background per clip 1.5 dB past the default
/// configuration's figures, the transient suppressor on (9mkQ 2.9, 0woD 1.1, 0woD-move 1.8, DMTg 0.2, QtLE -0.5,
/// dFw0-move 14.5, 6558 -2.5, BxSd -3.8, ZZaP-move 0.6, s7c6-move -1.6; median 0.4, the target 1); 9mkQ's is the
/// target, 3, which it meets (2.90). Floor under far talk against the output's own background: the target, -3, on
/// every clip but 6558, measured -2.96, whose guard stands 0.24 under it; the others measured +3.4, -2.2, +0.2,
/// -1.1, -1.5, +2.3, -1.3, +0.9, -0.3. The targets not met: dFw0-move stands over 3 dB (93 % of it the low thumps of
/// the device being handled, `Benchmarks/scripts/aec-near-end-events.py`), and 9mkQ's floor 3.4 dB over its
/// background (the comfort noise's steadiness against a fluctuating background, TestVectors/aec/README.md).
enum DeviceEchoAllClipsCeilings {
    static let residualPerClip: [String: Double] = [
        "challenge-9mkQ-fst": 3.0, "challenge-0woD-dt": 2.6, "challenge-0woD-dt-move": 3.3, "challenge-DMTg-dt": 1.7,
        "challenge-QtLE-dt": 1.0, "challenge22-dFw0-fst-move": 16.0, "challenge22-6558-dt": -1.0,
        "challenge22-BxSd-dt": -2.3, "challenge22-ZZaP-dt-move": 2.1, "challenge22-s7c6-dt-move": -0.1
    ]
    static let residualMedian = 1.0
    static let pumpingPerClip: [String: Double] = ["challenge22-6558-dt": -3.2]
}
