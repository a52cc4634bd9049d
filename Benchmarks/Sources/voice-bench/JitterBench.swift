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

    @Option(
        help:
            "Shared test data folder holding speech/jfk_16k_mono.wav (default: ../shared/testdata next to the repository)."
    )
    var testdata: String?

    @Option(help: "Seconds of speech per standard scenario.")
    var seconds: Double = 30

    @Option(
        help:
            "Also run this many draws of each standard scenario (seeds moved by 1000 each, the first draw being the standard one) and print how often the adaptive buffer meets the criterion, how often speexdsp dominates it, and each strategy's mean delay ÷ oracle floor. 0: off."
    )
    var seeds: Int = 0

    @Flag(
        help:
            "Instead of the delay scenarios, the listening-quality table: the whole real-speech set (65 s) through 0/5/10 % loss without jitter, with 30 ms jitter, and 5/10 % bursts, over --quality-seeds draws; PESQ-WB (Benchmarks/scripts/pesq-wb.py, where Python's pesq is installed) of adaptive, speexdsp and the ideal receiver, the spectral distance to the ideal receiver, mean delay, late loss and time-stretching."
    )
    var quality = false

    @Option(
        help: ArgumentHelp(
            "Speech of the quality table: clean (speech/, 65 s of several talkers) or noisy (speech-noisy/, 43 s of "
                + "a hissy recording, real devices' talkers in room noise and speech over café noise).",
            valueName: "clean|noisy"))
    var speech = "clean"

    @Option(help: "Draws of each quality condition (seeds 1...N).")
    var qualitySeeds = 3

    @Flag(help: "End with one JSON line {\"suite\":\"jitter\",\"scenarios\":[…]}.")
    var json = false

    func validate() throws {
        try requireOption("--seconds", seconds, within: 1...3_600, "s (a scenario needs at least 1 s of speech)")
        try requireOption("--seeds", Double(seeds), within: 0...1_000, "draws (0 for none)")
        try requireOption("--quality-seeds", Double(qualitySeeds), within: 1...100, "draws")
        guard speech == "clean" || speech == "noisy" else {
            throw ValidationError("--speech: \(speech); clean or noisy")
        }
        if speech == "noisy" && !quality {
            throw ValidationError("--speech noisy chooses the --quality table's speech")
        }
        if quality && (trace != nil || seeds > 0) {
            throw ValidationError("--quality runs its own conditions; it takes neither --trace nor --seeds")
        }
        if trace != nil && seeds > 0 {
            throw ValidationError("--seeds draws the standard scenarios again; a --trace is replayed as recorded")
        }
    }

    func run() throws {
        // This file is Benchmarks/Sources/voice-bench/JitterBench.swift: the repository root is four levels up.
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let shared =
            testdata.map { [$0] }
            ?? [
                repository.deletingLastPathComponent().appendingPathComponent("shared/testdata").path,
                "../shared/testdata"
            ]
        let candidates = shared.flatMap { dir in
            ["jfk_16k_mono.wav", "pystoi_clean_16k.wav"].map { "\(dir)/speech/\($0)" }
        }
        if quality {
            try runQuality(shared: shared)
            return
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

        print(
            "voice-bench jitter: speech \(speech.source) (\(speech.samples.count / 16_000) s, looped), Opus 16 kHz 20 ms FEC"
        )
        if let note = speech.note { print("note: \(note)") }
        var results: [JitterBenchmark.ScenarioResult] = []
        for scenario in scenarios {
            results.append(try JitterBenchmark.run(scenario, speech: speech.samples))
            fflush(nil)  // all streams: progress shows when piped too
        }
        print(JitterBenchmark.table(results))
        let met = results.filter { $0.adaptiveMeetsCriteria() }.map(\.name)
        let missed = results.filter { !$0.adaptiveMeetsCriteria() }.map(\.name)
        print(
            "adaptive mean ≤ 1.25 × oracle and ≤ speex at ≤ speex late loss: met \(met.count)/\(results.count)"
                + (missed.isEmpty ? "" : ", missed: \(missed.joined(separator: ", "))"))
        if seeds > 1 {  // validate() refuses --seeds with --trace
            var draws = [results]
            for k in 1..<seeds {
                let moved = JitterBenchmark.standardScenarios(seconds: seconds, seedOffset: UInt64(k) * 1_000)
                draws.append(try moved.map { try JitterBenchmark.run($0, speech: speech.samples) })
            }
            print(
                "\nover \(seeds) draws of each scenario (meets: the criterion above; not dominated: within 1.25 x oracle and "
                    + "speexdsp not better on one figure and no worse on the other):")
            print(JitterBenchmark.seedSweepTable(JitterBenchmark.seedSweep(draws)))
        }
        if json { print(JitterBenchmark.json(results)) }
        fflush(nil)  // all streams: progress shows when piped too
    }

    /// The listening-quality table (Benchmarks/README.md section 7): means over `qualitySeeds` draws per condition.
    func runQuality(shared: [String]) throws {
        guard
            let speech = try shared.lazy.compactMap({
                self.speech == "noisy"
                    ? try JitterBenchmark.loadSpeechSet(
                        directory: "\($0)/speech-noisy", files: JitterBenchmark.noisySpeechSetFiles)
                    : try JitterBenchmark.loadSpeechSet(directory: "\($0)/speech")
            }).first
        else {
            throw ValidationError(
                "no \(self.speech) real speech under \(shared.joined(separator: " or ")): the quality table needs it "
                    + "(--testdata)")
        }
        let seconds = Double(speech.samples.count / 320 * 320) / 16_000
        print(
            "voice-bench jitter --quality: \(speech.source), \(String(format: "%.1f", seconds)) s, Opus 16 kHz 20 ms 24 kb/s FEC, "
                + "means of \(qualitySeeds) draws")
        print(
            "PESQ-WB of adaptive / speexdsp / ideal receiver against the input (aligned by overall delay); dist: spectral "
                + "distance to the ideal receiver (dB); delay: mean end-to-end (ms); stretch: samples per minute")
        func pad(_ s: String, _ w: Int) -> String {
            s.count >= w ? " " + s : String(repeating: " ", count: w - s.count) + s
        }
        func f(_ x: Double?, _ d: Int = 2) -> String { x.map { String(format: "%.\(d)f", $0) } ?? "—" }
        print(
            "condition".padding(toLength: 17, withPad: " ", startingAt: 0) + pad("PESQ ad", 8) + pad("speex", 7)
                + pad("ideal", 7)
                + pad("dist ad", 8) + pad("speex", 7) + pad("delay ad", 9) + pad("speex", 7) + pad("late % ad", 10)
                + pad("speex", 7) + pad("stretch ad", 11) + pad("FEC ad", 7) + pad("speex", 6))
        let names = JitterBenchmark.qualityScenarios(seconds: seconds).map(\.name)
        for (index, name) in names.enumerated() {
            var sums = [Double](repeating: 0, count: 13)
            var pesqCount = [Int](repeating: 0, count: 3)
            for seed in 1...qualitySeeds {
                let scenario = JitterBenchmark.qualityScenarios(seconds: seconds, seed: UInt64(seed))[index]
                let r = try JitterBenchmark.run(scenario, speech: speech.samples)
                let input = JitterBenchmark.looped(speech.samples, seconds: seconds)
                for (k, out) in [r.adaptive.simulation.output, r.speex.simulation.output, r.ideal.output].enumerated() {
                    if let p = PESQ.wideband(reference: input, degraded: out) {
                        sums[k] += p
                        pesqCount[k] += 1
                    }
                }
                sums[3] += r.adaptive.distanceToIdeal.decibels
                sums[4] += r.speex.distanceToIdeal.decibels
                sums[5] += r.adaptive.meanDelayMilliseconds
                sums[6] += r.speex.meanDelayMilliseconds
                sums[7] += r.adaptive.lateLossPercent
                sums[8] += r.speex.lateLossPercent
                sums[9] += r.adaptive.stretchedSamplesPerMinute
                sums[10] += Double(r.adaptive.fecRecoveredFrames)
                sums[11] += Double(r.speex.fecRecoveredFrames)
            }
            let n = Double(qualitySeeds)
            func pesq(_ k: Int) -> Double? { pesqCount[k] == qualitySeeds ? sums[k] / n : nil }
            print(
                name.padding(toLength: 17, withPad: " ", startingAt: 0) + pad(f(pesq(0)), 8) + pad(f(pesq(1)), 7)
                    + pad(f(pesq(2)), 7) + pad(f(sums[3] / n), 8) + pad(f(sums[4] / n), 7) + pad(f(sums[5] / n, 1), 9)
                    + pad(f(sums[6] / n, 1), 7) + pad(f(sums[7] / n), 10) + pad(f(sums[8] / n), 7)
                    + pad(f(sums[9] / n, 0), 11) + pad(f(sums[10] / n, 0), 7) + pad(f(sums[11] / n, 0), 6))
            fflush(nil)
        }
    }
}
