import ArgumentParser
import Foundation
import NIOCore
import NIOPosix
import VoiceClient
import VoiceService

/// `voice-engine registration-service`: the service that verifies signed registration requests and issues the
/// ephemeral SIP credentials Kamailio's auth_ephemeral checks (`make service` starts it beside Kamailio).
struct RegistrationServiceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "registration-service",
        abstract: "Verify signed registrations and issue ephemeral SIP credentials (HTTPS, POST /v1/registrations).",
        discussion: """
            Runs until stopped. Speaks HTTPS with --certificate and --private-key (PEM); plain HTTP, which sends \
            every SIP password in clear text, only with --insecure-plain-http. Applications, accepted sequences \
            and devices' push data are kept in the PostgreSQL database at --database, whose schema the service \
            creates and migrates at start. GET /metrics (Prometheus) and GET /health (the database reached) are \
            answered on --listen, and alone on --metrics-listen in plain HTTP for a scraper. Exit status: 0, 64 usage, 65 an unreadable applications, password, \
            secret, certificate or key file, 1 the database cannot be opened or the address cannot be bound.
            """)

    @Option(help: "Address to listen on, host:port.")
    var listen: String = "127.0.0.1:8080"
    @Option(help: "PostgreSQL database, postgres://USER@HOST:PORT/DATABASE (or ?host=/socket/directory).")
    var database: String
    @Option(name: .customLong("database-password-file"), help: "File holding the database user's password.")
    var databasePasswordFile: String?
    @Option(help: "JSON file of application keys to secrets, added to (or updated in) the database at start.")
    var applications: String?
    @Option(
        name: .customLong("shared-secret-file"), help: "File holding the secret shared with Kamailio's auth_ephemeral.")
    var sharedSecretFile: String
    @Option(help: "SIP domain of the users.")
    var domain: String = "voiceengine.test"
    @Option(help: "Lifetime of issued credentials in seconds.")
    var lifetime: UInt64 = 86_400
    @Option(help: "The server's certificate chain, PEM (HTTPS).")
    var certificate: String?
    @Option(name: .customLong("private-key"), help: "The certificate's private key, PEM.")
    var privateKey: String?
    @Option(
        name: .customLong("metrics-listen"),
        help: "Also listen on host:port in plain HTTP for GET /metrics and GET /health only (nothing secret there).")
    var metricsListen: String?
    @Option(
        name: .customLong("ice-server"),
        help: ArgumentHelp(
            "A TURN server URL (turn:HOST:PORT) handed out with every grant; it checks the grant's credentials "
                + "with the shared secret (coturn's use-auth-secret). Repeatable."))
    var iceServers: [String] = []
    @Flag(
        name: .customLong("insecure-plain-http"),
        help: "Serve plain HTTP instead of HTTPS: the granted SIP passwords cross the network in clear text.")
    var insecurePlainHTTP = false
    @OptionGroup(title: "Managed push (APNs, FCM)") var push: PushSenderOptions

    func validate() throws {
        switch (certificate, privateKey, insecurePlainHTTP) {
        case (.some, .some, false), (nil, nil, true): break
        case (_, _, true): throw ValidationError("--insecure-plain-http serves no certificate: drop --certificate")
        default: throw ValidationError("HTTPS needs --certificate and --private-key (or --insecure-plain-http)")
        }
        try OptionRange("--lifetime", 60...30 * 86_400, "s").check(Int(clamping: lifetime))
        guard let (_, port) = PeerAddress.split(listen), (0...65_535).contains(port) else {
            throw ValidationError("--listen \(listen): expected HOST:PORT")
        }
        if let metricsListen, PeerAddress.split(metricsListen).map({ (0...65_535).contains($0.1) }) != true {
            throw ValidationError("--metrics-listen \(metricsListen): expected HOST:PORT")
        }
        do { _ = try DatabaseAddress(url: database) } catch { throw ValidationError("--database \(error)") }
        for url in iceServers where !url.hasPrefix("turn:") && !url.hasPrefix("stun:") && !url.hasPrefix("turns:") {
            throw ValidationError("--ice-server \(url): expected a turn:, turns: or stun: URL")
        }
    }

    func run() throws {
        var apps: [String: String] = [:]
        if let applications {
            do {
                apps = try JSONDecoder().decode([String: String].self, from: try readServiceFile(applications))
            } catch let failure as CommandFailure {
                throw failure
            } catch {
                throw CommandFailure.dataError("\(applications): not a JSON object of application keys to secrets")
            }
        }
        let password = try databasePasswordFile.map {
            String(decoding: try readServiceFile($0), as: UTF8.self).trimmingCharacters(in: .newlines)
        }
        let secret = String(decoding: try readServiceFile(sharedSecretFile), as: UTF8.self).trimmingCharacters(
            in: .whitespacesAndNewlines)
        guard !secret.isEmpty else { throw CommandFailure.dataError("\(sharedSecretFile): the shared secret is empty") }
        guard let (host, port) = PeerAddress.split(listen) else {
            throw CommandFailure.usage("--listen \(listen): expected HOST:PORT")
        }
        let security: RegistrationHTTPServer.Security
        if let certificate, let privateKey {
            for file in [certificate, privateKey] { _ = try readServiceFile(file) }
            security = .tls(certificateChainFile: certificate, privateKeyFile: privateKey)
        } else {
            security = .insecurePlainHTTP
        }
        let databaseAddress: DatabaseAddress
        do { databaseAddress = try DatabaseAddress(url: database) } catch {
            throw CommandFailure.usage("--database \(error)")
        }
        let store: RegistrationStore, applicationCount: Int
        let applicationsToAdd = apps
        do {
            (store, applicationCount) = try runBlocking {
                let store = try await RegistrationStore.open(databaseAddress, password: password)
                for (key, secret) in applicationsToAdd { try await store.setApplication(key: key, secret: secret) }
                return (store, try await store.applicationCount())
            }
        } catch {
            throw CommandFailure.runtime("cannot open the database: \(error)")
        }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let managedPush = try push.managedPush(store: store, group: group)
        let service = RegistrationService(
            store: store,
            issuer: EphemeralCredentialIssuer(
                sharedSecret: secret, lifetime: lifetime, domain: domain, iceServerURLs: iceServers),
            managedPush: managedPush.push)
        let address = try SocketAddress.makeAddressResolvingHost(host, port: port)
        let server: RegistrationHTTPServer
        do {
            server = try runBlocking {
                try await RegistrationHTTPServer.start(service, on: group, address: address, security: security)
            }
        } catch let error as IOError {
            throw CommandFailure.runtime("cannot listen on \(listen): \(error)")
        } catch {
            throw CommandFailure.dataError("cannot load the certificate or key: \(error)")
        }
        var monitoring: RegistrationHTTPServer?
        if let metricsListen, let (metricsHost, metricsPort) = PeerAddress.split(metricsListen) {
            let metricsAddress = try SocketAddress.makeAddressResolvingHost(metricsHost, port: metricsPort)
            do {
                monitoring = try runBlocking {
                    try await RegistrationHTTPServer.start(
                        service, on: group, address: metricsAddress, security: .insecurePlainHTTP,
                        endpoints: .monitoringOnly)
                }
            } catch {
                throw CommandFailure.runtime("cannot listen on \(metricsListen): \(error)")
            }
        }
        let scheme = insecurePlainHTTP ? "http" : "https"
        var line =
            "registration service listening on \(scheme)://\(host):\(server.port ?? port), \(applicationCount) "
            + "application(s)\n"
        if let monitoring, let (metricsHost, _) = metricsListen.flatMap(PeerAddress.split) {
            line += "metrics on http://\(metricsHost):\(monitoring.port ?? 0)/metrics\n"
        }
        line += managedPush.summary.map { $0 + "\n" }.joined()
        FileHandle.standardOutput.write(Data(line.utf8))
        // Serves until the process is stopped.
        withExtendedLifetime((server, monitoring)) { while true { pause() } }
    }
}
