import ArgumentParser
import Foundation
import NIOCore
import VoiceSIP

extension SIPCommand {
    /// `voice-engine sip message`: one instant message (RFC 3428).
    struct Message: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send an instant message (RFC 3428): 2xx means delivered.")
        @Argument(help: "Recipient URI.")
        var to: String
        @Argument(help: "Message text (text/plain).")
        var text: String
        @Option(help: "Sender URI (From).")
        var from: String = "sip:voice-engine@localhost"
        @Option(
            name: .customLong("header"),
            help: "Extra header 'X-Name: value' (repeatable; custom headers must start with X-).")
        var headers: [String] = []
        @OptionGroup var connection: Connection

        func run() throws {
            let target = try parseURI(to, option: "recipient")
            var request = try makeRequest(
                .message, to: target, from: try parseURI(from, option: "--from"), extraHeaders: headers)
            request.headers.add("Content-Type", "text/plain;charset=utf-8")
            request.body = Array(text.utf8)
            let server = try connection.serverAddress(default: target)
            let message = request
            try connection.run(server: server) { _, sender in
                try await sender.send(message, to: SIPPeer(try connection.transportKind(), server))
            }
        }
    }
}
