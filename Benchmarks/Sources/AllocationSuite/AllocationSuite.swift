import Benchmark

extension Benchmark.Configuration {
    /// The settings every allocation suite uses: wall clock and throughput for information, and the malloc
    /// counters with a threshold of 0 (checked at p90 by `benchmark thresholds check`, compared raw per sample).
    /// One sample is 1 000 calls (`scalingFactor: .kilo`), so an allocation even once in 1 000 calls fails.
    /// No operating-system metrics: reading them allocates inside the measured window.
    public static func zeroAllocations(warmupIterations: Int, maxDuration: Duration, maxIterations: Int) -> Self {
        Benchmark.Configuration(
            metrics: [.wallClock, .throughput, .mallocCountTotal, .mallocFreeDelta],
            timeUnits: .microseconds,
            warmupIterations: warmupIterations,
            scalingFactor: .kilo,
            maxDuration: maxDuration,
            maxIterations: maxIterations,
            thresholds: [.mallocCountTotal: BenchmarkThresholds(absolute: [.p90: 0, .p100: 0])]
        )
    }
}
