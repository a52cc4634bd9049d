import Testing
import VoiceCore
import VoiceJitter
import VoiceLab
import VoiceNetSim

/// The FEC look-ahead held from a call's first packet (``AdaptiveJitterBuffer/Configuration/FECLookAhead``'s
/// `holdsFromCallStart`): a call's first loss is recovered whole without a delay step inside the speech, a loss
/// before the release keeps the look-ahead, and a call without loss gets its packet of delay back in a pause.
private func holdingFromStart() -> AdaptiveJitterBuffer.Configuration {
    var configuration = AdaptiveJitterBuffer.Configuration()
    configuration.fecLookAhead.holdsFromCallStart = true
    return configuration
}

/// Feeds `packets` arriving every 20 ms without jitter (frame `lost` missing) and returns the buffer and the
/// playout delay (ms) of every tick after playout started.
private func playCalmCall(_ configuration: AdaptiveJitterBuffer.Configuration, packets: [[UInt8]], lost: Int)
    throws -> (buffer: AdaptiveJitterBuffer, delays: [Double], operations: [PlayoutOperation])
{
    let buffer = try AdaptiveJitterBuffer(configuration: configuration)
    var frame = AudioFrame(format: buffer.format)
    var delays: [Double] = []
    var operations: [PlayoutOperation] = []
    var next = 0
    // Until the last packet has played (playout starts at most two ticks in).
    for tick in 0..<(packets.count * 2 + 2) {
        let now = Int64(tick * 10)
        while next < packets.count, Int64(next * 20) <= now {
            if next != lost {
                buffer.insert(
                    payload: packets[next], sequenceNumber: 65_530 &+ UInt16(next),
                    rtpTimestamp: 4_294_960_000 &+ UInt32(next * 960), arrival: .milliseconds(Int64(next * 20)))
            }
            next += 1
        }
        operations.append(buffer.playoutTick(into: &frame))
        if next < packets.count, let delay = buffer.playoutDelayMilliseconds { delays.append(delay) }
    }
    return (buffer, delays, operations)
}

@Test func aCallsFirstLossIsRecoveredWholeWithoutADelayStepWhenTheLookAheadHoldsFromTheStart() throws {
    // 6 s of speech-like packets, one frame lost in the first talk spurt whose next packet carries its FEC copy,
    // no jitter.
    let packets = try JitterFixtures.opusPackets(count: 300)
    let lost = try #require((10..<100).first { JitterFixtures.hasFEC(packets[$0 + 1]) })
    let held = try playCalmCall(holdingFromStart(), packets: packets, lost: lost)
    let s = held.buffer.statistics
    // The FEC copy is there when the frame is due: recovered whole, nothing concealed, nothing stretched.
    #expect(s.fecRecoveredFrames == 1 && s.fecRecoveredSamples == 320)
    #expect(s.concealedSamples == 0)
    #expect(s.acceleratedSamples == 0 && s.slowedDownSamples == 0)
    #expect(held.operations.allSatisfy { $0 != .expand && $0 != .merge })
    // One playout delay from the first packet to the last: no step at the loss, inside the speech.
    let delays = held.delays
    #expect(delays.count > 500)
    #expect(
        (delays.max() ?? 0) - (delays.min() ?? 0) < 0.001,
        "playout delay \(delays.min() ?? 0)...\(delays.max() ?? 0) ms")
    // The loss came before the release window ended: the look-ahead stays for the losses to come.
    #expect(held.buffer.fecLookAheadMilliseconds == 20)

    // The same call with the look-ahead switched on at the first loss: the wait for frame 20's FEC copy is
    // concealment, and it stays as a 20 ms step of playout delay at the loss.
    let atLoss = try playCalmCall(AdaptiveJitterBuffer.Configuration(), packets: packets, lost: lost)
    #expect(atLoss.buffer.statistics.concealedSamples > 0)
    let before = try #require(atLoss.delays.first)
    let after = try #require(atLoss.delays.last)
    #expect(abs(after - before - 20) < 0.001, "step \(after - before) ms")
    // The hold costs nothing later: after the loss both play at the same delay.
    #expect(abs(after - (delays.last ?? 0)) < 0.001)
}

@Test func aCallWithoutLossReleasesTheLookAheadInAPauseAfterItsCalmWindow() throws {
    // 12 s of speech-like audio (talk spurts and pauses), 40 ms network delay, no jitter, no loss.
    let network = JitterSimulation.Network.conditions(NetworkConditions(baseDelayMilliseconds: 40, seed: 3))
    let buffer = try AdaptiveJitterBuffer(configuration: holdingFromStart())
    let r = try JitterFixtures.run(buffer, seconds: 12, network: network)
    let plain = try JitterFixtures.run(AdaptiveJitterBuffer(), seconds: 12, network: network)
    func meanDelay(_ result: JitterSimulation.Result, from: Double, to: Double) -> Double {
        let d = result.timeline.filter { $0.time.seconds >= from && $0.time.seconds < to }
            .compactMap(\.endToEndDelayMilliseconds)
        return d.reduce(0, +) / Double(max(d.count, 1))
    }
    let release = holdingFromStart().fecLookAhead.calmReleaseMilliseconds / 1000
    let early = meanDelay(r, from: 0.5, to: release)
    let late = meanDelay(r, from: release + 2, to: 12)
    // One packet of look-ahead for the first seconds, none after: the delay of a call without it.
    #expect(abs(early - meanDelay(plain, from: 0.5, to: release) - 20) < 1, "early \(early) ms")
    #expect(abs(late - meanDelay(plain, from: release + 2, to: 12)) < 1, "late \(late) ms")
    #expect(buffer.fecLookAheadMilliseconds == 0)
    // Shed in one splice of the whole packet (one delay change), nothing concealed, in a pause: the two ticks
    // played from the splice at least 15 dB under the loudest tick of the second before (the stretcher waits for
    // its sync buffer to be 20 dB under a speech-level follower that falls 6 dB a second).
    #expect(r.statistics.acceleratedSamples == 320 && r.statistics.slowedDownSamples == 0)
    #expect(r.statistics.concealedSamples == 0)
    func power(ticks: Range<Int>) -> [Double] {
        ticks.map { t in
            r.output[(t * 160)..<((t + 1) * 160)].reduce(0.0) { $0 + Double($1) * Double($1) } / 160
        }
    }
    // A tick reports the operation of the last chunk produced, so one splice shows on each tick it feeds.
    let accelerations = r.operations.indices.filter {
        r.operations[$0] == .accelerate && ($0 == 0 || r.operations[$0 - 1] != .accelerate)
    }
    #expect(accelerations.count == 1)
    for tick in accelerations {
        let at = Double(tick) / 100
        #expect(at >= release, "accelerated at \(at) s")
        let spliced = power(ticks: tick..<(tick + 2)).max() ?? 0
        let speech = power(ticks: max(0, tick - 100)..<tick).max() ?? 0
        #expect(spliced < speech * 0.03, "accelerated at \(at) s: \(spliced) against \(speech)")
    }
}
