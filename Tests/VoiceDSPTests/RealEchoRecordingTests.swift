import Foundation
import Testing
import VoiceCore
import VoiceDSP
import VoiceLab
import VoiceTestSupport

private let aecReal = URL(fileURLWithPath: SharedTestData.path("aec-real"))

private func samples(_ name: String) throws -> [Int16] {
    try WAVFile.read(path: aecReal.appendingPathComponent(name).path).int16Samples
}

/// The canceller on realistic echo (the AEC-Challenge recordings of ../shared/testdata/aec-real, see its README):
/// loudspeaker nonlinearity, real rooms and devices. Floors a few dB under what the default configuration measures
/// (`voice-bench aec --real`), so a regression fails; the WebRTC comparison itself is the benchmark's.
@Suite("Echo canceller on real recordings", .enabled(if: SharedTestData.exists("aec-real"), "../shared/testdata/aec-real absent"))
struct RealEchoRecordingTests {
    static let configuration = EchoCancellerConfiguration()

    @Test func challengeDoubleTalkClipIsCancelledFromTheStart() throws {
        let far = try samples("farend_double_talk.wav")
        let near = try samples("nearend_double_talk.wav")
        let mic = zip(try samples("echo_double_talk.wav"), near).map { Int16(clamping: Int($0) + Int($1)) }
        let run = try AECRunner.runEngine(far: far, mic: mic, configuration: Self.configuration)
        let mask = AECRunner.singleTalkBlocks(
            referenceMeanSquare: far.chunks(160).map(meanSquare), near: near, blockSize: 160)
        let whole = try #require(AECRunner.erle(mic: mic, output: run.output, blocks: mask, blockSize: 160))
        let first = try #require(
            AECRunner.erle(mic: mic, output: run.output, blocks: mask, blockSize: 160, fromBlock: 0, toBlock: 200))
        #expect(whole >= RealEchoFloors.challengeERLE, "ERLE over far-end single talk \(whole) dB")
        #expect(first >= RealEchoFloors.challengeFirst2s, "ERLE in the first 2 s \(first) dB")
        let nearSNR = AECRunner.nearEndSegmentalSNR(near: near, output: run.output, sampleRate: 16_000)
        #expect(nearSNR >= RealEchoFloors.challengeNearSegSNR, "near-end segmental SNR \(nearSNR) dB")
    }

    @Test func realDeviceEchoIsCancelledBeforeTheNearEndSpeaks() throws {
        // Far-end single talk in the first 3.5 s (the near talker enters at ~4 s); no clean near end.
        let (far, mic, run) = try Self.runDevice("DMTgmZwtgUilp4omPK7-OQ_doubletalk")
        var mask = AECRunner.singleTalkBlocks(referenceMeanSquare: far.chunks(160).map(meanSquare), near: nil, blockSize: 160)
        for b in mask.indices where b >= 350 { mask[b] = false }
        let erle = try #require(AECRunner.erle(mic: mic, output: run.output, blocks: mask, blockSize: 160))
        #expect(erle >= RealEchoFloors.deviceFirstSeconds, "ERLE over 0-3.5 s \(erle) dB")
        // The far end starts at 0.5 s: its first 2 s (issue 15's start-up target, 20 dB).
        let first = try #require(
            AECRunner.erle(mic: mic, output: run.output, blocks: mask, blockSize: 160, fromBlock: 50, toBlock: 250))
        #expect(first >= RealEchoFloors.deviceFirst2s, "ERLE in the first 2 s of far-end speech \(first) dB")
    }

    @Test func realDeviceNearEndSingleTalkKeepsTheMicrophone() throws {
        // The far end is silent: the output should be the microphone, less what noise suppression takes (segmental
        // SNR of one against the other).
        let (_, mic, run) = try Self.runDevice("DLhjtuwiEkS-68TsUVvW5g_nearend_singletalk")
        let snr = AECRunner.nearEndSegmentalSNR(near: mic, output: run.output, sampleRate: 16_000)
        #expect(snr >= RealEchoFloors.nearSingleTalkSegSNR, "output against microphone: segmental SNR \(snr) dB")
    }

    /// A device pair (`_lpb` played, `_mic` recorded) cut to its shorter file, and the canceller's run on it.
    static func runDevice(_ name: String) throws -> (far: [Int16], mic: [Int16], run: AECRunner.Run) {
        let far = try samples("\(name)_lpb.wav")
        let mic = try samples("\(name)_mic.wav")
        let count = min(far.count, mic.count)
        let cut = (Array(far[..<count]), Array(mic[..<count]))
        return (cut.0, cut.1, try AECRunner.runEngine(far: cut.0, mic: cut.1, configuration: configuration))
    }
}

/// What the default configuration must keep reaching on the recordings: measured (2026-11-24, per-band suppressor
/// on) minus a margin. Measured: challenge clip ERLE 13.9 dB (broadband gain before: 11.0; WebRTC 25.3), first 2 s
/// 38.8 (before 9.9; WebRTC 19.5), near-end segSNR 3.9; device 0-3.5 s 3.6 (before 1.1; WebRTC 1.5); device near-end
/// single talk against its microphone 13.0 (the preprocessor's noise suppression is most of that difference).
enum RealEchoFloors {
    /// 28.2 dB measured (`voice-bench aec --real`; WebRTC 25.3): it was 14 while a single wrong delay-jump search in double
    /// talk could shift the reference.
    static let challengeERLE = 25.0
    static let challengeFirst2s = 30.0
    static let challengeNearSegSNR = 2.5
    /// 33.4 dB over 0-3.5 s and 40.1 in the first 2 s measured (`voice-bench aec --real`, 2026-11-26; 6.3 and 5.9
    /// before the suppressor held its echo-path gain until the reference was aligned). The microphone's own
    /// echo-to-noise ratio there is ~10 dB and the start-up output is comfort noise under the real background, so
    /// these figures count noise removed too (`Benchmarks/scripts/aec-device-clip.py`, TestVectors/aec/README.md).
    static let deviceFirstSeconds = 25.0
    static let deviceFirst2s = 20.0
    static let nearSingleTalkSegSNR = 11.0
}

private func meanSquare(_ block: ArraySlice<Int16>) -> Double {
    block.reduce(0) { $0 + Double($1) * Double($1) } / Double(max(block.count, 1))
}

extension Collection where Index == Int {
    fileprivate func chunks(_ size: Int) -> [SubSequence] {
        stride(from: startIndex, to: endIndex - size + 1, by: size).map { self[$0..<$0 + size] }
    }
}
