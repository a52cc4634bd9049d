import Testing
import VoiceLab
@testable import VoiceDSP

/// GCC-PHAT's back-off: a call without echo stops paying two 8192-point FFTs every 200 ms, and an echo
/// that appears later is still found.
@Suite("Echo canceller: delay measurements idle without echo")
struct EchoDelayIdleTests {
    /// The first 6 s hold only a near-end talker unrelated to the far end (a headset): the measurements find no
    /// echo and slow to one every 800 ms. Then the loudspeaker's echo (120 ms, -6 dB) joins: the canceller must
    /// align to it within 2.5 s (one idle interval plus the three agreeing measurements of acquisition) and measure
    /// every 200 ms again.
    @Test func measurementsSlowDownWithoutEchoAndAnEchoThatAppearsIsAligned() throws {
        let rate = 16_000
        var scenario = AECScenario(name: "idle")
        scenario.seconds = 12
        scenario.delayMilliseconds = 120
        scenario.nearSeed = 5
        scenario.nearLevel = 0.1
        let signals = AECVectorGenerator.generate(scenario)
        let switchOn = 6 * rate
        var mic = signals.near
        for i in switchOn..<mic.count { mic[i] = Int16(clamping: Int(signals.near[i]) + Int(signals.echo[i])) }
        let canceller = try EchoCanceller()
        var output = [Int16](repeating: 0, count: 160)
        var alignedAt: Int?
        for start in stride(from: 0, to: mic.count - 159, by: 160) {
            if start == switchOn {
                #expect(canceller.delayMeasurementIntervalBlocks == 80, "no echo for 6 s: measurements idle")
                #expect(canceller.statistics.realignments == 0)
            }
            try signals.far[start..<start + 160].withUnsafeBufferPointer { far in
                try mic[start..<start + 160].withUnsafeBufferPointer { m in
                    try output.withUnsafeMutableBufferPointer { out in
                        _ = try canceller.process(mic: m, farEnd: far, into: out)
                    }
                }
            }
            if alignedAt == nil, start >= switchOn, canceller.statistics.realignments > 0 { alignedAt = start }
        }
        let at = try #require(alignedAt, "the echo that appeared at 6 s was never aligned")
        let seconds = Double(at - switchOn) / Double(rate)
        #expect(seconds <= 2.5, "aligned \(seconds) s after the echo appeared")
        let delay = try #require(canceller.statistics.estimatedDelayMilliseconds)
        #expect(abs(delay - 120) < 10, "estimated \(delay) ms")
        #expect(canceller.delayMeasurementIntervalBlocks == 20)
    }
}
