import Benchmark
import BenchmarkFixtures
import VoiceSIP

let invite = SIPFixtures.invite

// `SIP.parse.invite` and `SIP.serialize.invite`: parse + validate (what the transport does with each datagram) and
// serialize `SIPFixtures.invite` (~1 kB with SDP). Unlike the audio path it allocates (header values are Strings):
// the thresholds in Thresholds/ hold the count per message where it was measured, so a change that adds
// allocations per message fails `make bench-allocations`.
let benchmarks: @Sendable () -> Void = {
    let configuration = Benchmark.Configuration(
        metrics: [.wallClock, .throughput, .mallocCountTotal], timeUnits: .microseconds, warmupIterations: 1,
        scalingFactor: .kilo, maxDuration: .seconds(2), maxIterations: 20)
    Benchmark("SIP.parse.invite", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try! SIPMessageParser.parse(datagram: invite)) }
    }
    let parsed = try! SIPMessageParser.parse(datagram: invite)
    Benchmark("SIP.serialize.invite", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations { blackHole(parsed.serialized()) }
    }
}
