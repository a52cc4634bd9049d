import Foundation
import Testing
import VoiceDSP
import VoiceLab

@Suite("Per-band residual-echo suppressor")
struct ResidualEchoSuppressorTests {
    /// The soft-clip vector's scenario with a hard loudspeaker (the echo MDF cannot model) and a near end.
    static func nonlinearScenario() -> AECScenario {
        var scenario = AECScenario(name: "nonlinear")
        scenario.seconds = 8
        scenario.softClip = 8
        scenario.nearSeed = 202
        return scenario
    }

    @Test func suppressorRemovesNonlinearEchoTheBroadbandGainLeaves() throws {
        // From the first seconds: ERLE over far-end single talk 1-4 s, per-band suppressor against the broadband
        // gain, and the near end's segmental SNR not more than 3 dB lower.
        let signals = AECVectorGenerator.generate(Self.nonlinearScenario())
        let perBand = try AECRunner.runEngine(far: signals.far, mic: signals.mic, configuration: EchoCancellerConfiguration())
        let broadband = try AECRunner.runEngine(
            far: signals.far, mic: signals.mic, configuration: EchoCancellerConfiguration(residualEchoSuppressorFloorDB: nil))
        let mask = AECRunner.singleTalkBlocks(
            referenceMeanSquare: perBand.referenceMeanSquare, near: signals.near, blockSize: 160)
        let early = try #require(
            AECRunner.erle(mic: signals.mic, output: perBand.output, blocks: mask, blockSize: 160, fromBlock: 100, toBlock: 400))
        let earlyBroadband = try #require(
            AECRunner.erle(mic: signals.mic, output: broadband.output, blocks: mask, blockSize: 160, fromBlock: 100, toBlock: 400))
        #expect(early >= 20, "per-band ERLE 1-4 s \(early) dB")
        #expect(early > earlyBroadband + 3, "per-band \(early) dB, broadband \(earlyBroadband) dB")
        let near = AECRunner.nearEndSegmentalSNR(near: signals.near, output: perBand.output, sampleRate: 16_000)
        let nearBroadband = AECRunner.nearEndSegmentalSNR(near: signals.near, output: broadband.output, sampleRate: 16_000)
        #expect(near > nearBroadband - 3, "near-end segSNR per-band \(near) dB, broadband \(nearBroadband) dB")
    }

    @Test func loneNearEndPassesUntouched() throws {
        // No far end at all: the suppressor must pass the near end as it came (its STFT reconstructs exactly; no
        // gain, no comfort noise). Judged against the canceller without it (same preprocessor and noise
        // suppression, which run in either case; no broadband gain in its place).
        var scenario = Self.nonlinearScenario()
        scenario.seconds = 4
        let signals = AECVectorGenerator.generate(scenario)
        let silent = [Int16](repeating: 0, count: signals.near.count)
        let with = try AECRunner.runEngine(far: silent, mic: signals.near, configuration: EchoCancellerConfiguration())
        let without = try AECRunner.runEngine(
            far: silent, mic: signals.near,
            configuration: EchoCancellerConfiguration(residualEchoGainFloorDB: nil, residualEchoSuppressorFloorDB: nil))
        let snr = AECRunner.nearEndSegmentalSNR(near: without.output, output: with.output, sampleRate: 16_000)
        #expect(snr > 30, "with against without the suppressor: segmental SNR \(snr) dB")
    }

    @Test func floorOutOfRangeIsRejectedNamingTheField() {
        expectFloorsRejected([-81.0, 1, .nan], field: "residualEchoSuppressorFloorDB") {
            EchoCancellerConfiguration(residualEchoSuppressorFloorDB: $0)
        }
    }
}
