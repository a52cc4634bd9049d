import Foundation
import NIOCore
import NIOPosix
import Testing
import VoiceClient
import VoiceService
import VoiceSIP
import VoiceTestSupport

let kamailioExecutable = "/usr/sbin/kamailio"
/// Kamailio's tables (version, location, silo) as the installed Kamailio expects them.
let kamailioSchema = ["standard", "usrloc", "msilo"].map { "/usr/share/kamailio/postgres/\($0)-create.sql" }
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// Why the service cannot run here, or nil when Kamailio, its modules and PostgreSQL are installed.
let serviceUnavailableReason: String? = {
    let fm = FileManager.default
    if !fm.isExecutableFile(atPath: kamailioExecutable) {
        return "kamailio is not installed (make test-deps installs it)"
    }
    if !TestPKI.isAvailable { return "openssl is not installed (the service's test certificates)" }
    for module in ["auth_ephemeral", "msilo", "db_postgres", "tls", "nathelper"]
    where !fm.fileExists(atPath: "/usr/lib/x86_64-linux-gnu/kamailio/modules/\(module).so") {
        return
            "Kamailio's \(module) module is not installed (make test-deps installs kamailio-autheph-modules, kamailio-postgres-modules, kamailio-extra-modules, kamailio-tls-modules)"
    }
    if kamailioSchema.contains(where: { !fm.fileExists(atPath: $0) }) {
        return "Kamailio's PostgreSQL schema is missing (make test-deps installs kamailio-postgres-modules)"
    }
    return TestPostgreSQL.unavailableReason
}()

/// Whether Kamailio's modules of managed push (tsilo holds the INVITE, http_client asks the registration service
/// to push) are installed.
let managedPushModulesInstalled = ["tsilo", "http_client", "htable", "jansson"].allSatisfy {
    FileManager.default.fileExists(atPath: "/usr/lib/x86_64-linux-gnu/kamailio/modules/\($0).so")
}
let managedPushModulesMissing =
    "Kamailio's tsilo/http_client/htable/jansson modules are not installed (make test-deps installs kamailio-utils-modules, kamailio-extra-modules)"

/// The repository's service on loopback for one test: Kamailio with Services/kamailio/kamailio.cfg (its own
/// state directory; TLS on `tlsPort`, UDP and TCP on `sipPort`) and the registration service over HTTPS in this
/// process, sharing a fresh secret and a fresh database of the test process's PostgreSQL; both present a
/// certificate of a CA made for the test, which the clients of ``client(_:clock:pushData:audio:)`` trust.
final class ServiceHarness: @unchecked Sendable {
    static let applicationKey = "test-application-key"
    static let applicationSecret = "test-application-secret"
    /// Kamailio's TLS port is the SIP port plus this (clear of the other ports the tests use).
    static let tlsPortOffset = 5000

    let directory: URL
    /// The loopback address both services listen on: 127.0.0.1, or another one for a second node (nodes are told
    /// apart by address; they share the ports).
    let host: String
    let sipPort: Int
    var tlsPort: Int { sipPort + Self.tlsPortOffset }
    let pki: TestPKI
    /// The certificates Kamailio and the registration service present (set before `start()`): the test CA's by
    /// default.
    var sipCertificate: String
    var httpsCertificate: String
    /// Clients and registration service in clear text (SIP over UDP, plain HTTP), set before `start()`.
    var insecure = false
    let sharedSecret: String
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let database: TestDatabase
    /// Whether ``shutdown()`` drops the database (not for a node that joined another's).
    private let ownsDatabase: Bool
    /// Kamailio's Prometheus metrics on http://127.0.0.1:<port>/metrics (nil: none), set before `start()`.
    var kamailioMetricsPort: Int?
    /// Every node's SIP address (`sip:host:port`) when Kamailio runs as one node of several sharing the database
    /// (kamailio.cfg's CLUSTER), set before `start()`.
    var clusterNodes: [String]?
    private let credentialLifetime: UInt64
    private(set) var registrationService: RegistrationService
    private(set) var http: RegistrationHTTPServer?
    private(set) var kamailio: ChildProcessGroup?
    private var sequence: UInt64 = 0
    private let lock = NSLock()
    /// Where Kamailio sends phone-number and conference calls (its GATEWAY and CONFERENCE), set before `start()`.
    var gateway = "sip:127.0.0.1:1"
    var conferenceServer = "sip:127.0.0.1:1"
    /// Managed push: the gateway URL Kamailio posts to and how long it keeps an INVITE (nil: no managed push).
    var pushGateway: String?
    var pushWaitMilliseconds = 10_000
    /// App-sent push: Kamailio keeps INVITEs to users with no binding without posting anywhere.
    var appPush = false
    /// Managed push by the registration service (``enableManagedPush(_:secret:)``): Kamailio posts to its
    /// `/v1/managed-push` over HTTPS (trusting the test CA) with this bearer secret.
    private(set) var managedPushSecret: String?
    /// The registration service's port (0: any). A test that restarts the service on its port names one outside the
    /// ephemeral range: an ephemeral port given back can be taken by an outgoing connection before the restart binds.
    var registrationListenPort = 0
    /// The TURN servers every grant names (`turn:` URLs; they check the grants' credentials with ``sharedSecret``),
    /// set before `start()`.
    var iceServerURLs: [String] = [] {
        didSet {
            guard let address = try? DatabaseAddress(url: database.url) else { return }
            registrationService = RegistrationService(
                store: RegistrationStore(address),
                issuer: EphemeralCredentialIssuer(
                    sharedSecret: sharedSecret, lifetime: credentialLifetime, domain: "voiceengine.test",
                    iceServerURLs: iceServerURLs))
        }
    }

    init(sipPort: Int, credentialLifetime: UInt64 = 3600) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("voiceclient-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        host = "127.0.0.1"
        self.sipPort = sipPort
        self.credentialLifetime = credentialLifetime
        sharedSecret = UUID().uuidString
        pki = try TestPKI(prefix: "voiceclient-pki")
        (sipCertificate, httpsCertificate) = (pki.serverCertificateFile, pki.serverCertificateFile)
        database = try TestPostgreSQL.shared().database()
        ownsDatabase = true
        registrationService = RegistrationService(
            store: RegistrationStore(try DatabaseAddress(url: database.url)),
            issuer: EphemeralCredentialIssuer(
                sharedSecret: sharedSecret, lifetime: credentialLifetime, domain: "voiceengine.test"))
    }

    /// A second node of `first`'s service on `host` (another loopback address): its own Kamailio and registration
    /// service on the same ports, sharing the database, the secret and the certificates.
    init(joining first: ServiceHarness, host: String) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("voiceclient-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.host = host
        sipPort = first.sipPort
        credentialLifetime = first.credentialLifetime
        sharedSecret = first.sharedSecret
        pki = first.pki
        (sipCertificate, httpsCertificate) = (first.sipCertificate, first.httpsCertificate)
        insecure = first.insecure
        database = first.database
        ownsDatabase = false
        registrationListenPort = first.registrationListenPort
        registrationService = RegistrationService(
            store: RegistrationStore(try DatabaseAddress(url: database.url)),
            issuer: EphemeralCredentialIssuer(
                sharedSecret: sharedSecret, lifetime: credentialLifetime, domain: "voiceengine.test"))
    }

    var registrationPort: Int { http?.port ?? 0 }

    /// Before `start()`: the registration service pushes through `dispatcher` (on its store) when Kamailio asks.
    func enableManagedPush(_ dispatcher: ManagedPushDispatcher, secret: String) {
        registrationService = RegistrationService(
            store: registrationService.store,
            issuer: EphemeralCredentialIssuer(
                sharedSecret: sharedSecret, lifetime: credentialLifetime, domain: "voiceengine.test"),
            managedPush: .init(dispatcher: dispatcher, secret: secret))
        managedPushSecret = secret
    }

    /// Starts both services; skips the test (with Kamailio's log) when Kamailio does not come up.
    func start() async throws {
        try await startRegistrationService(port: registrationListenPort)
        try database.psql("", files: kamailioSchema)
        try await startKamailio()
    }

    /// The registration service alone (HTTPS with `httpsCertificate`, or HTTP when `insecure`) on `port` (0: any),
    /// its store migrated and holding the test application.
    func startRegistrationService(port: Int = 0) async throws {
        try await registrationService.store.migrate()
        try await registrationService.store.setApplication(key: Self.applicationKey, secret: Self.applicationSecret)
        http = try await RegistrationHTTPServer.start(
            registrationService, on: group, address: try SocketAddress(ipAddress: host, port: port),
            security: insecure
                ? .insecurePlainHTTP : .tls(certificateChainFile: httpsCertificate, privateKeyFile: pki.serverKeyFile))
    }

    /// Stops the registration service and starts a new one (a new store on the same database) on the same port.
    func restartRegistrationService() async throws {
        let port = registrationPort
        try await http?.close()
        await registrationService.store.close()
        registrationService = RegistrationService(
            store: RegistrationStore(try DatabaseAddress(url: database.url)),
            issuer: EphemeralCredentialIssuer(
                sharedSecret: sharedSecret, lifetime: credentialLifetime, domain: "voiceengine.test"))
        // The old listener's port can stay taken for a moment after its close: retry it, then take any port (the
        // clients reach the service again through `registrationPort`).
        for _ in 0..<20 {
            do { return try await startRegistrationService(port: port) } catch let error as IOError
                where error.errnoCode == EADDRINUSE
            {
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        print("registration service: port \(port) still in use after its restart, listening on another")
        try await startRegistrationService(port: 0)
    }

    func startKamailio() async throws {
        let config = repositoryRoot.appendingPathComponent("Services/kamailio/kamailio.cfg").path
        // Something already on the port would answer in Kamailio's place with another secret.
        if await waitUntilUDPBound(sipPort, host: host, timeout: .zero) {
            throw VoiceClientError.network(
                "\(host):\(sipPort) is already in use (a Kamailio left over by an interrupted run?)")
        }
        var options: [String] = []
        if let kamailioMetricsPort { options += ["-A", "METRICS_PORT=\(kamailioMetricsPort)"] }
        if let clusterNodes {
            let list = directory.appendingPathComponent("nodes.list")
            try clusterNodes.map { "1 \($0)\n" }.joined().write(to: list, atomically: true, encoding: .utf8)
            options += ["-A", "CLUSTER", "-A", "NODES=\"\(list.path)\""]
        }
        let push =
            (pushGateway.map { ["-A", "PUSH_GATEWAY=\"\($0)\""] } ?? []) + (appPush ? ["-A", "APP_PUSH"] : [])
            + ["-A", "PUSH_WAIT=\(pushWaitMilliseconds)"]
            + (managedPushSecret.map {
                [
                    "-A", "PUSH_GATEWAY=\"https://127.0.0.1:\(registrationPort)/v1/managed-push\"", "-A",
                    "PUSH_SECRET=\"\($0)\"", "-A", "PUSH_CA=\"\(pki.caFile)\""
                ]
            } ?? [])
        let tlsConfig = directory.appendingPathComponent("tls.cfg")
        try pki.kamailioTLSConfiguration(certificate: sipCertificate).write(
            to: tlsConfig, atomically: true, encoding: .utf8)
        let tls = [
            "-l", "tls:\(host):\(tlsPort)", "-A", "WITH_TLS", "-A", "TLSCFG=\"\(tlsConfig.path)\""
        ]
        // Debian's Kamailio 5.6 with OpenSSL 3 now and then corrupts its shared memory while a child process sets up
        // TLS at start (kamailio/kamailio#3791: "qm_debug_check_frag … called from tls: tls_init.c", the child
        // aborts and Kamailio exits): such a start is made again, up to three times; any other exit is a failure.
        for attempt in 1...3 {
            let process = try ChildProcessGroup(
                kamailioExecutable,
                push + tls + options + [
                    "-f", config, "-DD", "-E", "-l", "udp:\(host):\(sipPort)", "-l", "tcp:\(host):\(sipPort)",
                    "-A", "SECRET=\"\(sharedSecret)\"", "-A", "DB_URL=\"\(database.url)\"",
                    "-A", "SELF=\"sip:\(host):\(sipPort)\"", "-A", "GATEWAY=\"\(gateway)\"", "-A",
                    "CONFERENCE=\"\(conferenceServer)\"",
                    "-P", directory.appendingPathComponent("kamailio.pid").path, "-Y", directory.path, "-m", "32", "-M",
                    "8"
                ], log: directory.appendingPathComponent("kamailio.log"))
            kamailio = process
            let listening = await waitUntilUDPBound(sipPort, host: host)
            let tlsListening = await waitUntilTCPListening(tlsPort, host: host)
            if listening && tlsListening {
                try await Task.sleep(for: .milliseconds(500))
                if process.isRunning { return }
            }
            let tail = process.logTail
            process.stop()
            if attempt < 3, tail.contains("qm_debug_check_frag"), tail.contains("tls_init.c") {
                print("Kamailio aborted in its TLS set-up at start (kamailio#3791); starting it again:\n\(tail)")
                continue
            }
            try Test.cancel("Kamailio did not start on \(host):\(sipPort) (TLS \(tlsPort)):\n\(tail)")
        }
    }

    func stopKamailio() {
        kamailio?.stop()
        kamailio = nil
    }

    /// What the app's server does: signs with the application secret and the next sequence.
    func sign(_ userID: String) -> SignedRegistration {
        let next = lock.withLock {
            sequence += 1
            return sequence
        }
        return SignedRegistration.sign(
            userID: userID, applicationKey: Self.applicationKey, sequence: next,
            applicationSecret: Self.applicationSecret)
    }

    /// Over TLS trusting the test CA (`trustRoots`, `serverName` to try others), unless the harness is `insecure`.
    func configuration(
        pushData: Data? = nil, trustRoots: VoiceClientConfiguration.Transport.TrustRoots? = nil,
        serverName: String? = nil
    ) -> VoiceClientConfiguration {
        let transport: VoiceClientConfiguration.Transport =
            insecure
            ? .insecurePlaintextUDPAndHTTP
            : .tls(trustRoots: trustRoots ?? .pemFile(pki.caFile), serverName: serverName)
        return VoiceClientConfiguration(
            applicationKey: Self.applicationKey, serviceHost: host, transport: transport,
            sipPort: insecure ? sipPort : tlsPort, registrationPort: registrationPort,
            registrationExpires: 60, pushData: pushData,
            sipT1: .milliseconds(20), retryCheckInterval: .seconds(3600))
    }

    func client(
        _ userID: String, clock: any MediaClock = MonotonicClock(), pushData: Data? = nil,
        audio: CallAudioDevices? = nil, configuration: VoiceClientConfiguration? = nil
    ) throws -> VoiceClient {
        var configuration = configuration ?? self.configuration(pushData: pushData)
        // Calls in tests run on null devices unless a test gives files (no sound card needed).
        configuration.audio =
            audio ?? CallAudioDevices(microphone: "null", speaker: "null", sampleRate: 16_000, voiceProcessing: false)
        return try VoiceClient(userID: userID, configuration: configuration, clock: clock) { [self] id in sign(id) }
    }

    func shutdown() async {
        stopKamailio()
        try? await http?.close()
        await registrationService.store.close()
        try? await group.shutdownGracefully()
        try? FileManager.default.removeItem(at: directory)
        guard ownsDatabase else { return }
        database.drop()
        pki.remove()
    }
}

/// Runs `body` with the service started on `sipPort`, shut down afterwards whatever happens.
func withService(
    sipPort: Int, credentialLifetime: UInt64 = 3600, gateway: String? = nil, conferenceServer: String? = nil,
    pushGateway: String? = nil, appPush: Bool = false, insecure: Bool = false,
    prepare: (ServiceHarness) -> Void = { _ in }, _ body: (ServiceHarness) async throws -> Void
) async throws {
    let harness = try ServiceHarness(sipPort: sipPort, credentialLifetime: credentialLifetime)
    harness.insecure = insecure
    prepare(harness)
    if let gateway { harness.gateway = gateway }
    if let conferenceServer { harness.conferenceServer = conferenceServer }
    harness.pushGateway = pushGateway
    harness.appPush = appPush
    do {
        try await harness.start()
        try await body(harness)
    } catch {
        if let kamailio = harness.kamailio { print("kamailio log:\n\(kamailio.logTail)") }
        await harness.shutdown()
        throw error
    }
    await harness.shutdown()
}

/// `host:port` (IPv4) as /proc/net/tcp and /proc/net/udp write it: the address's bytes in host order, in hex.
func procNetAddress(_ host: String, _ port: Int) -> String {
    let bytes = host.split(separator: ".").compactMap { UInt8($0) }
    return bytes.reversed().map { String(format: "%02X", $0) }.joined() + String(format: ":%04X", port)
}

/// Waits until something has bound UDP `port` on `host` (from /proc/net/udp).
func waitUntilUDPBound(_ port: Int, host: String = "127.0.0.1", timeout: Duration = .seconds(8)) async -> Bool {
    let needle = procNetAddress(host, port)
    let deadline = ContinuousClock.now + timeout
    repeat {
        if let table = try? String(contentsOfFile: "/proc/net/udp", encoding: .utf8), table.contains(needle) {
            return true
        }
        try? await Task.sleep(for: .milliseconds(20))
    } while ContinuousClock.now < deadline
    return false
}

/// Waits until something listens on TCP `port` on `host` (from /proc/net/tcp, state 0A).
func waitUntilTCPListening(_ port: Int, host: String = "127.0.0.1", timeout: Duration = .seconds(8)) async -> Bool {
    let needle = procNetAddress(host, port) + " 00000000:0000 0A"
    let deadline = ContinuousClock.now + timeout
    repeat {
        if let table = try? String(contentsOfFile: "/proc/net/tcp", encoding: .utf8), table.contains(needle) {
            return true
        }
        try? await Task.sleep(for: .milliseconds(20))
    } while ContinuousClock.now < deadline
    return false
}

/// Collects a client's events and waits for the ones a test expects.
final class EventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var received: [VoiceClientEvent] = []

    init(_ client: VoiceClient) {
        let stream = client.events
        Task { [self] in for await event in stream { lock.withLock { received.append(event) } } }
    }

    var events: [VoiceClientEvent] { lock.withLock { received } }

    /// The messages received so far.
    var messages: [IncomingMessage] {
        events.compactMap { if case .messageReceived(let message) = $0 { message } else { nil } }
    }

    /// The first message received, waiting up to `timeout` for one.
    func firstMessage(timeout: Duration = .seconds(10)) async -> IncomingMessage? {
        let deadline = ContinuousClock.now + timeout
        while messages.isEmpty, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        return messages.first
    }

    /// The first event matching `predicate`, waiting up to `timeout` for it.
    func first(timeout: Duration = .seconds(10), where predicate: @Sendable (VoiceClientEvent) -> Bool) async
        -> VoiceClientEvent?
    {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let event = events.first(where: predicate) { return event }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return events.first(where: predicate)
    }
}

/// One REGISTER with given credentials, straight through VoiceSIP: what Kamailio says to them.
enum SIPProbe {
    static func register(_ user: String, grant: RegistrationGrant, sipPort: Int) async throws -> Int {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        do {
            let status = try await register(user, grant: grant, sipPort: sipPort, on: group.next())
            try await group.shutdownGracefully()
            return status
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
    }

    private static func register(_ user: String, grant: RegistrationGrant, sipPort: Int, on loop: any EventLoop)
        async throws -> Int
    {
        let timers = SIPTimerConfiguration(t1: .milliseconds(20), t2: .milliseconds(200), t4: .milliseconds(200))
        let endpoint = try await SIPEndpoint.start(
            on: loop, udp: try SocketAddress(ipAddress: "127.0.0.1", port: 0),
            configuration: SIPEndpointConfiguration(timers: timers))
        let sender = SIPRequestSender(
            endpoint: endpoint, credentials: SIPStaticCredentials(username: grant.username, password: grant.password))
        let registration = SIPRegistration(
            configuration: SIPRegistrationConfiguration(
                addressOfRecord: SIPURI(user: user, host: grant.domain),
                server: SIPPeer(.udp, try SocketAddress(ipAddress: "127.0.0.1", port: sipPort)),
                expires: 30),
            sender: sender)
        let result = try await registration.register()
        if result.succeeded { _ = try? await registration.unregister() }
        try await endpoint.close()
        return result.statusCode
    }
}
