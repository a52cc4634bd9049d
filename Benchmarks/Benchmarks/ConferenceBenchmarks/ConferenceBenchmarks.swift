import AllocationSuite
import Benchmark
import BenchmarkFixtures
import VoiceConference
import VoiceEngine
import VoiceLab

// Steady state of a conference room: one inner iteration is one 20 ms tick of a 10-participant room (3 talkers,
// 7 silent with DTX, Opus 16 kHz, SRTP): its received datagrams handed in, then `ConferenceRoom.tick` — receive
// chains (jitter buffer, decode/PLC), talker choice, mix, mix-minus and shared encodes, SRTP protect, RTCP. The
// uplink is synthetic speech-like audio (the suite must run without ../shared), encoded up front by real client
// streams. Each sample is 1 000 ticks (20 s of room); held at 0 mallocs per sample (Thresholds/, 0 tolerance).
// RTCP is on (each stream's SR/RR + SDES, SRTCP-protected, about 40 reports in 20 s for 10 participants): the
// reports are written in place by RTCPReportWriter (246 mallocs per 1 000 ticks when they were RTCPPacket arrays).
let benchmarks: @Sendable () -> Void = {
    let configuration = Benchmark.Configuration.zeroAllocations(
        warmupIterations: 1, maxDuration: .seconds(10), maxIterations: 4)
    let speech = (0..<3).map { i in
        SignalGenerator.speechLike(sampleRate: 16_000, seconds: 7 + Double(i), seed: UInt64(40 + i)).map {
            Int16(max(-32_767, min(32_767, ($0 * 32_767).rounded())))
        }
    }
    // Warm-up 500 ticks + (1 warm-up + 4) samples of 1 000 ticks.
    let workload = try! ConferenceWorkload(participants: 10, talkers: 3, ticks: 6_000, speech: speech)
    let state = RoomState(workload: workload)
    blackHole(state.advance(500))
    Benchmark("Conference.room10.tick.20ms", configuration: configuration) { benchmark in
        blackHole(state.advance(benchmark.scaledIterations.count))
    }
}

/// The room and how far into the workload it has run (the SRTP replay windows need fresh datagrams each sample).
final class RoomState: @unchecked Sendable {
    let workload: ConferenceWorkload
    let room: ConferenceRoom
    let members: [ConferenceParticipant]
    var position = 0

    init(workload: ConferenceWorkload) {
        self.workload = workload
        var configuration = ConferenceWorkload.room
        configuration.sendsRTCP = true
        (room, members) = try! workload.makeRoom(configuration: configuration)
    }

    func advance(_ ticks: Int) -> Int {
        let end = min(position + ticks, workload.ticks)
        defer { position = end }
        return workload.run(room, members, ticks: position..<end)
    }
}
