import Foundation
import Testing
import VoiceClient
import VoiceTestSupport

/// The tool's side: `voice-engine sign-registration` and `make service`'s script (Services/run-service.sh, which
/// runs PostgreSQL, `voice-engine registration-service` and Kamailio with a state directory of their own, with a
/// local CA it makes on the first run). Ports 26010–26012 (26012: the registration service's metrics), 31010 (TLS),
/// 31011 (Kamailio's metrics) and 26208 (PostgreSQL).
@Suite(
    "voice-engine sign-registration and the service script", .tags(.interop, .live, .cli), .scheduledByTags,
    .serialized, .timeLimit(.minutes(2)),
    .enabled(if: BuiltExecutables.url("voice-engine") != nil, "voice-engine is not built"))
struct ServiceCommandTests {
    func run(_ arguments: [String], in directory: URL) async throws -> (status: Int32?, output: String) {
        let binary = try #require(BuiltExecutables.url("voice-engine"))
        let log = directory.appendingPathComponent("tool-\(UUID().uuidString).log")
        let process = try ChildProcessGroup(binary.path, arguments, log: log)
        let status = await process.wait(timeout: .seconds(20))
        if status == nil { process.stop() }
        return (status, (try? String(contentsOf: log, encoding: .utf8)) ?? "")
    }

    @Test func signRegistrationPrintsTheLibrarySignature() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sign-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let secret = directory.appendingPathComponent("secret")
        try "app-secret\n".write(to: secret, atomically: true, encoding: .utf8)
        let plain = try await run(
            [
                "sign-registration", "--user", "alice", "--application-key", "app-key-1", "--sequence", "42",
                "--secret-file", secret.path
            ], in: directory)
        #expect(plain.status == 0, "\(plain.output)")
        #expect(plain.output == "0wAgzUMsA8D3Sqa3R1e5FJdaUYo=\n")  // the Python vector of RegistrationTests
        let json = try await run(
            [
                "sign-registration", "--user", "alice", "--application-key", "app-key-1", "--sequence", "42",
                "--secret-file", secret.path, "--json"
            ], in: directory)
        #expect(json.output == "{\"sequence\":42,\"signature\":\"0wAgzUMsA8D3Sqa3R1e5FJdaUYo=\"}\n")
        let badUser = try await run(
            [
                "sign-registration", "--user", "ålice", "--application-key", "k", "--sequence", "1", "--secret-file",
                secret.path
            ], in: directory)
        #expect(badUser.status == 64)
        #expect(badUser.output.contains("printable ASCII"))
        try "  \n".write(to: secret, atomically: true, encoding: .utf8)
        let empty = try await run(
            [
                "sign-registration", "--user", "alice", "--application-key", "k", "--sequence", "1", "--secret-file",
                secret.path
            ], in: directory)
        #expect(empty.status == 65, "\(empty.output)")
        let missing = try await run(
            [
                "sign-registration", "--user", "alice", "--application-key", "k", "--sequence", "1", "--secret-file",
                "/nonexistent/secret"
            ], in: directory)
        #expect(missing.status == 65, "\(missing.output)")
        #expect(missing.output.contains("/nonexistent/secret"))
        let service = [
            "registration-service", "--applications", secret.path, "--database",
            "postgres://voiceengine@127.0.0.1/none",
            "--shared-secret-file", secret.path
        ]
        // HTTPS needs a certificate and key; plain HTTP only by name.
        let noCertificate = try await run(service, in: directory)
        #expect(noCertificate.status == 64, "\(noCertificate.output)")
        #expect(noCertificate.output.contains("HTTPS needs --certificate and --private-key"), "\(noCertificate.output)")
        let applications = directory.appendingPathComponent("applications.json")
        try "{\"k\": \"s\"}".write(to: applications, atomically: true, encoding: .utf8)
        let shared = directory.appendingPathComponent("shared-secret")
        try "shared".write(to: shared, atomically: true, encoding: .utf8)
        let missingCertificate = try await run(
            [
                "registration-service", "--applications", applications.path, "--database",
                "postgres://voiceengine@127.0.0.1/none", "--shared-secret-file", shared.path, "--listen",
                "127.0.0.1:0", "--certificate", "/nonexistent/server.pem", "--private-key", "/nonexistent/server.key"
            ], in: directory)
        #expect(missingCertificate.status == 65, "\(missingCertificate.output)")
        #expect(missingCertificate.output.contains("/nonexistent/server.pem"), "\(missingCertificate.output)")
        let notJSON = try await run(service + ["--insecure-plain-http"], in: directory)
        #expect(notJSON.status == 65, "\(notJSON.output)")
    }

    @Test(.enabled(if: serviceUnavailableReason == nil, "\(serviceUnavailableReason ?? "")"))
    func serviceScriptRunsKamailioAndTheRegistrationServiceForRealClients() async throws {
        let binary = try #require(BuiltExecutables.url("voice-engine"))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("service-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let state = directory.appendingPathComponent("state")
        let (sipPort, httpPort, tlsPort, databasePort) = (26010, 26011, 26010 + ServiceHarness.tlsPortOffset, 26208)
        if await waitUntilUDPBound(sipPort, timeout: .zero) {
            Issue.record("127.0.0.1:\(sipPort) is in use")
            return
        }
        let service = try ChildProcessGroup(
            "/usr/bin/env",
            [
                "SIP_TLS_PORT=\(tlsPort)", "DB_PORT=\(databasePort)", "/bin/sh",
                repositoryRoot.appendingPathComponent("Services/run-service.sh").path, state.path, "\(sipPort)",
                "\(httpPort)", binary.path
            ],
            log: directory.appendingPathComponent("service.log"))
        defer { service.stop() }
        // The first start creates the PostgreSQL cluster (initdb) before Kamailio starts.
        guard await waitUntilUDPBound(sipPort, timeout: .seconds(60)), await waitUntilTCPListening(tlsPort) else {
            Issue.record("the service did not start:\n\(service.logTail)")
            return
        }
        // The script created the state directory: applications, shared secret, the database's password and data,
        // the local CA and the server certificate it signed, Kamailio's TLS configuration; it says where the CA is.
        for file in [
            "applications.json", "shared-secret", "database-password", "postgresql/data", "ca.pem", "server.pem",
            "server.key", "tls.cfg"
        ] {
            #expect(
                FileManager.default.fileExists(atPath: state.appendingPathComponent(file).path),
                "\(file) missing:\n\(service.logTail)")
        }
        // The app's server signs with the tool (sequence from the clock, as a server would keep it increasing).
        let secretFile = directory.appendingPathComponent("app-secret")
        try "demo-application-secret".write(to: secretFile, atomically: true, encoding: .utf8)
        var signatures: [String: SignedRegistration] = [:]
        for (index, user) in ["alice", "bob"].enumerated() {
            let sequence = 1000 + index
            let signed = try await run(
                [
                    "sign-registration", "--user", user, "--application-key", "demo-application-key",
                    "--sequence", "\(sequence)", "--secret-file", secretFile.path, "--json"
                ], in: directory)
            signatures[user] = try JSONDecoder().decode(SignedRegistration.self, from: Data(signed.output.utf8))
        }
        let caFile = state.appendingPathComponent("ca.pem").path
        let serviceLog = (try? String(contentsOf: service.log, encoding: .utf8)) ?? ""
        #expect(serviceLog.contains("clients trust the service's CA: \(caFile)"), "\(serviceLog)")
        let configuration = VoiceClientConfiguration(
            applicationKey: "demo-application-key", serviceHost: "127.0.0.1",
            transport: .tls(trustRoots: .pemFile(caFile)),
            sipPort: tlsPort, registrationPort: httpPort, registrationExpires: 60, sipT1: .milliseconds(20))
        let known = signatures
        let alice = try VoiceClient(userID: "alice", configuration: configuration) { known[$0]! }
        let bob = try VoiceClient(userID: "bob", configuration: configuration) { known[$0]! }
        let aliceEvents = EventLog(alice), bobEvents = EventLog(bob)
        // The registration service may still be binding its port: a failed start is retried for a few seconds.
        for client in [(alice, aliceEvents), (bob, bobEvents)] {
            let deadline = ContinuousClock.now + .seconds(8)
            repeat {
                await client.0.start()
                // start() reports before it returns.
                if client.1.events.contains(.started) { break }
                try await Task.sleep(for: .milliseconds(200))
            } while ContinuousClock.now < deadline
        }
        #expect(bobEvents.events.contains(.started), "\(bobEvents.events)\n\(service.logTail)")
        #expect(aliceEvents.events.contains(.started), "\(aliceEvents.events)\n\(service.logTail)")
        // The monitoring the script turns on: the registration service's health and metrics, Kamailio's metrics.
        #expect(try PlainHTTP.get(port: httpPort + 1, path: "/health").status == 200)
        let registrations = try PlainHTTP.get(port: httpPort + 1, path: "/metrics").body
        #expect(registrations.contains(#"endpoint="/v1/registrations",status="200"} 2"#), "\(registrations)")
        let kamailio = try PlainHTTP.get(port: tlsPort + 1, path: "/metrics").body
        #expect((PlainHTTP.value(of: "kamailio_registrar_accepted_regs", in: kamailio) ?? 0) >= 2, "\(kamailio)")
        let id = try await alice.send(message: "through make service", to: ["bob"])
        #expect(
            await aliceEvents.first { $0.isDelivery(of: id, to: "bob") } != nil,
            "\(aliceEvents.events)")
        #expect(await bobEvents.firstMessage()?.text == "through make service")
        await alice.terminate()
        await bob.terminate()
        // The accepted sequences are in the service's database.
        let password = try String(contentsOf: state.appendingPathComponent("database-password"), encoding: .utf8)
        let psql = try #require(TestPostgreSQL.binaries).appendingPathComponent("psql").path
        let sequences = ChildProcessGroup.shell(
            "PGPASSWORD='\(password)' '\(psql)' -X -A -t -h 127.0.0.1 -p \(databasePort) -U voiceengine -d voiceengine "
                + "-c 'SELECT sequence FROM accepted_sequences ORDER BY sequence'")
        #expect(sequences.output == "1000\n1001\n", "\(sequences.output)")
    }
}

/// `voice-engine phone` against the real service: it answers a client's call by itself, then places one, driven
/// by commands from a file, printing the events. Port 26020.
@Suite(
    "voice-engine phone", .tags(.interop, .live, .cli), .scheduledByTags, .serialized, .timeLimit(.minutes(1)),
    .enabled(if: BuiltExecutables.url("voice-engine") != nil, "voice-engine is not built"),
    .enabled(if: serviceUnavailableReason == nil, "\(serviceUnavailableReason ?? "")"))
struct PhoneCommandTests {
    @Test func phoneAnswersACallThenPlacesOneAndPrintsTheEvents() async throws {
        try await withService(sipPort: 26020) { service in
            let binary = try #require(BuiltExecutables.url("voice-engine"))
            let secret = service.directory.appendingPathComponent("secret")
            try ServiceHarness.applicationSecret.write(to: secret, atomically: true, encoding: .utf8)
            let commands = service.directory.appendingPathComponent("commands")
            try "wait 4\ncall alice X-From=phone\nwait 2\nhangup\nwait 1\nstatus\nquit\n".write(
                to: commands, atomically: true, encoding: .utf8)
            let alice = try service.client("alice")
            let aliceEvents = alice.events
            Task {
                for await event in aliceEvents {
                    if case .incomingCall(let incoming) = event { try await incoming.call.answer() }
                }
            }
            await alice.start()
            let log = service.directory.appendingPathComponent("phone.log")
            let phone = try ChildProcessGroup(
                binary.path,
                [
                    "phone", "--user", "bob", "--server", "127.0.0.1", "--sip-port", "\(service.tlsPort)",
                    "--registration-port", "\(service.registrationPort)", "--ca-file", service.pki.caFile,
                    "--application-key",
                    ServiceHarness.applicationKey,
                    "--secret-file", secret.path, "--mic", "null", "--speaker", "null", "--rate", "16000",
                    "--auto-answer", "0.2"
                ], log: log, stdin: commands)
            defer { phone.stop() }
            // The phone registers; alice calls it and hangs up once it answered.
            var call: Call?
            for _ in 0..<100 where call == nil {
                call = try? await alice.callUser("bob")
                if let placed = call, await Self.ended(placed) { call = nil }
                if call == nil { try await Task.sleep(for: .milliseconds(100)) }
            }
            let placed = try #require(call)
            try await waitFor(placed, .established)
            try await placed.hangup()
            #expect(await phone.wait(timeout: .seconds(20)) == 0, "\(phone.logTail)")
            let output = try String(contentsOf: log, encoding: .utf8)
            for line in [
                "event: started", "event: incoming call from alice", "call 1: established",
                "call 1: ended (remoteHangup",
                "call 2: outgoing alice X-From=phone", "call 2: established", "call 2: ended (localHangup",
                "event: stopped"
            ] {
                #expect(output.contains(line), "'\(line)' missing from the phone's output:\n\(output)")
            }
            await alice.terminate()
        }
    }

    /// Whether a call ended at once (bob not registered yet: 404).
    static func ended(_ call: Call) async -> Bool {
        try? await Task.sleep(for: .milliseconds(200))
        return await call.state == .ended
    }
}
