import AllocationSuite
import Benchmark
import VoiceEngine
import VoiceLab

/// Steady state of the adaptive jitter buffer's receive side: one 10 ms `playoutTick` per inner iteration, with a
/// 20 ms Opus packet inserted every second tick (arriving with a little deterministic jitter), so every call
/// exercises insert, the delay estimator, the decision and decoding, and now and then accelerate/slow-down.
/// Packets are pre-encoded speech-like audio, cycled with increasing sequence numbers and timestamps (wrapping).
final class PlayoutTickWorkload {
    let buffer: AdaptiveJitterBuffer
    private var packets: [[UInt8]] = []
    private let output = UnsafeMutableBufferPointer<Int16>.allocate(capacity: 160)
    private var tick = 0
    private var sent = 0

    init() throws {
        buffer = try AdaptiveJitterBuffer()
        let encoder = try OpusEncoder(
            configuration: OpusEncoderConfiguration(
                sampleRate: 16_000, channels: 1, application: .voip, frameDuration: .ms20, bitrate: 24_000,
                complexity: 5, inbandFEC: true, expectedLossPercent: 10, dtx: false))
        let pcm = SignalGenerator.toInt16(SignalGenerator.speechLike(sampleRate: 16_000, seconds: 4, seed: 0x5EED_0BE7))
        var packet = [UInt8](repeating: 0, count: OpusEncoder.maxPacketBytes)
        for k in 0..<(pcm.count / 320) {
            let n = try encoder.encode(Array(pcm[(k * 320)..<((k + 1) * 320)]), into: &packet)
            packets.append(Array(packet[0..<n]))
        }
    }

    deinit { output.deallocate() }

    /// Runs `count` ticks; returns a checksum so the work is not optimised away.
    func run(_ count: Int) -> Int {
        var sum = 0
        for _ in 0..<count {
            if tick % 2 == 0 {
                let k = sent
                let jitter = Int64((k * 7_919) % 23)  // 0…22 ms, deterministic
                packets[k % packets.count].withUnsafeBufferPointer { payload in
                    buffer.insert(
                        payload: payload, sequenceNumber: UInt16(truncatingIfNeeded: k),
                        rtpTimestamp: UInt32(truncatingIfNeeded: k * 960),
                        arrival: .milliseconds(Int64(k) * 20 + 30 + jitter))
                }
                sent += 1
            }
            buffer.playoutTick(into: output)
            sum &+= Int(output[0])
            tick += 1
        }
        return sum
    }
}

// Each sample is 1 000 ticks (`scalingFactor: .kilo`); the threshold of 0 mallocs (checked at p90 by
// `benchmark thresholds check`) fails for any allocation that happens even once in 1 000 ticks.
let benchmarks: @Sendable () -> Void = {
    let configuration = Benchmark.Configuration.zeroAllocations(
        warmupIterations: 2, maxDuration: .seconds(2), maxIterations: 50)
    let workload = try! PlayoutTickWorkload()
    blackHole(workload.run(2_000))  // warm-up: playout started, estimator and buffers in steady state
    Benchmark("Jitter.playoutTick.10ms", configuration: configuration) { benchmark in
        blackHole(workload.run(benchmark.scaledIterations.count))
    }
}
