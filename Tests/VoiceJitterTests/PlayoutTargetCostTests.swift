import Testing
import VoiceJitter

/// ``PlayoutTargetCost`` through ``DelayEstimator/cheapestTarget(_:situation:current:)``: the trade-offs it must make.
private let weights = PlayoutTargetCost.Weights(
    lateWorthMilliseconds: 6, unrecoveredWorthMilliseconds: 40, stretchWorthMilliseconds: 2)

/// An estimator fed `count` packets (20 ms apart) whose extra delay is `extra(i)` ms.
private func estimator(count: Int, extra: (Int) -> Double) -> DelayEstimator {
    var e = DelayEstimator()
    for i in 0..<count {
        let t = Double(i) * 20
        e.update(arrivalMilliseconds: t + 40 + extra(i), timestampMilliseconds: t)
    }
    return e
}

@Test func withoutJitterTheCheapestTargetIsZeroUnlessFECNeedsAPacketOfLookAhead() {
    let calm = estimator(count: 500) { _ in 0 }
    let noFEC = PlayoutTargetCost.Situation(lossShare: 0.05, fecPacketMilliseconds: nil)
    #expect(calm.cheapestTarget(weights, situation: noFEC, current: 0) == 0)
    // 5 % loss with FEC: 20 ms more delay (cost 20) saves 5 % of frames from PLC (worth 40 × 5 = 200): look ahead.
    let lossy = PlayoutTargetCost.Situation(lossShare: 0.05, fecPacketMilliseconds: 20)
    #expect(calm.cheapestTarget(weights, situation: lossy, current: 0) == 20)
    // 0.2 % loss: the frames saved (worth 8) do not pay for 20 ms.
    let rare = PlayoutTargetCost.Situation(lossShare: 0.002, fecPacketMilliseconds: 20)
    #expect(calm.cheapestTarget(weights, situation: rare, current: 0) == 0)
}

@Test func underJitterTheCheapestTargetTradesDelayAgainstLatePackets() {
    // Relative delays spread evenly over 0..<100 ms: each ms of delay saves 1 % of packets from being late.
    let spread = estimator(count: 3_000) { i in Double((i * 37) % 100) }
    let situation = PlayoutTargetCost.Situation(lossShare: 0, fecPacketMilliseconds: nil)
    // Worth 6 ms a percent, every ms up to the tail pays: the target covers (nearly) everything.
    let target = spread.cheapestTarget(weights, situation: situation, current: 0)
    #expect(target >= 95 && target <= 100)
    // Worth only 0.5 ms a percent, no ms of delay pays: the target stays at 0.
    let cheap = PlayoutTargetCost.Weights(
        lateWorthMilliseconds: 0.5, unrecoveredWorthMilliseconds: 40, stretchWorthMilliseconds: 0)
    #expect(spread.cheapestTarget(cheap, situation: situation, current: 50) == 0)
    // A long tail (2 % of packets 300 ms late) is not worth 300 ms: the target stays below it.
    let tail = estimator(count: 3_000) { i in i % 50 == 0 ? 300 : Double((i * 37) % 40) }
    let t = tail.cheapestTarget(weights, situation: situation, current: 0)
    #expect(t >= 35 && t < 100)
}

@Test func theTargetMovesOnlyWhenTheSavingPaysForTheStretch() {
    let spread = estimator(count: 3_000) { i in Double((i * 37) % 100) }
    let situation = PlayoutTargetCost.Situation(lossShare: 0, fecPacketMilliseconds: nil)
    let best = spread.cheapestTarget(weights, situation: situation, current: 0)
    // From just next to the optimum the saving is below the price of a stretch: stay.
    let sticky = PlayoutTargetCost.Weights(
        lateWorthMilliseconds: 6, unrecoveredWorthMilliseconds: 40, stretchWorthMilliseconds: 10)
    #expect(spread.cheapestTarget(sticky, situation: situation, current: best - 1) == best - 1)
    // From far below it, the saving pays: move.
    #expect(spread.cheapestTarget(sticky, situation: situation, current: 20) == best)
}

@Test func eachTickMovedIsPricedSoTheTargetDoesNotChaseWhatDoesNotPay() {
    // Evenly spread 0..<100 ms, late packets worth 6 ms a percent: each ms of delay up to 100 saves 5 ms of cost.
    let spread = estimator(count: 3_000) { i in Double((i * 37) % 100) }
    let situation = PlayoutTargetCost.Situation(lossShare: 0, fecPacketMilliseconds: nil)
    func weights(perTick: Double) -> PlayoutTargetCost.Weights {
        PlayoutTargetCost.Weights(
            lateWorthMilliseconds: 6, unrecoveredWorthMilliseconds: 40, stretchWorthMilliseconds: 2,
            moveWorthMillisecondsPerTick: perTick)
    }
    let free = spread.cheapestTarget(weights(perTick: 0), situation: situation, current: 60)
    #expect(free >= 95)
    // 20 ms a tick: four ticks up cost 80 and save 200 — it still moves, to within a tick of the free optimum.
    let priced = spread.cheapestTarget(weights(perTick: 20), situation: situation, current: 60)
    #expect(priced >= free - 10 && priced <= free)
    // 100 ms a tick: every tick saves 50 and costs 100 — it moves no further than the half tick that rounds to
    // no tick at all (priced by `stretchWorthMilliseconds` alone).
    let held = spread.cheapestTarget(weights(perTick: 100), situation: situation, current: 60)
    #expect(held >= 60 && held < 65)
}
