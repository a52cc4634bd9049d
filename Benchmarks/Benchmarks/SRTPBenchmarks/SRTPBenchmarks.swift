import AllocationSuite
import Benchmark
import BenchmarkFixtures
import VoiceEngine

/// One 20 ms Opus packet through SRTP and back, as a call's send and receive chains do it: copy the RTP packet
/// into a buffer, write the next sequence number, `SRTPSession.protect` in place (outbound session), then
/// `SRTPSession.unprotect` in place (inbound session, the same key). Sequence numbers run on across the 65535 → 0
/// wrap, so the rollover counter is exercised too.
final class SRTPRoundTripWorkload {
    let sender: SRTPSession
    let receiver: SRTPSession
    let packet: FixedBuffer<UInt8>
    let buffer = FixedBuffer<UInt8>(count: 1_500, repeating: 0)
    private var sequence: UInt16 = 0

    init(suite: SRTPCryptoSuite) throws {
        let key = Fixtures.srtpKey(suite)
        sender = try SRTPSession(suite: suite, key: key, direction: .outbound)
        receiver = try SRTPSession(suite: suite, key: key, direction: .inbound)
        packet = try Fixtures.opusRTPPacket()
    }

    /// Protects and unprotects `iterations` packets; returns the bytes unprotected (a checksum).
    func run(_ iterations: Int) -> Int {
        let bytes = UnsafeMutableRawBufferPointer(buffer.pointer)
        let template = UnsafeRawBufferPointer(packet.pointer)
        var total = 0
        for _ in 0..<iterations {
            Fixtures.copyRTPPacket(template, into: bytes, sequence: sequence)
            sequence &+= 1
            do {
                let protected = try sender.protect(bytes, length: template.count)
                total &+= try receiver.unprotect(bytes, length: protected)
            } catch {
                fatalError("SRTP round trip: \(error)")
            }
        }
        return total
    }
}

// `SRTP.roundTrip.20ms.<suite>`: protect + unprotect of one packet per inner iteration, 1 000 per sample
// (`scalingFactor: .kilo`). Held at 0 mallocs (thresholds in Thresholds/, 0 tolerance): the engine builds libsrtp
// itself (Sources/CSRTP) because Debian's NSS-based build made 14 mallocs per protect and per unprotect.
let benchmarks: @Sendable () -> Void = {
    let configuration = Benchmark.Configuration.zeroAllocations(
        warmupIterations: 1, maxDuration: .seconds(2), maxIterations: 20)
    for suite in SRTPCryptoSuite.allCases {
        let workload = try! SRTPRoundTripWorkload(suite: suite)
        // Warm-up: libsrtp creates the inbound stream (an allocation, once) on the first packet.
        blackHole(workload.run(100))
        Benchmark("SRTP.roundTrip.20ms.\(suite.rawValue)", configuration: configuration) { benchmark in
            blackHole(workload.run(benchmark.scaledIterations.count))
        }
    }
}
