import Benchmark
import BenchmarkFixtures
import VoiceEngine

// Steady state of a full-duplex call: one inner iteration is one 20 ms step of `PipelineLoopback`, two
// MediaStreams calling each other with SRTP (per leg: 2 × processCapture with 48 k → 16 k resampling, echo
// canceller with delay alignment + noise suppression, Opus complexity 5, RTP, SRTP; 1 × receiveDatagram; 2 ×
// renderPlayout through the adaptive jitter buffer, decoder and 16 k → 48 k resampler). Each sample is 1 000
// steps (`scalingFactor: .kilo`) = 2 000 leg-steps; the threshold of 0 mallocs (checked at p90 by
// `benchmark thresholds check`) fails for any allocation that happens even once in 20 s of call time.
let benchmarks: @Sendable () -> Void = {
    let configuration = Benchmark.Configuration(
        metrics: [.wallClock, .throughput, .mallocCountTotal, .mallocFreeDelta],  // no OS metrics: reading them allocates
        timeUnits: .microseconds,
        warmupIterations: 1,
        scalingFactor: .kilo,
        maxDuration: .seconds(5),
        maxIterations: 10,
        thresholds: [.mallocCountTotal: BenchmarkThresholds(absolute: [.p90: 0, .p100: 0])]
    )
    let loopback = try! PipelineLoopback(sameCallsOnly: false)
    // Warm-up: 10 s of call, so the jitter buffer has settled, the echo canceller has aligned, libsrtp has
    // created its inbound streams and the first drift compensation (if any) has happened.
    blackHole(loopback.run(500))
    Benchmark("Pipeline.leg.20ms", configuration: configuration) { benchmark in
        blackHole(loopback.run(benchmark.scaledIterations.count))
    }
}
