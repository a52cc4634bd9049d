import Foundation
import Testing
import VoiceClient
import VoiceTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// The state store: files written atomically with their permissions, records that are not the client's rejected
/// with an event (never a crash).
struct ClientStateStoreTests {
    static func temporaryDirectory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("client-state-\(UUID().uuidString)")
    }

    static func mode(_ path: String) -> mode_t {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_mode & 0o777 : 0
    }

    @Test func recordsAreReplacedAtomicallyWithOwnerOnlySecrets() throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = DirectoryStateStore(directory: directory)
        #expect(try store.read("a.grant.json") == nil)
        try store.write(Data("first".utf8), to: "a.grant.json", secret: true)
        try store.write(Data("second".utf8), to: "a.grant.json", secret: true)
        try store.write(Data("open".utf8), to: "a.outbox.json", secret: false)
        #expect(try store.read("a.grant.json") == Data("second".utf8))
        #expect(Self.mode(directory.appendingPathComponent("a.grant.json").path) == 0o600)
        #expect(Self.mode(directory.appendingPathComponent("a.outbox.json").path) == 0o644)
        #expect(Self.mode(directory.path) == 0o700)
        // Nothing but the two records: the temporary files were renamed over them.
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == [
                "a.grant.json", "a.outbox.json"
            ])
        try store.remove("a.grant.json")
        try store.remove("a.grant.json")
        #expect(try store.read("a.grant.json") == nil)
    }

    @Test func anUnwritableDirectoryIsATypedError() throws {
        let store = DirectoryStateStore(directory: URL(fileURLWithPath: "/proc/self/client-state"))
        #expect(throws: ClientStateError.self) { try store.write(Data("x".utf8), to: "a.outbox.json", secret: false) }
    }

    /// A client created on records it did not write (garbage, truncated JSON, another user's, another version)
    /// reports each once, sets it aside and starts without it.
    @Test(arguments: [
        ("outbox", Data("not json".utf8)),
        ("outbox", Data(#"{"version":1,"userID":"alice","messages":[{"id":"#.utf8)),
        ("outbox", Data(#"{"version":1,"userID":"mallory","messages":[]}"#.utf8)),
        ("grant", Data(#"{"version":2,"userID":"alice"}"#.utf8)),
        ("push", Data([0xFF, 0x00, 0x7B]))
    ])
    func recordsTheClientDidNotWriteAreSetAsideAndReported(record: String, contents: Data) async throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = DirectoryStateStore(directory: directory)
        try store.write(contents, to: "alice.\(record).json", secret: false)
        var configuration = VoiceClientConfiguration(applicationKey: "k", serviceHost: "127.0.0.1")
        configuration.stateStore = store
        let client = try VoiceClient(userID: "alice", configuration: configuration) { _ in
            throw CancellationError()
        }
        #expect(await client.pendingMessages.isEmpty)
        var iterator = client.events.makeAsyncIterator()
        let event = await iterator.next()
        guard case .stateStoreFailed(.stateStore(let reason)) = event else {
            Issue.record("expected stateStoreFailed, got \(String(describing: event))")
            return
        }
        #expect(reason.contains("alice.\(record).json rejected"), "\(reason)")
        #expect(try store.read("alice.\(record).json") == nil)
        #expect(try store.read("alice.\(record).json.rejected") == contents)
        await client.terminate()
    }

    /// Random and mutated outbox records never crash the client: each is loaded or rejected.
    @Test func mutatedRecordsNeverCrashTheClient() async throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = DirectoryStateStore(directory: directory)
        let valid = Array(
            #"{"messages":[{"attempts":1,"firstAttemptUnixTime":1700000000,"headerNames":["x-a"],"headerValues":["1"],"id":"m","recipient":"bob","text":"hi"}],"userID":"alice","version":1}"#
                .utf8)
        var random = SplitMix64(seed: 33)
        var loaded = 0, rejected = 0
        for round in 0..<200 {
            var bytes = valid
            for _ in 0..<(1 + Int(random.next() % 4)) {
                let index = Int(random.next() % UInt64(bytes.count))
                switch random.next() % 3 {
                case 0: bytes[index] = UInt8(truncatingIfNeeded: random.next())
                case 1: bytes.remove(at: index)
                default: bytes.insert(UInt8(truncatingIfNeeded: random.next()), at: index)
                }
            }
            if round % 10 == 0 {
                bytes = (0..<Int(random.next() % 64)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            }
            try store.write(Data(bytes), to: "alice.outbox.json", secret: false)
            var configuration = VoiceClientConfiguration(applicationKey: "k", serviceHost: "127.0.0.1")
            configuration.stateStore = store
            let client = try VoiceClient(
                userID: "alice", configuration: configuration, unixTime: { 1_700_000_100 }
            ) { _ in throw CancellationError() }
            let pending = await client.pendingMessages
            await client.terminate()
            var reported = false
            for await event in client.events {
                if case .stateStoreFailed = event { reported = true }
                if case .messageFailed = event { reported = true }  // a mutated time put it past its 12 hours
            }
            // Every record is either taken (one message) or refused with an event; nothing in between.
            #expect(
                pending.count == 1 || (pending.isEmpty && reported),
                "round \(round): \(String(decoding: bytes, as: UTF8.self))")
            if pending.isEmpty { rejected += 1 } else { loaded += 1 }
            try? store.remove("alice.outbox.json.rejected")
        }
        print("mutated outbox records: \(loaded) loaded, \(rejected) rejected")
        #expect(rejected > 0 && loaded > 0)
    }
}

/// What survives a restart, against the real service: the outbox (a message queued while the service was
/// unreachable is delivered once by the next client on the same directory) and the grant (a restarted client
/// registers without asking the app to sign). Ports 26114–26119.
@Suite(
    "VoiceClient state across restarts", .tags(.interop, .live), .scheduledByTags, .serialized,
    .timeLimit(.minutes(1)),
    .enabled(if: serviceUnavailableReason == nil, "\(serviceUnavailableReason ?? "")"))
struct ClientRestartTests {
    @Test func aMessageQueuedWhileTheServiceIsUnreachableIsDeliveredOnceAfterARestart() async throws {
        try await withService(sipPort: 26114) { service in
            let store = DirectoryStateStore(directory: service.directory.appendingPathComponent("alice-state"))
            // The first client cannot reach the service (nothing listens on its ports).
            var unreachable = service.configuration()
            (unreachable.sipPort, unreachable.registrationPort) = (26118, 26119)
            unreachable.stateStore = store
            let first = try VoiceClient(userID: "alice", configuration: unreachable) { id in service.sign(id) }
            let firstLog = EventLog(first)
            await first.start()
            #expect(await firstLog.first { if case .failed = $0 { true } else { false } } != nil)
            let id = try await first.send(message: "kept over a restart", to: ["bob"], headers: ["x-order": "7"])
            #expect(await first.pendingMessages.count == 1)
            await first.terminate()

            let bob = try service.client("bob")
            let bobLog = EventLog(bob)
            await bob.startListening()
            var reachable = service.configuration()
            reachable.stateStore = store
            let second = try VoiceClient(userID: "alice", configuration: reachable) { id in service.sign(id) }
            let secondLog = EventLog(second)
            #expect(await second.pendingMessages.map(\.id) == [id])
            await second.start()
            let delivered = await secondLog.first {
                if case .messageDelivered(id, "bob", _) = $0 { true } else { false }
            }
            #expect(delivered != nil, "\(secondLog.events)")
            let message = try #require(await bobLog.firstMessage())
            #expect(message.id == id && message.text == "kept over a restart" && message.headers["x-order"] == "7")
            #expect(await second.pendingMessages.isEmpty)
            await second.terminate()

            // A third client on the same directory has nothing left to send: bob got the message once.
            let third = try VoiceClient(userID: "alice", configuration: reachable) { id in service.sign(id) }
            #expect(await third.pendingMessages.isEmpty)
            await third.start()
            await third.retryDueMessages()
            try await Task.sleep(for: .seconds(1))
            #expect(bobLog.messages.count == 1, "\(bobLog.messages)")
            await third.terminate()
            await bob.terminate()
        }
    }

    @Test func aRestartedClientRegistersWithoutAskingTheAppToSign() async throws {
        try await withService(sipPort: 26116) { service in
            let directory = service.directory.appendingPathComponent("alice-state")
            var configuration = service.configuration(pushData: Data("device-token".utf8))
            configuration.stateStore = DirectoryStateStore(directory: directory)
            let firstSignatures = SignatureCount()
            let first = try VoiceClient(userID: "alice", configuration: configuration) { id in
                firstSignatures.add()
                return service.sign(id)
            }
            let firstLog = EventLog(first)
            await first.start()
            #expect(await firstLog.first { $0 == .started } != nil, "\(firstLog.events)")
            #expect(firstSignatures.value == 1)
            await first.terminate()
            #expect(ClientStateStoreTests.mode(directory.appendingPathComponent("alice.grant.json").path) == 0o600)

            // The app restarts without its push data at hand: the kept one goes with the kept grant.
            configuration.pushData = nil
            let secondSignatures = SignatureCount()
            let second = try VoiceClient(userID: "alice", configuration: configuration) { id in
                secondSignatures.add()
                return service.sign(id)
            }
            let secondLog = EventLog(second)
            await second.start()
            #expect(await secondLog.first { $0 == .started } != nil, "\(secondLog.events)")
            #expect(secondSignatures.value == 0, "the restarted client asked the app to sign")
            // Registered for real: a message from bob reaches it.
            let bob = try service.client("bob")
            await bob.start()
            try await bob.send(message: "are you there", to: ["alice"])
            #expect(await secondLog.firstMessage()?.text == "are you there")
            await second.terminate()
            await bob.terminate()
        }
    }
}
