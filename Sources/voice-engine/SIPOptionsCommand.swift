import ArgumentParser
import Foundation
import NIOCore
import VoiceSIP

extension SIPCommand {
    /// `voice-engine sip options`: OPTIONS to a server or UA.
    struct Options: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send OPTIONS: is the server or UA there, and what does it support?")
        @Argument(help: "Target URI.")
        var to: String
        @Option(help: "Sender URI (From).")
        var from: String = "sip:voice-engine@localhost"
        @OptionGroup var connection: Connection

        func run() throws {
            let target = try parseURI(to, option: "target")
            let request = try makeRequest(
                .options, to: target, from: try parseURI(from, option: "--from"), extraHeaders: [])
            let server = try connection.serverAddress(default: target)
            let peer = SIPPeer(try connection.transportKind(), server)
            try connection.run(server: server) { _, sender in
                let response = try await sender.send(request, to: peer)
                if let allow = response.headers.first("Allow") { print("Allow: \(allow)") }
                return response
            }
        }
    }
}
