import AllocationSuite
import Benchmark
import BenchmarkFixtures
import VoiceEngine

// Steady state of a full-duplex call: one inner iteration is one 20 ms step of `PipelineLoopback`, two
// MediaStreams calling each other (per leg: 2 × processCapture with 48 k → 16 k resampling, echo canceller with
// delay alignment + noise suppression, Opus complexity 5, RTP, SRTP; 1 × receiveDatagram; 2 × renderPlayout
// through the adaptive jitter buffer, decoder and 16 k → 48 k resampler). Each sample is 1 000 steps
// (`scalingFactor: .kilo`) = 2 000 leg-steps = 20 s of call for each leg.
//
// - `Pipeline.leg.20ms`: the leg with SRTP (the engine's own libsrtp build, Sources/CSRTP: OpenSSL AES and
//   libsrtp's HMAC-SHA1, which never allocate; Debian's NSS-based libsrtp2 made 14 mallocs per protect/unprotect).
// - `Pipeline.leg.20ms.plainRTP`: the same loop without SRTP.
// Both hold at 0 mallocs per sample (thresholds in Thresholds/, 0 tolerance).
let benchmarks: @Sendable () -> Void = {
    let configuration = Benchmark.Configuration.zeroAllocations(
        warmupIterations: 1, maxDuration: .seconds(5), maxIterations: 10)
    for srtp in [true, false] {
        let loopback = try! PipelineLoopback(sameCallsOnly: false, srtp: srtp)
        // Warm-up: 10 s of call, so the jitter buffer has settled, the echo canceller has aligned, libsrtp has
        // created its inbound streams and the first drift compensation (if any) has happened.
        blackHole(loopback.run(500))
        Benchmark(
            srtp ? "Pipeline.leg.20ms" : "Pipeline.leg.20ms.plainRTP", configuration: configuration
        ) { benchmark in
            blackHole(loopback.run(benchmark.scaledIterations.count))
        }
    }
}
