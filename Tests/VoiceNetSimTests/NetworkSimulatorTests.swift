import Testing
import VoiceCore
import VoiceNetSim

private let interval = MediaTime.milliseconds(20)

private func fates(_ c: NetworkConditions, count: Int = 10_000) throws -> [PacketFate] {
    var sim = try NetworkSimulator(conditions: c)
    return sim.fates(count: count, interval: interval)
}

private func transits(_ f: [PacketFate]) -> [Double] { f.compactMap { $0.transit?.milliseconds } }

@Test func sameSeedGivesSameFatesAndAnotherSeedDoesNot() throws {
    let c = NetworkConditions(
        jitter: .normal(meanMilliseconds: 5, standardDeviationMilliseconds: 10), loss: .bernoulli(probability: 0.1),
        seed: 42)
    var other = c
    other.seed = 43
    #expect(try fates(c, count: 500) == fates(c, count: 500))
    #expect(try fates(c, count: 500) != fates(other, count: 500))
}

@Test func bernoulliLossMatchesItsProbabilityWithShortBursts() throws {
    let f = try fates(NetworkConditions(loss: .bernoulli(probability: 0.1), seed: 1), count: 20_000)
    let rate = Double(f.filter(\.isLost).count) / Double(f.count)
    #expect(abs(rate - 0.1) < 0.01)
    #expect(meanBurstLength(f) < 1.3)
}

@Test func gilbertElliottLosesInBurstsAtTheModelRate() throws {
    let model = LossModel.gilbertElliott(goodToBad: 0.02, badToGood: 0.25)
    let f = try fates(NetworkConditions(loss: model, seed: 2), count: 50_000)
    let rate = Double(f.filter(\.isLost).count) / Double(f.count)
    #expect(abs(rate - model.expectedLossRate) < 0.015)
    // Mean burst length of the bad state is 1 / badToGood = 4 packets.
    #expect(abs(meanBurstLength(f) - 4) < 0.6)
}

private func meanBurstLength(_ f: [PacketFate]) -> Double {
    var bursts = 0
    var lost = 0
    var inBurst = false
    for fate in f {
        if fate.isLost {
            lost += 1
            if !inBurst { bursts += 1 }
        }
        inBurst = fate.isLost
    }
    return bursts == 0 ? 0 : Double(lost) / Double(bursts)
}

@Test func constantDelayIsExactAndNormalJitterHasItsSpread() throws {
    let constant = try fates(NetworkConditions(baseDelayMilliseconds: 37, seed: 3), count: 100)
    #expect(transits(constant).allSatisfy { $0 == 37 })
    let normal = transits(
        try fates(
            NetworkConditions(
                baseDelayMilliseconds: 100, jitter: .normal(meanMilliseconds: 0, standardDeviationMilliseconds: 10),
                preservesOrder: false, seed: 4)))
    let mean = normal.reduce(0, +) / Double(normal.count)
    let sd = (normal.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(normal.count)).squareRoot()
    // Extra delay max(0, N(0, σ = 10)): mean σ/√(2π) = 3.99, standard deviation σ·√(1/2 − 1/(2π)) = 5.84.
    #expect(abs(mean - 103.99) < 0.3)
    #expect(abs(sd - 5.84) < 0.3)
}

@Test func paretoJitterHasAHeavyTailAndTheLomaxMean() throws {
    let t = transits(
        try fates(
            NetworkConditions(
                baseDelayMilliseconds: 0, jitter: .pareto(scaleMilliseconds: 20, shape: 3), preservesOrder: false,
                seed: 5), count: 40_000)
    ).sorted()
    let mean = t.reduce(0, +) / Double(t.count)
    #expect(abs(mean - 10) < 1)  // scale / (shape - 1)
    let median = t[t.count / 2]
    let p999 = t[t.count * 999 / 1000]
    #expect(p999 > 10 * median)
}

@Test func delayPhasesStepTheBaseDelay() throws {
    let c = NetworkConditions(
        baseDelayMilliseconds: 20,
        phases: [
            DelayPhase(start: .seconds(1), baseDelayMilliseconds: 150),
            DelayPhase(start: .seconds(2), baseDelayMilliseconds: 20)
        ],
        seed: 6)
    let t = transits(try fates(c, count: 150))
    #expect(t[10] == 20 && t[60] == 150 && t[120] == 20)
}

@Test func outagesDropOrHoldEverythingSentDuringThem() throws {
    let outage = Outage(start: .seconds(1), duration: .milliseconds(500))
    let dropped = try fates(NetworkConditions(outages: [outage], seed: 7), count: 150)
    let inside = dropped.filter { outage.contains($0.sendTime) }
    #expect(inside.count == 25 && inside.allSatisfy(\.isLost))
    #expect(dropped.filter(\.isLost).count == 25)

    let held = try fates(
        NetworkConditions(
            baseDelayMilliseconds: 20,
            outages: [Outage(start: .seconds(1), duration: .milliseconds(500), behaviour: .hold)], seed: 7), count: 150)
    let released = held.filter { outage.contains($0.sendTime) }
    #expect(released.allSatisfy { $0.arrival == .milliseconds(1_520) })
}

@Test func fifoPathNeverReordersButReorderProbabilityDoes() throws {
    let jittery = NetworkConditions(jitter: .normal(meanMilliseconds: 0, standardDeviationMilliseconds: 40), seed: 8)
    let fifo = try fates(jittery, count: 2_000).compactMap(\.arrival)
    #expect(zip(fifo, fifo.dropFirst()).allSatisfy { $0 <= $1 })

    var reordering = NetworkConditions(reorderProbability: 0.05, reorderDelayMilliseconds: 50, seed: 9)
    reordering.baseDelayMilliseconds = 20
    let arrivals = try fates(reordering, count: 2_000).compactMap(\.arrival)
    let inversions = zip(arrivals, arrivals.dropFirst()).filter { $0 > $1 }.count
    #expect(inversions > 50 && inversions < 150)
}

@Test func duplicationDeliversSecondCopiesAtItsRate() throws {
    let f = try fates(
        NetworkConditions(duplicateProbability: 0.1, duplicateDelayMilliseconds: 5, seed: 10), count: 10_000)
    let dups = f.filter { $0.duplicateArrival != nil }
    #expect(abs(Double(dups.count) / 10_000 - 0.1) < 0.01)
    #expect(dups.allSatisfy { $0.duplicateArrival! - $0.arrival! == .milliseconds(5) })
}

@Test func senderClockSkewStretchesSendTimes() throws {
    var fast = try NetworkSimulator(conditions: NetworkConditions(senderClockSkewPPM: 1_000))
    #expect(fast.nextFate(nominalSendTime: .seconds(100.1)).sendTime == .seconds(100))
    var slow = try NetworkSimulator(conditions: NetworkConditions(senderClockSkewPPM: -1_000))
    #expect(abs(slow.nextFate(nominalSendTime: .seconds(99.9)).sendTime.seconds - 100) < 1e-6)
}

@Test func invalidConditionsAreRejectedNamingTheField() {
    #expect(
        throws: NetworkSimulatorError.invalidConditions(
            field: "loss.probability", reason: "must be within 0...1, got 1.5")
    ) {
        try NetworkSimulator(conditions: NetworkConditions(loss: .bernoulli(probability: 1.5)))
    }
    #expect(throws: NetworkSimulatorError.self) {
        try NetworkSimulator(conditions: NetworkConditions(duplicateProbability: -0.1))
    }
}

/// `simulate --jitter inf` and `--delay inf` trapped inside the simulator (a delay of inf ms has no Int64
/// nanoseconds); now every delay and jitter parameter is checked to be finite and at most one minute.
@Test(arguments: [Double.infinity, -.infinity, .nan, 1e300, 1e9, -5, 60_001])
func nonFiniteNegativeOrHugeDelaysAreRejectedNamingTheField(_ bad: Double) {
    var cases: [(String, NetworkConditions)] = [
        ("baseDelayMilliseconds", NetworkConditions(baseDelayMilliseconds: bad)),
        (
            "jitter.normal.standardDeviationMilliseconds",
            NetworkConditions(jitter: .normal(meanMilliseconds: 10, standardDeviationMilliseconds: bad))
        ),
        ("jitter.pareto.scaleMilliseconds", NetworkConditions(jitter: .pareto(scaleMilliseconds: bad, shape: 2))),
        (
            "jitter.pareto.capMilliseconds",
            NetworkConditions(jitter: .pareto(scaleMilliseconds: 10, shape: 2, capMilliseconds: bad))
        ),
        ("reorderDelayMilliseconds", NetworkConditions(reorderProbability: 0.1, reorderDelayMilliseconds: bad)),
        ("duplicateDelayMilliseconds", NetworkConditions(duplicateProbability: 0.1, duplicateDelayMilliseconds: bad)),
        (
            "phases.baseDelayMilliseconds",
            NetworkConditions(phases: [DelayPhase(start: .seconds(1), baseDelayMilliseconds: bad)])
        )
    ]
    if !(abs(bad) <= NetworkConditions.maximumDelayMilliseconds) {  // a negative mean is allowed, a huge one not
        cases.append(
            (
                "jitter.normal.meanMilliseconds",
                NetworkConditions(jitter: .normal(meanMilliseconds: bad, standardDeviationMilliseconds: 1))
            ))
    }
    for (field, conditions) in cases {
        do {
            _ = try NetworkSimulator(conditions: conditions)
            Issue.record("\(field) = \(bad) was accepted")
        } catch {
            guard case .invalidConditions(let named, _) = error else {
                Issue.record("\(error)")
                continue
            }
            #expect(named == field)
        }
    }
}

@Test func delaysAtTheLimitStillSimulate() throws {
    let limit = NetworkConditions.maximumDelayMilliseconds
    let f = try fates(
        NetworkConditions(
            baseDelayMilliseconds: limit, jitter: .normal(meanMilliseconds: limit, standardDeviationMilliseconds: limit)
        ),
        count: 100)
    #expect(f.allSatisfy { ($0.transit?.milliseconds ?? 0) >= limit })
}

@Test func simulatedLinkDeliversPayloadsInArrivalOrder() throws {
    var link = SimulatedLink<Int>(
        simulator: try NetworkSimulator(conditions: NetworkConditions(reorderProbability: 0.2, seed: 11)))
    for i in 0..<500 { link.send(i, nominalSendTime: .milliseconds(Int64(i) * 20)) }
    var received: [(Int, MediaTime)] = []
    var now = MediaTime.zero
    while link.inFlight > 0 {
        now += .milliseconds(10)
        link.receive(until: now) { payload, arrival in
            #expect(arrival <= now)
            received.append((payload, arrival))
        }
    }
    #expect(received.count == 500)
    #expect(zip(received, received.dropFirst()).allSatisfy { $0.1 <= $1.1 })
    #expect(received.map(\.0) != Array(0..<500))  // some were reordered
}
