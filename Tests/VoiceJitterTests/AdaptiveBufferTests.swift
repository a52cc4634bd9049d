import Testing
import VoiceCore
import VoiceJitter

/// Hand-built packet sequences: real Opus packets, chosen sequence numbers, timestamps and arrival times.
private let ts0: UInt32 = 4_294_960_000  // wraps within the first second
private let seq0: UInt16 = 65_530

private func insert(
    _ buffer: JitterBufferStrategy, _ packets: [[UInt8]], _ index: Int, sequence: Int? = nil, arrivalMs: Int64 = 0
) {
    buffer.insert(
        payload: packets[index], sequenceNumber: seq0 &+ UInt16(sequence ?? index),
        rtpTimestamp: ts0 &+ UInt32(index * 960),
        arrival: .milliseconds(arrivalMs))
}

@Test func playsInOrderPacketsNormallyWithoutConcealment() throws {
    let packets = try JitterFixtures.opusPackets(count: 20)
    let buffer = try AdaptiveJitterBuffer()
    let ops = JitterFixtures.feed(buffer, packets, arrivals: (0..<20).map { Int64($0 * 20) }, ticks: 39)
    #expect(!ops.contains(.expand) && ops.contains(.normal))
    #expect(buffer.statistics.concealedSamples == 0)
    #expect(buffer.statistics.packetsReceived == 20 && buffer.statistics.packetsExpected == 20)
}

@Test func recoversASingleLossFromTheNextPacketsFEC() throws {
    let packets = try JitterFixtures.opusPackets(count: 12)
    #expect(packets[6].count > 0 && JitterFixtures.hasFEC(packets[6]))
    let buffer = try AdaptiveJitterBuffer()
    var arrivals = JitterFixtures.steadyArrivals(count: 12)
    arrivals[5] = nil
    let ops = JitterFixtures.feed(buffer, packets, arrivals: arrivals, ticks: 16)
    #expect(ops.contains(.fecRecover))
    #expect(buffer.statistics.fecRecoveredFrames == 1 && buffer.statistics.fecRecoveredSamples == 320)
    #expect(buffer.statistics.concealedSamples == 0)
}

@Test func aLossWhoseStartWasConcealedWhileWaitingIsNotCountedAsRecovered() throws {
    // Frame 5 lost, nothing buffered beyond it, and no FEC look-ahead (switched off): playout runs dry at frame 5
    // and conceals in place until packet 6 brings frame 5's FEC copy, which then fills only what is left of the
    // frame. Every sample of the lost frame counts once, concealed or played from FEC; the frame counts as
    // recovered only when FEC stood in for all of it.
    let packets = try JitterFixtures.opusPackets(count: 16)
    #expect(JitterFixtures.hasFEC(packets[6]))
    var configuration = AdaptiveJitterBuffer.Configuration()
    configuration.fecLookAhead.minimumRecoverablePercent = nil
    // Packet 6 (and those after it) arriving 10 ms early or on time: half-way through frame 5, or at its end.
    // (With the look-ahead, FEC stands in for the whole frame: `recoversASingleLossFromTheNextPacketsFEC`.)
    let expected: [(lateness: Int64, concealed: Int, fromFEC: Int, frames: Int)] = [
        (-10, 160, 160, 0), (0, 320, 0, 0)
    ]
    for e in expected {
        let buffer = try AdaptiveJitterBuffer(configuration: configuration)
        var arrivals: [Int64?] = (0..<16).map { Int64($0 * 20) + ($0 >= 6 ? e.lateness : 0) }
        arrivals[5] = nil
        _ = JitterFixtures.feed(buffer, packets, arrivals: arrivals, ticks: 32)
        let s = buffer.statistics
        #expect(s.concealedSamples == e.concealed, "lateness \(e.lateness) ms")
        #expect(s.fecRecoveredSamples == e.fromFEC, "lateness \(e.lateness) ms")
        #expect(s.fecRecoveredFrames == e.frames, "lateness \(e.lateness) ms")
    }
}

@Test func aCallsFirstLossGainsTheLookAheadFromItsConcealmentAndIsRecoveredWhole() throws {
    // The same first loss with the look-ahead as configured: a gap among a call's first packets is a high loss
    // rate so far, so the look-ahead switches on when packet 6 comes, and the concealment played while waiting
    // for it becomes the look-ahead's delay (whole ticks) instead of being cut: frame 5 plays whole from FEC,
    // playout stays a packet later, and the next loss is recovered whole without waiting. Nothing is stretched.
    let packets = try JitterFixtures.opusPackets(count: 24)
    #expect(JitterFixtures.hasFEC(packets[6]) && JitterFixtures.hasFEC(packets[13]))
    for lateness: Int64 in [-10, 0] {
        let buffer = try AdaptiveJitterBuffer()
        var arrivals: [Int64?] = (0..<24).map { Int64($0 * 20) + ($0 >= 6 ? lateness : 0) }
        arrivals[5] = nil
        arrivals[12] = nil
        let ops = JitterFixtures.feed(buffer, packets, arrivals: arrivals, ticks: 48)
        let s = buffer.statistics
        #expect(s.fecRecoveredFrames == 2 && s.fecRecoveredSamples == 640, "lateness \(lateness) ms")
        // Only the wait for frame 5 was concealment, and it stood in for delay, not for the frame.
        #expect(s.concealedSamples == (lateness == 0 ? 320 : 160), "lateness \(lateness) ms")
        #expect(buffer.fecLookAheadMilliseconds == 20, "lateness \(lateness) ms")
        #expect(s.acceleratedSamples == 0 && s.slowedDownSamples == 0, "lateness \(lateness) ms")
        #expect(!ops.contains(.slowDown) && !ops.contains(.accelerate), "lateness \(lateness) ms")
    }
}

@Test func concealsAndMergesALossWhenThereIsNoFEC() throws {
    let packets = try JitterFixtures.opusPackets(count: 12, fec: false)
    let buffer = try AdaptiveJitterBuffer()
    var arrivals = JitterFixtures.steadyArrivals(count: 12)
    arrivals[5] = nil
    let ops = JitterFixtures.feed(buffer, packets, arrivals: arrivals, ticks: 16)
    #expect(ops.contains(.expand) && ops.contains(.merge))
    #expect(buffer.statistics.fecRecoveredFrames == 0)
    #expect(buffer.statistics.concealedSamples == 320)
}

@Test func dropsAndCountsDuplicatesAndLatePackets() throws {
    let packets = try JitterFixtures.opusPackets(count: 12, fec: false)
    let buffer = try AdaptiveJitterBuffer()
    for i in 0..<12 where i != 5 { insert(buffer, packets, i) }
    insert(buffer, packets, 3)
    insert(buffer, packets, 3)
    _ = JitterFixtures.play(buffer, ticks: 16)  // past frame 5, concealed
    insert(buffer, packets, 5, arrivalMs: 160)
    #expect(buffer.statistics.duplicatePackets == 2)
    #expect(buffer.statistics.latePackets == 1)
    #expect(buffer.statistics.lateLossRate > 0)
}

@Test func playsALatePacketThatArrivesWhileTheBufferHoldsInsteadOfDroppingIt() throws {
    let packets = try JitterFixtures.opusPackets(count: 8)
    let buffer = try AdaptiveJitterBuffer()
    for i in 0..<4 { insert(buffer, packets, i) }
    _ = JitterFixtures.play(buffer, ticks: 12)  // runs dry after 8 ticks, holds
    for i in 4..<8 { insert(buffer, packets, i, arrivalMs: 120) }
    let ops = JitterFixtures.play(buffer, ticks: 8)
    #expect(ops.contains(.merge))
    // Played, not dropped — but it came after its playout time, so it counts as late (as a drop would).
    #expect(buffer.statistics.latePackets == 1)
    #expect(buffer.statistics.packetsReceived == 8 && !ops.contains(.buffering))
    #expect(buffer.statistics.concealedSamples > 0)
}

@Test func treatsADTXGapAsComfortNoiseNotLoss() throws {
    let packets = try JitterFixtures.opusPackets(count: 24)
    let buffer = try AdaptiveJitterBuffer()
    // Frames 6...15 were DTX: not sent, so packet 16 directly follows packet 5 in sequence numbers.
    var arrivals = JitterFixtures.steadyArrivals(count: 24)
    for i in 6..<16 { arrivals[i] = nil }
    let ops = JitterFixtures.feed(buffer, packets, arrivals: arrivals, ticks: 40, sequence: { $0 < 16 ? $0 : $0 - 10 })
    #expect(ops.contains(.comfortNoise))
    #expect(buffer.statistics.concealedSamples == 0)
    #expect(buffer.statistics.comfortNoiseSamples == 10 * 320)
    #expect(buffer.statistics.packetsExpected == buffer.statistics.packetsReceived)
    #expect(buffer.statistics.latePackets == 0)
}

@Test func reclassifiesAHeldPauseAsDTXWhenTheNextPacketIsContiguous() throws {
    let packets = try JitterFixtures.opusPackets(count: 30)
    let buffer = try AdaptiveJitterBuffer()
    // Frames 6...19 were DTX. Packet 20 arrives only when it is due, so the buffer runs dry and holds first.
    var arrivals: [Int64?] = (0..<30).map { Int64($0 * 20) }
    for i in 6..<20 { arrivals[i] = nil }
    let ops = JitterFixtures.feed(buffer, packets, arrivals: arrivals, ticks: 56, sequence: { $0 < 20 ? $0 : $0 - 14 })
    #expect(ops.contains(.expand))  // while nothing was buffered it could not know yet
    #expect(buffer.statistics.concealedSamples == 0)
    #expect(buffer.statistics.comfortNoiseSamples >= 14 * 320)
}

@Test func countsMalformedPayloadsWithoutCrashing() throws {
    let buffer = try AdaptiveJitterBuffer()
    buffer.insert(payload: [UInt8](), sequenceNumber: 1, rtpTimestamp: 0, arrival: .zero)
    buffer.insert(payload: [UInt8](repeating: 0xFF, count: 3), sequenceNumber: 2, rtpTimestamp: 960, arrival: .zero)
    #expect(buffer.statistics.invalidPackets == 2)
    var frame = AudioFrame(format: buffer.format)
    #expect(buffer.playoutTick(into: &frame) == .buffering)
}
