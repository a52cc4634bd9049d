import Foundation
import NIOCore
import NIOPosix
import Testing
import VoiceClient
import VoiceService
import VoiceTestSupport

@Suite("Signed registration and the registration service")
struct RegistrationTests {
    static let key = "app-key-1", secret = "app-secret"

    func signed(_ user: String, _ sequence: UInt64, secret: String = RegistrationTests.secret) -> RegistrationRequest {
        RegistrationRequest(
            applicationKey: Self.key, userID: user,
            signed: .sign(userID: user, applicationKey: Self.key, sequence: sequence, applicationSecret: secret))
    }

    @Test func signatureIsBase64OfSHA1OfTheConcatenation() {
        // Vector from Python: base64(sha1(b"alice" + b"app-key-1" + b"42" + b"app-secret")).
        let signed = SignedRegistration.sign(
            userID: "alice", applicationKey: "app-key-1", sequence: 42, applicationSecret: "app-secret")
        #expect(signed.signature == "0wAgzUMsA8D3Sqa3R1e5FJdaUYo=")
        #expect(signed.sequence == 42)
    }

    @Test func ephemeralPasswordIsKamailiosHMACSHA1Form() {
        let grant = EphemeralCredentialIssuer(sharedSecret: "shared", lifetime: 600, domain: "d").issue(
            userID: "alice", now: 1_800_000_000 - 600)
        #expect(grant.username == "1800000000:alice")
        #expect(grant.password == "s/BIqd1ziFZRPl7ZIk0zCltr9FA=")  // Python: base64(hmac-sha1(b"shared", username))
        #expect(grant.isValid(at: 1_800_000_000 - 61))
        #expect(!grant.isValid(at: 1_800_000_000 - 60))
    }

    @Test func grantsCarryTURNCredentialsOfTheSameHMACSchemeAndAnOldGrantDecodesWithout() throws {
        let issuer = EphemeralCredentialIssuer(
            sharedSecret: "shared", lifetime: 600, domain: "d", iceServerURLs: ["turn:198.51.100.7:3478"])
        let grant = issuer.issue(userID: "alice", now: 1_800_000_000 - 600)
        let server = try #require(grant.iceServers?.first)
        #expect(server.urls == ["turn:198.51.100.7:3478"])
        // coturn's use-auth-secret with the same shared secret: base64(hmac-sha1(b"shared", b"1800000000:alice")).
        #expect(server.username == "1800000000:alice" && server.credential == "s/BIqd1ziFZRPl7ZIk0zCltr9FA=")
        let decoded = try JSONDecoder().decode(RegistrationGrant.self, from: try JSONEncoder().encode(grant))
        #expect(decoded == grant)
        let withoutServers = #"{"username":"1:a","password":"p","expires":1,"domain":"d"}"#
        #expect(try JSONDecoder().decode(RegistrationGrant.self, from: Data(withoutServers.utf8)).iceServers == nil)
        #expect(EphemeralCredentialIssuer(sharedSecret: "s", domain: "d").issue(userID: "a", now: 0).iceServers == nil)
    }

    @Test func verifierRefusesEachBadRequestWithItsTypedError() throws {
        try RegistrationVerifier.verify(signed("alice", 5), applicationSecret: Self.secret)
        #expect(throws: RegistrationRefusal.forgedSignature) {
            try RegistrationVerifier.verify(signed("alice", 9, secret: "guessed"), applicationSecret: Self.secret)
        }
        var tampered = signed("alice", 10)
        tampered.sequence = 11  // signature of 10 sent with 11
        #expect(throws: RegistrationRefusal.forgedSignature) {
            try RegistrationVerifier.verify(tampered, applicationSecret: Self.secret)
        }
        var unknown = signed("alice", 12)
        unknown.applicationKey = "other-key"
        #expect(throws: RegistrationRefusal.unknownApplicationKey("other-key")) {
            try RegistrationVerifier.verify(unknown, applicationSecret: nil)
        }
        #expect(throws: RegistrationRefusal.self) {
            try RegistrationVerifier.verify(signed("ålice", 13), applicationSecret: Self.secret)
        }
        var pushy = signed("alice", 14)
        pushy.pushData = Data(count: 1025)
        #expect(throws: RegistrationRefusal.pushDataTooLarge(1025)) {
            try RegistrationVerifier.verify(pushy, applicationSecret: Self.secret)
        }
        pushy.pushData = Data(count: 1024)
        try RegistrationVerifier.verify(pushy, applicationSecret: Self.secret)
    }

    @Test func databaseURLsAreReadAsLibpqReadsThem() throws {
        let tcp = try DatabaseAddress(url: "postgres://voice:pw@127.0.0.1:5433/service")
        #expect(
            tcp
                == DatabaseAddress(
                    endpoint: .tcp(host: "127.0.0.1", port: 5433), username: "voice", password: "pw",
                    database: "service"))
        #expect(tcp.isLocal)
        let remote = try DatabaseAddress(url: "postgresql://voice@db.example.com/service")
        #expect(remote.endpoint == .tcp(host: "db.example.com", port: 5432))
        #expect(!remote.isLocal)
        #expect(remote.password == nil)
        let socket = try DatabaseAddress(url: "postgres://voice@/service?host=/run/postgresql")
        #expect(socket.endpoint == .unixSocket(path: "/run/postgresql/.s.PGSQL.5432"))
        #expect(socket.isLocal)
        for bad in [
            "mysql://voice@127.0.0.1/service", "postgres://127.0.0.1/service", "postgres://voice@127.0.0.1",
            "postgres://voice@127.0.0.1:0/service", "postgres://voice@/service", "not a url"
        ] {
            #expect(throws: DatabaseAddress.ParseError.self, "\(bad)") { try DatabaseAddress(url: bad) }
        }
    }
}

@Suite("User IDs and custom headers")
struct ClientRuleTests {
    @Test(arguments: ["alice", "a", String(repeating: "x", count: 40), "bob smith", "+46 70 123 45 67", "a@b:c~!"])
    func printableASCIIUpTo40IsAccepted(id: String) throws {
        #expect(try UserID.validate(id) == id)
    }

    @Test(arguments: ["", String(repeating: "x", count: 41), "ålice", "tab\there", "new\nline", "del\u{7F}", "emoji😀"])
    func anythingElseIsRejectedWithTheReason(id: String) {
        #expect(throws: UserIDError.self) { try UserID.validate(id) }
        do { _ = try UserID.validate(id) } catch {
            #expect(error.id == id)
            #expect(!error.reason.isEmpty)
            #expect(VoiceClientError(error) == .invalidUserID(id, reason: error.reason))
        }
    }

    /// Every one of 2 000 random strings is accepted exactly when each scalar is 0x20…0x7E and there are 1…40.
    @Test func randomStringsFollowTheRule() {
        var seed: UInt64 = 0x19
        func next() -> UInt64 {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return seed >> 33
        }
        for _ in 0..<2000 {
            let length = Int(next() % 45)
            let scalars = (0..<length).map { _ -> Unicode.Scalar in
                let pick = next() % 10
                let value: UInt64 = pick < 8 ? 0x20 + next() % 95 : (pick == 8 ? next() % 0x20 : 0xA0 + next() % 0x100)
                return Unicode.Scalar(UInt32(value))!
            }
            let id = String(String.UnicodeScalarView(scalars))
            let valid = (1...40).contains(scalars.count) && scalars.allSatisfy { (0x20...0x7E).contains($0.value) }
            let accepted = (try? UserID.validate(id)) != nil
            #expect(accepted == valid, "\(Array(id.unicodeScalars.map(\.value)))")
        }
    }

    @Test func clientRefusesABadUserIDBeforeAnyTraffic() {
        // No service runs at all: the error can only come from the check in init.
        #expect(throws: VoiceClientError.invalidUserID("ålice", reason: "character U+E5 is not printable ASCII")) {
            _ = try VoiceClient(
                userID: "ålice", configuration: VoiceClientConfiguration(applicationKey: "k", serviceHost: "127.0.0.1")
            ) { _ in
                Issue.record("the app was asked to sign for an invalid user ID")
                return SignedRegistration(sequence: 0, signature: "")
            }
        }
    }

    @Test func customHeadersMustStartWithXAndTotalAtMost1024Bytes() throws {
        #expect(try CustomHeaders.validate(["X-Purpose": "test", "x-id": "1"]).count == 2)
        #expect(throws: VoiceClientError.self) { try CustomHeaders.validate(["Subject": "no"]) }
        #expect(throws: VoiceClientError.self) { try CustomHeaders.validate(["x-": "empty name"]) }
        #expect(throws: VoiceClientError.self) { try CustomHeaders.validate(["x-a b": "space in name"]) }
        #expect(throws: VoiceClientError.self) { try CustomHeaders.validate(["x-a": "line\r\nbreak"]) }
        #expect(try CustomHeaders.validate(["x-a": String(repeating: "v", count: 1021)]).count == 1)  // 3 + 1021 = 1024
        #expect(throws: VoiceClientError.self) {
            try CustomHeaders.validate(["x-a": String(repeating: "v", count: 1022)])
        }
    }
}

@Suite("Push payload helper and push data")
struct PushPayloadTests {
    @Test func payloadRoundTripsWithinTheLimitsAndTellsATimedOutCall() throws {
        let payload = PushPayload(
            kind: .call, sender: "alice", id: "3f1c2b9e-8d2a-4a7e-9a51-2c4e5f6a7b8c", sentAt: 1_800_000_000,
            headers: ["X-Room": "blue"])
        let service = try payload.servicePayload()
        #expect(service.count <= 100, "\(service.count) bytes")
        let parsed = try PushPayload.parse(try payload.encoded())
        #expect(parsed == payload)
        #expect(!parsed.isTimedOut(at: 1_800_000_029))
        #expect(parsed.isTimedOut(at: 1_800_000_030))
        var message = payload
        message.kind = .message
        #expect(!message.isTimedOut(at: 1_900_000_000))
    }

    /// The client's stale-push rule and the service's hold time are one figure.
    @Test func callPushTimeoutIsTheServicesHoldTime() throws {
        let config = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "../../Services/kamailio/kamailio.cfg")
        let text = try String(contentsOf: config, encoding: .utf8)
        #expect(text.contains("#!define PUSH_WAIT \(PushPayload.serviceHoldSeconds * 1000)\n"))
    }

    @Test(arguments: [
        "", "{}", "[1]", "null",
        "{\"k\":\"c\",\"f\":\"alice\",\"i\":\"1\",\"t\":1,\"x\":false,\"h\":{\"Subject\":\"no\"}}",
        "{\"k\":\"z\",\"f\":\"alice\",\"i\":\"1\",\"t\":1,\"x\":false,\"h\":{}}",
        "{\"k\":\"c\",\"f\":\"\",\"i\":\"1\",\"t\":1,\"x\":false,\"h\":{}}",
        "{\"k\":\"c\",\"f\":\"alice\",\"i\":\"\",\"t\":1,\"x\":false,\"h\":{}}",
        "{\"k\":\"c\",\"f\":\"alice\",\"i\":\"1\",\"t\":-1,\"x\":false,\"h\":{}}",
        "\u{FF}\u{FE}"
    ])
    func malformedPayloadsAreRejectedWithAReason(text: String) {
        #expect(throws: VoiceClientError.self) { try PushPayload.parse(Data(text.utf8)) }
    }

    @Test func randomBytesNeverCrashTheHelper() {
        var random = SplitMix64(seed: 7)
        for _ in 0..<3000 {
            let count = Int(random.next() % 200)
            let bytes = Data((0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) })
            _ = try? PushPayload.parse(bytes)
        }
        let valid = Data("{\"k\":\"m\",\"f\":\"bob\",\"i\":\"m-1\",\"t\":5,\"x\":false,\"h\":{}}".utf8)
        for index in valid.indices {
            var mutated = valid
            mutated[index] ^= UInt8(truncatingIfNeeded: random.next() | 1)
            _ = try? PushPayload.parse(mutated)
        }
    }

    @Test func pushDataAbove1024BytesIsRejectedByTheClientBeforeAnyTraffic() {
        let configuration = VoiceClientConfiguration(
            applicationKey: "k", serviceHost: "127.0.0.1", pushData: Data(count: 1025))
        #expect(throws: VoiceClientError.invalidPushData("push data is 1025 bytes, at most 1024 allowed")) {
            _ = try VoiceClient(userID: "alice", configuration: configuration) { _ in
                SignedRegistration(sequence: 1, signature: "")
            }
        }
    }
}
