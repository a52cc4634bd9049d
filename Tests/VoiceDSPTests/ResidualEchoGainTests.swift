import Foundation
import Testing
import VoiceDSP
import VoiceLab

@Suite("Residual-echo gain")
struct ResidualEchoGainTests {
    @Test func residualEchoGainDeepensSingleTalkAndKeepsTheNearEnd() throws {
        // The double_talk vector's scenario: the gain must attenuate what MDF leaves in far-end single talk (10-20 s)
        // and leave the near-end talker (nearly) as it was without it. It acts once MDF has cancelled ~20 dB (its
        // residual estimate is capped at a tenth of the echo estimate), so it is judged in the steady state.
        var scenario = AECScenario(name: "gain")
        scenario.nearSeed = 202
        let signals = AECVectorGenerator.generate(scenario)
        let off = try AECRunner.runEngine(
            far: signals.far, mic: signals.mic,
            configuration: EchoCancellerConfiguration(residualEchoGainFloorDB: nil, residualEchoSuppressorFloorDB: nil))
        let on = try AECRunner.runEngine(
            far: signals.far, mic: signals.mic,
            configuration: EchoCancellerConfiguration(residualEchoSuppressorFloorDB: nil))
        let mask = AECRunner.singleTalkBlocks(
            referenceMeanSquare: on.referenceMeanSquare, near: signals.near, blockSize: 160)
        let erleOff = try #require(
            AECRunner.erle(mic: signals.mic, output: off.output, blocks: mask, blockSize: 160, fromBlock: 1000))
        let erleOn = try #require(
            AECRunner.erle(mic: signals.mic, output: on.output, blocks: mask, blockSize: 160, fromBlock: 1000))
        #expect(erleOn > erleOff + 3, "ERLE with the gain \(erleOn) dB, without \(erleOff) dB")
        let nearOff = AECRunner.nearEndSegmentalSNR(near: signals.near, output: off.output, sampleRate: 16_000)
        let nearOn = AECRunner.nearEndSegmentalSNR(near: signals.near, output: on.output, sampleRate: 16_000)
        #expect(nearOn > nearOff - 1, "near-end segSNR with the gain \(nearOn) dB, without \(nearOff) dB")
    }

    @Test func residualEchoGainFloorOutOfRangeIsRejectedNamingTheField() {
        expectFloorsRejected([-61.0, 1, .nan], field: "residualEchoGainFloorDB") {
            EchoCancellerConfiguration(residualEchoGainFloorDB: $0)
        }
    }
}

/// Each floor in `floors` must make `EchoCanceller.init` throw `invalidArgument` naming `field`.
func expectFloorsRejected(
    _ floors: [Double], field: String, configuration: (Double) -> EchoCancellerConfiguration
) {
    for floor in floors {
        do {
            _ = try EchoCanceller(configuration: configuration(floor))
            Issue.record("floor \(floor) accepted")
        } catch {
            guard case .invalidArgument(let named, _) = error else {
                Issue.record("wrong error \(error)")
                continue
            }
            #expect(named == field)
        }
    }
}
