import Foundation
import NIOCore
import Testing
import VoiceEngine
import VoiceSIP
import VoiceTestSupport

let kamailioTLSModule = "/usr/lib/x86_64-linux-gnu/kamailio/modules/tls.so"

/// Kamailio's tls module as the TLS peer (Makefile: kamailio-tls-modules): REGISTER and a call over TLS through it,
/// and a server certificate that our trust root does not vouch for refused with `SIPError.Kind.tls`; `voice-engine
/// sip` over TLS with `--ca-file`. Ports 25160–25175 (TLS on the port after each).
extension KamailioTests {
    static var tlsAvailable: Bool {
        FileManager.default.fileExists(atPath: kamailioTLSModule) && TestCertificates.isAvailable
    }

    @Test(
        "REGISTER over TLS with digest",
        .enabled(if: tlsAvailable, "Kamailio's tls module or openssl is missing (make test-deps)"),
        arguments: [("IPv4", 25160), ("IPv6", 25162)])
    func registerOverTLS(family: String, port: Int) async throws {
        let pki = try TestCertificates()
        defer { pki.remove() }
        try await withKamailio(port: port, tls: pki) { loop, _ in
            let server = try SocketAddress(ipAddress: loopback(family), port: port + 1)
            let (endpoint, registration, trace) = try await register(
                "alice", on: loop, server: server, transport: .tls, tls: pki.trustingConfiguration)
            let first = try await registration.register()
            #expect(first.statusCode == 200, "\(first)")
            #expect(
                first.contacts.contains {
                    if case .address(let a) = $0 { a.uri.parameters[parameter: "transport"] == "tls" } else { false }
                })
            #expect(trace.count("send", containing: "SIP/2.0/TLS") == 2)  // challenged once, then authenticated
            #expect(try await registration.register().statusCode == 200)
            #expect(try await registration.unregister().statusCode == 200)
            // One TLS connection carried all five requests.
            #expect(await endpoint.statistics().connectionsOpened == 1)
            try await endpoint.close()
        }
    }

    @Test(.enabled(if: tlsAvailable, "Kamailio's tls module or openssl is missing (make test-deps)"))
    func untrustedKamailioCertificateIsATypedError() async throws {
        let pki = try TestCertificates()
        defer { pki.remove() }
        try await withKamailio(port: 25164, tls: pki) { loop, _ in
            let server = try SocketAddress(ipAddress: "127.0.0.1", port: 25165)
            let (endpoint, registration, trace) = try await register(
                "alice", on: loop, server: server, transport: .tls, tls: pki.distrustingConfiguration)
            let error = await #expect(throws: SIPError.self) { _ = try await registration.register() }
            #expect(error?.kind == .tls)
            #expect(error?.reason.contains("CERTIFICATE_VERIFY_FAILED") == true, "\(String(describing: error))")
            #expect(trace.count("recv", containing: "SIP/2.0") == 0)
            try await endpoint.close()
        }
    }

    /// alice and bob register over TLS; alice calls bob through Kamailio, which reaches bob over the TLS connection
    /// he registered on; bob answers, alice hangs up.
    @Test(.enabled(if: tlsAvailable, "Kamailio's tls module or openssl is missing (make test-deps)"))
    func callOverTLSThroughKamailio() async throws {
        let pki = try TestCertificates()
        defer { pki.remove() }
        try await withKamailio(port: 25166, tls: pki) { loop, _ in
            let server = try SocketAddress(ipAddress: "127.0.0.1", port: 25167)
            var agents: [(SIPUserAgent, TraceRecorder)] = []
            for user in ["alice", "bob"] {
                let endpoint = try await SIPEndpoint.startClosedWithLoop(
                    on: loop, tls: try SocketAddress(ipAddress: "127.0.0.1", port: 0),
                    configuration: SIPEndpointConfiguration(tls: pki.trustingConfiguration))
                let trace = TraceRecorder(endpoint)
                let agent = SIPUserAgent(
                    endpoint: endpoint, credentials: SIPStaticCredentials(username: user, password: "\(user)-secret"),
                    configuration: SIPUserAgentConfiguration(
                        addressOfRecord: SIPURI(user: user, host: Self.domain), outboundProxy: SIPPeer(.tls, server),
                        transport: .tls))
                let registration = SIPRegistration(
                    configuration: SIPRegistrationConfiguration(
                        addressOfRecord: SIPURI(user: user, host: Self.domain), server: SIPPeer(.tls, server),
                        expires: 60),
                    sender: agent.sender)
                #expect(try await registration.register().statusCode == 200)
                agents.append((agent, trace))
            }
            let (alice, bob) = (agents[0].0, agents[1].0)
            let outgoing = try await alice.call(
                SIPURI(user: "bob", host: Self.domain), offering: testCapabilities(port: 40040),
                headers: [("X-Over", "tls")])
            let aliceLog = CallEventLog(outgoing)
            var incoming = bob.incomingCalls.makeAsyncIterator()
            let call = try #require(await incoming.next())
            let bobLog = CallEventLog(call)
            #expect(call.requestHeaders.first { $0.name == "X-Over" }?.value == "tls")
            try await call.ring()
            try await call.answer(with: testCapabilities(port: 40042))
            let media = try await aliceLog.established()
            #expect(media.remotePort == 40042 && media.srtp != nil)
            _ = try await bobLog.established()
            let dialog = try #require(await outgoing.currentDialog)
            #expect(dialog.routeSet.first?.uri.parameters[parameter: "transport"]?.lowercased() == "tls")
            await outgoing.hangUp()
            #expect(try await aliceLog.ended().cause == .localHangup)
            #expect(try await bobLog.ended().cause == .remoteHangup)
            // Everything went over TLS, and Kamailio reached bob over his registration connection.
            #expect(agents[1].1.count("recv", containing: "SIP/2.0/TLS") >= 3)  // INVITE, ACK, BYE
            #expect(agents[1].1.count("recv", containing: "BYE sip:") == 1)
            #expect(await bob.endpoint.statistics().connectionsAccepted == 0)
            try await alice.endpoint.close()
            try await bob.endpoint.close()
        }
    }

    /// bob is a TLS client only: a trust root, no certificate, no listener. His Contact names his connection to
    /// Kamailio (`;transport=tls`), and the call reaches him over that connection; his 200's Contact is the same.
    @Test(.enabled(if: tlsAvailable, "Kamailio's tls module or openssl is missing (make test-deps)"))
    func clientOnlyTLSEndpointRegistersAndIsCalledOverItsConnection() async throws {
        let pki = try TestCertificates()
        defer { pki.remove() }
        try await withKamailio(port: 25172, tls: pki) { loop, _ in
            let server = SIPPeer(.tls, try SocketAddress(ipAddress: "127.0.0.1", port: 25173))
            let aliceEndpoint = try await SIPEndpoint.startClosedWithLoop(
                on: loop, tls: try SocketAddress(ipAddress: "127.0.0.1", port: 0),
                configuration: SIPEndpointConfiguration(tls: pki.trustingConfiguration))
            let bobEndpoint = try await SIPEndpoint.startClosedWithLoop(
                on: loop,
                configuration: SIPEndpointConfiguration(tls: SIPTLSConfiguration(trustRoots: .pemFile(pki.caFile))))
            let bobTrace = TraceRecorder(bobEndpoint)
            var agents: [SIPUserAgent] = []
            for (user, endpoint) in [("alice", aliceEndpoint), ("bob", bobEndpoint)] {
                let agent = SIPUserAgent(
                    endpoint: endpoint, credentials: SIPStaticCredentials(username: user, password: "\(user)-secret"),
                    configuration: SIPUserAgentConfiguration(
                        addressOfRecord: SIPURI(user: user, host: Self.domain), outboundProxy: server, transport: .tls))
                let registration = SIPRegistration(
                    configuration: SIPRegistrationConfiguration(
                        addressOfRecord: SIPURI(user: user, host: Self.domain), server: server, expires: 60),
                    sender: agent.sender)
                #expect(try await registration.register().statusCode == 200, "\(user)")
                agents.append(agent)
            }
            let (alice, bob) = (agents[0], agents[1])
            let connection = try await bobEndpoint.connectionAddress(toward: server)
            #expect(
                bobTrace.count("send", containing: "Contact: <sip:bob@127.0.0.1:\(connection.port ?? 0);transport=tls>")
                    >= 1, "\(bobTrace.all)")
            let outgoing = try await alice.call(
                SIPURI(user: "bob", host: Self.domain), offering: testCapabilities(port: 40044))
            let aliceLog = CallEventLog(outgoing)
            var incoming = bob.incomingCalls.makeAsyncIterator()
            let call = try #require(await incoming.next())
            let bobLog = CallEventLog(call)
            try await call.answer(with: testCapabilities(port: 40046))
            #expect(try await aliceLog.established().remotePort == 40046)
            _ = try await bobLog.established()
            await outgoing.hangUp()
            #expect(try await bobLog.ended().cause == .remoteHangup)
            #expect(await bobEndpoint.statistics().connectionsAccepted == 0)
            #expect(await bobEndpoint.statistics().connectionsOpened == 1)
            try await aliceEndpoint.close()
            try await bobEndpoint.close()
        }
    }

    /// `voice-engine sip` over TLS with the test CA as `--ca-file`: REGISTER, then bob's `sip listen --register` is
    /// called by alice's `sip call` through Kamailio, both over TLS (bob reached over his registration's connection,
    /// having no certificate to listen with), with media both ways. The other CA's file gets the handshake's
    /// refusal (69, CERTIFICATE_VERIFY_FAILED).
    @Test(
        .enabled(if: tlsAvailable, "Kamailio's tls module or openssl is missing (make test-deps)"),
        .enabled(if: BuiltExecutables.url("voice-engine") != nil, "voice-engine is not built"))
    func commandLineRegistersAndCallsOverTLS() async throws {
        let binary = try #require(BuiltExecutables.url("voice-engine"))
        let pki = try TestCertificates()
        defer { pki.remove() }
        let speech = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
            .appendingPathComponent("TestVectors/speech_like_16k.wav").path
        try await withKamailio(port: 25174, tls: pki) { _, _ in
            let server = "127.0.0.1:25175"
            func account(_ user: String) -> [String] {
                [
                    "--from", "sip:\(user)@\(Self.domain)", "--server", server, "--transport", "tls", "--ca-file",
                    pki.caFile,
                    "--user", user, "--password", "\(user)-secret"
                ]
            }
            let registered = try runTool(
                binary,
                [
                    "sip", "register", "sip:alice@\(Self.domain)", "--server", server, "--transport", "tls",
                    "--ca-file", pki.caFile, "--user", "alice", "--password", "alice-secret", "--expires", "60",
                    "--trace"
                ])
            #expect(registered.status == 0, "\(registered.output)")
            #expect(registered.output.contains("registered for"), "\(registered.output)")
            #expect(
                registered.output.contains("REGISTER sip:\(Self.domain) SIP/2.0")
                    && registered.output.contains("SIP/2.0/TLS"), "\(registered.output)")
            let refused = try runTool(
                binary,
                [
                    "sip", "register", "sip:alice@\(Self.domain)", "--server", server, "--transport", "tls",
                    "--ca-file", pki.otherCAFile, "--user", "alice", "--password", "alice-secret"
                ])
            #expect(refused.status == 69, "\(refused.output)")
            #expect(refused.output.contains("CERTIFICATE_VERIFY_FAILED"), "\(refused.output)")

            let directory = try makeTemporaryDirectory("sip-tls-call")
            defer { try? FileManager.default.removeItem(at: directory) }
            let listenerLog = directory.appendingPathComponent("listen.log")
            let listener = try ChildProcessGroup(
                binary.path,
                ["sip", "listen", "--register"] + account("bob")
                    + [
                        "--mic", "file:\(speech)", "--speaker", "null", "--no-voice-processing", "--answer-timeout",
                        "20"
                    ], log: listenerLog)
            defer { listener.stop() }
            let deadline = ContinuousClock.now + .seconds(10)
            while !((try? String(contentsOf: listenerLog, encoding: .utf8)) ?? "").contains("registered"),
                ContinuousClock.now < deadline
            {
                try await Task.sleep(for: .milliseconds(50))
            }
            let caller = try runTool(
                binary,
                ["sip", "call", "sip:bob@\(Self.domain)"] + account("alice")
                    + ["--mic", "file:\(speech)", "--speaker", "null", "--no-voice-processing", "--duration", "2"])
            #expect(caller.status == 0, "\(caller.output)")
            #expect(caller.output.contains("sip: established"), "\(caller.output)")
            let status = await listener.wait(timeout: .seconds(10))
            let log = (try? String(contentsOf: listenerLog, encoding: .utf8)) ?? ""
            #expect(status == 0, "\(log)")
            #expect(log.contains("ended: remoteHangup"), "\(log)")
        }
    }
}
