import AllocationSuite
import Benchmark
import BenchmarkFixtures
import VoiceEngine

// Resampler steady state: one 10 ms mono block per inner iteration, speexdsp quality `Fixtures.resamplerQuality`,
// preallocated input and output. Resamplers and inputs are made (and warmed up) outside the measured closure.
// Each sample is 1 000 calls; see CodecBenchmarks for how the allocation threshold is checked.
let benchmarks: @Sendable () -> Void = {
    let configuration = Benchmark.Configuration.zeroAllocations(
        warmupIterations: 2, maxDuration: .seconds(2), maxIterations: 50)

    for (input, output) in [(48_000, 16_000), (16_000, 48_000)] {
        let resample = try! ResampleWorkload(inputRate: input, outputRate: output)
        blackHole(resample.run(resample.blockCount))
        Benchmark("Resampler.process.10ms.\(input / 1000)k-\(output / 1000)k", configuration: configuration) {
            benchmark in
            blackHole(resample.run(benchmark.scaledIterations.count))
        }
    }
}
