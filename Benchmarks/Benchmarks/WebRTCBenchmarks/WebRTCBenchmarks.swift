import AllocationSuite
import Benchmark
import BenchmarkFixtures
import VoiceEngine

// `WebRTC.srtpPath.20ms` (`WebRTCPathWorkload` in BenchmarkFixtures): protect, send on the ICE-selected socket,
// poll/read/demultiplex, unprotect — one packet per inner iteration, 1 000 per sample. Held at 0 mallocs
// (Thresholds/).
let benchmarks: @Sendable () -> Void = {
    let configuration = Benchmark.Configuration.zeroAllocations(
        warmupIterations: 1, maxDuration: .seconds(2), maxIterations: 20)
    let workload = try! WebRTCPathWorkload()
    blackHole(workload.run(100))  // libsrtp creates the inbound stream on the first packet
    Benchmark("WebRTC.srtpPath.20ms", configuration: configuration) { benchmark in
        blackHole(workload.run(benchmark.scaledIterations.count))
    }
    // `WebRTC.relayPath.20ms`: the same through coturn on loopback (BenchmarkTURNServer), both engines relay-only,
    // so the selected pair is relayed and media goes as TURN ChannelData each way (not Send/Data indications).
    if let server = try! BenchmarkTURNServer.start() {
        let relayed = try! WebRTCPathWorkload(relay: (server, BenchmarkTURNServer.secret))
        blackHole(relayed.run(100))
        precondition(
            relayed.sentChannelData == 100, "the relayed pair must send ChannelData, sent \(relayed.sentChannelData)")
        Benchmark("WebRTC.relayPath.20ms", configuration: configuration) { benchmark in
            blackHole(relayed.run(benchmark.scaledIterations.count))
        }
    } else {
        print("WebRTC.relayPath.20ms skipped: coturn (/usr/bin/turnserver) is not installed")
    }
}
