import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
import VoiceEngine
import VoiceSIP
import VoiceTestSupport

let kamailioPath = "/usr/sbin/kamailio"

/// Collects an endpoint's trace lines (what it sent and received).
final class TraceRecorder: @unchecked Sendable {
    private let lock = NIOLock()
    private var lines: [String] = []
    init(_ endpoint: SIPEndpoint) { endpoint.onTrace { [self] line in lock.withLock { lines.append(line) } } }
    var all: [String] { lock.withLock { lines } }
    func count(_ prefix: String, containing text: String) -> Int {
        all.filter { $0.hasPrefix(prefix) && $0.contains(text) }.count
    }
}

/// Kamailio on loopback as registrar and proxy with digest authentication (Peers/kamailio/kamailio.cfg; users
/// alice and bob in Peers/kamailio/db). Ports 25060–25069 and 25100–25107 are this suite's.
@Suite(
    "Kamailio as registrar and proxy", .tags(.interop, .live), .scheduledByTags, .serialized, .timeLimit(.minutes(1)),
    .enabled(
        if: FileManager.default.isExecutableFile(atPath: kamailioPath),
        "kamailio is not installed (make test-deps installs it)"))
struct KamailioTests {
    static let domain = "voiceengine.test"

    /// Starts Kamailio on `port` (UDP and TCP; with `tls`, TLS on `port + 1` over IPv4 and IPv6 with its server
    /// certificate), runs `body`, stops Kamailio whatever happens. Skips the test when Kamailio does not answer
    /// within 5 s.
    /// With `namespace`, Kamailio runs inside that network namespace on `host` (UDP only), and `probeSocket` makes
    /// the UDP socket (in a namespace that reaches it) of the probe that waits for it.
    func withKamailio(
        port: Int, sha256: Bool = false, tls: TestCertificates? = nil, namespace: String? = nil,
        host: String = "127.0.0.1",
        probeSocket: (() throws -> CInt)? = nil, _ body: (any EventLoop, SocketAddress) async throws -> Void
    ) async throws {
        let directory = try makeTemporaryDirectory("kamailio")
        defer { try? FileManager.default.removeItem(at: directory) }
        let db = directory.appendingPathComponent("db")
        try FileManager.default.copyItem(at: peersDirectory.appendingPathComponent("kamailio/db"), to: db)
        var arguments = [
            "-f", peersDirectory.appendingPathComponent("kamailio/kamailio.cfg").path, "-DD", "-E",
            "-l", "udp:\(host):\(port)", "-A", "DBURL=\"text://\(db.path)\"",
            "-P", directory.appendingPathComponent("kamailio.pid").path, "-Y", directory.path, "-m", "32", "-M", "8"
        ]
        if namespace == nil { arguments += ["-l", "tcp:\(host):\(port)"] }
        if sha256 { arguments += ["-A", "WITH_SHA256"] }
        if let tls {
            let tlsConfig = directory.appendingPathComponent("tls.cfg")
            try tls.kamailioTLSConfiguration().write(to: tlsConfig, atomically: true, encoding: .utf8)
            arguments += [
                "-A", "WITH_TLS", "-A", "TLSCFG=\"\(tlsConfig.path)\"", "-l", "tls:127.0.0.1:\(port + 1)", "-l",
                "tls:[::1]:\(port + 1)"
            ]
        }
        let kamailio =
            try namespace.map {
                try PeerProcess(
                    name: "kamailio", executable: "/usr/sbin/ip",
                    arguments: ["netns", "exec", $0, kamailioPath] + arguments, directory: directory)
            } ?? PeerProcess(name: "kamailio", executable: kamailioPath, arguments: arguments, directory: directory)
        defer { kamailio.stop() }
        let server = try SocketAddress(ipAddress: host, port: port)
        try await withEventLoop { loop in
            try await waitUntilAnswering(server, on: loop, peer: kamailio, probeSocket: probeSocket)
            try await body(loop, server)
        }
    }

    /// Polls with OPTIONS until Kamailio answers (with anything: it challenges us).
    func waitUntilAnswering(
        _ server: SocketAddress, on loop: any EventLoop, peer: PeerProcess, probeSocket: (() throws -> CInt)? = nil
    ) async throws {
        let fast = SIPEndpointConfiguration(
            timers: SIPTimerConfiguration(t1: .milliseconds(20), t2: .milliseconds(200), t4: .milliseconds(200)))
        let probe: SIPEndpoint
        if let probeSocket {
            probe = try await SIPEndpoint.startClosedWithLoop(
                on: loop, boundUDPSocket: try probeSocket(), configuration: fast)
        } else {
            probe = try await SIPEndpoint.startClosedWithLoop(
                on: loop, udp: try SocketAddress(ipAddress: "127.0.0.1", port: 0), configuration: fast)
        }
        defer { Task { try? await probe.close() } }
        for attempt in 0..<10 {
            guard peer.isRunning else { break }
            let options = makeOutgoing(.options, to: SIPURI(host: Self.domain), callID: "probe-\(attempt)")
            // Kamailio answers (with a challenge); a 503 would be our own transport failing.
            let answer = try? await probe.request(options, to: SIPPeer(.udp, server)).get()
            if answer?.headers.first("Server")?.contains("kamailio") == true { return }
        }
        try Test.cancel("Kamailio did not start or answer on \(server):\n\(peer.logTail)")
    }

    func register(
        _ user: String, password: String? = nil, on loop: any EventLoop, server: SocketAddress,
        transport: SIPTransportKind = .udp,
        expires: UInt32 = 60, tls: SIPTLSConfiguration? = nil
    )
        async throws -> (SIPEndpoint, SIPRegistration, TraceRecorder)
    {
        let local = try SocketAddress(ipAddress: server.protocol == .inet6 ? "::1" : "127.0.0.1", port: 0)
        let endpoint = try await SIPEndpoint.startClosedWithLoop(
            on: loop, udp: transport == .udp ? local : nil, tcp: transport == .tcp ? local : nil,
            tls: transport == .tls ? local : nil,
            configuration: SIPEndpointConfiguration(tls: tls))
        let trace = TraceRecorder(endpoint)
        let sender = SIPRequestSender(
            endpoint: endpoint,
            credentials: SIPStaticCredentials(username: user, password: password ?? "\(user)-secret"))
        let registration = SIPRegistration(
            configuration: SIPRegistrationConfiguration(
                addressOfRecord: SIPURI(user: user, host: Self.domain), server: SIPPeer(transport, server),
                expires: expires),
            sender: sender)
        return (endpoint, registration, trace)
    }

    @Test(
        "REGISTER with digest, nonce reused with the next nc, unregister",
        arguments: [
            (SIPTransportKind.udp, false, 25060), (.tcp, true, 25062)
        ])
    func registerAuthenticateAndUnregister(transport: SIPTransportKind, sha256: Bool, port: Int) async throws {
        try await withKamailio(port: port, sha256: sha256) { loop, server in
            let (endpoint, registration, trace) = try await register(
                "alice", on: loop, server: server, transport: transport)
            let first = try await registration.register()
            #expect(first.statusCode == 200, "\(first)")
            #expect(first.grantedExpires == 60)
            #expect(first.contacts.count == 1)
            // We answered with the challenge's algorithm (Kamailio names it only when it is not the default MD5).
            #expect(trace.count("recv", containing: "algorithm=SHA-256") == (sha256 ? 1 : 0))
            #expect(trace.count("send", containing: "algorithm=\(sha256 ? "SHA-256" : "MD5")") == 1)
            // A refresh authenticates up front with the same nonce and nc=00000002: no second challenge.
            let refresh = try await registration.register()
            #expect(refresh.statusCode == 200)
            #expect(trace.count("recv", containing: "SIP/2.0 401") == 1)
            #expect(trace.count("send", containing: "nc=00000002") == 1)
            let removed = try await registration.unregister()
            #expect(removed.statusCode == 200)
            #expect(removed.grantedExpires == 0)
            #expect(removed.contacts.isEmpty)
            try await endpoint.close()
        }
    }

    @Test func wrongPasswordIsRefusedWithItsStatus() async throws {
        try await withKamailio(port: 25064) { loop, server in
            let (endpoint, registration, trace) = try await register(
                "alice", password: "wrong", on: loop, server: server)
            let result = try await registration.register()
            #expect(result.statusCode == 401)
            #expect(!result.succeeded)
            // One authenticated retry, not a loop.
            #expect(trace.count("send", containing: "REGISTER sip:") == 2)
            try await endpoint.close()
        }
    }

    @Test func registrationIsRefreshedBeforeItExpires() async throws {
        try await withKamailio(port: 25066) { loop, server in
            let (endpoint, registration, _) = try await register("bob", on: loop, server: server, expires: 2)
            let first = try await registration.startRefreshing()
            #expect(first.grantedExpires == 2)
            // Refreshes at 90 % of 2 s: two within 4.2 s on a quiet machine. Waited for up to 10 s so that a
            // parallel `swift test` filling both cores delays the refreshes without failing the test.
            let deadline = ContinuousClock.now + .seconds(10)
            while await registration.refreshCount < 2, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(await registration.refreshCount >= 2)
            #expect(try await registration.unregister().statusCode == 200)
            try await endpoint.close()
        }
    }

    @Test func messageThroughKamailioIsDeliveredOrFailsWithItsStatus() async throws {
        try await withKamailio(port: 25068) { loop, server in
            let (aliceEndpoint, alice, _) = try await register("alice", on: loop, server: server)
            let (bobEndpoint, bob, _) = try await register("bob", on: loop, server: server)
            #expect(try await alice.register().succeeded)
            #expect(try await bob.register().succeeded)
            let inbox = AnsweringServer(bobEndpoint)
            let sender = SIPRequestSender(
                endpoint: aliceEndpoint, credentials: SIPStaticCredentials(username: "alice", password: "alice-secret"))
            var message = makeOutgoing(
                .message, to: SIPURI(user: "bob", host: Self.domain), callID: "im-1", body: "Hello Bob")
            message.headers.replace("From", with: "<sip:alice@\(Self.domain)>;tag=im1")
            message.headers.add("X-Call-Purpose", "interop")
            let delivered = try await sender.send(message, to: SIPPeer(.udp, server))
            #expect(delivered.statusCode == 200)
            let received = try #require(inbox.seen.first?.message)
            #expect(String(decoding: received.body, as: UTF8.self) == "Hello Bob")
            #expect(received.headers.first("X-Call-Purpose") == "interop")
            #expect(received.via.count == 2)  // Kamailio's Via on top of alice's
            var toNobody = makeOutgoing(
                .message, to: SIPURI(user: "carol", host: Self.domain), callID: "im-2", body: "Hello?")
            toNobody.headers.replace("From", with: "<sip:alice@\(Self.domain)>;tag=im2")
            let failed = try await sender.send(toNobody, to: SIPPeer(.udp, server))
            #expect(failed.statusCode == 404)
            try await aliceEndpoint.close()
            try await bobEndpoint.close()
        }
    }

    /// Two engines registered at Kamailio; alice calls bob through it (INVITE authenticated with 407, record-routed),
    /// holds and resumes him with re-INVITEs and hangs up; bob's BYE-side sees the custom headers both ways.
    @Test func callThroughKamailioWithHoldResumeAndBye() async throws {
        try await withKamailio(port: 25100) { loop, server in
            let (alice, bob, aliceTrace, bobTrace) = try await registeredPair(loop: loop, server: server)
            let outgoing = try await alice.call(
                SIPURI(user: "bob", host: Self.domain), offering: testCapabilities(port: 40020),
                headers: [("X-Call-Purpose", "interop")])
            let aliceLog = CallEventLog(outgoing)
            var incoming = bob.incomingCalls.makeAsyncIterator()
            let call = try #require(await incoming.next())
            let bobLog = CallEventLog(call)
            #expect(call.requestHeaders.first { $0.name == "X-Call-Purpose" }?.value == "interop")
            #expect(call.remote.uri.user == "alice")
            try await call.ring()
            _ = try await aliceLog.wait("180 through Kamailio") {
                if case .progress(180, _, _) = $0 { true } else { nil }
            }
            try await call.answer(with: testCapabilities(port: 40022), headers: [("X-Answered-By", "bob")])
            let media = try await aliceLog.established()
            #expect(media.remotePort == 40022 && media.srtp != nil)
            _ = try await bobLog.established()
            // The INVITE was challenged (407) and retried with credentials; the dialog routes through Kamailio.
            #expect(aliceTrace.count("recv", containing: "SIP/2.0 407") == 1)
            let dialog = try #require(await outgoing.currentDialog)
            #expect(dialog.routeSet.count == 1 && dialog.routeSet.first?.uri.port == 25100)

            #expect(try await outgoing.hold().direction == .sendonly)
            _ = try await bobLog.wait("held") {
                if case .mediaUpdated(let m, true) = $0, m.direction == .recvonly { true } else { nil }
            }
            #expect(try await outgoing.resume().direction == .sendrecv)
            // bob reports the peer's re-INVITE when its ACK arrives.
            _ = try await bobLog.wait("resumed") {
                if case .mediaUpdated(let m, true) = $0, m.direction == .sendrecv { true } else { nil }
            }
            // The re-INVITEs and their ACKs went through Kamailio (Route header) and reached bob with its Via.
            #expect(bobTrace.count("recv", containing: "ACK sip:bob@") == 3)
            #expect(bobTrace.count("recv", containing: "a=sendonly") == 1)

            await outgoing.hangUp(headers: [("X-Hangup-Cause", "test over")])
            #expect(try await aliceLog.ended().cause == .localHangup)
            let end = try await bobLog.ended()
            #expect(end.cause == .remoteHangup)
            #expect(end.headers.first?.value == "test over")
            try await alice.endpoint.close()
            try await bob.endpoint.close()
        }
    }

    @Test func cancelWhileRingingThroughKamailio() async throws {
        try await withKamailio(port: 25102) { loop, server in
            let (alice, bob, aliceTrace, _) = try await registeredPair(loop: loop, server: server)
            let outgoing = try await alice.call(
                SIPURI(user: "bob", host: Self.domain), offering: testCapabilities(port: 40024))
            let aliceLog = CallEventLog(outgoing)
            var incoming = bob.incomingCalls.makeAsyncIterator()
            let call = try #require(await incoming.next())
            let bobLog = CallEventLog(call)
            try await call.ring()
            _ = try await aliceLog.wait("180") { if case .progress(180, _, _) = $0 { true } else { nil } }
            await outgoing.hangUp()
            let end = try await aliceLog.ended()
            #expect(end.cause == .cancelled && end.statusCode == 487)
            #expect(try await bobLog.ended().cause == .cancelled)
            #expect(aliceTrace.count("send", containing: "CANCEL sip:bob@voiceengine.test") == 1)
            // Calling nobody registered fails with Kamailio's status and reason.
            let nobody = CallEventLog(
                try await alice.call(SIPURI(user: "carol", host: Self.domain), offering: testCapabilities(port: 40026)))
            let failed = try await nobody.ended()
            #expect(failed.cause == .rejected && failed.statusCode == 404 && failed.reasonPhrase == "Not Found")
            try await alice.endpoint.close()
            try await bob.endpoint.close()
        }
    }

    /// `voice-engine sip listen --register` (bob) and `sip call` (alice) through Kamailio: a real call with
    /// Opus + SDES-SRTP media between two processes, speech files as microphones, ended by alice's --duration.
    @Test(
        .enabled(if: BuiltExecutables.url("voice-engine") != nil, "voice-engine is not built"),
        .enabled(if: SharedTestData.isPresent, "the shared speech recordings are absent"))
    func commandLineCallThroughKamailio() async throws {
        let binary = try #require(BuiltExecutables.url("voice-engine"))
        let speech = SharedTestData.speech + "/jfk_16k_mono.wav"
        try await withKamailio(port: 25104) { _, server in
            let registrar = "127.0.0.1:\(server.port ?? 0)"
            let directory = try makeTemporaryDirectory("sip-call")
            defer { try? FileManager.default.removeItem(at: directory) }
            let listenerLog = directory.appendingPathComponent("listen.log")
            let listener = try ChildProcessGroup(
                binary.path,
                [
                    "sip", "listen", "--register", "--from", "sip:bob@\(Self.domain)", "--server", registrar,
                    "--bind", "127.0.0.1:0", "--user", "bob", "--password", "bob-secret", "--mic", "file:\(speech)",
                    "--speaker", "file:\(directory.path)/bob.wav", "--no-voice-processing", "--header", "X-Side: bob"
                ], log: listenerLog)
            defer { listener.stop() }  // signals only a listener that has not exited (and been reaped) yet
            // bob is registered when Kamailio knows him: wait for his line.
            let deadline = ContinuousClock.now + .seconds(10)
            while !((try? String(contentsOf: listenerLog, encoding: .utf8)) ?? "").contains("registered"),
                ContinuousClock.now < deadline
            {
                try await Task.sleep(for: .milliseconds(50))
            }
            let caller = try runTool(
                binary,
                [
                    "sip", "call", "sip:bob@\(Self.domain)", "--from", "sip:alice@\(Self.domain)",
                    "--server", registrar, "--bind", "127.0.0.1:0", "--user", "alice", "--password", "alice-secret",
                    "--mic", "file:\(speech)", "--speaker", "null", "--no-voice-processing", "--duration", "3",
                    "--header", "X-Side: alice"
                ])
            #expect(caller.status == 0, "\(caller.output)")
            #expect(caller.output.contains("sip: established"))
            #expect(caller.output.contains("X-Side: bob"))
            #expect(caller.output.contains("media: SRTP"), "\(caller.output)")
            let status = await listener.wait(timeout: .seconds(10))
            let log = (try? String(contentsOf: listenerLog, encoding: .utf8)) ?? ""
            #expect(status == 0, "\(log)")
            #expect(log.contains("X-Side: alice"))
            #expect(log.contains("ended: remoteHangup"))
            // Each process closes its endpoint before its event loop shuts down: nothing left to run on the loop.
            for output in [caller.output, log] { #expect(!output.contains("Cannot schedule tasks"), "\(output)") }
            // Nobody registered as carol: the call is rejected with Kamailio's status, exit 1.
            let rejected = try runTool(
                binary,
                [
                    "sip", "call", "sip:carol@\(Self.domain)", "--from", "sip:alice@\(Self.domain)",
                    "--server", registrar, "--bind", "127.0.0.1:0", "--user", "alice", "--password", "alice-secret",
                    "--mic", "null", "--speaker", "null"
                ])
            #expect(rejected.status == 1, "\(rejected.output)")
            #expect(rejected.output.contains("rejected 404 Not Found"), "\(rejected.output)")
        }
    }

    /// bob registers over TCP and keeps the connection alive with RFC 5626 CRLF pings; alice's call reaches him
    /// over that very connection (Kamailio never connects to his listener), as a client behind a NAT is reached.
    @Test func incomingCallReachesATCPClientThroughItsRegistrationConnection() async throws {
        try await withKamailio(port: 25106) { loop, server in
            let (alice, _) = try await makeAgent(
                "alice", on: loop, proxy: SIPPeer(.udp, server),
                credentials: SIPStaticCredentials(username: "alice", password: "alice-secret"), domain: Self.domain)
            let bobEndpoint = try await SIPEndpoint.startClosedWithLoop(
                on: loop, tcp: try SocketAddress(ipAddress: "127.0.0.1", port: 0),
                configuration: SIPEndpointConfiguration(keepaliveInterval: .milliseconds(200)))
            let bob = SIPUserAgent(
                endpoint: bobEndpoint, credentials: SIPStaticCredentials(username: "bob", password: "bob-secret"),
                configuration: SIPUserAgentConfiguration(
                    addressOfRecord: SIPURI(user: "bob", host: Self.domain), outboundProxy: SIPPeer(.tcp, server),
                    transport: .tcp))
            let registration = SIPRegistration(
                configuration: SIPRegistrationConfiguration(
                    addressOfRecord: SIPURI(user: "bob", host: Self.domain), server: SIPPeer(.tcp, server), expires: 60),
                sender: bob.sender)
            #expect(try await registration.register().statusCode == 200)
            try await Task.sleep(for: .milliseconds(500))  // a couple of keepalives
            let outgoing = try await alice.call(
                SIPURI(user: "bob", host: Self.domain), offering: testCapabilities(port: 40030))
            let aliceLog = CallEventLog(outgoing)
            var incoming = bob.incomingCalls.makeAsyncIterator()
            let call = try #require(await incoming.next())
            let bobLog = CallEventLog(call)
            try await call.answer(with: testCapabilities(port: 40032))
            _ = try await aliceLog.established()
            _ = try await bobLog.established()
            await call.hangUp()
            #expect(try await aliceLog.ended().cause == .remoteHangup)
            let statistics = await bobEndpoint.statistics()
            #expect(statistics.connectionsOpened == 1, "\(statistics)")
            #expect(
                statistics.connectionsAccepted == 0,
                "Kamailio connected to bob's listener instead of using his connection")
            #expect(statistics.keepalivePongsReceived >= 1, "\(statistics)")
            try await alice.endpoint.close()
            try await bobEndpoint.close()
        }
    }

    /// alice and bob as user agents with Kamailio as outbound proxy, both registered.
    func registeredPair(loop: any EventLoop, server: SocketAddress) async throws -> (
        SIPUserAgent, SIPUserAgent, TraceRecorder, TraceRecorder
    ) {
        var agents: [(SIPUserAgent, TraceRecorder)] = []
        for user in ["alice", "bob"] {
            let credentials = SIPStaticCredentials(username: user, password: "\(user)-secret")
            let (agent, trace) = try await makeAgent(
                user, on: loop, proxy: SIPPeer(.udp, server), credentials: credentials, domain: Self.domain)
            let registration = SIPRegistration(
                configuration: SIPRegistrationConfiguration(
                    addressOfRecord: SIPURI(user: user, host: Self.domain), server: SIPPeer(.udp, server), expires: 60),
                sender: agent.sender)
            #expect(try await registration.register().statusCode == 200)
            agents.append((agent, trace))
        }
        return (agents[0].0, agents[1].0, agents[0].1, agents[1].1)
    }

    /// `voice-engine sip`: exit 0 on a 2xx, 77 when the credentials are refused, 69 without an answer, 64 on bad
    /// arguments.
    @Test(.enabled(if: BuiltExecutables.url("voice-engine") != nil, "voice-engine is not built"))
    func commandLineExitStatusPerFailureClass() async throws {
        let binary = try #require(BuiltExecutables.url("voice-engine"))
        try await withKamailio(port: 25069) { _, server in
            let registrar = "127.0.0.1:\(server.port ?? 0)"
            let registered = try runTool(
                binary,
                [
                    "sip", "register", "sip:alice@\(Self.domain)", "--server", registrar,
                    "--user", "alice", "--password", "alice-secret", "--expires", "30", "--trace"
                ])
            #expect(registered.status == 0, "\(registered.output)")
            #expect(registered.output.contains("registered for 30 s"))
            #expect(registered.output.contains("REGISTER sip:voiceengine.test SIP/2.0"))  // the trace, on stderr
            let refused = try runTool(
                binary,
                [
                    "sip", "register", "sip:alice@\(Self.domain)", "--server", registrar,
                    "--user", "alice", "--password", "wrong", "--transport", "tcp"
                ])
            #expect(refused.status == 77, "\(refused.output)")
            let message = try runTool(
                binary,
                [
                    "sip", "message", "sip:carol@\(Self.domain)", "hello", "--from", "sip:bob@\(Self.domain)",
                    "--server", registrar, "--user", "bob", "--password", "bob-secret", "--header", "X-Test: 1"
                ])
            #expect(message.status == 1, "\(message.output)")
            #expect(message.output.contains("404 Not Found"))
        }
        // Nobody at this port: ICMP port unreachable, reported as a transport failure.
        let silent = try runTool(binary, ["sip", "options", "sip:nobody@127.0.0.1:25058", "--t1", "20"])
        #expect(silent.status == 69, "\(silent.output)")
        let usage = try runTool(binary, ["sip", "options", "sip:x@127.0.0.1", "--transport", "sctp"])
        #expect(usage.status == 64)
        // TLS (the system's trust store without --ca-file) to nobody: a transport failure that says so.
        let tls = try runTool(binary, ["sip", "options", "sip:x@127.0.0.1:25058", "--transport", "tls"])
        #expect(tls.status == 69, "\(tls.output)")
        #expect(tls.output.contains("error: no answer: TLS connection to"), "\(tls.output)")
    }

    /// Runs the tool to its end with stdout and stderr into one file (a `ChildProcessGroup`).
    func runTool(_ binary: URL, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent(
            "voice-engine-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: output) }
        let status = try ChildProcessGroup(binary.path, arguments, log: output).waitForExit()
        return (status, (try? String(contentsOf: output, encoding: .utf8)) ?? "")
    }
}
