import Testing
import VoiceCore
@testable import VoiceWebRTC

/// Renomination in fast time (`ICEAgentTests.Network`): both agents behind port-restricted NATs with a TURN
/// relay each, where the relayed pairs answer before the direct (server-reflexive) one, as when the peer's NAT
/// drops the first check to its mapping. The controlling agent nominates the relayed pair, then the direct pair
/// when it succeeds; the controlled agent follows because it selects the highest-priority nominated pair.
@Suite("ICE renomination (RFC 8445 §8.1.1) in fast time")
struct ICERenominationTests {
    static let hostA = ICEAgentTests.address("10.0.0.1", 1000), hostB = ICEAgentTests.address("10.0.0.2", 2000)
    static let natA = ICEAgentTests.NAT(publicHost: "198.51.100.1"), natB = ICEAgentTests.NAT(publicHost: "203.0.113.2")
    static let relayA = ICEAgentTests.address("192.0.2.1", 50_001), relayB = ICEAgentTests.address("192.0.2.1", 50_002)

    /// A controlling and a controlled agent behind their NATs, each with a relayed candidate when `relays`; not
    /// yet told of each other.
    static func agentsBehindNATs(relays: Bool = true, renomination: Bool = true) -> ICEAgentTests.Network {
        let net = ICEAgentTests.Network()
        let a = ICEAgent(role: .controlling), b = ICEAgent(role: .controlled)
        a.renomination = renomination
        net.add(a, bases: [hostA], nat: natA)
        net.add(b, bases: [hostB], nat: natB)
        if relays {
            net.addRelay(0, address: relayA)
            net.addRelay(1, address: relayB)
        }
        return net
    }

    /// ``agentsBehindNATs(relays:renomination:)`` told of each other; `directOpensAt`: datagrams that touch no
    /// relay are lost before then (nil: always).
    static func network(directOpensAt: MediaTime?, renomination: Bool = true) -> ICEAgentTests.Network {
        let net = agentsBehindNATs(renomination: renomination)
        net.unreachable = { [unowned net] from, to in
            !net.isRelayed(from) && !net.isRelayed(to) && directOpensAt.map { net.now < $0 } ?? true
        }
        net.exchange(0, 1)
        return net
    }

    static func isRelayed(_ pair: ICEAgent.Selected?, _ net: ICEAgentTests.Network) -> Bool {
        pair.map { net.isRelayed($0.local) || net.isRelayed($0.remote) } ?? false
    }

    /// What each agent sent in the last `window` (up to `net.now`): every datagram's (base, destination).
    static func routes(of agent: Int, in net: ICEAgentTests.Network, last window: MediaTime) -> Set<[TransportAddress]>
    {
        Set(net.sent[agent].filter { $0.time > net.now - window }.map { [$0.transmit.base, $0.transmit.destination] })
    }

    @Test("a direct pair that succeeds after the relayed one was nominated is renominated; both sides move to it")
    func relayedFirstThenDirect() throws {
        let net = Self.network(directOpensAt: .milliseconds(600))
        let a = net.agents[0], b = net.agents[1]
        try #require(net.run(for: .seconds(5)) { net.bothConnected } != nil)
        let first = try #require(a.selected)
        #expect(Self.isRelayed(first, net), "the relayed pair should win first: \(first)")
        let selectedAt = net.now
        // The direct pair's check is retransmitted (RTO doubling) and answered once the NATs let it through.
        let srflxA = Self.natA.mapped(Self.hostA), srflxB = Self.natB.mapped(Self.hostB)
        let moved = try #require(
            net.run(for: .seconds(10)) {
                a.selected?.local == Self.hostA && a.selected?.remote == srflxB && b.selected?.local == Self.hostB
                    && b.selected?.remote == srflxA
            }, "no renomination: A \(String(describing: a.selected)), B \(String(describing: b.selected))")
        #expect(moved < .seconds(3), "moved \(moved) after the first selection at \(selectedAt)")
        // The move was a standard nomination: a check with USE-CANDIDATE on the direct pair.
        let nominations = net.sent[0].filter {
            $0.transmit.destination == srflxB
                && (try? STUNMessage(parsing: $0.transmit.datagram))?.has(STUNAttribute.Kind.useCandidate) == true
        }
        #expect(!nominations.isEmpty && nominations.allSatisfy { $0.time > selectedAt })
        #expect(a.state == .connected && b.state == .connected)
        #expect(a.hasConsent(now: net.now) && b.hasConsent(now: net.now))
        // Checks end (each pair once, bounded by its transmissions); afterwards only consent, on the new pair.
        net.run(for: .seconds(30))
        #expect(a.pairs.allSatisfy { $0.state != .inProgress && $0.state != .waiting })
        #expect(Self.routes(of: 0, in: net, last: .seconds(10)) == [[Self.hostA, srflxB]])
        #expect(Self.routes(of: 1, in: net, last: .seconds(10)).allSatisfy { $0 == [Self.hostB, srflxA] })
        #expect(a.selected?.remote == srflxB && b.selected?.remote == srflxA && a.hasConsent(now: net.now))
    }

    @Test("without renomination the relayed pair stays (checking ends with the first nomination, §8.1.2)")
    func relayedFirstWithoutRenomination() throws {
        let net = Self.network(directOpensAt: .milliseconds(600), renomination: false)
        let a = net.agents[0], b = net.agents[1]
        try #require(net.run(for: .seconds(5)) { net.bothConnected } != nil)
        let first = try #require(a.selected)
        net.run(for: .seconds(15))
        #expect(a.selected == first && Self.isRelayed(b.selected, net))
    }

    @Test("a better pair that never answers: the relayed selection stays and the checks stop after their bound")
    func betterPairNeverAnswers() throws {
        let net = Self.network(directOpensAt: nil)
        let a = net.agents[0], b = net.agents[1]
        try #require(net.run(for: .seconds(5)) { net.bothConnected } != nil)
        let first = try #require(a.selected), firstB = try #require(b.selected)
        #expect(Self.isRelayed(first, net))
        net.run(for: .seconds(30))
        #expect(a.selected == first && b.selected == firstB && a.hasConsent(now: net.now))
        // Every pair that could beat the selected one was checked and failed after maximumTransmissions sends.
        let floor = a.pairs.first { $0.local == first.local && $0.remote == first.remote }!.priority(
            weAreControlling: true)
        let better = a.pairs.filter { $0.priority(weAreControlling: true) > floor }
        #expect(!better.isEmpty && better.allSatisfy { $0.state == .failed })
        for pair in better {
            let sends = net.sent[0].filter { $0.transmit.base == pair.local && $0.transmit.destination == pair.remote }
            #expect(sends.count <= a.maximumTransmissions, "\(sends.count) sends on \(pair.local) → \(pair.remote)")
        }
        #expect(Self.routes(of: 0, in: net, last: .seconds(10)) == [[first.local, first.remote]])
    }

    @Test("a better pair that still crosses a relay is not renominated: the first relayed selection stays")
    func noMoveToAnotherRelayedPair() throws {
        let net = Self.agentsBehindNATs()
        // No direct path; until 600 ms only relay to relay, then a host reaches the peer's relay too (a pair that
        // outranks relay to relay).
        net.unreachable = { [unowned net] from, to in
            let relayedEnds = [from, to].filter(net.isRelayed).count
            return relayedEnds == 0 || relayedEnds == 1 && net.now < .milliseconds(600)
        }
        net.exchange(0, 1)
        let a = net.agents[0], b = net.agents[1]
        try #require(net.run(for: .seconds(5)) { net.bothConnected } != nil)
        let first = try #require(a.selected), firstB = try #require(b.selected)
        #expect(net.isRelayed(first.local) && net.isRelayed(first.remote), "\(first)")
        net.run(for: .seconds(20))
        #expect(a.selected == first && b.selected == firstB, "moved to \(String(describing: a.selected))")
        #expect(Self.routes(of: 0, in: net, last: .seconds(10)) == [[first.local, first.remote]])
    }

    @Test("candidates trickled after the nomination are checked one per renomination pacing; the one that answers wins")
    func trickledAfterNomination() throws {
        let net = Self.agentsBehindNATs()
        let a = net.agents[0], b = net.agents[1]
        // B's server-reflexive candidate reaches A late (B's STUN answer was late); the rest as usual.
        let srflxB = Self.natB.mapped(Self.hostB), srflxA = Self.natA.mapped(Self.hostA)
        let late = try #require(b.localCandidates.first { $0.candidate.kind == .srflx }).candidate
        b.setRemoteCredentials(a.local)
        for c in a.localCandidates { b.addRemoteCandidate(c.candidate) }
        a.setRemoteCredentials(b.local)
        for c in b.localCandidates where c.candidate.kind != .srflx { a.addRemoteCandidate(c.candidate) }
        try #require(net.run(for: .seconds(5)) { net.bothConnected } != nil)
        #expect(Self.isRelayed(a.selected, net))
        // With it, a host candidate on a network A cannot reach (its pair ranks above the srflx one).
        let unreachable = ICECandidate(
            foundation: "99", priority: ICECandidate.priority(kind: .host, localPreference: 1), host: "10.9.0.2",
            port: 2000, kind: .host)
        let trickledAt = net.now
        a.addRemoteCandidate(unreachable)
        a.addRemoteCandidate(late)
        try #require(
            net.run(for: .seconds(5)) {
                a.selected?.local == Self.hostA && a.selected?.remote == srflxB && b.selected?.local == Self.hostB
                    && b.selected?.remote == srflxA
            } != nil)
        // Both new pairs were checked, the better one first, the second one renominationPacing later.
        let firstChecks = [unreachable.address!, srflxB].compactMap { destination in
            net.sent[0].first { $0.time >= trickledAt && $0.transmit.destination == destination }?.time
        }
        try #require(firstChecks.count == 2)
        #expect(firstChecks[0] - trickledAt < a.pacing, "\(firstChecks)")
        #expect(firstChecks[1] - firstChecks[0] >= a.renominationPacing, "\(firstChecks)")
    }

    @Test("a controlled agent selects the highest-priority nominated pair: up on a better one, never down")
    func controlledTakesTheHighestNominatedPair() throws {
        let net = Self.network(directOpensAt: .milliseconds(600))
        let a = net.agents[0], b = net.agents[1]
        let srflxA = Self.natA.mapped(Self.hostA)
        try #require(
            net.run(for: .seconds(10)) { b.selected?.local == Self.hostB && b.selected?.remote == srflxA } != nil)
        // A nominates the relayed pair again (a peer that renominates downwards): B keeps the better pair.
        let relayedPair = try #require(
            b.pairs.first { $0.nominated && ($0.local != b.selected?.local || $0.remote != b.selected?.remote) })
        let check = ICELiteAgent.check(
            from: a.local, to: b.local, priority: relayedPair.remotePriority, nominate: true, tieBreaker: a.tieBreaker)
        b.handle(
            check.serialize(integrityKey: STUNMessage.shortTermKey(password: b.local.password), fingerprint: true),
            from: relayedPair.remote, base: relayedPair.local, now: net.now)
        let reply = try STUNMessage(parsing: try #require(b.takeTransmits().first).datagram)
        #expect(reply.messageClass == .successResponse)
        #expect(b.selected?.remote == srflxA && b.selected?.local == Self.hostB)
    }

    @Test("the peer's check on a pair still being checked sends ours again at once (§7.3.1.4), not at its RTO")
    func peersCheckHurriesOurs() throws {
        let net = Self.agentsBehindNATs(relays: false)
        let a = net.agents[0]
        net.exchange(0, 1)
        // Both check the srflx pair in the same millisecond: A's check is dropped by B's NAT (B has not sent to A
        // yet), B's passes A's NAT (A has just sent to B). B's check makes A send its own again at once.
        let srflxB = Self.natB.mapped(Self.hostB)
        let valid = try #require(
            net.run(for: .seconds(2)) {
                a.pairs.contains { $0.remote == srflxB && $0.state == .succeeded }
            })
        #expect(valid < a.initialRTO, "A's srflx pair valid after \(valid)")
        try #require(net.run(for: .seconds(2)) { net.bothConnected } != nil)
        #expect(a.selected?.remote == srflxB)
    }
}
