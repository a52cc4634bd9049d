import ArgumentParser
import Foundation
import VoiceEngine
import VoiceLab

/// `voice-bench jitter [--trace FILE] [--json]`: the adaptive jitter buffer against the speexdsp jitter buffer on
/// identical input — Opus-encoded real speech through the seeded network simulator (or a recorded trace) — with
/// mean and 95th-percentile delay, late loss, concealment, FEC-recovered frames and the oracle floor per scenario
/// and strategy. A thin wrapper: the scenarios, the run and both output formats are `JitterBenchmark` in
/// VoiceJitter, which the tests use too.
struct JitterBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jitter",
        abstract: "Adaptive vs speexdsp jitter buffer on real speech through seeded network scenarios or a trace.",
        discussion: """
            Delay is end-to-end (play time - send time) over ticks that play received audio. Late loss counts \
            packets that arrived after their playout time (dropped, or played only after concealment waited for \
            them) over packets received. The oracle floor is the smallest fixed playout delay with the same late \
            loss on that trace, per strategy. Trace CSV: header send_ms,arrival_ms, one row per 20 ms packet in \
            send order, arrival_ms empty when lost.
            """)

    @Option(help: "Replay this trace (CSV send_ms,arrival_ms) instead of the standard scenarios.")
    var trace: String?

    @Option(help: "Shared test data folder holding speech/jfk_16k_mono.wav (default: ../shared/testdata next to the repository).")
    var testdata: String?

    @Option(help: "Seconds of speech per standard scenario.")
    var seconds: Double = 30

    @Option(help: "Also run this many draws of each standard scenario (seeds moved by 1000 each, the first draw being the standard one) and print how often the adaptive buffer meets the criterion, how often speexdsp dominates it, and each strategy's mean delay ÷ oracle floor. 0: off.")
    var seeds: Int = 0

    @Flag(help: "End with one JSON line {\"suite\":\"jitter\",\"scenarios\":[…]}.")
    var json = false

    func validate() throws {
        try requireOption("--seconds", seconds, within: 1...3_600, "s (a scenario needs at least 1 s of speech)")
        try requireOption("--seeds", Double(seeds), within: 0...1_000, "draws (0 for none)")
        if trace != nil && seeds > 0 {
            throw ValidationError("--seeds draws the standard scenarios again; a --trace is replayed as recorded")
        }
    }

    func run() throws {
        // This file is Benchmarks/Sources/voice-bench/JitterBench.swift: the repository root is four levels up.
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let shared = testdata.map { [$0] }
            ?? [repository.deletingLastPathComponent().appendingPathComponent("shared/testdata").path, "../shared/testdata"]
        let candidates = shared.flatMap { dir in
            ["jfk_16k_mono.wav", "pystoi_clean_16k.wav"].map { "\(dir)/speech/\($0)" }
        }
        let speech = try JitterBenchmark.loadSpeech(
            candidates: candidates, fallback: repository.appendingPathComponent("TestVectors/speech_like_16k.wav").path)

        let scenarios: [JitterBenchmark.Scenario]
        if let trace {
            let parsed = try NetworkTrace(contentsOf: URL(fileURLWithPath: trace))
            scenarios = [JitterBenchmark.traceScenario(parsed, name: URL(fileURLWithPath: trace).lastPathComponent)]
        } else {
            scenarios = JitterBenchmark.standardScenarios(seconds: seconds)
        }

        print("voice-bench jitter: speech \(speech.source) (\(speech.samples.count / 16_000) s, looped), Opus 16 kHz 20 ms FEC")
        if let note = speech.note { print("note: \(note)") }
        var results: [JitterBenchmark.ScenarioResult] = []
        for scenario in scenarios {
            results.append(try JitterBenchmark.run(scenario, speech: speech.samples))
            fflush(nil)  // all streams: progress shows when piped too
        }
        print(JitterBenchmark.table(results))
        let met = results.filter { $0.adaptiveMeetsCriteria() }.map(\.name)
        let missed = results.filter { !$0.adaptiveMeetsCriteria() }.map(\.name)
        print("adaptive mean ≤ 1.25 × oracle and ≤ speex at ≤ speex late loss: met \(met.count)/\(results.count)"
            + (missed.isEmpty ? "" : ", missed: \(missed.joined(separator: ", "))"))
        if seeds > 1 {  // validate() refuses --seeds with --trace
            var draws = [results]
            for k in 1..<seeds {
                let moved = JitterBenchmark.standardScenarios(seconds: seconds, seedOffset: UInt64(k) * 1_000)
                draws.append(try moved.map { try JitterBenchmark.run($0, speech: speech.samples) })
            }
            print("\nover \(seeds) draws of each scenario (meets: the criterion above; not dominated: within 1.25 x oracle and "
                + "speexdsp not better on one figure and no worse on the other):")
            print(JitterBenchmark.seedSweepTable(JitterBenchmark.seedSweep(draws)))
        }
        if json { print(JitterBenchmark.json(results)) }
        fflush(nil)  // all streams: progress shows when piped too
    }
}
