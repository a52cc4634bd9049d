import Foundation
import Testing
import VoiceCore
import VoiceSRTP
import VoiceTestSupport
@testable import VoiceWebRTC

/// A mutable value a closure can capture (tests only; one thread uses it).
final class ManagedBox<T>: @unchecked Sendable {
    var value: T
    init(_ value: T) { self.value = value }
}

/// Network namespaces made by the test: a "public" one holding coturn, and for each engine a NAT (masquerading
/// router) and a private host behind it. Addresses are private ranges that exist only inside these namespaces.
///
///     hostA 192.168.17.2 ─ natA (MASQUERADE) 10.17.1.2 ─┐
///                                                        pub 10.17.1.1 / 10.17.2.1: coturn on 10.17.1.1:27478
///     hostB 192.168.18.2 ─ natB (MASQUERADE) 10.17.2.2 ─┘
final class NATNetwork: @unchecked Sendable {
    static let prefix = "ve17"

    /// Runs a shell script to its end; its status and output (``ChildProcessGroup/shell(_:)``: Foundation's
    /// `Process` misses a child's exit while another `Process`, coturn, runs).
    @discardableResult
    static func sh(_ script: String) -> (Int32, String) { ChildProcessGroup.shell(script) }

    /// Whether this machine lets us make namespaces and NAT rules (root, `ip`, `iptables`).
    static let available = TwoNATNamespaces.available(prefix: prefix)

    init() throws {
        Self.teardown()
        let script = TwoNATNamespaces.script(
            prefix: Self.prefix, public1: "10.17.1", public2: "10.17.2", privateA: "192.168.17", privateB: "192.168.18")
        let (status, output) = Self.sh(script)
        guard status == 0 else {
            Self.teardown()
            throw NSError(domain: "NATNetwork", code: Int(status), userInfo: [NSLocalizedDescriptionKey: output])
        }
    }

    static func teardown() { TwoNATNamespaces.teardown(prefix: prefix) }

    deinit { Self.teardown() }

    /// A UDP socket created inside namespace `name`: made on a thread that has entered it (setns affects only the
    /// calling thread); the socket stays in that namespace for good.
    static func socket(in name: String, bind address: TransportAddress) throws -> DatagramSocket {
        final class Box: @unchecked Sendable { var result: Result<DatagramSocket, any Error>? }
        let box = Box()
        let thread = Thread {
            let fd = open("/var/run/netns/\(name)", O_RDONLY)
            typealias SetNS = @convention(c) (Int32, Int32) -> Int32
            guard fd >= 0, let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "setns"),
                unsafeBitCast(symbol, to: SetNS.self)(fd, 0x4000_0000 /* CLONE_NEWNET */) == 0
            else {
                box.result = .failure(NSError(domain: "setns \(name)", code: Int(errno)))
                return
            }
            close(fd)
            box.result = Result { try DatagramSocket(bind: address) }
        }
        thread.start()
        while box.result == nil { Thread.sleep(forTimeInterval: 0.005) }
        return try box.result!.get()
    }
}

@Suite(
    "Two engines behind NATs, through coturn", .tags(.interop, .live, .cli, .root), .scheduledByTags, .serialized,
    .timeLimit(.minutes(2)),
    .enabled(
        if: FileManager.default.isExecutableFile(atPath: turnserverPath),
        "coturn is not installed (make test-deps installs it)"),
    .enabled(if: NATNetwork.available, "needs root, ip and iptables to create network namespaces with NAT"))
struct NATTraversalTests {
    let server = TransportAddress("10.17.1.1", port: 27478)!

    /// coturn in the public namespace (relay on 10.17.1.1, ports 27500–27599), in a process group of its own
    /// (``ChildProcessGroup``: stopped and reaped whatever else runs).
    func startCoturn() throws -> ChildProcessGroup {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("ve17-coturn-\(UUID().uuidString).log")
        let p = try ChildProcessGroup(
            "/usr/sbin/ip",
            [
                "netns", "exec", "\(NATNetwork.prefix)pub", turnserverPath, "-n", "--listening-ip=10.17.1.1",
                "--listening-port=27478", "--relay-ip=10.17.1.1", "--min-port=27500", "--max-port=27599",
                "--use-auth-secret", "--static-auth-secret=\(Coturn.secret)", "--realm=voiceengine.test",
                "--no-tls", "--no-dtls", "--no-cli", "--no-tcp-relay", "--fingerprint", "--log-file=stdout",
                "--simple-log", "--pidfile=/tmp/ve17-coturn-\(UUID().uuidString).pid",
                // Peers are relay addresses on the server itself (both engines' allocations).
                "--allowed-peer-ip=10.17.1.1"
            ], log: log)
        Thread.sleep(forTimeInterval: 0.7)
        return p
    }

    func stop(_ p: ChildProcessGroup) {
        p.stop()
        try? FileManager.default.removeItem(at: p.log)
    }

    @Test func callConnectsThroughRelayedCandidatesOnly() throws {
        let network = try NATNetwork()
        let coturn = try startCoturn()
        defer {
            stop(coturn)
            _ = network
        }
        let credentials = TURNCredentials.restAPI(secret: Coturn.secret, user: "engine")
        // Each engine's socket lives behind its NAT.
        let socketA = try NATNetwork.socket(
            in: "\(NATNetwork.prefix)hostA", bind: TransportAddress("192.168.17.2", port: 0)!)
        let socketB = try NATNetwork.socket(
            in: "\(NATNetwork.prefix)hostB", bind: TransportAddress("192.168.18.2", port: 0)!)
        let turnA = TURNClient(socket: socketA, server: server, credentials: credentials)
        let turnB = TURNClient(socket: socketB, server: server, credentials: credentials)
        // Server-reflexive: coturn sees each engine at its NAT's public address, not its host address.
        #expect(try turnA.bindingAddress().host == "10.17.1.2" && turnB.bindingAddress().host == "10.17.2.2")
        let relayA = try turnA.allocate(), relayB = try turnB.allocate()
        try turnA.createPermission(for: relayB)
        try turnB.createPermission(for: relayA)
        // Media as ChannelData once the pair is known (checks and DTLS still as Send/Data indications).
        try turnA.bindChannel(0x4001, to: relayB)
        try turnB.bindChannel(0x4002, to: relayA)

        // Signalling (in process): A is controlling and nominates B's relayed candidate; B is ICE-lite.
        let iceA = ICECredentials.random(), iceB = ICECredentials.random()
        let certA = try DTLSCertificate(), certB = try DTLSCertificate()
        let clock = MonotonicClock()
        let a = WebRTCTransport(
            socket: socketA, ice: .controlling(local: iceA, remote: iceB, candidate: relayB),
            dtls: try DTLSSRTPAssociation(certificate: certA, role: .server, remoteFingerprint: certB.fingerprint))
        let b = WebRTCTransport(
            socket: socketB, ice: .liteControlled(ICELiteAgent(local: iceB, remote: iceA)),
            dtls: try DTLSSRTPAssociation(certificate: certB, role: .client, remoteFingerprint: certA.fingerprint))
        a.relay = turnA
        b.relay = turnB
        a.relayChannel = (0x4001, relayB)
        b.relayChannel = (0x4002, relayA)
        let got = WebRTCTransportTests.Received()
        b.onSRTP = { datagram, _ in got.unprotect(datagram, with: b.keys) }
        let started = clock.now
        a.start { clock.now }
        b.start { clock.now }
        defer {
            a.stop()
            b.stop()
        }
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline, a.keys == nil || b.keys == nil { Thread.sleep(forTimeInterval: 0.002) }
        print(
            "behind NATs through coturn: ICE + DTLS-SRTP done \((clock.now - started).milliseconds) ms after the transports started (relays allocated before)"
        )
        let keys = try #require(
            a.keys, "DTLS through the relays did not complete: A \(a.dtls.state), B \(b.dtls.state)")
        #expect(
            a.remoteAddress == relayB && b.remoteAddress == relayA,
            "the pair must be relayed: \(String(describing: a.remoteAddress)) / \(String(describing: b.remoteAddress))")
        let out = try SRTPSession(suite: keys.suite, key: keys.localKey, direction: .outbound)
        for i in 0..<20 {
            var packet = WebRTCTransportTests.rtp(
                sequence: UInt16(i), ssrc: 0xA, payload: [UInt8](repeating: UInt8(i), count: 40), room: 16)
            let n = try packet.withUnsafeMutableBytes { try out.protect($0, length: 52) }
            #expect(packet.withUnsafeBytes { a.send(UnsafeRawBufferPointer(rebasing: $0[0..<n]), now: clock.now) })
        }
        let until = Date().addingTimeInterval(3)
        while Date() < until, got.lock.withLock({ got.payloads.count }) < 20 { Thread.sleep(forTimeInterval: 0.01) }
        got.lock.withLock { #expect(got.payloads.count == 20 && got.failures == 0) }
        #expect(
            b.receivedChannelData >= 20,
            "media should arrive as ChannelData on the bound channel (\(b.receivedChannelData))")
    }

    /// Full ICE on both sides: each engine gathers host, server-reflexive and relayed candidates through coturn,
    /// the agents check every pair and nominate one; host addresses are unreachable across the NATs, so the pair
    /// must be srflx (MASQUERADE keeps the port; both sides' checks open the way) or relayed. Measures offer →
    /// first media: gathering, ICE + DTLS, and the first SRTP packet unprotected at the other side.
    ///
    /// With `peerInPublic`, B sits in the public namespace itself (no NAT): A's checks reach B's host address
    /// directly and B's reach A through A's server-reflexive address, which the NAT opened — B's selected pair must
    /// be A's srflx candidate.
    @Test(arguments: [false, true])
    func fullICEConnectsThroughServerReflexiveOrRelayedCandidates(peerInPublic: Bool) throws {
        let network = try NATNetwork()
        let coturn = try startCoturn()
        defer {
            stop(coturn)
            _ = network
        }
        let clock = MonotonicClock()
        let credentials = TURNCredentials.restAPI(secret: Coturn.secret, user: "engine")
        let socketA = try NATNetwork.socket(
            in: "\(NATNetwork.prefix)hostA", bind: TransportAddress("192.168.17.2", port: 0)!)
        let socketB =
            peerInPublic
            ? try NATNetwork.socket(in: "\(NATNetwork.prefix)pub", bind: TransportAddress("10.17.1.1", port: 0)!)
            : try NATNetwork.socket(in: "\(NATNetwork.prefix)hostB", bind: TransportAddress("192.168.18.2", port: 0)!)
        let turnA = TURNClient(socket: socketA, server: server, credentials: credentials)
        let turnB = TURNClient(socket: socketB, server: server, credentials: credentials)
        let agentA = ICEAgent(role: .controlling), agentB = ICEAgent(role: .controlled)
        let offerAt = clock.now  // A starts gathering for its offer
        let offer = try agentA.gather(sockets: [socketA], turn: turnA)
        let answer = try agentB.gather(sockets: [socketB], turn: turnB)
        let gathered = clock.now
        #expect(offer.map(\.kind) == [.host, .srflx, .relay])
        #expect(offer[1].host == "10.17.1.2")  // natA's public address
        if peerInPublic {
            #expect(answer.map(\.kind) == [.host, .relay])  // no NAT: the mapped address is the host's, not signalled
        } else {
            #expect(answer.map(\.kind) == [.host, .srflx, .relay] && answer[1].host == "10.17.2.2")
        }
        agentA.setRemoteCredentials(agentB.local)
        agentB.setRemoteCredentials(agentA.local)
        for c in answer { agentA.addRemoteCandidate(c) }
        for c in offer { agentB.addRemoteCandidate(c) }
        for agent in [agentA, agentB] {
            agent.localGatheringDone()
            agent.remoteGatheringDone()
        }
        // The relays forward only from permitted peers (coturn here allows relaying to its own address only).
        for (turn, remote) in [(turnA, answer), (turnB, offer)] {
            for c in remote where c.kind == .relay { try turn.createPermission(for: c.address!) }
        }
        let certA = try DTLSCertificate(), certB = try DTLSCertificate()
        let a = WebRTCTransport(
            sockets: [socketA], ice: .full(agentA),
            dtls: try DTLSSRTPAssociation(certificate: certA, role: .server, remoteFingerprint: certB.fingerprint))
        let b = WebRTCTransport(
            sockets: [socketB], ice: .full(agentB),
            dtls: try DTLSSRTPAssociation(certificate: certB, role: .client, remoteFingerprint: certA.fingerprint))
        a.relay = turnA
        b.relay = turnB
        a.relayRefreshInterval = .milliseconds(200)  // so the refreshes of a long call happen in this short one
        final class FirstMedia: @unchecked Sendable {
            let lock = NSLock()
            var at: MediaTime?
        }
        let got = WebRTCTransportTests.Received(), first = FirstMedia()
        b.onSRTP = { datagram, now in
            got.unprotect(datagram, with: b.keys)
            first.lock.withLock { if first.at == nil { first.at = now } }
        }
        // A sends a packet every 10 ms from its transport thread once it has keys (as a stream would).
        let outA = ManagedBox<SRTPSession?>(nil)
        var sequence: UInt16 = 0
        a.onTick = { now in
            guard let keys = a.keys else { return }
            if outA.value == nil {
                outA.value = try? SRTPSession(suite: keys.suite, key: keys.localKey, direction: .outbound)
            }
            guard let session = outA.value, sequence < 50 else { return }
            var packet = WebRTCTransportTests.rtp(
                sequence: sequence, ssrc: 0xA, payload: [UInt8](repeating: 7, count: 40), room: 16)
            guard let n = try? packet.withUnsafeMutableBytes({ try session.protect($0, length: 52) }) else { return }
            if packet.withUnsafeBytes({ a.sendOnTransportThread(UnsafeRawBufferPointer(rebasing: $0[0..<n]), now: now) }
            ) {
                sequence += 1
            }
        }
        let started = clock.now
        a.start { clock.now }
        b.start { clock.now }
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline, got.lock.withLock({ got.payloads.count }) < 50 { Thread.sleep(forTimeInterval: 0.005) }
        a.stop()
        b.stop()
        let firstAt = try #require(
            first.lock.withLock { first.at },
            "no media: A \(agentA.state) \(a.dtls.state), B \(agentB.state) \(b.dtls.state)")
        print(
            "full ICE, \(peerInPublic ? "one engine behind a NAT" : "both behind NATs"): gathering (srflx + relay, both engines) \((gathered - offerAt).milliseconds) ms; "
                + "transports started → first SRTP unprotected \((firstAt - started).milliseconds) ms; "
                + "offer → first media \((firstAt - offerAt).milliseconds) ms; pair A \(String(describing: agentA.selected)) "
        )
        got.lock.withLock { #expect(got.payloads.count == 50 && got.failures == 0) }
        // The transport thread refreshed A's allocation and permission without blocking; coturn accepted them.
        #expect(
            turnA.refreshSuccesses >= 2 && turnA.refreshFailures == 0,
            "\(turnA.refreshSuccesses) / \(turnA.refreshFailures)")
        let sa = try #require(agentA.selected), sb = try #require(agentB.selected)
        // A relayed pair carries media as ChannelData (no allocation per packet): the transport bound a channel to
        // the remote when the pair was selected, confirmed before DTLS finished, so all 50 packets used it; a
        // relayed receiver gets the peer's datagrams as ChannelData too. A direct pair sends none.
        print(
            "A: local \(sa.local == turnA.relayedAddress ? "relayed" : "direct"), \(a.sentChannelData) media sent as ChannelData; "
                + "B: local \(sb.local == turnB.relayedAddress ? "relayed" : "direct"), \(b.receivedChannelData) received as ChannelData"
        )
        if sa.local == turnA.relayedAddress {
            #expect(turnA.boundChannels.values.contains(sa.remote), "\(turnA.boundChannels)")
            #expect(a.sentChannelData == 50)
        } else {
            #expect(a.sentChannelData == 0)
        }
        if sb.local == turnB.relayedAddress { #expect(b.receivedChannelData > 0) }
        if peerInPublic {
            #expect(sb.remote == offer[1].address && sa.remote == socketB.localAddress, "\(sa) / \(sb)")
        } else {
            let remoteKinds =
                answer.filter { $0.address == sa.remote }.map(\.kind)
                + offer.filter { $0.address == sb.remote }.map(\.kind)
            #expect(
                !remoteKinds.isEmpty && remoteKinds.allSatisfy { $0 == .srflx || $0 == .relay || $0 == .prflx },
                "\(remoteKinds)")
            #expect(!remoteKinds.contains(.host))
        }
        // A wrong TURN secret ends gathering with a typed error.
        let socketC = try NATNetwork.socket(
            in: "\(NATNetwork.prefix)hostA", bind: TransportAddress("192.168.17.2", port: 0)!)
        let wrong = TURNClient(socket: socketC, server: server, credentials: .restAPI(secret: "wrong", user: "engine"))
        #expect(throws: TURNError.rejected(code: 401, reason: "Unauthorized")) {
            try ICEAgent(role: .controlling).gather(sockets: [socketC], turn: wrong)
        }
    }

    /// `voice-engine call --webrtc` in each private namespace, with coturn for srflx and relay candidates: the
    /// two processes connect across the NATs with full ICE, speech goes both ways, and the offerer reports offer →
    /// first decoded audio. With a wrong secret the offerer stops at gathering with the TURN server's 401.
    @Test(
        .enabled(if: BuiltExecutables.url("voice-engine") != nil, "the voice-engine tool is not built"),
        .enabled(if: FileManager.default.fileExists(atPath: speechPath), "no speech file"))
    func callCommandAcrossTheNATs() throws {
        let network = try NATNetwork()
        let coturn = try startCoturn()
        defer {
            stop(coturn)
            _ = network
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("webrtc-nat-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        func peer(_ role: String, _ namespace: String, _ host: String, secret: String = Coturn.secret) throws
            -> WebRTCCallCommandTests.Peer
        {
            try WebRTCCallCommandTests.Peer(
                role, in: directory, wrapper: ["/usr/sbin/ip", "netns", "exec", NATNetwork.prefix + namespace],
                extra: ["--bind", host, "--turn", "10.17.1.1:27478", "--turn-secret", secret])
        }
        let offerer = try peer("offer", "hostA", "192.168.17.2"), answerer = try peer("answer", "hostB", "192.168.18.2")
        defer {
            offerer.process.stop()
            answerer.process.stop()
        }
        let sdp = WebRTCCallCommandTests.signal(offerer, answerer)
        #expect(sdp.contains("typ srflx") && sdp.contains("typ relay"))
        let logs = offerer.logText + answerer.logText
        print(logs)
        #expect(offerer.exitStatus == 0 && answerer.exitStatus == 0, "\(logs)")
        // The pair each side uses is not its peer's host address (unreachable across the NATs).
        #expect(logs.contains("ICE connected") && !logs.contains("→ 192.168."), "\(logs)")
        try WebRTCCallCommandTests.expectSpeechBothWays([offerer, answerer])

        let refused = try peer("offer", "hostA", "192.168.17.2", secret: "wrong")
        defer { refused.process.stop() }
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline, refused.process.isRunning { Thread.sleep(forTimeInterval: 0.05) }
        #expect(refused.exitStatus == 1)
        #expect(refused.logText.contains("rejected(code: 401"), "\(refused.logText)")
    }

    @Test func wrongTURNCredentialsFailWithATypedError() throws {
        let network = try NATNetwork()
        let coturn = try startCoturn()
        defer {
            stop(coturn)
            _ = network
        }
        let socket = try NATNetwork.socket(
            in: "\(NATNetwork.prefix)hostA", bind: TransportAddress("192.168.17.2", port: 0)!)
        let turn = TURNClient(socket: socket, server: server, credentials: .restAPI(secret: "wrong", user: "engine"))
        #expect(throws: TURNError.rejected(code: 401, reason: "Unauthorized")) { try turn.allocate() }
    }
}
