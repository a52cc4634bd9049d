import Testing
import VoiceCore
@testable import VoiceWebRTC

/// The full ICE agent in fast time: two agents (real STUN messages, HMACs and fingerprints) exchange datagrams
/// through a simulated network with a latency, unreachable interfaces, port-restricted-cone NATs and TURN relays,
/// clocked by the test in 1 ms steps. Over real sockets: `ICETransportTests`.
@Suite("ICE agent (RFC 8445) in fast time")
struct ICEAgentTests {
    /// A port-restricted-cone NAT (endpoint-independent mapping, address-and-port-dependent filtering), the
    /// kind most home routers are: the public port opens for a remote address only after the inside sent to it.
    struct NAT {
        var publicHost: String
        var permissions: Set<[TransportAddress]> = []
        func mapped(_ base: TransportAddress) -> TransportAddress {
            TransportAddress(publicHost, port: base.port &+ 10_000)!
        }
    }

    final class Network {
        var agents: [ICEAgent] = []
        var bases: [[TransportAddress]] = []
        var nats: [Int: NAT] = [:]
        /// TURN allocations: relayed address → the agent whose relay it is. A datagram sent from a relayed base
        /// leaves the relay as it is (no NAT), one to a relayed address reaches its agent on that base; both take
        /// ``relayLatency`` more (the detour through the server). The server permits every peer.
        var relays: [TransportAddress: Int] = [:]
        var relayLatency = MediaTime.milliseconds(20)
        var latency = MediaTime.milliseconds(10)
        /// Sends from (base, destination) that vanish (no route).
        var unreachable: (TransportAddress, TransportAddress) -> Bool = { _, _ in false }
        var cut = false
        var now = MediaTime.zero
        /// Ticks an agent only when its ``ICEAgent/nextTimer(now:)`` is due, as a driver that sleeps until then.
        var tickOnlyWhenDue = false
        /// Ticks each agent got.
        var ticks: [Int] = []
        private var inFlight:
            [(at: MediaTime, agent: Int, base: TransportAddress, from: TransportAddress, bytes: [UInt8])] = []
        /// Every datagram each agent sent, with the time.
        var sent: [[(time: MediaTime, transmit: ICEAgent.Transmit)]] = []

        func add(_ agent: ICEAgent, bases: [TransportAddress], nat: NAT? = nil) {
            agents.append(agent)
            self.bases.append(bases)
            sent.append([])
            ticks.append(0)
            if let nat { nats[agents.count - 1] = nat }
            for base in bases { agent.addLocalCandidate(kind: .host, address: base, base: base) }
            if let nat {
                for base in bases where base.family == .ipv4 {
                    agent.addLocalCandidate(kind: .srflx, address: nat.mapped(base), base: base, related: base)
                }
            }
        }

        /// A relayed candidate for agent `index` at `address` (its allocation on a TURN server).
        func addRelay(_ index: Int, address: TransportAddress) {
            relays[address] = index
            agents[index].addLocalCandidate(kind: .relay, address: address, base: address)
        }

        func isRelayed(_ address: TransportAddress) -> Bool { relays[address] != nil }

        /// Gives each agent the other's credentials and candidates, and end-of-candidates.
        func exchange(_ a: Int, _ b: Int, endOfCandidates: Bool = true) {
            for (from, to) in [(a, b), (b, a)] {
                agents[to].setRemoteCredentials(agents[from].local)
                for c in agents[from].localCandidates { agents[to].addRemoteCandidate(c.candidate) }
                agents[from].localGatheringDone()
                if endOfCandidates { agents[to].remoteGatheringDone() }
            }
        }

        private func route(from agent: Int, _ t: ICEAgent.Transmit) {
            guard !cut, !unreachable(t.base, t.destination) else { return }
            var source = t.base
            let viaRelay = isRelayed(t.base) || isRelayed(t.destination)
            let arrival = now + latency + (viaRelay ? relayLatency : .zero)
            if let owner = relays[t.destination], owner != agent {
                if let nat = nats[agent], !isRelayed(t.base) {
                    source = nat.mapped(t.base)
                    nats[agent]?.permissions.insert([t.base, t.destination])
                }
                inFlight.append((arrival, owner, t.destination, source, t.datagram))
                return
            }
            if var nat = nats[agent], !isRelayed(t.base) {
                source = nat.mapped(t.base)
                nat.permissions.insert([t.base, t.destination])
                nats[agent] = nat
            }
            for (j, list) in bases.enumerated() where j != agent {
                if nats[j] == nil, list.contains(t.destination) {
                    inFlight.append((arrival, j, t.destination, source, t.datagram))
                } else if let nat = nats[j], let base = list.first(where: { nat.mapped($0) == t.destination }),
                    nat.permissions.contains([base, source])
                {
                    inFlight.append((arrival, j, base, source, t.datagram))
                }
            }
        }

        /// Runs until `until` returns true or `limit` of fast time passed; returns the time it took.
        @discardableResult
        func run(for limit: MediaTime, until: () -> Bool = { false }) -> MediaTime? {
            let start = now
            while now - start < limit {
                for (i, agent) in agents.enumerated() {
                    if tickOnlyWhenDue {
                        guard let due = agent.nextTimer(now: now), now >= due else { continue }
                    }
                    agent.tick(now: now)
                    ticks[i] += 1
                    for t in agent.takeTransmits() {
                        sent[i].append((now, t))
                        route(from: i, t)
                    }
                }
                let due = inFlight.filter { $0.at <= now }
                inFlight.removeAll { $0.at <= now }
                for p in due {
                    agents[p.agent].handle(p.bytes, from: p.from, base: p.base, now: now)
                    for t in agents[p.agent].takeTransmits() {
                        sent[p.agent].append((now, t))
                        route(from: p.agent, t)
                    }
                }
                if until() { return now - start }
                now += .milliseconds(1)
            }
            return nil
        }

        /// First transmissions of ordinary and triggered checks (not nominating, consent or retransmissions).
        func checkTimes(of agent: Int) -> [MediaTime] {
            var seen = Set<[UInt8]>()
            return sent[agent].compactMap { entry in
                guard let m = try? STUNMessage(parsing: entry.transmit.datagram), m.messageClass == .request,
                    !m.has(STUNAttribute.Kind.useCandidate), seen.insert(m.transactionID).inserted
                else { return nil }
                return entry.time
            }
        }

        var bothConnected: Bool { agents.allSatisfy { $0.state == .connected } }
    }

    static func address(_ host: String, _ port: UInt16) -> TransportAddress { TransportAddress(host, port: port)! }

    @Test(
        "host candidates on several interfaces: the best reachable pair is nominated (IPv6 first), checks paced by Ta",
        arguments: [true, false])
    func hostCandidatesOnEveryInterface(ipv6Routes: Bool) throws {
        let net = Network()
        let a = ICEAgent(role: .controlling), b = ICEAgent(role: .controlled)
        // In gathering order: the routable IPv4 interface last, so it has the lowest IPv4 local preference.
        net.add(
            a,
            bases: [
                Self.address("2001:db8::1", 1000), Self.address("192.168.7.1", 1000), Self.address("10.0.0.1", 1000)
            ])
        net.add(
            b,
            bases: [Self.address("2001:db8::2", 2000), Self.address("172.16.0.2", 2000), Self.address("10.0.0.2", 2000)]
        )
        // Only 10/8 (and 2001:db8::/32 when `ipv6Routes`) route to each other; 192.168/172.16 are other links.
        net.unreachable = { from, to in
            !(from.host.hasPrefix("10.") && to.host.hasPrefix("10.")
                || ipv6Routes && from.host.hasPrefix("2001:") && to.host.hasPrefix("2001:"))
        }
        net.exchange(0, 1)
        #expect(a.pairs.count == 5 && b.pairs.count == 5)  // 1 IPv6 pair + 2×2 IPv4 pairs, never across families
        let took = try #require(net.run(for: .seconds(5)) { net.bothConnected })
        let sa = try #require(a.selected), sb = try #require(b.selected)
        #expect(sa.local == sb.remote && sa.remote == sb.local)
        #expect(a.hasConsent(now: net.now) && b.hasConsent(now: net.now))
        if ipv6Routes {
            #expect(sa.local.family == .ipv6)  // RFC 8421: IPv6 preferred
            #expect(took < .milliseconds(100), "\(took)")
        } else {
            #expect(sa.local == Self.address("10.0.0.1", 1000) && sa.remote == Self.address("10.0.0.2", 2000))
            // Four better pairs were tried first, one per Ta; the winner waited nominationDelay for them.
            #expect(took < .milliseconds(800), "\(took)")
            let times = net.checkTimes(of: 0)
            #expect(times.count >= 4)
            let gaps = zip(times.dropFirst(), times).map { $0 - $1 }
            #expect(gaps.allSatisfy { $0 >= a.pacing }, "\(gaps)")
        }
        // Every pair that could beat the selected one was checked before the nomination: no new ordinary checks
        // after it; the pairs that were in progress fail after all retransmissions.
        let checksAtConnection = a.checksSent
        net.run(for: .seconds(20))
        #expect(a.checksSent == checksAtConnection)
        #expect(a.pairs.allSatisfy { $0.state != .inProgress })
        #expect(a.state == .connected && b.state == .connected && a.selected == sa)
    }

    @Test("peer behind a NAT: connects through its server-reflexive address, host checks fail")
    func serverReflexiveThroughNAT() throws {
        let net = Network()
        let a = ICEAgent(role: .controlling), b = ICEAgent(role: .controlled)
        net.add(a, bases: [Self.address("10.0.0.1", 1000)], nat: NAT(publicHost: "198.51.100.1"))
        net.add(b, bases: [Self.address("10.0.0.2", 2000)], nat: NAT(publicHost: "203.0.113.2"))
        net.exchange(0, 1)
        let took = try #require(net.run(for: .seconds(10)) { net.bothConnected })
        let sa = try #require(a.selected), sb = try #require(b.selected)
        // Each side sends from its private base to the other's public mapping.
        #expect(sa.local == Self.address("10.0.0.1", 1000) && sa.remote == Self.address("203.0.113.2", 12000))
        #expect(sb.local == Self.address("10.0.0.2", 2000) && sb.remote == Self.address("198.51.100.1", 11000))
        #expect(took < .seconds(2), "\(took)")
    }

    @Test("role conflict: both controlling, and both controlled, end with one of each (487 and tie-breaker)")
    func roleConflicts() throws {
        for roles in [(ICEAgent.Role.controlling, ICEAgent.Role.controlling), (.controlled, .controlled)] {
            let net = Network()
            let a = ICEAgent(role: roles.0, tieBreaker: 5), b = ICEAgent(role: roles.1, tieBreaker: 9)
            net.add(a, bases: [Self.address("10.0.0.1", 1000)])
            net.add(b, bases: [Self.address("10.0.0.2", 2000)])
            net.exchange(0, 1)
            try #require(net.run(for: .seconds(5)) { net.bothConnected } != nil)
            // The larger tie-breaker controls in both cases (RFC 8445 §7.3.1.1).
            #expect(a.role == .controlled && b.role == .controlling)
            #expect(a.roleSwitches + b.roleSwitches >= 1)
            #expect(a.selected?.remote == b.selected?.local)
        }
    }

    @Test("trickle: checks before the answer, candidates trickled later, end-of-candidates ends a hopeless checklist")
    func trickleAndEndOfCandidates() throws {
        let net = Network()
        let a = ICEAgent(role: .controlling), b = ICEAgent(role: .controlled)
        net.add(a, bases: [Self.address("10.0.0.1", 1000)])
        net.add(b, bases: [Self.address("10.0.0.2", 2000)])
        // B (answerer) has A's offer: credentials and candidates; A has not yet got the answer.
        b.setRemoteCredentials(a.local)
        for c in a.localCandidates { b.addRemoteCandidate(c.candidate) }
        net.run(for: .milliseconds(200))
        #expect(a.state == .checking && a.pairs.isEmpty)  // B's checks reached A early: answered, kept
        // The answer arrives without candidates; B's candidate is trickled 100 ms later.
        a.setRemoteCredentials(b.local)
        #expect(a.remoteCandidates.first?.kind == .prflx)  // learned from B's early check
        net.run(for: .milliseconds(100))
        a.addRemoteCandidate(b.localCandidates[0].candidate)
        #expect(a.remoteCandidates.first?.kind == .host)  // the signalled type replaces prflx
        try #require(net.run(for: .seconds(2)) { net.bothConnected } != nil)

        // A checklist with no reachable pair fails only once both sides sent end-of-candidates.
        let net2 = Network()
        let c = ICEAgent(role: .controlling), d = ICEAgent(role: .controlled)
        net2.add(c, bases: [Self.address("10.0.0.1", 1000)])
        net2.add(d, bases: [Self.address("10.0.0.2", 2000)])
        net2.cut = true
        net2.exchange(0, 1, endOfCandidates: false)
        net2.run(for: .seconds(30))
        #expect(c.state == .checking && c.pairs.allSatisfy { $0.state == .failed })
        c.remoteGatheringDone()
        net2.run(for: .milliseconds(10))
        #expect(c.state == .failed(.allPairsFailed))
        // Every failed check was sent maximumTransmissions times.
        #expect(net2.sent[0].count == c.maximumTransmissions * c.pairs.count)
    }

    @Test("ICE restart: new credentials, media stays on the old pair until the new one is selected")
    func restart() throws {
        let net = Network()
        let a = ICEAgent(role: .controlling), b = ICEAgent(role: .controlled)
        net.add(a, bases: [Self.address("10.0.0.1", 1000), Self.address("10.0.1.1", 1000)])
        net.add(b, bases: [Self.address("10.0.0.2", 2000)])
        net.unreachable = { from, to in from.host == "10.0.0.1" || to.host == "10.0.0.1" }
        net.exchange(0, 1)
        try #require(net.run(for: .seconds(5)) { net.bothConnected } != nil)
        let before = try #require(a.selected)
        #expect(before.local == Self.address("10.0.1.1", 1000))
        let oldA = a.local, oldB = b.local

        // The network changes: the first interface routes now, the second does not. Restart through signalling.
        net.unreachable = { from, to in from.host == "10.0.1.1" || to.host == "10.0.1.1" }
        a.restart()
        b.restart()
        #expect(a.local != oldA && b.local != oldB && a.pairs.isEmpty)
        #expect(a.selected == before && a.hasConsent(now: net.now))  // media keeps going meanwhile
        net.exchange(0, 1)
        try #require(
            net.run(for: .seconds(5)) {
                a.selected?.local == Self.address("10.0.0.1", 1000)
                    && b.selected?.remote == Self.address("10.0.0.1", 1000)
            } != nil)
        #expect(a.state == .connected && b.state == .connected)

        // A check signed with the old credentials is refused (401).
        let stale = ICELiteAgent.check(from: oldA, to: oldB, priority: 1, nominate: false)
        let rejected = b.rejectedRequests
        b.handle(
            stale.serialize(integrityKey: STUNMessage.shortTermKey(password: oldB.password), fingerprint: true),
            from: Self.address("10.0.0.1", 1000), base: Self.address("10.0.0.2", 2000), now: net.now)
        #expect(b.rejectedRequests == rejected + 1)
        let reply = try STUNMessage(parsing: try #require(b.takeTransmits().first).datagram)
        #expect(try reply.errorCode()?.code == 401)
    }

    @Test("consent freshness: checks every 4–6 s keep the pair alive; 30 s without answers stop media")
    func consentAndKeepalive() throws {
        let net = Network()
        let a = ICEAgent(role: .controlling), b = ICEAgent(role: .controlled)
        net.add(a, bases: [Self.address("10.0.0.1", 1000)])
        net.add(b, bases: [Self.address("10.0.0.2", 2000)])
        net.exchange(0, 1)
        try #require(net.run(for: .seconds(5)) { net.bothConnected } != nil)
        let connectedAt = net.now
        net.run(for: .seconds(60))
        #expect(a.state == .connected && a.hasConsent(now: net.now) && b.hasConsent(now: net.now))
        let consentChecks = net.sent[0].filter { $0.time > connectedAt + .milliseconds(100) }
            .compactMap { try? STUNMessage(parsing: $0.transmit.datagram) }.filter { $0.messageClass == .request }
        #expect((10...15).contains(consentChecks.count), "\(consentChecks.count) consent checks in 60 s")

        net.cut = true
        let lost = try #require(net.run(for: .seconds(40)) { !a.hasConsent(now: net.now) })
        #expect(lost > .seconds(24) && lost <= .seconds(30), "\(lost)")  // 30 s after the last answer
        net.run(for: .seconds(8))  // the other side's last answer may have come up to 6 s later
        #expect(a.state == .failed(.consentExpired) && b.state == .failed(.consentExpired))
    }

    @Test("ticked only when nextTimer is due: checks, nomination and consent run as with a fixed tick, waking rarely")
    func tickedOnlyWhenDue() throws {
        let net = Network()
        net.tickOnlyWhenDue = true
        let a = ICEAgent(role: .controlling), b = ICEAgent(role: .controlled)
        net.add(a, bases: [Self.address("192.168.7.1", 1000), Self.address("10.0.0.1", 1000)])
        net.add(b, bases: [Self.address("172.16.0.2", 2000), Self.address("10.0.0.2", 2000)])
        // Only 10/8 routes: the other pairs' checks are retransmitted until they fail.
        net.unreachable = { from, to in !(from.host.hasPrefix("10.") && to.host.hasPrefix("10.")) }
        net.exchange(0, 1)
        try #require(net.run(for: .seconds(5)) { net.bothConnected } != nil)
        #expect(a.selected?.local == Self.address("10.0.0.1", 1000))
        let ticksWhenConnected = net.ticks
        net.run(for: .seconds(60))
        #expect(a.state == .connected && a.hasConsent(now: net.now) && b.hasConsent(now: net.now))
        // 10–15 consent checks each and the failing pairs' last retransmissions; a 20 ms tick would be 3000.
        for agent in 0..<2 {
            let ticks = net.ticks[agent] - ticksWhenConnected[agent]
            #expect((10...40).contains(ticks), "agent \(agent) ticked \(ticks) times in 60 s")
        }
        net.cut = true
        let lost = try #require(net.run(for: .seconds(40)) { !a.hasConsent(now: net.now) })
        #expect(lost > .seconds(24) && lost <= .seconds(30), "\(lost)")
        net.run(for: .seconds(8))
        #expect(a.state == .failed(.consentExpired) && b.state == .failed(.consentExpired))
        #expect(a.nextTimer(now: net.now) == nil)
    }

    @Test("bad input: garbage, wrong credentials and missing integrity are refused, counted, never crash")
    func badInput() {
        let a = ICEAgent(role: .controlled, remote: .random())
        let base = Self.address("10.0.0.1", 1000), peer = Self.address("10.0.0.2", 2000)
        a.addLocalCandidate(kind: .host, address: base, base: base)
        var generator = SystemRandomNumberGenerator()
        for n in [0, 1, 19, 20, 28, 100] {
            a.handle(
                (0..<n).map { _ in UInt8.random(in: 0...255, using: &generator) }, from: peer, base: base, now: .zero)
        }
        let noIntegrity = STUNMessage(
            method: .binding, messageClass: .request,
            attributes: [.string(STUNAttribute.Kind.username, "\(a.local.ufrag):x")])
        a.handle(noIntegrity.serialize(fingerprint: true), from: peer, base: base, now: .zero)
        let wrongKey = ICELiteAgent.check(from: .random(), to: a.local, priority: 1, nominate: true)
        a.handle(
            wrongKey.serialize(integrityKey: Array("wrong".utf8), fingerprint: true), from: peer, base: base, now: .zero
        )
        #expect(a.rejectedRequests == 8)
        #expect(a.pairs.isEmpty && a.selected == nil)
        let codes = a.takeTransmits().compactMap { try? STUNMessage(parsing: $0.datagram).errorCode()?.code }
        #expect(codes == [400, 401])
    }
}
