#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import CBaseline

/// One operation measured side by side: two closures that each run `n` iterations of the same work (the Swift
/// wrapper, and the C loop) and return a checksum of what the calls returned.
struct SideBySideCase {
    let name: String
    let swift: (Int) -> Int
    let c: (Int) -> Int
}

/// Timing of one operation: medians over the measured rounds, per iteration.
struct SideBySideResult {
    let name: String
    let swiftMicroseconds: Double
    let cMicroseconds: Double
    /// Median of the per-round Swift/C ratios (each pair measured back to back): less sensitive to load changes.
    let pairedRatio: Double
    let iterationsPerRound: Int
    let rounds: Int
    /// Swift median / C median.
    var ratio: Double { swiftMicroseconds / cMicroseconds }
}

/// Options every side-by-side suite takes.
struct SideBySideOptions: ParsableArguments {
    @Flag(
        help:
            "End the output with one JSON line: {\"suite\":…,\"results\":[{\"name\",\"swift_us\",\"c_us\",\"ratio\"}]}."
    )
    var json = false

    @Option(
        help: "Measured rounds per side; each round alternates Swift and C (the first of each pair alternates too).")
    var rounds = 31

    @Option(help: "Target duration of one round, in milliseconds (sets the iterations per round).")
    var roundMilliseconds = 30.0

    @Option(help: "Run only operations whose name contains this text.")
    var filter: String?

    func validate() throws {
        try requireOption("--rounds", Double(rounds), within: 1...10_000, "")
        try requireOption("--round-milliseconds", roundMilliseconds, within: 0.1...60_000, "ms")
    }
}

/// A usage error unless a numeric option is finite and within `range` (inf, nan and huge values are refused
/// before any work), naming the option, the value and the range.
func requireOption(_ name: String, _ value: Double, within range: ClosedRange<Double>, _ unit: String) throws {
    func number(_ x: Double) -> String { x == x.rounded() && abs(x) < 1e15 ? String(Int(x)) : String(x) }
    guard value.isFinite, range.contains(value) else {
        let bounds = "\(number(range.lowerBound))...\(number(range.upperBound))"
        throw ValidationError("\(name) \(number(value)): must be within \(bounds)\(unit.isEmpty ? "" : " " + unit)")
    }
}

/// A `voice-bench` subcommand that compares Swift against C for a list of operations.
protocol SideBySideSuite: ParsableCommand {
    /// The suite's name in the JSON output (`"suite"`), e.g. `codec`.
    static var suiteName: String { get }
    var options: SideBySideOptions { get }
    /// Builds every operation with its inputs, wrappers and C handles ready (setup is not timed).
    func makeCases() throws -> [SideBySideCase]
}

extension SideBySideSuite {
    mutating func run() throws { try runSideBySide() }

    /// The side-by-side run, also for a suite whose own `run()` does something else under a flag.
    func runSideBySide() throws {
        var cases = try makeCases()
        if let filter = options.filter { cases = cases.filter { $0.name.contains(filter) } }
        guard !cases.isEmpty else { throw ValidationError("no operation matches --filter \(options.filter ?? "")") }
        let report = Report(suite: Self.suiteName)
        report.printHeader(rounds: options.rounds)
        var results: [SideBySideResult] = []
        for testCase in cases {
            let result = SideBySideRunner.measure(
                testCase, rounds: options.rounds, roundNanoseconds: options.roundMilliseconds * 1e6)
            report.printRow(result)
            results.append(result)
        }
        if options.json { report.printJSON(results) }
    }
}

/// Alternates the two sides and takes medians. Times whole rounds with CLOCK_MONOTONIC (one clock read before and
/// after a round of N iterations), so the clock's cost is spread over N calls.
enum SideBySideRunner {
    static func measure(_ testCase: SideBySideCase, rounds: Int, roundNanoseconds: Double) -> SideBySideResult {
        var sink = 0
        // Calibrate (and warm caches, branch predictors and the codecs' adaptive state) on both sides.
        var calibration = 8
        var perIteration = 0.0
        while true {
            let swift = time(calibration, testCase.swift, &sink)
            let c = time(calibration, testCase.c, &sink)
            perIteration = max(swift, c) / Double(calibration)
            if max(swift, c) > 20e6 || calibration >= 1 << 20 { break }
            calibration *= 4
        }
        let iterations = max(1, Int(roundNanoseconds / perIteration))
        // One discarded warm-up round per side at the measured size.
        _ = time(iterations, testCase.swift, &sink)
        _ = time(iterations, testCase.c, &sink)

        var swiftRounds: [Double] = []
        var cRounds: [Double] = []
        var ratios: [Double] = []
        for round in 0..<rounds {
            let s: Double
            let c: Double
            if round % 2 == 0 {
                s = time(iterations, testCase.swift, &sink)
                c = time(iterations, testCase.c, &sink)
            } else {
                c = time(iterations, testCase.c, &sink)
                s = time(iterations, testCase.swift, &sink)
            }
            swiftRounds.append(s / Double(iterations))
            cRounds.append(c / Double(iterations))
            ratios.append(s / c)
        }
        if sink == 42 { print("") }  // keeps the checksums alive
        return SideBySideResult(
            name: testCase.name,
            swiftMicroseconds: median(swiftRounds) / 1000,
            cMicroseconds: median(cRounds) / 1000,
            pairedRatio: median(ratios),
            iterationsPerRound: iterations,
            rounds: rounds)
    }

    /// Nanoseconds taken by `body(iterations)`.
    @inline(never)
    static func time(_ iterations: Int, _ body: (Int) -> Int, _ sink: inout Int) -> Double {
        let start = cb_monotonic_ns()
        sink &+= body(iterations)
        let end = cb_monotonic_ns()
        return Double(end &- start)
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    /// A distribution-free confidence interval for the median of `values` (at least `level`, 0.95 by default):
    /// the k-th smallest and k-th largest value, k the largest with P(Binomial(n, ½) < k) ≤ (1 − level) / 2 —
    /// each value is above or below the true median with probability ½ whatever the distribution, so no normality
    /// is assumed (the sign test's interval). Nil when there are too few values for that level (n < 6 at 95 %).
    static func medianConfidenceInterval(_ values: [Double], level: Double = 0.95) -> (low: Double, high: Double)? {
        let n = values.count
        let tail = (1 - level) / 2
        // P(X ≤ j) for X ~ Binomial(n, 1/2), summed term by term; C(n, j) / 2^n through lgamma (no underflow).
        var cumulative = 0.0
        var k = 0
        for j in 0..<n {
            let n1 = Double(n) + 1
            cumulative += exp(lgamma(n1) - lgamma(Double(j) + 1) - lgamma(n1 - Double(j)) - Double(n) * M_LN2)
            if cumulative > tail { break }
            k = j + 1
        }
        guard k >= 1 else { return nil }
        let sorted = values.sorted()
        return (sorted[k - 1], sorted[n - k])
    }
}
