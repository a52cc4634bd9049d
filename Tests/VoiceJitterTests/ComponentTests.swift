import Foundation
import Testing
import VoiceDSP
import VoiceJitter
import VoiceCore

@Test func packetBufferKeepsPacketsOrderedBySequenceAndRejectsDuplicates() {
    var buffer = PacketBuffer(capacity: 4, maxPayloadBytes: 8)
    func entry(_ seq: Int64) -> PacketBuffer.Entry {
        PacketBuffer.Entry(
            sequence: seq, timestamp: seq * 960, duration: 960, arrivalNanoseconds: 0, payloadLength: 0, hasFEC: false)
    }
    for seq: Int64 in [65_537, 65_535, 65_536] {
        let payload: [UInt8] = [UInt8(seq & 0xFF)]
        #expect(payload.withUnsafeBufferPointer { buffer.insert(entry(seq), payload: $0) } == .inserted)
    }
    #expect((0..<3).map { buffer.entry(at: $0).sequence } == [65_535, 65_536, 65_537])
    #expect(buffer.withPayload(at: 2) { Array($0) } == [0x01])
    #expect([UInt8(1)].withUnsafeBufferPointer { buffer.insert(entry(65_536), payload: $0) } == .duplicate)
    #expect(
        [UInt8](repeating: 0, count: 9).withUnsafeBufferPointer { buffer.insert(entry(9), payload: $0) } == .tooLarge)
    #expect([UInt8(1)].withUnsafeBufferPointer { buffer.insert(entry(1), payload: $0) } == .inserted)
    #expect([UInt8(1)].withUnsafeBufferPointer { buffer.insert(entry(2), payload: $0) } == .full)
    buffer.remove(at: 0)
    #expect(buffer.entry(at: 0).sequence == 65_535 && buffer.count == 3)
    #expect(buffer.firstPosition(atOrAfterTimestamp: 65_536 * 960) == 1)
}

@Test func delayEstimatorIsZeroWithoutJitterRisesFastAndFallsSlowly() {
    var estimator = DelayEstimator()
    var t = 0.0
    func packet(extra: Double) {
        estimator.update(arrivalMilliseconds: t + 30 + extra, timestampMilliseconds: t)
        t += 20
    }
    for _ in 0..<200 { packet(extra: 0) }
    #expect(estimator.targetMilliseconds == 0)
    // A 2 s spike: every 5th packet 120 ms late. The target follows within the spike.
    for i in 0..<100 { packet(extra: i % 5 == 0 ? 120 : 0) }
    #expect(estimator.targetMilliseconds >= 100)
    // Back to calm: still covering the spike 1 s later, forgotten 20 s later (the 10 s memory of the 0.998 forget
    // factor: the spike's 20 late packets must fall below 3 % of the histogram's mass).
    for _ in 0..<50 { packet(extra: 0) }
    #expect(estimator.targetMilliseconds >= 100)
    for _ in 0..<1_000 { packet(extra: 0) }
    #expect(estimator.targetMilliseconds == 0)
}

@Test func delayEstimatorFollowsADelayStepAfterOneWindow() {
    var estimator = DelayEstimator()
    var t = 0.0
    // One 2 s window to rebase the minimum, then the 10 s memory to forget the relative delays of the step itself.
    for i in 0..<1_600 {
        estimator.update(arrivalMilliseconds: t + (i < 100 ? 20 : 150), timestampMilliseconds: t)
        t += 20
    }
    #expect(estimator.lastRelativeDelayMilliseconds == 0)
    #expect(estimator.targetMilliseconds == 0)
}

@Test func timeStretcherRemovesAndAddsWholePitchPeriodsWithoutClicks() {
    let stretcher = TimeStretcher(sampleRate: 16_000)
    // A 200 Hz voiced-like tone (period 80 samples) with a harmonic.
    let x = (0..<640).map { n in
        Int16(
            8_000 * sin(2 * Double.pi * 200 * Double(n) / 16_000) + 3_000
                * sin(2 * Double.pi * 400 * Double(n) / 16_000))
    }
    let inputStep = JitterFixtures.maxStep(x[...])
    var fast = x + [Int16](repeating: 0, count: 400)
    let removed = fast.withUnsafeMutableBufferPointer { stretcher.accelerate($0, count: 640) }
    #expect(removed > 0 && removed % 80 == 0)
    #expect(JitterFixtures.maxStep(fast[0..<(640 - removed)]) <= inputStep + inputStep / 10)
    var slow = x + [Int16](repeating: 0, count: 400)
    let added = slow.withUnsafeMutableBufferPointer { stretcher.slowDown($0, count: 640) }
    #expect(added > 0 && added % 80 == 0)
    #expect(JitterFixtures.maxStep(slow[0..<(640 + added)]) <= inputStep + inputStep / 10)
}

@Test func timeStretcherRefusesLoudAperiodicAudio() {
    var rng = SeededGenerator(seed: 3)
    var noise = (0..<640).map { _ in Int16(rng.nextGaussian() * 6_000) }
    #expect(noise.withUnsafeMutableBufferPointer { TimeStretcher(sampleRate: 16_000).accelerate($0, count: 640) } == 0)
}

@Test func timeStretcherSplicesExactlyOneTickWhereTheAudioMatchesItself() {
    let stretcher = TimeStretcher(sampleRate: 16_000)
    // 100 Hz voiced-like tone: its period (160 samples) fits a 10 ms tick, so a tick can be spliced seamlessly.
    let x = (0..<320).map { n in
        Int16(
            8_000 * sin(2 * Double.pi * 100 * Double(n) / 16_000) + 2_000
                * sin(2 * Double.pi * 300 * Double(n) / 16_000))
    }
    let inputStep = JitterFixtures.maxStep(x[...])
    var fast = x
    #expect(fast.withUnsafeMutableBufferPointer { stretcher.accelerate($0, count: 320, removing: 160) })
    #expect(JitterFixtures.maxStep(fast[0..<160]) <= inputStep + inputStep / 10)
    var slow = x + [Int16](repeating: 0, count: 160)
    #expect(slow.withUnsafeMutableBufferPointer { stretcher.slowDown($0, count: 320, adding: 160) })
    #expect(JitterFixtures.maxStep(slow[...]) <= inputStep + inputStep / 10)
    // The lengthened signal is the tone continued: sample 320 + n repeats sample 160 + n one period later.
    #expect(zip(slow[320..<480], x[160..<320]).allSatisfy { abs(Int($0) - Int($1)) <= 1 })
}

@Test func timeStretcherRefusesAFixedLagSpliceInLoudAperiodicAudio() {
    var rng = SeededGenerator(seed: 5)
    var noise = (0..<320).map { _ in Int16(rng.nextGaussian() * 6_000) }
    let before = noise
    #expect(
        !noise.withUnsafeMutableBufferPointer {
            TimeStretcher(sampleRate: 16_000).accelerate($0, count: 320, removing: 160)
        })
    #expect(noise == before)
}
