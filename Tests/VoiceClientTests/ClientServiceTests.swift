import Foundation
import Testing
import VoiceClient
import VoiceService
import VoiceTestSupport

/// Two clients and the repository's service (Kamailio with Services/kamailio/kamailio.cfg: registrar,
/// auth_ephemeral, msilo; the registration service) on loopback. Ports 26000–26019 are this suite's.
@Suite(
    "VoiceClient against the real service", .tags(.interop, .live), .scheduledByTags, .serialized,
    .timeLimit(.minutes(2)),
    .enabled(if: serviceUnavailableReason == nil, "\(serviceUnavailableReason ?? "")"))
struct ClientServiceTests {
    @Test func clientsRegisterWithSignedRequestsAndMessageEachOther() async throws {
        try await withService(sipPort: 26000) { service in
            let bobPushData = Data((0..<1024).map { UInt8(truncatingIfNeeded: $0 &* 7) })
            let alice = try service.client("alice"), bob = try service.client("bob", pushData: bobPushData)
            let aliceEvents = EventLog(alice), bobEvents = EventLog(bob)
            await alice.start()
            await bob.start()
            #expect(await aliceEvents.first { $0 == .started } != nil, "\(aliceEvents.events)")
            // Bob's device attached 1024 bytes of push data to its registration; the service keeps them.
            #expect(
                try await service.registrationService.pushData(
                    applicationKey: ServiceHarness.applicationKey, userID: "bob") == [bobPushData])
            #expect(
                try await service.registrationService.pushData(
                    applicationKey: ServiceHarness.applicationKey, userID: "alice") == [])
            #expect(await bobEvents.first { $0 == .started } != nil, "\(bobEvents.events)")
            #expect(await alice.addressOfRecord == "sip:alice@voiceengine.test")
            // Kamailio checked ephemeral credentials issued by the service after it accepted two signed requests.
            #expect(await service.registrationService.accepted == 2)

            let id = try await alice.send(message: "Hello Bob", to: ["bob"], headers: ["X-Topic": "greeting"])
            let delivered = await aliceEvents.first {
                if case .messageDelivered(id, "bob", _) = $0 { true } else { false }
            }
            #expect(delivered != nil, "\(aliceEvents.events)")
            guard let message = await bobEvents.firstMessage() else {
                Issue.record("bob got nothing: \(bobEvents.events)")
                return
            }
            #expect(message.id == id)
            #expect(message.sender == "alice")
            #expect(message.text == "Hello Bob")
            #expect(message.headers["X-Topic"] == "greeting")

            // And back.
            try await bob.send(message: "Hi Alice", to: ["alice"])
            #expect(
                await aliceEvents.first {
                    if case .messageReceived(let m) = $0 { m.text == "Hi Alice" && m.sender == "bob" } else { false }
                } != nil)

            // Per recipient: a user the service has never seen is offline, so msilo keeps that copy (202).
            let both = try await alice.send(message: "to two", to: ["bob", "carol"])
            #expect(await aliceEvents.first { $0.isDelivery(of: both, to: "bob") } != nil)
            #expect(
                await aliceEvents.first { $0 == .messageStoredForLaterDelivery(id: both, recipient: "carol") } != nil)
            #expect(await alice.pendingMessages.isEmpty)

            // Ten in a row arrive in the order they were sent.
            for index in 0..<10 { try await alice.send(message: "n\(index)", to: ["bob"]) }
            let deadline = ContinuousClock.now + .seconds(5)
            while bobEvents.messages.filter({ $0.text.hasPrefix("n") }).count < 10, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(bobEvents.messages.map(\.text).filter { $0.hasPrefix("n") } == (0..<10).map { "n\($0)" })

            await alice.terminate()
            await bob.terminate()
            #expect(await aliceEvents.first { $0 == .stopped } != nil)
        }
    }

    @Test func messageToAnOfflineUserIsStoredAndDeliveredWhenTheyRegister() async throws {
        try await withService(sipPort: 26002) { service in
            let alice = try service.client("alice")
            let aliceEvents = EventLog(alice)
            await alice.start()
            #expect(await aliceEvents.first { $0 == .started } != nil, "\(aliceEvents.events)")
            // Bob registers once and stops: unregistered, so offline.
            let bobBefore = try service.client("bob")
            await bobBefore.start()
            await bobBefore.terminate()
            let id = try await alice.send(message: "while you were away", to: ["bob"], headers: ["X-Kind": "offline"])
            #expect(
                await aliceEvents.first { $0 == .messageStoredForLaterDelivery(id: id, recipient: "bob") } != nil,
                "\(aliceEvents.events)")

            let bob = try service.client("bob")
            let bobEvents = EventLog(bob)
            await bob.start()
            #expect(await bobEvents.first { $0 == .started } != nil)
            guard let message = await bobEvents.firstMessage() else {
                Issue.record("msilo delivered nothing: \(bobEvents.events)\n\(service.kamailio?.logTail ?? "")")
                return
            }
            #expect(message.text == "while you were away")
            #expect(message.sender == "alice")
            // Delivered once: a second registration does not dump it again.
            await bob.stop()
            await bob.start()
            try await Task.sleep(for: .milliseconds(500))
            #expect(bobEvents.messages.count == 1)
            await alice.terminate()
            await bob.terminate()
        }
    }

    @Test func unsentMessageIsKeptAndSentWhenTheServiceIsBack() async throws {
        try await withService(sipPort: 26004) { service in
            let clock = ManualClock(start: .seconds(1))
            let alice = try service.client("alice", clock: clock), bob = try service.client("bob")
            let aliceEvents = EventLog(alice), bobEvents = EventLog(bob)
            await alice.start()
            await bob.start()
            #expect(await aliceEvents.first { $0 == .started } != nil)
            #expect(await bobEvents.first { $0 == .started } != nil)
            service.stopKamailio()
            let id = try await alice.send(message: "are you there?", to: ["bob"])
            // Timer F (64 × T1 = 1.28 s) or ICMP: not sent, kept for later.
            #expect(await alice.pendingMessages.count == 1)
            #expect(await alice.pendingMessages.first?.attempts == 1)
            #expect(aliceEvents.events.allSatisfy { if case .messageFailed = $0 { false } else { true } })

            try await service.startKamailio()
            await bob.stop()  // Kamailio kept its bindings in memory only: bob registers again
            await bob.start()
            // Not due yet: nothing is sent before the retry time.
            await alice.retryDueMessages()
            #expect(await alice.pendingMessages.count == 1)
            clock.advance(by: .seconds(5))
            await alice.retryDueMessages()
            #expect(
                await aliceEvents.first { $0.isDelivery(of: id, to: "bob") } != nil,
                "\(aliceEvents.events)")
            #expect(await bobEvents.first { if case .messageReceived(let m) = $0 { m.id == id } else { false } } != nil)
            await alice.terminate()
            await bob.terminate()
        }
    }

    @Test func refusedRegistrationsFailWithTheirTypedReason() async throws {
        try await withService(sipPort: 26006) { service in
            // The app's server signs with a wrong secret: refused by the registration service, Kamailio never asked.
            let forged = try VoiceClient(userID: "mallory", configuration: service.configuration()) { id in
                SignedRegistration.sign(
                    userID: id, applicationKey: ServiceHarness.applicationKey, sequence: 1, applicationSecret: "guess")
            }
            let forgedEvents = EventLog(forged)
            await forged.start()
            #expect(
                await forgedEvents.first { $0 == .failed(.registrationRefused(.forgedSignature)) } != nil,
                "\(forgedEvents.events)")
            await forged.terminate()

            // A replayed request (same sequence twice).
            let replayed = try VoiceClient(userID: "alice", configuration: service.configuration()) { id in
                SignedRegistration.sign(
                    userID: id, applicationKey: ServiceHarness.applicationKey, sequence: 7,
                    applicationSecret: ServiceHarness.applicationSecret)
            }
            let replayedEvents = EventLog(replayed)
            await replayed.start()
            #expect(await replayedEvents.first { $0 == .started } != nil)
            await replayed.stop()
            let again = try VoiceClient(userID: "alice", configuration: service.configuration()) { id in
                SignedRegistration.sign(
                    userID: id, applicationKey: ServiceHarness.applicationKey, sequence: 7,
                    applicationSecret: ServiceHarness.applicationSecret)
            }
            let againEvents = EventLog(again)
            await again.start()
            #expect(
                await againEvents.first {
                    $0 == .failed(.registrationRefused(.sequenceNotIncreasing(received: 7, lastAccepted: 7)))
                } != nil)
            await replayed.terminate()
            await again.terminate()

            // An unknown application key.
            var unknownKey = service.configuration()
            unknownKey.applicationKey = "nobody's key"
            let stranger = try VoiceClient(userID: "alice", configuration: unknownKey) { id in
                SignedRegistration.sign(userID: id, applicationKey: "nobody's key", sequence: 1, applicationSecret: "x")
            }
            let strangerEvents = EventLog(stranger)
            await stranger.start()
            #expect(
                await strangerEvents.first {
                    $0 == .failed(.registrationRefused(.unknownApplicationKey("nobody's key")))
                } != nil)
            await stranger.terminate()
        }
    }

    @Test func kamailioRefusesExpiredForgedOrBorrowedEphemeralCredentials() async throws {
        try await withService(sipPort: 26008) { service in
            let issuer = EphemeralCredentialIssuer(
                sharedSecret: service.sharedSecret, lifetime: 60, domain: "voiceengine.test")
            let now = UInt64(Date().timeIntervalSince1970)
            let expired = issuer.issue(userID: "alice", now: now - 3600)
            let valid = issuer.issue(userID: "alice", now: now)
            let wrongSecret = EphemeralCredentialIssuer(
                sharedSecret: "not the secret", lifetime: 60, domain: "voiceengine.test"
            ).issue(userID: "alice", now: now)
            let accepted = try await SIPProbe.register("alice", grant: valid, sipPort: service.sipPort)
            let late = try await SIPProbe.register("alice", grant: expired, sipPort: service.sipPort)
            let forged = try await SIPProbe.register("alice", grant: wrongSecret, sipPort: service.sipPort)
            // Alice's valid credentials used to register as bob: the From user is not the credentials' user.
            let borrowed = try await SIPProbe.register("bob", grant: valid, sipPort: service.sipPort)
            #expect(accepted == 200)
            #expect(late == 401)
            #expect(forged == 401)
            #expect(borrowed == 403)
        }
    }

    @Test func credentialsAreRenewedBeforeTheyExpire() async throws {
        // Credentials valid for 3 s: the client asks the app to sign again at 80 % of their life, so a message
        // sent after 5 s still authenticates (Kamailio refuses the first credentials by then).
        try await withService(sipPort: 26012, credentialLifetime: 3) { service in
            let alice = try service.client("alice"), bob = try service.client("bob")
            let aliceEvents = EventLog(alice), bobEvents = EventLog(bob)
            await alice.start()
            await bob.start()
            #expect(await aliceEvents.first { $0 == .started } != nil)
            #expect(await bobEvents.first { $0 == .started } != nil)
            try await Task.sleep(for: .seconds(5))
            let accepted = await service.registrationService.accepted
            #expect(accepted >= 4, "\(accepted - 2) renewals")
            let id = try await alice.send(message: "still here", to: ["bob"])
            #expect(
                await aliceEvents.first { $0.isDelivery(of: id, to: "bob") } != nil,
                "\(aliceEvents.events)")
            await alice.terminate()
            await bob.terminate()
        }
    }

    @Test func offlineRecipientWithPushDataGetsAnAppSentPushAndTheRelayedPayloadDeliversTheMessage() async throws {
        try await withService(sipPort: 26014) { service in
            let token = Data("fcm-token-of-bobs-phone".utf8)
            let bobBefore = try service.client("bob", pushData: token)
            await bobBefore.start()
            await bobBefore.terminate()  // offline now
            let alice = try service.client("alice")
            let aliceEvents = EventLog(alice)
            await alice.start()
            let id = try await alice.send(message: "wake up", to: ["bob"], headers: ["X-Priority": "high"])
            let push = await aliceEvents.first { if case .shouldSendPushNotifications = $0 { true } else { false } }
            guard case .shouldSendPushNotifications(let recipient, let pairs) = push, let payload = pairs.first?.payload
            else {
                Issue.record("no push request: \(aliceEvents.events)")
                return
            }
            #expect(recipient == "bob")
            #expect(pairs.map(\.pushData) == [token])
            // What bob's app does with the notification: parse it without a client, then relay it.
            let parsed = try PushPayload.parse(payload)
            #expect(
                parsed.kind == .message && parsed.sender == "alice" && parsed.id == id
                    && parsed.headers == ["X-Priority": "high"])
            #expect(try parsed.servicePayload().count <= 100)
            let bob = try service.client("bob", pushData: token)
            let bobEvents = EventLog(bob)
            #expect(try await bob.relayPushPayload(payload) == parsed)
            #expect(await bob.isStarted)
            #expect(await bobEvents.firstMessage()?.text == "wake up")
            // A recipient who attached no push data gives no push request; a forged query is refused.
            let carolBefore = try service.client("carol")
            await carolBefore.start()
            await carolBefore.terminate()
            let toCarol = try await alice.send(message: "no push", to: ["carol"])
            #expect(
                await aliceEvents.first { $0 == .messageStoredForLaterDelivery(id: toCarol, recipient: "carol") } != nil
            )
            try await Task.sleep(for: .milliseconds(300))
            #expect(
                aliceEvents.events.filter { if case .shouldSendPushNotifications = $0 { true } else { false } }.count
                    == 1)
            let forged = RegistrationGrant(
                username: "9999999999:mallory", password: "AAAA", expires: 9_999_999_999, domain: "voiceengine.test")
            let connection = RegistrationServiceConnection(
                host: "127.0.0.1", port: service.registrationPort, transport: service.configuration().transport)
            await #expect(throws: VoiceClientError.registrationRefused(.credentialsRefused)) {
                try await connection.pushData(
                    of: "bob", applicationKey: ServiceHarness.applicationKey, as: forged)
            }
            await alice.terminate()
            await bob.terminate()
        }
    }

    @Test func messageThatCannotBeSentFor12HoursFailsForGood() async throws {
        try await withService(sipPort: 26018) { service in
            let clock = ManualClock(start: .seconds(1))
            // T1 = 1 ms: each attempt at the dead service gives up after 64 ms (Timer F), not 1.3 s.
            var configuration = service.configuration()
            configuration.sipT1 = .milliseconds(1)
            let alice = try VoiceClient(userID: "alice", configuration: configuration, clock: clock) {
                service.sign($0)
            }
            let aliceEvents = EventLog(alice)
            await alice.start()
            #expect(await aliceEvents.first { $0 == .started } != nil)
            service.stopKamailio()
            let id = try await alice.send(message: "into the void", to: ["bob"])
            // Every due attempt fails (nobody at the service's port); the clock jumps to each next attempt.
            var attempts = 1
            while await !alice.pendingMessages.isEmpty, attempts < 200 {
                guard let next = await alice.pendingMessages.first?.nextAttempt else { break }
                clock.set(next)
                await alice.retryDueMessages()
                attempts += 1
            }
            var failures: [(id: String, reason: String, status: Int?)] = []
            let deadline = ContinuousClock.now + .seconds(2)
            while failures.isEmpty, ContinuousClock.now < deadline {
                failures = aliceEvents.events.compactMap { event in
                    if case .messageFailed(let failedID, _, let reason, let status) = event {
                        (failedID, reason, status)
                    } else {
                        nil
                    }
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            guard let failure = failures.first else {
                Issue.record("not failed: \(aliceEvents.events)")
                return
            }
            #expect(failure.id == id)
            #expect(failure.status == nil)
            let reason = failure.reason
            #expect(reason.contains("12 hours"))
            #expect(clock.now - .seconds(1) == .seconds(12 * 3600), "failed at \(clock.now.seconds) s")
            #expect(attempts > 70, "\(attempts) attempts")
            await alice.terminate()
        }
    }
}
