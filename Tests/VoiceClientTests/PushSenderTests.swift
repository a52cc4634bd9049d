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

/// The push senders against a local HTTP/2 server that checks requests as APNs and FCM do
/// (``PushServiceServer``): token authentication, every header, the payload limits, the real error bodies.
@Suite(
    "Push senders speak APNs and FCM HTTP v1", .tags(.interop), .scheduledByTags,
    .enabled(if: TestPKI.isAvailable, "the openssl command is not installed"))
struct PushSenderTests {
    /// A directory for a second key beside the first.
    static func otherDirectory(_ pki: TestPKI) throws -> URL {
        let directory = pki.directory.appendingPathComponent("other")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    static let deviceToken = String(repeating: "a1b2c3d4", count: 8)

    /// A PKI, an APNs key, and a server that knows the key's public half.
    struct APNsSetup {
        let pki: TestPKI
        let keyPEM: String
        let server: PushServiceServer
        let group: MultiThreadedEventLoopGroup

        static func make() async throws -> APNsSetup {
            let pki = try TestPKI(prefix: "push")
            let keyPEM = try PushKeys.apnsKey(in: pki.directory)
            let key = try P256.Signing.PrivateKey(pemRepresentation: keyPEM)
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            let server = try await PushServiceServer(
                pki: pki,
                apns: .init(
                    teamID: "TEAM123456", keyID: "KEY7654321", key: key.publicKey, bundleID: "com.example.voice"),
                group: group)
            return APNsSetup(pki: pki, keyPEM: keyPEM, server: server, group: group)
        }

        func sender(keyPEM: String? = nil, trust: String? = nil, keyID: String = "KEY7654321") throws -> APNsSender {
            try APNsSender(
                .init(
                    teamID: "TEAM123456", keyID: keyID, privateKeyPEM: keyPEM ?? self.keyPEM,
                    bundleID: "com.example.voice", endpoint: try PushEndpoint(server.url),
                    trustRootsFile: trust ?? pki.caFile),
                group: group)
        }

        func close() async {
            await server.close()
            try? await group.shutdownGracefully()
            pki.remove()
        }
    }

    @Test func apnsVoIPPushCarriesEveryHeaderAndASignedProviderTokenReusedAcrossPushes() async throws {
        let setup = try await APNsSetup.make()
        let sender = try setup.sender()
        let payload = Data(#"{"k":"c","f":"alice","i":"call-1","t":1,"x":false,"h":{}}"#.utf8)
        let first = await sender.send(payload, toDevice: Self.deviceToken)
        let second = await sender.send(payload, toDevice: Self.deviceToken)
        let requests = setup.server.requests
        await sender.close()
        await setup.close()
        guard case .delivered(let id) = first, case .delivered = second else {
            Issue.record("not delivered: \(first), \(second); server: \(requests.map { $0.refusal ?? "ok" })")
            return
        }
        #expect(UUID(uuidString: id) != nil, "apns-id \(id)")
        #expect(requests.count == 2 && requests.allSatisfy { $0.refusal == nil })
        let request = try #require(requests.first)
        #expect(request.path == "/3/device/\(Self.deviceToken)")
        #expect(request.headers["apns-push-type"] == "voip")
        #expect(request.headers["apns-topic"] == "com.example.voice.voip")
        #expect(request.headers["apns-priority"] == "10")
        let expiration = try #require(request.headers["apns-expiration"].flatMap(UInt64.init))
        let now = UInt64(Date().timeIntervalSince1970)
        #expect(expiration > now && expiration <= now + 31)
        #expect(request.body == payload)
        // One provider token for both pushes: APNs throttles providers that sign one per push.
        #expect(requests[0].headers["authorization"] == requests[1].headers["authorization"])
    }

    @Test func apnsErrorBodiesBadDeviceTokenAndUnregisteredMeanTheDeviceIsGone() async throws {
        let setup = try await APNsSetup.make()
        let sender = try setup.sender()
        let payload = Data(#"{"k":"m","f":"alice","i":"m1","t":1,"x":false,"h":{}}"#.utf8)
        let gone = String(repeating: "0f", count: 32), bad = String(repeating: "ee", count: 32)
        setup.server.unregister(gone)
        setup.server.markBad(bad)
        let unregistered = await sender.send(payload, toDevice: gone)
        let badToken = await sender.send(payload, toDevice: bad)
        let requests = setup.server.requests
        await sender.close()
        await setup.close()
        #expect(unregistered == .deviceGone(reason: "Unregistered"))
        #expect(badToken == .deviceGone(reason: "BadDeviceToken"))
        #expect(requests.map(\.status) == [410, 400])
    }

    @Test func apnsPayloadLimitIs5120BytesForVoIPOnBothSides() async throws {
        let setup = try await APNsSetup.make()
        let sender = try setup.sender()
        func payload(_ size: Int) -> Data {
            let filler = String(repeating: "x", count: size - #"{"p":""}"#.utf8.count)
            return Data(#"{"p":"\#(filler)"}"#.utf8)
        }
        let atLimit = await sender.send(payload(5120), toDevice: Self.deviceToken)
        let above = await sender.send(payload(5121), toDevice: Self.deviceToken)
        // The server's own check, for a sender that would not refuse first.
        let connection = try HTTP2Connection(
            endpoint: try PushEndpoint(setup.server.url), trustRootsFile: setup.pki.caFile, group: setup.group)
        let accepted = try #require(setup.server.requests.first)
        let direct = try await connection.request(
            path: "/3/device/\(Self.deviceToken)",
            headers: accepted.headers.filter { $0.key.hasPrefix("apns-") || $0.key == "authorization" }
                .map { ($0.key, $0.value) }, body: payload(5121))
        await connection.close()
        let requests = setup.server.requests
        await sender.close()
        await setup.close()
        guard case .delivered = atLimit else {
            Issue.record("5120 bytes not delivered: \(atLimit)")
            return
        }
        guard case .notSent(let reason) = above else {
            Issue.record("5121 bytes were sent: \(above)")
            return
        }
        #expect(reason.contains("5121"))
        #expect(
            direct.status == 413 && String(decoding: direct.body, as: UTF8.self) == #"{"reason":"PayloadTooLarge"}"#)
        #expect(requests.count == 2, "the sender sent the oversized payload: \(requests.map(\.status))")
    }

    /// The stand-in's checks can fail: each header the sender sets, changed or left out, is refused with APNs's
    /// reason (so the sender's accepted pushes say something).
    @Test func apnsServerRefusesEachWrongOrMissingHeader() async throws {
        let setup = try await APNsSetup.make()
        let sender = try setup.sender()
        let payload = Data(#"{"k":"c"}"#.utf8)
        _ = await sender.send(payload, toDevice: Self.deviceToken)
        let accepted = try #require(setup.server.requests.first)
        let good = accepted.headers.filter { $0.key.hasPrefix("apns-") || $0.key == "authorization" }
        let connection = try HTTP2Connection(
            endpoint: try PushEndpoint(setup.server.url), trustRootsFile: setup.pki.caFile, group: setup.group)
        let cases: [(change: (inout [String: String]) -> Void, reason: String)] = [
            ({ $0["apns-push-type"] = "alert" }, "InvalidPushType"),
            ({ $0["apns-topic"] = nil }, "MissingTopic"),
            ({ $0["apns-topic"] = "com.example.voice" }, "DeviceTokenNotForTopic"),
            ({ $0["apns-priority"] = "5" }, "BadPriority"),
            ({ $0["apns-expiration"] = "1" }, "BadExpirationDate"),
            ({ $0["authorization"] = nil }, "MissingProviderToken"),
            ({ $0["authorization"] = ($0["authorization"] ?? "") + "x" }, "InvalidProviderToken")
        ]
        var reasons: [String] = []
        for (change, _) in cases {
            var headers = good
            change(&headers)
            let response = try await connection.request(
                path: "/3/device/\(Self.deviceToken)", headers: headers.map { ($0.key, $0.value) }, body: payload)
            let object = try JSONSerialization.jsonObject(with: response.body) as? [String: Any]
            reasons.append(object?["reason"] as? String ?? "HTTP \(response.status)")
        }
        await connection.close()
        await sender.close()
        await setup.close()
        #expect(accepted.refusal == nil)
        #expect(reasons == cases.map(\.reason))
    }

    @Test func apnsRefusesAProviderTokenSignedWithAnotherKeyAndASenderRefusesAnUntrustedServer() async throws {
        let setup = try await APNsSetup.make()
        let otherKey = try PushKeys.apnsKey(in: try Self.otherDirectory(setup.pki))
        let forged = try setup.sender(keyPEM: otherKey)
        let wrongKeyID = try setup.sender(keyID: "OTHERKEYID")
        let untrusting = try setup.sender(trust: setup.pki.otherCAFile)
        let payload = Data(#"{"k":"c"}"#.utf8)
        let forgedOutcome = await forged.send(payload, toDevice: Self.deviceToken)
        let keyIDOutcome = await wrongKeyID.send(payload, toDevice: Self.deviceToken)
        let untrustedOutcome = await untrusting.send(payload, toDevice: Self.deviceToken)
        let requests = setup.server.requests
        for sender in [forged, wrongKeyID, untrusting] { await sender.close() }
        await setup.close()
        #expect(forgedOutcome == .refused(status: 403, reason: "InvalidProviderToken"))
        #expect(keyIDOutcome == .refused(status: 403, reason: "InvalidProviderToken"))
        guard case .notSent = untrustedOutcome else {
            Issue.record("a server whose certificate does not chain to the trust roots was used: \(untrustedOutcome)")
            return
        }
        #expect(requests.count == 2, "the untrusted server got a request")
    }

    /// A service account whose key the server knows, the server and a sender for it.
    struct FCMSetup {
        let pki: TestPKI
        let server: PushServiceServer
        let group: MultiThreadedEventLoopGroup
        let account: FCMSender.ServiceAccount

        static func make() async throws -> FCMSetup {
            let pki = try TestPKI(prefix: "fcm")
            let keyPEM = try PushKeys.serviceAccountKey(in: pki.directory)
            let key = try _RSA.Signing.PrivateKey(pemRepresentation: keyPEM)
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            // The grant's audience is the account's token URI (Google's), wherever the sender posts it.
            let server = try await PushServiceServer(
                pki: pki,
                fcm: .init(
                    projectID: "voice-test", clientEmail: "push@voice-test.iam.gserviceaccount.com",
                    privateKeyID: "4f1e", key: key.publicKey, tokenURI: "https://oauth2.googleapis.com/token"),
                group: group)
            let account = FCMSender.ServiceAccount(
                projectID: "voice-test", privateKeyID: "4f1e", privateKey: keyPEM,
                clientEmail: "push@voice-test.iam.gserviceaccount.com", tokenURI: "https://oauth2.googleapis.com/token")
            return FCMSetup(pki: pki, server: server, group: group, account: account)
        }

        func sender() throws -> FCMSender {
            try FCMSender(
                .init(
                    serviceAccount: account, endpoint: try PushEndpoint(server.url),
                    tokenEndpoint: try PushEndpoint(server.url + "/token"), trustRootsFile: pki.caFile),
                group: group)
        }

        func close() async {
            await server.close()
            try? await group.shutdownGracefully()
            pki.remove()
        }
    }

    @Test func fcmExchangesASignedGrantForATokenThenSendsHighPriorityDataMessages() async throws {
        let setup = try await FCMSetup.make()
        let sender = try setup.sender()
        let payload = Data(#"{"k":"c","f":"alice","i":"call-2","t":1,"x":false,"h":{}}"#.utf8)
        let first = await sender.send(payload, toDevice: "fcm-token-1")
        let second = await sender.send(payload, toDevice: "fcm-token-2")
        setup.server.unregister("fcm-token-1")
        let gone = await sender.send(payload, toDevice: "fcm-token-1")
        let tooLarge = await sender.send(Data(String(repeating: "y", count: 4096).utf8), toDevice: "fcm-token-2")
        let requests = setup.server.requests
        await sender.close()
        await setup.close()
        guard case .delivered(let name) = first, case .delivered = second else {
            Issue.record("not delivered: \(first), \(second); server: \(requests.map { $0.refusal ?? "ok" })")
            return
        }
        #expect(name.hasPrefix("projects/voice-test/messages/"))
        // One grant for all three sends; the token is cached until shortly before it expires.
        #expect(requests.map(\.path).filter { $0 == "/token" }.count == 1, "\(requests.map(\.path))")
        #expect(
            requests.filter { $0.path != "/token" }.allSatisfy { $0.path == "/v1/projects/voice-test/messages:send" })
        let message = try #require(requests.dropFirst().first)
        let object = try #require(try JSONSerialization.jsonObject(with: message.body) as? [String: Any])
        let body = try #require(object["message"] as? [String: Any])
        #expect(body["token"] as? String == "fcm-token-1")
        #expect((body["data"] as? [String: String])?[FCMSender.payloadKey] == String(decoding: payload, as: UTF8.self))
        #expect((body["android"] as? [String: String])?["priority"] == "HIGH")
        #expect(gone == .deviceGone(reason: "UNREGISTERED"))
        #expect(requests.last?.status == 404)
        guard case .notSent = tooLarge else {
            Issue.record("data above 4096 bytes was sent: \(tooLarge)")
            return
        }
    }

    @Test func fcmTokenEndpointRefusesAGrantSignedWithAnotherKey() async throws {
        let setup = try await FCMSetup.make()
        var account = setup.account
        account.privateKey = try PushKeys.serviceAccountKey(in: try Self.otherDirectory(setup.pki))
        let sender = try FCMSender(
            .init(
                serviceAccount: account, endpoint: try PushEndpoint(setup.server.url),
                tokenEndpoint: try PushEndpoint(setup.server.url + "/token"), trustRootsFile: setup.pki.caFile),
            group: setup.group)
        let outcome = await sender.send(Data("{}".utf8), toDevice: "fcm-token-1")
        let requests = setup.server.requests
        await sender.close()
        await setup.close()
        #expect(outcome == .refused(status: 400, reason: "the token endpoint refused the grant: invalid_grant"))
        #expect(requests.map(\.path) == ["/token"], "a message was sent without a token")
    }

    /// The parsers of push data, endpoints and Base64url never crash on random or mutated input, and take back
    /// what they wrote.
    @Test func pushParsersSurviveRandomAndMutatedInput() {
        var random = SplitMix64(seed: 0x5eed_9054)
        let seeds = [
            ManagedPushToken.apns("a1b2").pushData, ManagedPushToken.fcm("t").pushData,
            Data("https://api.push.apple.com:443/x".utf8), Data(JSONWebToken.base64URL(Data([0xfb, 0xff, 0x01])).utf8)
        ]
        var parsedTokens = 0
        for round in 0..<4000 {
            var bytes = seeds[round % seeds.count]
            if round % 3 == 0 {
                bytes = Data(
                    (0..<Int.random(in: 0...64, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) })
            } else {
                for _ in 0..<Int.random(in: 1...4, using: &random) where !bytes.isEmpty {
                    bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
                }
            }
            if ManagedPushToken(pushData: bytes) != nil { parsedTokens += 1 }
            let text = String(decoding: bytes, as: UTF8.self)
            if let endpoint = try? PushEndpoint(text) {
                #expect(endpoint.description.hasPrefix("https://") && (1...65_535).contains(endpoint.port))
            }
            _ = JSONWebToken.decodeBase64URL(text)
        }
        #expect(parsedTokens > 0)
        for token in [ManagedPushToken.apns("00ff"), .fcm("abc:def")] {
            #expect(ManagedPushToken(pushData: token.pushData) == token)
        }
        #expect(ManagedPushToken(pushData: Data("opaque app token".utf8)) == nil)
        let bytes = Data((0..<257).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        #expect(JSONWebToken.decodeBase64URL(JSONWebToken.base64URL(bytes)) == bytes)
        #expect(throws: PushEndpoint.Invalid.self) { try PushEndpoint("http://api.push.apple.com") }
    }
}
