import ArgumentParser
import Dispatch
import Foundation
import NIOCore
import NIOPosix
import VoiceClient
import VoiceService

/// `voice-engine sign-registration`: what the app's server computes for a client's signed registration request
/// (``SignedRegistration/sign(userID:applicationKey:sequence:applicationSecret:)``), for trying the service by
/// hand and for servers written in other languages to compare against.
struct SignRegistrationCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sign-registration",
        abstract: "Sign a client's registration: Base64(SHA1(userId + applicationKey + sequence + applicationSecret)).",
        discussion: """
            Prints the signature (or, with --json, the JSON the client passes on). The secret is read from a file \
            (or stdin with '-') so that it does not appear in the process list. Exit status: 0, 64 usage \
            (a user ID that breaks the rule: printable ASCII, at most 40 characters), 65 an empty secret.
            """)

    @Option(name: .customLong("user"), help: "The user ID.")
    var userID: String
    @Option(name: .customLong("application-key"), help: "The application key.")
    var applicationKey: String
    @Option(help: "The sequence: larger than every sequence signed before for this user.")
    var sequence: UInt64
    @Option(name: .customLong("secret-file"), help: "File holding the application secret ('-': stdin); surrounding whitespace is ignored.")
    var secretFile: String
    @Flag(help: "Print {\"sequence\":…,\"signature\":…} instead of the bare signature.")
    var json = false

    func validate() throws {
        do { _ = try UserID.validate(userID) } catch { throw ValidationError("--user: \(error)") }
        if applicationKey.isEmpty { throw ValidationError("--application-key cannot be empty") }
    }

    func run() throws {
        let data = secretFile == "-" ? FileHandle.standardInput.readDataToEndOfFile() : try readServiceFile(secretFile)
        let secret = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !secret.isEmpty else { throw CommandFailure.dataError("\(secretFile): the application secret is empty") }
        let signed = SignedRegistration.sign(userID: userID, applicationKey: applicationKey, sequence: sequence, applicationSecret: secret)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            print(String(decoding: try encoder.encode(signed), as: UTF8.self))
        } else {
            print(signed.signature)
        }
    }
}

/// `voice-engine registration-service`: the service that verifies signed registration requests and issues the
/// ephemeral SIP credentials Kamailio's auth_ephemeral checks (`make service` starts it beside Kamailio).
struct RegistrationServiceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "registration-service",
        abstract: "Verify signed registrations and issue ephemeral SIP credentials (HTTP, POST /v1/registrations).",
        discussion: """
            Runs until stopped. Accepted sequences are kept in STATE/sequences.json. Exit status: 0, 64 usage, \
            65 an unreadable applications or secret file, 1 the address cannot be bound.
            """)

    @Option(help: "Address to listen on, host:port.")
    var listen: String = "127.0.0.1:8080"
    @Option(help: "JSON file mapping application keys to application secrets.")
    var applications: String
    @Option(help: "Directory for the service's state (accepted sequences).")
    var state: String
    @Option(name: .customLong("shared-secret-file"), help: "File holding the secret shared with Kamailio's auth_ephemeral.")
    var sharedSecretFile: String
    @Option(help: "SIP domain of the users.")
    var domain: String = "voiceengine.test"
    @Option(help: "Lifetime of issued credentials in seconds.")
    var lifetime: UInt64 = 86_400

    func validate() throws {
        try OptionRange("--lifetime", 60...30 * 86_400, "s").check(Int(clamping: lifetime))
        guard let (_, port) = PeerAddress.split(listen), (0...65_535).contains(port) else {
            throw ValidationError("--listen \(listen): expected HOST:PORT")
        }
    }

    func run() throws {
        let apps: [String: String]
        do { apps = try JSONDecoder().decode([String: String].self, from: try readServiceFile(applications)) } catch let failure as CommandFailure {
            throw failure
        } catch {
            throw CommandFailure.dataError("\(applications): not a JSON object of application keys to secrets")
        }
        let secret = String(decoding: try readServiceFile(sharedSecretFile), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !secret.isEmpty else { throw CommandFailure.dataError("\(sharedSecretFile): the shared secret is empty") }
        guard let (host, port) = PeerAddress.split(listen) else { throw CommandFailure.usage("--listen \(listen): expected HOST:PORT") }
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        let service = try RegistrationService(
            applications: apps, issuer: EphemeralCredentialIssuer(sharedSecret: secret, lifetime: lifetime, domain: domain),
            stateDirectory: URL(fileURLWithPath: state))
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let address = try SocketAddress.makeAddressResolvingHost(host, port: port)
        let failure = DispatchSemaphore(value: 0)
        Task {
            do {
                let server = try await RegistrationHTTPServer.start(service, on: group, address: address)
                let line = "registration service listening on \(host):\(server.port ?? port), \(apps.count) application(s)\n"
                FileHandle.standardOutput.write(Data(line.utf8))
            } catch {
                reportError("cannot listen on \(listen): \(error)")
                failure.signal()
            }
        }
        failure.wait()
        throw ExitCode(1)
    }
}

/// A configuration or secret file's bytes; unreadable is bad input data (exit 65) naming the file.
private func readServiceFile(_ path: String) throws -> Data {
    do { return try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
        throw CommandFailure.dataError("\(path): cannot read it (\((error as NSError).localizedDescription))")
    }
}
