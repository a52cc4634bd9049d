import Foundation
import NIOCore
import NIOPosix
import Testing
import VoiceClient
import VoiceService
import VoiceTestSupport

/// The registration service on its PostgreSQL store (a database of the test process's own cluster per test):
/// the schema and its migrations, sequences and push data, what a restart and a second node see.
@Suite(
    "The registration service's store", .tags(.interop), .scheduledByTags,
    .enabled(if: TestPostgreSQL.unavailableReason == nil, "\(TestPostgreSQL.unavailableReason ?? "")"))
struct RegistrationStoreTests {
    static let key = RegistrationTests.key, secret = RegistrationTests.secret
    static let issuer = EphemeralCredentialIssuer(sharedSecret: "s", domain: "voiceengine.test")

    func signed(_ user: String, _ sequence: UInt64, secret: String = Self.secret) -> RegistrationRequest {
        RegistrationTests().signed(user, sequence, secret: secret)
    }

    /// A fresh database with the schema and the test application, dropped afterwards.
    func withStore(_ body: (TestDatabase, RegistrationStore) async throws -> Void) async throws {
        let database = try TestPostgreSQL.shared().database()
        defer { database.drop() }
        let store = try await RegistrationStore.open(try DatabaseAddress(url: database.url))
        do {
            try await store.setApplication(key: Self.key, secret: Self.secret)
            try await body(database, store)
        } catch {
            await store.close()
            throw error
        }
        await store.close()
    }

    @Test func migrationsCreateTheSchemaOnceAndRefuseANewerOne() async throws {
        try await withStore { database, store in
            #expect(try await store.currentSchemaVersion() == RegistrationStore.schemaVersion)
            _ = try await store.acceptSequence(applicationKey: Self.key, userID: "alice", sequence: 3, pushData: nil)
            // Started again (another node, a restart): nothing applied twice, nothing lost.
            let again = try await RegistrationStore.open(try DatabaseAddress(url: database.url))
            #expect(try await again.currentSchemaVersion() == RegistrationStore.schemaVersion)
            #expect(try await again.lastAcceptedSequence(applicationKey: Self.key, userID: "alice") == 3)
            await again.close()
            #expect(
                try database.psql("SELECT count(*) FROM service_schema_version")
                    == "\(RegistrationStore.schemaVersion)")
            // A database migrated by a newer service: this one refuses to run on it.
            try database.psql("INSERT INTO service_schema_version (version) VALUES (1000)")
            await #expect(throws: RegistrationStoreError.self) {
                try await RegistrationStore.open(try DatabaseAddress(url: database.url)).close()
            }
        }
    }

    @Test func sequencesOnlyIncreaseAndRefusalsNeverMoveThem() async throws {
        try await withStore { _, store in
            let service = RegistrationService(store: store, issuer: Self.issuer, unixTime: { 1000 })
            let grant = try await service.register(signed("alice", 5))
            #expect(grant.username == "\(1000 + Self.issuer.lifetime):alice")
            await #expect(throws: RegistrationRefusal.sequenceNotIncreasing(received: 5, lastAccepted: 5)) {
                try await service.register(signed("alice", 5))
            }
            await #expect(throws: RegistrationRefusal.sequenceNotIncreasing(received: 3, lastAccepted: 5)) {
                try await service.register(signed("alice", 3))
            }
            await #expect(throws: RegistrationRefusal.forgedSignature) {
                try await service.register(signed("alice", 9, secret: "guessed"))
            }
            var unknown = signed("alice", 10)
            unknown.applicationKey = "other-key"
            await #expect(throws: RegistrationRefusal.unknownApplicationKey("other-key")) {
                try await service.register(unknown)
            }
            var pushy = signed("alice", 11)
            pushy.pushData = Data(count: 1025)
            await #expect(throws: RegistrationRefusal.pushDataTooLarge(1025)) { try await service.register(pushy) }
            // None of the refusals moved it: 6 is accepted; other users have their own; unsigned 64-bit holds.
            #expect(try await store.lastAcceptedSequence(applicationKey: Self.key, userID: "alice") == 5)
            _ = try await service.register(signed("alice", 6))
            _ = try await service.register(signed("bob", 1))
            _ = try await service.register(signed("carol", UInt64.max - 1))
            await #expect(
                throws: RegistrationRefusal.sequenceNotIncreasing(
                    received: UInt64.max - 1, lastAccepted: UInt64.max - 1)
            ) {
                try await service.register(signed("carol", UInt64.max - 1))
            }
            _ = try await service.register(signed("carol", UInt64.max))
            #expect(await service.accepted == 5)
            #expect(await service.refused == 6)
        }
    }

    @Test func sequencesAndPushDataSurviveARestartOfTheService() async throws {
        try await withStore { database, store in
            let token = Data((0..<1024).map { UInt8(truncatingIfNeeded: $0 &* 13) })
            var request = signed("alice", 7)
            request.pushData = token
            _ = try await RegistrationService(store: store, issuer: Self.issuer).register(request)
            await store.close()
            let reopened = try await RegistrationStore.open(try DatabaseAddress(url: database.url))
            defer { Task { await reopened.close() } }
            let restarted = RegistrationService(store: reopened, issuer: Self.issuer)
            #expect(try await restarted.pushData(applicationKey: Self.key, userID: "alice") == [token])
            await #expect(throws: RegistrationRefusal.sequenceNotIncreasing(received: 7, lastAccepted: 7)) {
                try await restarted.register(request)
            }
            // A registration without push data removes the device's.
            _ = try await restarted.register(signed("alice", 8))
            #expect(try await restarted.pushData(applicationKey: Self.key, userID: "alice") == [])
        }
    }

    @Test func ofTwoNodesGivenTheSameSequenceExactlyOneAccepts() async throws {
        try await withStore { database, store in
            let other = try await RegistrationStore.open(try DatabaseAddress(url: database.url))
            let nodes = [
                RegistrationService(store: store, issuer: Self.issuer),
                RegistrationService(store: other, issuer: Self.issuer)
            ]
            for sequence in UInt64(1)...20 {
                let request = signed("alice", sequence)
                let accepted = await withTaskGroup(of: Bool.self) { group in
                    for node in nodes { group.addTask { (try? await node.register(request)) != nil } }
                    return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
                }
                #expect(accepted == 1, "sequence \(sequence) accepted \(accepted) times")
            }
            await other.close()
        }
    }

    @Test(.enabled(if: TestPKI.isAvailable, "openssl is missing"))
    func clientGetsAGrantOrTheTypedRefusalOverHTTPS() async throws {
        try await withStore { _, store in
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            let pki = try TestPKI()
            defer { pki.remove() }
            let service = RegistrationService(store: store, issuer: Self.issuer)
            let server = try await RegistrationHTTPServer.start(
                service, on: group, address: try SocketAddress(ipAddress: "127.0.0.1", port: 0),
                security: .tls(certificateChainFile: pki.serverCertificateFile, privateKeyFile: pki.serverKeyFile))
            let connection = RegistrationServiceConnection(
                host: "127.0.0.1", port: try #require(server.port), transport: .tls(trustRoots: .pemFile(pki.caFile)))
            let grant = try await connection.register(signed("alice", 1))
            #expect(grant.username.hasSuffix(":alice"))
            #expect(grant.domain == "voiceengine.test")
            await #expect(
                throws: VoiceClientError.registrationRefused(.sequenceNotIncreasing(received: 1, lastAccepted: 1))
            ) {
                try await connection.register(signed("alice", 1))
            }
            await #expect(throws: VoiceClientError.registrationRefused(.forgedSignature)) {
                try await connection.register(signed("alice", 2, secret: "wrong"))
            }
            #expect(await service.accepted == 1)
            #expect(await service.refused == 2)
            try await server.close()
            // Nobody listening: unavailable, not a refusal.
            await #expect(throws: VoiceClientError.self) {
                try await connection.register(signed("alice", 3))
            }
            try await group.shutdownGracefully()
        }
    }

    @Test func aDatabaseThatDoesNotAnswerMakesTheServiceUnavailableNotARefusal() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        // Nobody listens on the cluster's port + 1 000 (an empty port of loopback, refused at once).
        let cluster = try TestPostgreSQL.shared()
        let store = RegistrationStore(
            DatabaseAddress(
                endpoint: .tcp(host: "127.0.0.1", port: (cluster.port + 1000) % 65_536), username: "voiceengine",
                database: "none"))
        let service = RegistrationService(store: store, issuer: Self.issuer)
        let server = try await RegistrationHTTPServer.start(
            service, on: group, address: try SocketAddress(ipAddress: "127.0.0.1", port: 0),
            security: .insecurePlainHTTP)
        let connection = RegistrationServiceConnection(
            host: "127.0.0.1", port: try #require(server.port), transport: .insecurePlaintextUDPAndHTTP)
        let started = ContinuousClock.now
        do {
            _ = try await connection.register(signed("alice", 1))
            Issue.record("registered without a database")
        } catch {
            guard case .registrationServiceUnavailable(let reason) = error else {
                Issue.record("not reported unavailable: \(error)")
                return
            }
            #expect(reason.contains("503"), "\(reason)")
        }
        #expect(ContinuousClock.now - started < .seconds(15))
        #expect(await service.refused == 0)
        try await server.close()
        await store.close()
        try await group.shutdownGracefully()
    }
}
