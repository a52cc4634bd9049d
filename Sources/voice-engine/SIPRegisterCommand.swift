import ArgumentParser
import Foundation
import NIOCore
import VoiceSIP

extension SIPCommand {
    /// `voice-engine sip register`: REGISTER an address-of-record at a registrar (or remove the binding).
    struct Register: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "REGISTER an address-of-record (and unregister with --expires 0).")
        @Argument(help: "Address-of-record, e.g. sip:alice@example.com.")
        var addressOfRecord: String
        @Option(help: "Requested binding lifetime in seconds (0 removes the binding).")
        var expires: UInt32 = 3600
        @OptionGroup var connection: Connection

        func run() throws {
            let aor = try parseURI(addressOfRecord, option: "address-of-record")
            let server = try connection.serverAddress(default: aor)
            let peer = SIPPeer(try connection.transportKind(), server)
            let expires = self.expires
            try connection.run(server: server) { _, sender in
                let registration = SIPRegistration(
                    configuration: SIPRegistrationConfiguration(addressOfRecord: aor, server: peer, expires: expires),
                    sender: sender)
                let result = try await registration.register()
                if result.succeeded {
                    print("registered for \(result.grantedExpires) s; \(result.contacts.count) contact(s)")
                }
                return .response(result.statusCode, result.reasonPhrase)
            }
        }
    }
}
