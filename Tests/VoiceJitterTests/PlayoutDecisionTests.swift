import Testing
import VoiceJitter

private func input(
    started: Bool = true, next: PlayoutDecision.NextPacket = .due, level: Double = 60, target: Double = 60,
    previous: PlayoutOperation = .normal, holding: Bool = false
) -> PlayoutDecision.Input {
    PlayoutDecision.Input(
        hasStarted: started, next: next, bufferLevelMilliseconds: level, targetLevelMilliseconds: target,
        previous: previous, isHolding: holding, slowDownBelowMilliseconds: 5, accelerateAboveMilliseconds: 10)
}

@Test func buffersUntilTheTargetLevelIsReachedThenStarts() {
    #expect(PlayoutDecision.decide(input(started: false, next: .none, level: 0)) == .buffer)
    #expect(PlayoutDecision.decide(input(started: false, level: 40, target: 60)) == .buffer)
    #expect(PlayoutDecision.decide(input(started: false, level: 60, target: 60)) == .start)
}

@Test func playsNormallyInsideTheBandAndStretchesOutsideIt() {
    let (low, high) = PlayoutDecision.limits(target: 60, slowDownBelow: 5, accelerateAbove: 10)
    #expect(low == 55 && high == 70)
    #expect(PlayoutDecision.decide(input(level: 56)) == .normal)
    #expect(PlayoutDecision.decide(input(level: 69)) == .normal)
    #expect(PlayoutDecision.decide(input(level: 70)) == .accelerate)
    #expect(PlayoutDecision.decide(input(level: 54)) == .slowDown)
}

@Test func mergesTheFirstPacketAfterConcealment() {
    #expect(PlayoutDecision.decide(input(level: 200, previous: .expand)) == .merge)
}

@Test func concealsInPlaceWhenNothingIsBuffered() {
    #expect(PlayoutDecision.decide(input(next: .none, level: 0)) == .expand(advance: false))
}

@Test func recoversASingleLostFrameFromFECOnlyWhenTheNextPacketCarriesIt() {
    let withFEC = PlayoutDecision.NextPacket.future(
        gapTimestamps: 960, isSequenceContiguous: false, hasFEC: true, gapIsOneFrame: true)
    let noFEC = PlayoutDecision.NextPacket.future(
        gapTimestamps: 960, isSequenceContiguous: false, hasFEC: false, gapIsOneFrame: true)
    let twoLost = PlayoutDecision.NextPacket.future(
        gapTimestamps: 1920, isSequenceContiguous: false, hasFEC: true, gapIsOneFrame: false)
    #expect(PlayoutDecision.decide(input(next: withFEC)) == .fecRecover)
    #expect(PlayoutDecision.decide(input(next: noFEC)) == .expand(advance: true))
    #expect(PlayoutDecision.decide(input(next: twoLost)) == .expand(advance: true))
}

@Test func treatsATimestampGapWithContiguousSequenceNumbersAsDTX() {
    let dtx = PlayoutDecision.NextPacket.future(
        gapTimestamps: 9_600, isSequenceContiguous: true, hasFEC: false, gapIsOneFrame: false)
    #expect(PlayoutDecision.decide(input(next: dtx)) == .comfortNoise)
    #expect(PlayoutDecision.decide(input(next: dtx, previous: .expand, holding: true)) == .comfortNoise)
}

@Test func jumpsToTheNextPacketAfterHoldingThroughALoss() {
    let gap = PlayoutDecision.NextPacket.future(
        gapTimestamps: 480_000, isSequenceContiguous: false, hasFEC: false, gapIsOneFrame: false)
    #expect(PlayoutDecision.decide(input(next: gap, previous: .expand, holding: true)) == .jumpAndMerge)
}
