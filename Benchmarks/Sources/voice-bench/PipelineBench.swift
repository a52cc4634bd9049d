#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import BenchmarkFixtures
import CBaseline
import VoiceEngine

/// `voice-bench pipeline`: one full-duplex call leg per 20 ms (send and receive chains, 16 kHz processing with
/// echo cancellation and noise suppression, Opus complexity 5, SRTP) against the plain C loop of
/// `cbaseline_pipeline.c` making the same library calls on the same input; then how many legs one core sustains.
///
/// Both sides run the same loopback of two legs calling each other (`PipelineLoopback` /
/// `cb_pipeline_pair_loop`), alternating rounds as the codec suite does. Reported per leg and per 20 ms: the whole
/// leg and its three parts (capture = 2 × processCapture incl. encode/packetize/protect; receive = 1 datagram;
/// playout = 2 × renderPlayout incl. decode). Two configurations: `Pipeline.leg.20ms` is the stream as a call runs
/// it (echo canceller with GCC-PHAT delay alignment and drift tracking, which the C loop has no counterpart
/// for); `….sameCalls` switches alignment and drift off, so both sides make exactly the same library calls.
struct PipelineBench: ParsableCommand {
    static let suiteName = "pipeline"
    static let configuration = CommandConfiguration(
        commandName: "pipeline",
        abstract: "A full-duplex call leg per 20 ms (AEC + NS at 16 kHz, Opus c5, SRTP): MediaStream vs a C loop.",
        discussion: """
            JSON (--json, last line): {"suite":"pipeline","results":[{"name","swift_us","c_us","ratio",\
            "paired_ratio"}],"legs_per_core":…,"c_legs_per_core":…}. Times are per leg per 20 ms. The C loop has \
            no jitter buffer (it decodes each packet in arrival order), so the ratio includes the adaptive \
            buffer's logic. See Benchmarks/README.md.
            """)

    @OptionGroup var options: SideBySideOptions

    @Option(help: "CPU seconds of the fast-time run that measures legs per core (per side); 0 skips it.")
    var legSeconds = 3.0

    @Option(help: "20 ms steps run on both sides before measuring (echo canceller aligned, jitter buffer settled).")
    var warmUpSteps = 500

    @Option(
        help: "Profiling aid: run only this side (swift or c) for --profile-steps steps after the warm-up, then exit.")
    var profile: String?

    @Option(help: "Steps (20 ms, both legs) of the --profile run.")
    var profileSteps = 500

    @Flag(help: "With --profile: the sameCalls configuration (no delay alignment or drift tracking).")
    var sameCalls = false

    func validate() throws {
        try requireOption("--leg-seconds", legSeconds, within: 0...3_600, "s")
        try requireOption("--warm-up-steps", Double(warmUpSteps), within: 0...1_000_000, "steps")
        try requireOption("--profile-steps", Double(profileSteps), within: 1...1_000_000, "steps")
    }

    mutating func run() throws {
        if let side = profile {
            // For `valgrind --tool=callgrind`: the instructions of N steps are the difference between two runs
            // with different --profile-steps (the warm-up and setup cancel out).
            guard side == "swift" || side == "c" else { throw ValidationError("--profile takes swift or c") }
            let pair = try PipelinePair(sameCallsOnly: sameCalls)
            pair.warmUp(steps: warmUpSteps)
            _ = cb_thread_cpu_ns()  // a marker: a debugger breaks here to watch (e.g. malloc) only the profiled steps
            let checksum = side == "swift" ? pair.runSwift(profileSteps).total : pair.runC(profileSteps).total
            print("profiled \(profileSteps) steps of \(side) (\(checksum > 0 ? "ok" : "?"))")
            return
        }
        let report = Report(
            suite: Self.suiteName, subject: "full-duplex leg per 20 ms, MediaStream vs plain C loop", nameWidth: 38,
            countTitle: "steps/round", countWidth: 13)
        report.printHeader(rounds: options.rounds)
        var results: [SideBySideResult] = []
        for sameCalls in [false, true] {
            let suffix = sameCalls ? ".sameCalls" : ""
            let names = ["leg", "capture", "receive", "playout"].map { "Pipeline.\($0).20ms\(suffix)" }
            guard options.filter.map({ f in names.contains { $0.contains(f) } }) ?? true else { continue }
            let pair = try PipelinePair(sameCallsOnly: sameCalls)
            pair.warmUp(steps: warmUpSteps)
            for result in pair.measure(
                names: names, rounds: options.rounds, roundNanoseconds: options.roundMilliseconds * 1e6)
            where options.filter.map({ result.name.contains($0) }) ?? true {
                report.printRow(result)
                results.append(result)
            }
        }
        var legsPerCore: (swift: Double, c: Double)?
        if legSeconds > 0 {
            let pair = try PipelinePair(sameCallsOnly: false)
            pair.warmUp(steps: warmUpSteps)
            legsPerCore = pair.legsPerCore(cpuSeconds: legSeconds)
            print(
                "legs per core (fast time, \(fixed(legSeconds, 1)) CPU s per side, default configuration): "
                    + "Swift \(fixed(legsPerCore!.swift, 1)), C \(fixed(legsPerCore!.c, 1))")
        }
        if options.json {
            let legs = legsPerCore.map {
                ",\"legs_per_core\":\(fixed($0.swift, 1)),\"c_legs_per_core\":\(fixed($0.c, 1))"
            }
            report.printJSON(results, extraFields: legs ?? ",\"legs_per_core\":null")
        }
        fflush(nil)
    }
}

/// The Swift loopback and the C loopback of one configuration, side by side.
private final class PipelinePair {
    let swift: PipelineLoopback
    let legA: CHandle
    let legB: CHandle
    let speaker = FixedBuffer<Int16>(count: 4 * PipelineFixtures.deviceRate / 100, repeating: 0)
    let cOperationNanoseconds = FixedBuffer<UInt64>(count: 3, repeating: 0)
    /// The C legs' rooms (the same acoustics as the Swift loopback's `PipelineRoom`s) and microphone scratch.
    let roomLines = [0, 1].map { _ in
        FixedBuffer<Int16>(
            count: Int(PipelineFixtures.echoDelaySeconds * Double(PipelineFixtures.deviceRate)), repeating: 0)
    }
    let rooms = FixedBuffer<cb_room>(count: 2, repeating: cb_room())
    let microphone = FixedBuffer<Int16>(count: PipelineFixtures.deviceRate / 100, repeating: 0)
    var cBlock = 0
    var sink = 0

    init(sameCallsOnly: Bool) throws {
        swift = try PipelineLoopback(sameCallsOnly: sameCallsOnly)
        let echo = PipelineFixtures.echoCanceller(sameCallsOnly: sameCallsOnly)
        let rate = PipelineFixtures.processingRate
        func leg(isA: Bool) -> CHandle {
            let local = PipelineFixtures.key(isA ? 1 : 2).bytes
            let remote = PipelineFixtures.key(isA ? 2 : 1).bytes
            return CHandle(
                cb_leg_create(
                    Int32(PipelineFixtures.deviceRate), Int32(rate), Int32(PipelineFixtures.bitrate),
                    Int32(PipelineFixtures.complexity), Int32(echo.tailMilliseconds * rate / 1000),
                    Int32(echo.preprocessor.noiseSuppressionDB ?? 0), Int32(echo.preprocessor.echoSuppressionDB),
                    Int32(echo.preprocessor.echoSuppressionActiveDB),
                    25,  // EchoCanceller reads the impulse response every 25 blocks (peakInterval)
                    Int32(echo.framesPerBlock(atRate: rate)),  // MDF + preprocessor frames per block, as Swift
                    local, remote, isA ? PipelineFixtures.ssrcA : PipelineFixtures.ssrcB,
                    PipelineFixtures.payloadType, isA ? 1_000 : 2_000, isA ? 100_000 : 200_000),
                "cb_leg_create", destroy: cb_leg_destroy)
        }
        legA = leg(isA: true)
        legB = leg(isA: false)
        for i in 0..<2 {
            rooms.pointer[i] = cb_room(
                line: roomLines[i].pointer.baseAddress, length: Int32(roomLines[i].count), position: 0,
                gain_q8: PipelineFixtures.echoGainQ8)
        }
    }

    /// Runs `steps` on the Swift side; nanoseconds per operation.
    func runSwift(_ steps: Int) -> (total: Double, ops: [Double]) {
        var times = PipelineOperationTimes()
        let start = cb_monotonic_ns()
        sink &+= swift.run(steps, times: &times)
        let end = cb_monotonic_ns()
        return (Double(end &- start), [Double(times.capture), Double(times.receive), Double(times.playout)])
    }

    func runC(_ steps: Int) -> (total: Double, ops: [Double]) {
        let ops = cOperationNanoseconds.pointer
        ops.update(repeating: 0)
        let start = cb_monotonic_ns()
        let sum = cb_pipeline_pair_loop(
            legA.pointer, legB.pointer, rooms.pointer.baseAddress, rooms.pointer.baseAddress! + 1,
            swift.micA.pointer.baseAddress, swift.micB.pointer.baseAddress,
            Int32(swift.deviceBlock), Int32(swift.blockCount), Int64(cBlock), Int64(steps),
            speaker.pointer.baseAddress, microphone.pointer.baseAddress, ops.baseAddress)
        let end = cb_monotonic_ns()
        precondition(sum >= 0, "cb_pipeline_pair_loop failed: \(sum)")
        sink &+= Int(sum)
        cBlock = (cBlock + 2 * steps) % swift.blockCount
        return (Double(end &- start), [Double(ops[0]), Double(ops[1]), Double(ops[2])])
    }

    func warmUp(steps: Int) {
        _ = runSwift(steps)
        _ = runC(steps)
    }

    /// Results for [leg, capture, receive, playout], per leg per 20 ms.
    func measure(names: [String], rounds: Int, roundNanoseconds: Double) -> [SideBySideResult] {
        var steps = 4
        while true {
            let s = runSwift(steps).total
            let c = runC(steps).total
            if max(s, c) > 20e6 || steps >= 1 << 16 { break }
            steps *= 2
        }
        let perStep = max(runSwift(steps).total, runC(steps).total) / Double(steps)
        steps = max(1, Int(roundNanoseconds / perStep))
        var swiftRounds = [[Double]](repeating: [], count: 4)
        var cRounds = [[Double]](repeating: [], count: 4)
        var ratios = [[Double]](repeating: [], count: 4)
        let legs = Double(2 * steps)
        for round in 0..<rounds {
            let s: (total: Double, ops: [Double])
            let c: (total: Double, ops: [Double])
            if round % 2 == 0 {
                s = runSwift(steps)
                c = runC(steps)
            } else {
                c = runC(steps)
                s = runSwift(steps)
            }
            let sv = [s.total] + s.ops
            let cv = [c.total] + c.ops
            for i in 0..<4 {
                swiftRounds[i].append(sv[i] / legs)
                cRounds[i].append(cv[i] / legs)
                ratios[i].append(sv[i] / cv[i])
            }
        }
        if sink == 42 { print("") }  // keeps the checksums alive
        return (0..<4).map { i in
            SideBySideResult(
                name: names[i], swiftMicroseconds: SideBySideRunner.median(swiftRounds[i]) / 1000,
                cMicroseconds: SideBySideRunner.median(cRounds[i]) / 1000,
                pairedRatio: SideBySideRunner.median(ratios[i]), iterationsPerRound: steps, rounds: rounds)
        }
    }

    /// Legs one core sustains in fast time: 20 ms × legs processed / thread CPU time, for each side.
    func legsPerCore(cpuSeconds: Double) -> (swift: Double, c: Double) {
        func measure(_ body: (Int) -> Void) -> Double {
            let start = cb_thread_cpu_ns()
            var steps = 0
            var used = 0.0
            repeat {
                body(50)
                steps += 50
                used = Double(cb_thread_cpu_ns() &- start) / 1e9
            } while used < cpuSeconds
            return Double(2 * steps) * 0.020 / used
        }
        let s = measure { _ = runSwift($0) }
        let c = measure { _ = runC($0) }
        return (s, c)
    }
}
