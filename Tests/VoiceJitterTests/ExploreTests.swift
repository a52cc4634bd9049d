import Testing
import VoiceCore
import VoiceJitter
import VoiceNetSim

@Test func exploreScenarios() throws {
    let scenarios: [(String, NetworkConditions)] = [
        ("clean", NetworkConditions(baseDelayMilliseconds: 30, seed: 1)),
        ("2% + normal20", NetworkConditions(baseDelayMilliseconds: 30, jitter: .normal(meanMilliseconds: 0, standardDeviationMilliseconds: 20), loss: .bernoulli(probability: 0.02), seed: 2)),
        ("5% GE + pareto40", NetworkConditions(baseDelayMilliseconds: 30, jitter: .pareto(scaleMilliseconds: 40, shape: 2.5), loss: .gilbertElliott(goodToBad: 0.02, badToGood: 0.4), seed: 3)),
        ("outage 3s", NetworkConditions(baseDelayMilliseconds: 30, jitter: .normal(meanMilliseconds: 0, standardDeviationMilliseconds: 5), outages: [Outage(start: .seconds(10), duration: .seconds(3))], seed: 4)),
        ("+200ppm", NetworkConditions(baseDelayMilliseconds: 30, jitter: .normal(meanMilliseconds: 0, standardDeviationMilliseconds: 5), senderClockSkewPPM: 200, seed: 5)),
        ("-200ppm", NetworkConditions(baseDelayMilliseconds: 30, jitter: .normal(meanMilliseconds: 0, standardDeviationMilliseconds: 5), senderClockSkewPPM: -200, seed: 6)),
        ("step 20-150-20", NetworkConditions(baseDelayMilliseconds: 20, phases: [DelayPhase(start: .seconds(10), baseDelayMilliseconds: 150), DelayPhase(start: .seconds(20), baseDelayMilliseconds: 20)], seed: 7)),
    ]
    for (name, c) in scenarios {
        for (sname, make) in [("adaptive", { try AdaptiveJitterBuffer() as JitterBufferStrategy }), ("speex", { try SpeexJitterBuffer() as JitterBufferStrategy })] {
            let r = try JitterFixtures.run(make(), seconds: 30, network: .conditions(c))
            let s = r.statistics
            let late = Double(s.latePackets) / Double(r.packetsSent)
            let oracle = r.trace.oracleDelayMilliseconds(lateLoss: late) ?? 0
            print(name, sname, "e2e mean", Int(r.meanEndToEndDelayMilliseconds), "p95", Int(r.p95EndToEndDelayMilliseconds), "oracle", Int(oracle),
                  "buf mean", Int(s.meanDelayMilliseconds), "late%", String(format: "%.2f", late*100), "conceal%", String(format: "%.2f", s.concealmentRatio*100),
                  "fec", s.fecRecoveredFrames, "acc", s.acceleratedSamples, "slow", s.slowedDownSamples, "flush", s.flushes, "dup", s.duplicatePackets, Dictionary(grouping: r.operations, by: { $0 }).mapValues(\.count))
        }
    }
}
