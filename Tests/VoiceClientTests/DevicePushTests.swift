import Crypto
import CryptoExtras
import Foundation
import NIOCore
import NIOPosix
import Testing
import VoiceClient
import VoicePush
import VoiceService
import VoiceTestSupport

/// Push data per device: the store (PostgreSQL) keeps each of a user's devices, managed push reaches every one
/// through APNs and FCM's protocols (``PushServiceServer``), a token the push service calls gone is removed, and a
/// device that removes its push data is pushed no more.
@Suite(
    "Push for every device of a user", .tags(.interop), .scheduledByTags,
    .enabled(if: TestPostgreSQL.unavailableReason == nil, "\(TestPostgreSQL.unavailableReason ?? "")"),
    .enabled(if: TestPKI.isAvailable, "the openssl command is not installed"))
struct DevicePushTests {
    static let key = RegistrationTests.key, secret = RegistrationTests.secret
    static let issuer = EphemeralCredentialIssuer(sharedSecret: "s", domain: "voiceengine.test")
    static let phoneToken = String(repeating: "0123abcd", count: 8)

    func signed(_ user: String, _ sequence: UInt64, device: String, pushData: Data?, name: String? = nil)
        -> RegistrationRequest
    {
        var request = RegistrationTests().signed(user, sequence, secret: Self.secret)
        request.deviceID = device
        request.pushData = pushData
        request.displayName = name
        return request
    }

    @Test func eachDeviceKeepsItsPushDataAndATokenMovingToAnotherDeviceIDIsKeptOnce() async throws {
        let database = try TestPostgreSQL.shared().database()
        defer { database.drop() }
        let store = try await RegistrationStore.open(try DatabaseAddress(url: database.url))
        try await store.setApplication(key: Self.key, secret: Self.secret)
        let service = RegistrationService(store: store, issuer: Self.issuer)
        let phone = Data("phone-token".utf8), tablet = Data("tablet-token".utf8)
        _ = try await service.register(signed("bob", 1, device: "phone", pushData: phone))
        _ = try await service.register(signed("bob", 2, device: "tablet", pushData: tablet))
        let both = try await store.devices(applicationKey: Self.key, userID: "bob")
        // The phone reinstalled (a new device ID, the same token): one entry for the token, not two.
        _ = try await service.register(signed("bob", 3, device: "phone-reinstalled", pushData: phone))
        let afterReinstall = try await store.devices(applicationKey: Self.key, userID: "bob").map(\.deviceID)
        // The tablet registers without push data: its entry goes, the phone's stays.
        _ = try await service.register(signed("bob", 4, device: "tablet", pushData: nil))
        let afterTablet = try await store.pushData(applicationKey: Self.key, userID: "bob")
        await store.close()
        #expect(both.map(\.deviceID) == ["phone", "tablet"] && both.map(\.pushData) == [phone, tablet])
        #expect(afterReinstall.sorted() == ["phone-reinstalled", "tablet"])
        #expect(afterTablet == [phone])
    }

    /// The managed-push path the SIP service takes (`POST /v1/managed-push?to=<user>`), against a store and a
    /// push service stand-in that speaks APNs and FCM.
    @Test func managedPushReachesBothDevicesAndAGoneOrRemovedTokenIsPushedNoMore() async throws {
        let database = try TestPostgreSQL.shared().database()
        defer { database.drop() }
        let store = try await RegistrationStore.open(try DatabaseAddress(url: database.url))
        try await store.setApplication(key: Self.key, secret: Self.secret)
        let pki = try TestPKI(prefix: "device-push")
        defer { pki.remove() }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let (server, apns, fcm) = try await PushStandIn.make(pki: pki, group: group)
        let dispatcher = ManagedPushDispatcher(store: store, apns: apns, fcm: fcm)
        let service = RegistrationService(
            store: store, issuer: Self.issuer, managedPush: .init(dispatcher: dispatcher, secret: "kamailio-secret"))

        /// Status, and per device: outcome, detail, removed.
        func managedPush(_ payload: String, to user: String, secret: String = "kamailio-secret") async -> (
            status: Int, devices: [String: (outcome: String, detail: String, removed: Bool)]
        ) {
            let answer = await service.handle(
                method: "POST", path: "/v1/managed-push?to=\(user)", authorization: "Bearer \(secret)",
                body: Array(payload.utf8))
            var devices: [String: (outcome: String, detail: String, removed: Bool)] = [:]
            for entry in (try? JSONSerialization.jsonObject(with: answer.body)) as? [[String: Any]] ?? [] {
                devices[entry["device"] as? String ?? ""] = (
                    entry["outcome"] as? String ?? "", entry["detail"] as? String ?? "",
                    entry["removed"] as? Bool ?? false
                )
            }
            return (answer.status, devices)
        }

        // Bob's phone (APNs VoIP) and tablet (FCM); alice set a display name for her pushes.
        _ = try await service.register(
            signed("bob", 1, device: "phone", pushData: ManagedPushToken.apns(Self.phoneToken).pushData))
        let tabletGrant = try await service.register(
            signed("bob", 2, device: "tablet", pushData: ManagedPushToken.fcm("tablet-fcm-token").pushData))
        _ = try await service.register(
            signed(
                "alice", 1, device: "laptop", pushData: nil, name: "Alice A."))

        let call = #"{"k":"c","f":"alice","i":"call-9","t":1,"x":false,"h":{}}"#
        let refused = await managedPush(call, to: "bob", secret: "guess")
        let first = await managedPush(call, to: "bob")
        let afterFirst = server.requests.filter { $0.path != "/token" }

        // APNs now says the phone's token is gone: the push to it removes its push data.
        server.unregister(Self.phoneToken)
        let second = await managedPush(call, to: "bob")
        let phoneKept = try await store.devices(applicationKey: Self.key, userID: "bob").map(\.deviceID)
        // The tablet removes its own push data (the app reported its token invalidated).
        let credentials = Data("\(tabletGrant.username):\(tabletGrant.password)".utf8).base64EncodedString()
        let update = try JSONEncoder().encode(
            PushDataUpdate(applicationKey: Self.key, deviceID: "tablet", pushData: nil))
        let removal = await service.handle(
            method: "POST", path: "/v1/devices", authorization: "Basic \(credentials)", body: Array(update))
        let before = server.requests.count
        let third = await managedPush(call, to: "bob")
        let after = server.requests.count
        let counts = await dispatcher.counts
        let metrics = service.metrics.exposition()

        await dispatcher.close()
        await server.close()
        await store.close()
        try? await group.shutdownGracefully()

        #expect(refused.status == 401)
        #expect(first.status == 200)
        // The pushes by platform and outcome reach the service's Prometheus metrics.
        let pushLines = metrics.split(separator: "\n").filter { $0.hasPrefix("voiceengine_push_sent") }
        #expect(pushLines.contains { $0.contains(#"platform="apns""#) && $0.contains(#"outcome="delivered""#) })
        #expect(pushLines.contains { $0.contains(#"platform="fcm""#) && $0.contains(#"outcome="delivered""#) })
        #expect(pushLines.contains { $0.contains(#"platform="apns""#) && $0.contains(#"outcome="deviceGone""#) })
        #expect(first.devices["phone"]?.outcome == "delivered" && first.devices["tablet"]?.outcome == "delivered")
        // Both devices were pushed through their service, each request accepted by the server's checks.
        #expect(
            afterFirst.count == 2 && afterFirst.allSatisfy { $0.refusal == nil }, "\(afterFirst.map { $0.refusal })")
        #expect(afterFirst.contains { $0.path == "/3/device/\(Self.phoneToken)" })
        #expect(afterFirst.contains { $0.path == "/v1/projects/voice-test/messages:send" })
        // The sender's display name travels in the push (from alice's registration).
        let apnsBody = try #require(afterFirst.first { $0.path.hasPrefix("/3/device/") }?.body)
        let pushed = try PushPayload.parse(apnsBody)
        #expect(pushed.displayName == "Alice A." && pushed.sender == "alice" && pushed.id == "call-9")
        #expect(second.devices["phone"]?.outcome == "deviceGone" && second.devices["phone"]?.detail == "Unregistered")
        #expect(second.devices["phone"]?.removed == true && second.devices["tablet"]?.outcome == "delivered")
        #expect(phoneKept == ["tablet"])
        #expect(removal.status == 200, "\(String(decoding: removal.body, as: UTF8.self))")
        #expect(third.status == 200 && third.devices.isEmpty)
        #expect(after == before, "a device without push data was pushed")
        #expect(counts["delivered"] == 3 && counts["deviceGone"] == 1, "\(counts)")
    }
}

/// The APNs/FCM stand-in and senders that trust it: APNs for the team's key and `com.example.voice`, FCM for the
/// `voice-test` project's service account.
enum PushStandIn {
    static func make(pki: TestPKI, group: any EventLoopGroup) async throws -> (PushServiceServer, APNsSender, FCMSender)
    {
        let apnsKey = try P256.Signing.PrivateKey(pemRepresentation: try PushKeys.apnsKey(in: pki.directory))
        let rsaPEM = try PushKeys.serviceAccountKey(in: pki.directory)
        let rsa = try _RSA.Signing.PrivateKey(pemRepresentation: rsaPEM)
        let tokenURI = "https://oauth2.googleapis.com/token"
        let server = try await PushServiceServer(
            pki: pki,
            apns: .init(
                teamID: "TEAM123456", keyID: "KEY7654321", key: apnsKey.publicKey, bundleID: "com.example.voice"),
            fcm: .init(
                projectID: "voice-test", clientEmail: "push@voice-test.iam.gserviceaccount.com", privateKeyID: "k1",
                key: rsa.publicKey, tokenURI: tokenURI),
            group: group)
        let apns = try APNsSender(
            .init(
                teamID: "TEAM123456", keyID: "KEY7654321", privateKeyPEM: apnsKey.pemRepresentation,
                bundleID: "com.example.voice", endpoint: try PushEndpoint(server.url), trustRootsFile: pki.caFile),
            group: group)
        let fcm = try FCMSender(
            .init(
                serviceAccount: .init(
                    projectID: "voice-test", privateKeyID: "k1", privateKey: rsaPEM,
                    clientEmail: "push@voice-test.iam.gserviceaccount.com", tokenURI: tokenURI),
                endpoint: try PushEndpoint(server.url), tokenEndpoint: try PushEndpoint(server.url + "/token"),
                trustRootsFile: pki.caFile),
            group: group)
        return (server, apns, fcm)
    }
}

/// Managed push end to end: Kamailio keeps a call (or stores a message) for a user with no binding and posts the
/// payload to the registration service over HTTPS with its bearer secret; the service pushes each of the user's
/// devices through the APNs/FCM stand-in. Ports 26214–26215.
@Suite(
    "Managed push through the service to every device", .tags(.interop, .live), .scheduledByTags, .serialized,
    .timeLimit(.minutes(2)),
    .enabled(if: serviceUnavailableReason == nil, "\(serviceUnavailableReason ?? "")"),
    .enabled(if: managedPushModulesInstalled, "\(managedPushModulesMissing)"))
struct ManagedDevicePushTests {
    @Test func callsCancelsAndMessagesReachBothDevicesAndAGoneTokenIsRemoved() async throws {
        let pki = try TestPKI(prefix: "managed-push")
        defer { pki.remove() }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let (server, apns, fcm) = try await PushStandIn.make(pki: pki, group: group)
        let phoneToken = DevicePushTests.phoneToken
        try await withService(
            sipPort: 26214,
            prepare: { harness in
                harness.enableManagedPush(
                    ManagedPushDispatcher(store: harness.registrationService.store, apns: apns, fcm: fcm),
                    secret: "kamailio-push-secret")
            }
        ) { service in
            for (device, token) in [("phone", ManagedPushToken.apns(phoneToken)), ("tablet", .fcm("tablet-fcm"))] {
                var configuration = service.configuration(pushData: token.pushData)
                configuration.deviceID = device
                let bob = try service.client("bob", configuration: configuration)
                await bob.start()
                await bob.terminate()
            }
            let alice = try service.client("alice")
            await alice.start()
            /// The payloads pushed to each device since `count` requests, waiting for `expected` pushes.
            func pushes(after count: Int, expected: Int) async -> [(device: String, payload: PushPayload)] {
                let deadline = ContinuousClock.now + .seconds(10)
                while ContinuousClock.now < deadline {
                    let sent = server.requests.dropFirst(count).filter { $0.path != "/token" && $0.refusal == nil }
                    if sent.count >= expected {
                        return sent.compactMap { request in
                            request.pushPayload.map { (request.path.hasPrefix("/3/device/") ? "phone" : "tablet", $0) }
                        }
                    }
                    try? await Task.sleep(for: .milliseconds(50))
                }
                return []
            }

            let call = try await alice.callUser("bob", headers: ["X-Topic": "dinner"])
            let ringing = await pushes(after: 0, expected: 2)
            var seen = server.requests.count
            try await call.hangup()
            let canceled = await pushes(after: seen, expected: 2)
            seen = server.requests.count
            let message = try await alice.send(message: "call me", to: ["bob"])
            let stored = await pushes(after: seen, expected: 2)
            // APNs now says the phone's token is gone: the next push removes it; the one after reaches the tablet only.
            server.unregister(phoneToken)
            _ = try await alice.send(message: "again", to: ["bob"])
            try await Task.sleep(for: .milliseconds(500))
            let devicesAfter = try await service.registrationService.store.devices(
                applicationKey: ServiceHarness.applicationKey, userID: "bob"
            ).map(\.deviceID)
            seen = server.requests.count
            _ = try await alice.send(message: "third", to: ["bob"])
            let last = await pushes(after: seen, expected: 1)
            try await Task.sleep(for: .milliseconds(300))
            let lastCount = server.requests.count - seen
            await alice.terminate()
            await apns.close()
            await fcm.close()
            await server.close()

            #expect(
                Set(ringing.map(\.device)) == ["phone", "tablet"], "\(server.requests.map { ($0.path, $0.refusal) })")
            #expect(
                ringing.allSatisfy {
                    $0.payload.kind == .call && !$0.payload.canceled && $0.payload.id == call.id.rawValue
                })
            #expect(ringing.allSatisfy { $0.payload.headers == ["X-Topic": "dinner"] })
            #expect(Set(canceled.map(\.device)) == ["phone", "tablet"])
            #expect(canceled.allSatisfy { $0.payload.canceled && $0.payload.id == call.id.rawValue })
            #expect(Set(stored.map(\.device)) == ["phone", "tablet"])
            #expect(
                stored.allSatisfy {
                    $0.payload.kind == .message && $0.payload.id == message && $0.payload.sender == "alice"
                })
            #expect(devicesAfter == ["tablet"])
            #expect(last.map(\.device) == ["tablet"] && lastCount == 1)
        }
        try? await group.shutdownGracefully()
    }
}

/// App-sent push to a user with two devices, through the real service (Kamailio, the registration service on
/// PostgreSQL): the caller's client gets one push pair per device; a device that reports its token invalidated
/// is left out of the next. Ports 26210–26219.
@Suite(
    "App-sent push to every device of a user", .tags(.interop, .live), .scheduledByTags, .serialized,
    .timeLimit(.minutes(2)),
    .enabled(if: serviceUnavailableReason == nil, "\(serviceUnavailableReason ?? "")"))
struct DeviceAppPushTests {
    @Test func bothDevicesArePushedAndAnInvalidatedTokenIsPushedNoMore() async throws {
        try await withService(sipPort: 26210) { service in
            let phoneData = Data("apns-voip-token-of-bobs-phone".utf8)
            let tabletData = Data("fcm-token-of-bobs-tablet".utf8)
            func bob(_ device: String, _ pushData: Data) throws -> VoiceClient {
                var configuration = service.configuration(pushData: pushData)
                configuration.deviceID = device
                return try service.client("bob", configuration: configuration)
            }
            let phone = try bob("phone", phoneData), tablet = try bob("tablet", tabletData)
            await phone.start()
            await tablet.start()
            await phone.stop()
            await tablet.stop()
            var aliceConfiguration = service.configuration()
            aliceConfiguration.pushDisplayName = "Alice"
            let alice = try service.client("alice", configuration: aliceConfiguration)
            let aliceEvents = EventLog(alice)
            await alice.start()

            let first = try await alice.send(message: "are you there?", to: ["bob"])
            let pairs = await pushPairs(aliceEvents, number: 1)
            #expect(Set(pairs.map(\.deviceID)) == ["phone", "tablet"], "\(aliceEvents.events)")
            #expect(Set(pairs.map(\.pushData)) == [phoneData, tabletData])
            let payload = try PushPayload.parse(try #require(pairs.first?.payload))
            #expect(payload.kind == .message && payload.id == first && payload.displayName == "Alice")

            // The phone's app learns its token is invalidated: its client removes the push data at the service.
            try await phone.pushTokenWasInvalidated()
            _ = try await alice.send(message: "still there?", to: ["bob"])
            let second = await pushPairs(aliceEvents, number: 2)
            #expect(second.map(\.deviceID) == ["tablet"], "\(aliceEvents.events)")
            #expect(second.map(\.pushData) == [tabletData])
            await alice.terminate()
            await phone.terminate()
            await tablet.terminate()
        }
    }

    @Test func aCallerWhoHangsUpOnAPushedCallPushesTheCancelToEveryDevice() async throws {
        try await withService(sipPort: 26212, appPush: true) { service in
            var phoneConfiguration = service.configuration(pushData: Data("bobs-phone".utf8))
            phoneConfiguration.deviceID = "phone"
            var tabletConfiguration = service.configuration(pushData: Data("bobs-tablet".utf8))
            tabletConfiguration.deviceID = "tablet"
            for configuration in [phoneConfiguration, tabletConfiguration] {
                let device = try service.client("bob", configuration: configuration)
                await device.start()
                await device.terminate()
            }
            let alice = try service.client("alice")
            let aliceEvents = EventLog(alice)
            await alice.start()
            let call = try await alice.callUser("bob")
            let ringing = await pushPairs(aliceEvents, number: 1)
            try await call.hangup()
            let canceled = await pushPairs(aliceEvents, number: 2)
            await alice.terminate()
            #expect(Set(ringing.map(\.deviceID)) == ["phone", "tablet"], "\(aliceEvents.events)")
            #expect(Set(canceled.map(\.deviceID)) == ["phone", "tablet"], "\(aliceEvents.events)")
            let first = try PushPayload.parse(try #require(ringing.first?.payload))
            let cancel = try PushPayload.parse(try #require(canceled.first?.payload))
            #expect(first.kind == .call && !first.canceled && first.id == call.id.rawValue)
            #expect(cancel.kind == .call && cancel.canceled && cancel.id == call.id.rawValue)
            #expect(await call.details.endCause == .canceled)
        }
    }

    /// The `number`-th push request's pairs, waiting for it.
    func pushPairs(_ log: EventLog, number: Int) async -> [PushPair] {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            let requests = log.events.compactMap { event -> [PushPair]? in
                if case .shouldSendPushNotifications(_, let pairs) = event { pairs } else { nil }
            }
            if requests.count >= number { return requests[number - 1] }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return []
    }
}
