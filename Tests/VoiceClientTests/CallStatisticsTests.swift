import Foundation
import NIOPosix
import Testing
import VoiceClient
import VoiceService
import VoiceTestSupport

/// End-of-call statistics through the real service: the client uploads each ended call's report over HTTPS with
/// its credentials, the registration service keeps it in PostgreSQL and lists the user's last calls; an upload
/// the service could not take is retried, and survives a restart of the app in its state store. Ports 26300–26319.
@Suite(
    "Call statistics through the registration service", .tags(.interop, .live), .scheduledByTags, .serialized,
    .timeLimit(.minutes(3)),
    .enabled(if: serviceUnavailableReason == nil, "\(serviceUnavailableReason ?? "")"))
struct CallStatisticsTests {
    @Test func endedAndFailedCallsAreStoredAndListedUnlessSwitchedOff() async throws {
        try await withService(sipPort: 26300) { service in
            let alice = try service.client("alice"), bob = try service.client("bob")
            var quiet = service.configuration()
            quiet.uploadsCallStatistics = false
            let carol = try service.client("carol", configuration: quiet)
            let aliceLog = EventLog(alice), bobLog = EventLog(bob), carolLog = EventLog(carol)
            await alice.start()
            await bob.startListening()
            await carol.start()
            for log in [aliceLog, bobLog, carolLog] { #expect(await log.first { $0 == .started } != nil) }

            let call = try await alice.callUser("bob")
            let incoming = try #require(await bobLog.incomingCall(), "bob got no call: \(bobLog.events)")
            try await incoming.call.answer()
            try await waitFor(call, .established)
            try await Task.sleep(for: .seconds(2))
            try await call.hangup()
            try await waitFor(incoming.call, .ended)
            // A call that fails: nobody is registered as dave.
            let failed = try await alice.callUser("dave")
            try await waitFor(failed, .ended)
            let unsent = try await carol.callUser("dave")
            try await waitFor(unsent, .ended)

            let store = service.registrationService.store
            let key = ServiceHarness.applicationKey
            try await waitUntil("alice's two calls and bob's one are stored") {
                let alice = try await store.callStatisticsCount(applicationKey: key, userID: "alice")
                let bob = try await store.callStatisticsCount(applicationKey: key, userID: "bob")
                return alice == 2 && bob == 1
            }

            // The user's own credentials list the calls over HTTPS, newest first.
            let grant = EphemeralCredentialIssuer(sharedSecret: service.sharedSecret, domain: "voiceengine.test")
                .issue(userID: "alice", now: UInt64(Date().timeIntervalSince1970))
            let connection = RegistrationServiceConnection(
                host: "127.0.0.1", port: service.registrationPort, transport: service.configuration().transport)
            let listed = try await connection.lastCalls(applicationKey: key, as: grant)
            try #require(listed.count == 2, "listed: \(listed.map(\.summary))")
            let (latest, answered) = (listed[0], listed[1])
            #expect(latest.summary.callID == failed.id.rawValue)
            #expect(latest.summary.remote == "dave" && latest.summary.direction == "outgoing")
            // The upload says what the call object says.
            let failedDetails = await failed.details
            #expect(
                latest.summary.endCause == failedDetails.endCause?.rawValue
                    && !latest.summary.endCause.hasSuffix("Hangup"))
            #expect(
                latest.summary.error == failedDetails.error?.description && latest.summary.durationSeconds == 0,
                "uploaded \(latest.summary), the call says \(failedDetails)")
            #expect(answered.summary.callID == call.id.rawValue && answered.summary.endCause == "localHangup")
            #expect(answered.summary.durationSeconds > 1.5, "duration \(answered.summary.durationSeconds)")
            #expect(answered.establishedAt != nil && answered.endedAt != nil && answered.session != nil)
            let media = try #require(answered.media, "the answered call's upload has no media report")
            #expect(media.rtp.received > 50, "the media report says \(media.rtp.received) RTP packets received")

            // Bob's credentials see bob's call only; no credentials see nothing.
            let bobGrant = EphemeralCredentialIssuer(sharedSecret: service.sharedSecret, domain: "voiceengine.test")
                .issue(userID: "bob", now: UInt64(Date().timeIntervalSince1970))
            let bobCalls = try await connection.lastCalls(applicationKey: key, as: bobGrant)
            #expect(bobCalls.map(\.summary.callID) == [call.id.rawValue])
            #expect(bobCalls.first?.summary.direction == "incoming")
            #expect(bobCalls.first?.summary.endCause == "remoteHangup", "bob's call, hung up by alice: \(bobCalls)")
            let forged = RegistrationGrant(
                username: grant.username, password: "not-the-password", expires: grant.expires, domain: grant.domain)
            await #expect(throws: VoiceClientError.registrationRefused(.credentialsRefused)) {
                _ = try await connection.lastCalls(applicationKey: key, as: forged)
            }

            // Carol switched uploads off: her call left nothing.
            try await Task.sleep(for: .seconds(2))
            #expect(try await store.callStatisticsCount(applicationKey: key, userID: "carol") == 0)
            // The metrics counted the uploads.
            let metrics = service.registrationService.metrics.exposition()
            #expect(
                metrics.contains(#"voiceengine_registration_call_statistics_stored_total 3"#),
                "metrics:\n\(metrics)")
            for client in [alice, bob, carol] { await client.terminate() }
        }
    }

    @Test func anUploadTheServiceMissedIsRetriedAndSurvivesARestartOfTheApp() async throws {
        let stateDirectory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "voiceclient-statistics-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: stateDirectory) }
        try await withService(sipPort: 26302, prepare: { $0.registrationListenPort = 26303 }) { service in
            var configuration = service.configuration()
            configuration.stateStore = DirectoryStateStore(directory: stateDirectory)
            let store = service.registrationService.store
            let key = ServiceHarness.applicationKey
            let alice = try service.client("alice", configuration: configuration)
            let aliceLog = EventLog(alice)
            await alice.start()
            #expect(await aliceLog.first { $0 == .started } != nil)

            // The registration service is down when the call ends: the client retries until it is back.
            try await service.http?.close()
            let first = try await alice.callUser("dave")
            try await waitFor(first, .ended)
            let record = stateDirectory.appendingPathComponent("alice.call-statistics.json")
            try await waitUntil("the record is kept in the state store") {
                (try? String(contentsOf: record, encoding: .utf8))?.contains(first.id.rawValue) == true
            }
            try await Task.sleep(for: .seconds(2))
            try await service.startRegistrationService(port: 26303)
            try await waitUntil("the retried upload is stored", timeout: .seconds(20)) {
                try await store.callStatisticsCount(applicationKey: key, userID: "alice") == 1
            }

            // Down again; the app exits with the report unsent and comes back once the service is.
            try await service.http?.close()
            let second = try await alice.callUser("dave")
            try await waitFor(second, .ended)
            try await waitUntil("the second record is kept in the state store") {
                (try? String(contentsOf: record, encoding: .utf8))?.contains(second.id.rawValue) == true
            }
            await alice.terminate()
            try await service.startRegistrationService(port: 26303)
            let restarted = try service.client("alice", configuration: configuration)
            let restartedLog = EventLog(restarted)
            await restarted.start()
            #expect(await restartedLog.first { $0 == .started } != nil)
            try await waitUntil("the upload kept across the restart is stored", timeout: .seconds(20)) {
                try await store.callStatisticsCount(applicationKey: key, userID: "alice") == 2
            }
            let listed = try await store.lastCalls(applicationKey: key, userID: "alice", limit: 10)
            #expect(listed.count == 2 && listed[0].contains(second.id.rawValue))
            try await waitUntil("the state store no longer holds the sent records") {
                (try? String(contentsOf: record, encoding: .utf8))?.contains(second.id.rawValue) == false
            }
            await restarted.terminate()
        }
    }

    /// Random and mutated uploads with valid credentials: each is answered (stored, or refused with 400/403),
    /// never a crash, and a repeated upload is stored once.
    @Test func malformedUploadsAreRefusedAndRepeatsStoredOnce() async throws {
        try await withService(sipPort: 26304) { service in
            let grant = EphemeralCredentialIssuer(sharedSecret: service.sharedSecret, domain: "voiceengine.test")
                .issue(userID: "alice", now: UInt64(Date().timeIntervalSince1970))
            let authorization = "Basic " + Data("\(grant.username):\(grant.password)".utf8).base64EncodedString()
            let valid = Array(
                try JSONEncoder().encode(
                    CallStatisticsSummary(
                        applicationKey: ServiceHarness.applicationKey, callID: "call-1", direction: "outgoing",
                        remote: "bob", startedAt: 1_700_000_000, durationSeconds: 12.5, endCause: "localHangup")))
            let handle = { (body: [UInt8]) in
                await service.registrationService.handle(
                    method: "POST", path: "/v1/call-statistics", authorization: authorization, body: body)
            }
            #expect(await handle(valid).status == 200)
            let repeated = await handle(valid)
            #expect(repeated.status == 200)
            #expect(try JSONDecoder().decode(CallStatisticsReceipt.self, from: repeated.body).stored == false)
            var generator = SystemRandomNumberGenerator()
            var statuses: [Int: Int] = [:]
            for round in 0..<400 {
                var body = valid
                if round % 4 == 0 {
                    body = (0..<Int.random(in: 0..<200, using: &generator)).map { _ in UInt8.random(in: 0...255) }
                } else {
                    for _ in 0..<Int.random(in: 1...4, using: &generator) {
                        body[Int.random(in: 0..<body.count, using: &generator)] = UInt8.random(
                            in: 0...255, using: &generator)
                    }
                }
                let answer = await handle(body)
                statuses[answer.status, default: 0] += 1
                #expect([200, 400, 403].contains(answer.status), "status \(answer.status) for \(body)")
            }
            #expect(statuses[400, default: 0] > 100, "statuses: \(statuses)")
            let unauthenticated = await service.registrationService.handle(
                method: "POST", path: "/v1/call-statistics", authorization: nil, body: valid)
            #expect(unauthenticated.status == 401)
        }
    }
}

/// Waits until `condition` holds (checked every 100 ms), failing the test with `what` after `timeout`.
func waitUntil(
    _ what: String, timeout: Duration = .seconds(10), _ condition: @Sendable () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if (try? await condition()) == true { return }
        try await Task.sleep(for: .milliseconds(100))
    }
    try #require(try await condition(), "not within \(timeout): \(what)")
}
