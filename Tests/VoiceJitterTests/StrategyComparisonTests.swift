import Foundation
import Testing
import VoiceCore
import VoiceJitter
import VoiceNetSim

/// The scenarios, both strategies on identical seeded input; prints the table the report quotes.
let comparisonScenarios: [(String, NetworkConditions)] = [
    ("clean", NetworkConditions(baseDelayMilliseconds: 30, seed: 1)),
    ("loss2_normal20", NetworkConditions(baseDelayMilliseconds: 30, jitter: .normal(meanMilliseconds: 0, standardDeviationMilliseconds: 20), loss: .bernoulli(probability: 0.02), seed: 2)),
    ("burst5_pareto40", NetworkConditions(baseDelayMilliseconds: 30, jitter: .pareto(scaleMilliseconds: 40, shape: 2.5), loss: .gilbertElliott(goodToBad: 0.0125, badToGood: 0.25), seed: 3)),
    ("outage3s", NetworkConditions(baseDelayMilliseconds: 30, jitter: .normal(meanMilliseconds: 0, standardDeviationMilliseconds: 5), outages: [Outage(start: .seconds(10), duration: .seconds(3))], seed: 4)),
    ("drift+200ppm", NetworkConditions(baseDelayMilliseconds: 30, jitter: .normal(meanMilliseconds: 0, standardDeviationMilliseconds: 5), senderClockSkewPPM: 200, seed: 5)),
    ("drift-200ppm", NetworkConditions(baseDelayMilliseconds: 30, jitter: .normal(meanMilliseconds: 0, standardDeviationMilliseconds: 5), senderClockSkewPPM: -200, seed: 6)),
    ("step20_150_20", NetworkConditions(baseDelayMilliseconds: 20, phases: [DelayPhase(start: .seconds(10), baseDelayMilliseconds: 150), DelayPhase(start: .seconds(20), baseDelayMilliseconds: 20)], seed: 7)),
]

@Test(arguments: comparisonScenarios.map(\.0))
func adaptiveBufferIsNoWorseThanSpeexDSP(scenario: String) throws {
    let conditions = comparisonScenarios.first { $0.0 == scenario }!.1
    let a = try JitterFixtures.run(AdaptiveJitterBuffer(), seconds: 30, network: .conditions(conditions))
    let s = try JitterFixtures.run(SpeexJitterBuffer(), seconds: 30, network: .conditions(conditions))
    func row(_ name: String, _ r: JitterSimulation.Result) -> String {
        let st = r.statistics
        let late = Double(st.latePackets) / Double(max(1, r.packetsSent))
        let oracle = r.trace.oracleDelayMilliseconds(lateLoss: late) ?? 0
        return String(
            format: "%@ %@: e2e mean %.0f p95 %.0f ms | oracle@late %.0f ms | buffer mean %.0f ms | late %.2f%% | conceal %.2f%% | FEC %d | accel %d slow %d | flush %d",
            scenario, name, r.meanEndToEndDelayMilliseconds, r.p95EndToEndDelayMilliseconds, oracle, st.meanDelayMilliseconds,
            late * 100, st.concealmentRatio * 100, st.fecRecoveredFrames, st.acceleratedSamples, st.slowedDownSamples, st.flushes)
    }
    print(row("adaptive", a))
    print(row("speex   ", s))
    // Equal or lower loss (late + concealment), at no more than speexdsp's delay plus one tick.
    #expect(a.statistics.concealmentRatio <= s.statistics.concealmentRatio + 0.002)
    #expect(a.statistics.latePackets <= s.statistics.latePackets)
    #expect(a.meanEndToEndDelayMilliseconds <= s.meanEndToEndDelayMilliseconds * 1.1 + 10)
}
