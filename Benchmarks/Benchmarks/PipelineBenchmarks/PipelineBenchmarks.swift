import AllocationSuite
import Benchmark
import BenchmarkFixtures
import Dispatch
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
    pollBenchmarks()
}

/// A live call's receive path without an event loop: one 120-byte RTP datagram sent over loopback, read by the
/// consumer (`UDPMediaTransport.receiveFromSocket()`, `ReceiveMode.consumerPolls`: `recvmsg` with a kernel
/// timestamp, classified into a slot) and borrowed with `withNextPacket`, as the media thread does each tick.
final class PolledReceiveWorkload: @unchecked Sendable {
    var sender: UDPMediaTransport!
    var receiver: UDPMediaTransport!
    let packet = [UInt8](repeating: 0, count: 120).enumerated().map {
        $0.offset == 0 ? 0x80 : $0.offset == 1 ? 111 : $0.element
    }

    init() {
        let done = DispatchSemaphore(value: 0)
        Task {
            let configuration = UDPMediaTransport.Configuration(receive: .consumerPolls)
            self.receiver = try! await UDPMediaTransport.bind(host: "127.0.0.1", configuration: configuration)
            self.sender = try! await UDPMediaTransport.bind(
                host: "127.0.0.1", remote: self.receiver.localEndpoint, configuration: configuration)
            done.signal()
        }
        done.wait()
    }

    /// Sends and receives `iterations` datagrams; returns the bytes received (a checksum).
    func run(_ iterations: Int) -> Int {
        var total = 0
        for _ in 0..<iterations {
            _ = packet.withUnsafeBytes { sender.send($0) }
            receiver.receiveFromSocket()
            while let count = receiver.withNextPacket(.rtp, { $0.bytes.count }) { total &+= count }
        }
        return total
    }
}

// `Pipeline.udp.pollReceive`: 1 000 datagrams per sample, held at 0 mallocs like the legs.
let pollBenchmarks: @Sendable () -> Void = {
    let workload = PolledReceiveWorkload()
    blackHole(workload.run(100))
    Benchmark(
        "Pipeline.udp.pollReceive",
        configuration: .zeroAllocations(warmupIterations: 1, maxDuration: .seconds(2), maxIterations: 20)
    ) { benchmark in
        blackHole(workload.run(benchmark.scaledIterations.count))
    }
}
