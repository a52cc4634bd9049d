import ArgumentParser
import Foundation
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
    @Option(
        name: .customLong("secret-file"),
        help: "File holding the application secret ('-': stdin); surrounding whitespace is ignored.")
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
        let signed = SignedRegistration.sign(
            userID: userID, applicationKey: applicationKey, sequence: sequence, applicationSecret: secret)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            print(String(decoding: try encoder.encode(signed), as: UTF8.self))
        } else {
            print(signed.signature)
        }
    }
}

/// A configuration or secret file's bytes (here and in `registration-service`); unreadable is bad input data
/// (exit 65) naming the file.
func readServiceFile(_ path: String) throws -> Data {
    do { return try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
        throw CommandFailure.dataError("\(path): cannot read it (\((error as NSError).localizedDescription))")
    }
}
