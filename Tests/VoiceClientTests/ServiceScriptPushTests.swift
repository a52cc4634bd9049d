import Crypto
import CryptoExtras
import Foundation
import NIOPosix
import Testing
import VoiceClient
import VoicePush
import VoiceTestSupport

/// `make service`'s script with push configured: APNs from the environment, FCM from the script's push
/// configuration file, both pointing at the test's APNs/FCM stand-in (``PushServiceServer``) with keys the test
/// generates. The script says which platform is on; a call to a user whose devices are offline reaches both
/// devices as pushes. A half-given APNs configuration stops the script with the names that are missing.
/// Ports 26500–26506 (26501 HTTPS, 26502 its metrics, 26503 TLS, 26504 Kamailio's metrics, 26505 PostgreSQL,
/// 26506 TURN) and TURN relays 26510–26609.
@Suite(
    "The service script with push senders", .tags(.interop, .live, .cli), .scheduledByTags, .serialized,
    .timeLimit(.minutes(2)),
    .enabled(if: BuiltExecutables.url("voice-engine") != nil, "voice-engine is not built"),
    .enabled(if: serviceUnavailableReason == nil, "\(serviceUnavailableReason ?? "")"),
    .enabled(if: managedPushModulesInstalled, "\(managedPushModulesMissing)"))
struct ServiceScriptPushTests {
    static let (sipPort, httpsPort, tlsPort, databasePort, turnPort) = (26500, 26501, 26503, 26505, 26506)
    static let phoneToken = String(repeating: "feedc0de", count: 8)
    /// The token URI of the service account (the grant's audience); the grant goes to the stand-in's /token.
    static let tokenURI = "https://oauth2.googleapis.com/token"

    func script(_ state: URL, environment: [String], log: URL) throws -> ChildProcessGroup {
        let binary = try #require(BuiltExecutables.url("voice-engine"))
        return try ChildProcessGroup(
            "/usr/bin/env",
            environment + [
                "SIP_TLS_PORT=\(Self.tlsPort)", "DB_PORT=\(Self.databasePort)", "TURN_PORT=\(Self.turnPort)",
                "TURN_MIN_PORT=26510", "/bin/sh", repositoryRoot.appendingPathComponent("Services/run-service.sh").path,
                state.path, "\(Self.sipPort)", "\(Self.httpsPort)", binary.path
            ], log: log)
    }

    @Test func aHalfGivenAPNsConfigurationStopsTheScriptWithWhatIsMissing() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("push-script-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = directory.appendingPathComponent("AuthKey.p8")
        try "not read".write(to: key, atomically: true, encoding: .utf8)
        let log = directory.appendingPathComponent("service.log")
        let service = try script(
            directory.appendingPathComponent("state"), environment: ["APNS_KEY_FILE=\(key.path)", "APNS_KEY_ID=K1"],
            log: log)
        let status = await service.wait(timeout: .seconds(30))
        if status == nil { service.stop() }
        let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        #expect(status == 1, "\(output)")
        #expect(output.contains("missing: APNS_TEAM_ID APNS_BUNDLE_ID"), "\(output)")
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("state/postgresql").path))
    }

    @Test func theScriptStartsThePushSendersItIsGivenAndACallIsPushedToEveryDevice() async throws {
        let pki = try TestPKI(prefix: "push-script")
        defer { pki.remove() }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        // The keys an app team gets from Apple (.p8) and Google (the service account's JSON), made here.
        let apnsKey = try P256.Signing.PrivateKey(pemRepresentation: try PushKeys.apnsKey(in: pki.directory))
        let apnsKeyFile = pki.directory.appendingPathComponent("AuthKey.p8")
        let rsaPEM = try PushKeys.serviceAccountKey(in: pki.directory)
        let rsa = try _RSA.Signing.PrivateKey(pemRepresentation: rsaPEM)
        let server = try await PushServiceServer(
            pki: pki,
            apns: .init(
                teamID: "TEAM123456", keyID: "KEY7654321", key: apnsKey.publicKey, bundleID: "com.example.voice"),
            fcm: .init(
                projectID: "voice-test", clientEmail: "push@voice-test.iam.gserviceaccount.com", privateKeyID: "k1",
                key: rsa.publicKey, tokenURI: Self.tokenURI),
            group: group)
        // Not in the PKI's directory: PostgreSQL's user must reach the state directory.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("push-script-\(UUID())")
        let state = directory.appendingPathComponent("state")
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let account = directory.appendingPathComponent("service-account.json")
        try JSONEncoder().encode(
            FCMSender.ServiceAccount(
                projectID: "voice-test", privateKeyID: "k1", privateKey: rsaPEM,
                clientEmail: "push@voice-test.iam.gserviceaccount.com", tokenURI: Self.tokenURI)
        ).write(to: account)
        // FCM from the configuration file the script reads by default, APNs from the environment.
        try """
        # FCM for the Android app
        FCM_SERVICE_ACCOUNT=\(account.path)
        FCM_ENDPOINT="\(server.url)"
        FCM_TOKEN_ENDPOINT=\(server.url)/token

        """.write(to: state.appendingPathComponent("push.env"), atomically: true, encoding: .utf8)
        let log = directory.appendingPathComponent("service.log")
        let service = try script(
            state,
            environment: [
                "APNS_KEY_FILE=\(apnsKeyFile.path)", "APNS_KEY_ID=KEY7654321", "APNS_TEAM_ID=TEAM123456",
                "APNS_BUNDLE_ID=com.example.voice", "APNS_ENDPOINT=\(server.url)", "PUSH_TRUST_ROOTS=\(pki.caFile)"
            ], log: log)
        defer { service.stop() }
        guard await waitUntilUDPBound(Self.sipPort, timeout: .seconds(60)),
            await waitUntilTCPListening(Self.tlsPort)
        else {
            Issue.record("the service did not start:\n\(service.logTail)")
            await server.close()
            try? await group.shutdownGracefully()
            return
        }

        let sequence = UInt64(Date().timeIntervalSince1970 * 1000)
        let signer: @Sendable (String) -> SignedRegistration = { user in
            SignedRegistration.sign(
                userID: user, applicationKey: "demo-application-key", sequence: sequence,
                applicationSecret: "demo-application-secret")
        }
        func configuration(_ device: String, _ token: ManagedPushToken?) -> VoiceClientConfiguration {
            var configuration = VoiceClientConfiguration(
                applicationKey: "demo-application-key", serviceHost: "127.0.0.1",
                transport: .tls(trustRoots: .pemFile(state.appendingPathComponent("ca.pem").path)),
                sipPort: Self.tlsPort, registrationPort: Self.httpsPort, registrationExpires: 60,
                pushData: token?.pushData, sipT1: .milliseconds(20))
            configuration.deviceID = device
            configuration.audio = CallAudioDevices(
                microphone: "null", speaker: "null", sampleRate: 16_000, voiceProcessing: false)
            return configuration
        }
        // Bob's phone (APNs) and tablet (FCM) register their tokens, then go offline; the registration service
        // may still be binding its port, so a failed start is retried.
        var bobStarted: [Bool] = []
        for (index, (device, token)) in [("phone", ManagedPushToken.apns(Self.phoneToken)), ("tablet", .fcm("t-fcm"))]
            .enumerated()
        {
            let bob = try VoiceClient(userID: "bob", configuration: configuration(device, token)) { user in
                SignedRegistration.sign(
                    userID: user, applicationKey: "demo-application-key", sequence: sequence + 1 + UInt64(index),
                    applicationSecret: "demo-application-secret")
            }
            let events = EventLog(bob)
            let deadline = ContinuousClock.now + .seconds(10)
            repeat {
                await bob.start()
                if events.events.contains(.started) { break }
                try await Task.sleep(for: .milliseconds(200))
            } while ContinuousClock.now < deadline
            bobStarted.append(events.events.contains(.started))
            await bob.terminate()
        }
        let alice = try VoiceClient(
            userID: "alice", configuration: configuration("laptop", nil), signRegistration: signer)
        await alice.start()
        let call = try await alice.callUser("bob")
        // Kamailio keeps the call and posts it to the registration service, which pushes both devices.
        var pushed: [PushServiceServer.Request] = []
        let deadline = ContinuousClock.now + .seconds(15)
        while ContinuousClock.now < deadline {
            pushed = server.requests.filter { $0.path != "/token" && $0.refusal == nil }
            if pushed.count >= 2 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        _ = try? await call.hangup()
        await alice.terminate()
        service.stop()
        let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        await server.close()
        try? await group.shutdownGracefully()

        #expect(bobStarted == [true, true], "\(output)")
        #expect(output.contains("push: APNs on (key \(apnsKeyFile.path), topic com.example.voice.voip"), "\(output)")
        #expect(output.contains("push: FCM on (service account \(account.path)"), "\(output)")
        // The registration service's own account of what it started.
        #expect(output.contains("push: APNs on (topic com.example.voice.voip, team TEAM123456"), "\(output)")
        #expect(output.contains("push: FCM on (project voice-test"), "\(output)")
        let refused = server.requests.filter { $0.refusal != nil }.map { "\($0.path): \($0.refusal ?? "")" }
        #expect(refused.isEmpty, "\(refused)")
        #expect(pushed.contains { $0.path == "/3/device/\(Self.phoneToken)" }, "\(server.requests.map(\.path))")
        #expect(
            pushed.contains { $0.path == "/v1/projects/voice-test/messages:send" }, "\(server.requests.map(\.path))")
        let payloads = pushed.compactMap(\.pushPayload)
        #expect(payloads.count == 2 && payloads.allSatisfy { $0.kind == .call && $0.id == call.id.rawValue })
    }
}
