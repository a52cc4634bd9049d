import ArgumentParser
import VoiceSIP

extension SIPCommand {
    /// `voice-engine sip listen`: answer one call (registered at --server, or on --listen).
    struct Listen: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Wait for one call and answer it: 180, then 200 with an SDP answer, media through a live call.",
            discussion: """
                With --register, the address-of-record is registered at --server so that calls to it reach us. The \
                call ends as for `sip call`. Exit status: 0 a call was answered and media flowed both ways; 1 \
                otherwise (no call within --answer-timeout, an offer we could not answer, no media).
                """)
        @Option(help: "Local address to listen on as host:port when not registering (default 127.0.0.1:5060).")
        var listen: String?
        @Option(help: "Seconds between 180 Ringing and answering.")
        var answerAfter: Double = 0
        @OptionGroup var call: SIPCallOptions
        @OptionGroup var connection: SIPCommand.Connection

        func validate() throws {
            try OptionRange("--answer-after", 0...3_600, "seconds").check(answerAfter)
        }

        func run() throws {
            try call.media.checkOutputs()
            var connection = connection
            if connection.bind == nil { connection.bind = listen ?? "127.0.0.1:5060" }
            let delay = answerAfter
            let headers = call.headerPairs
            let kind = try connection.transportKind()
            if kind == .tls && !call.register {
                throw CommandFailure.usage(
                    "--transport tls: listen takes no certificate of its own, so it needs --register (calls then come over that connection)"
                )
            }
            try SIPCallSession.run(connection: connection, options: call, defaultServer: nil) { agent, capabilities in
                say(
                    "listening on \(await agent.endpoint.localAddress(kind).map { "\($0)" } ?? "the registration's connection")"
                )
                var incoming = agent.incomingCalls.makeAsyncIterator()
                guard let call = await incoming.next() else { throw CommandFailure.runtime("no call") }
                say(
                    "incoming call from \(call.remote)"
                        + call.requestHeaders.map { " \($0.name): \($0.value)" }.joined())
                try await call.ring()
                if delay > 0 { try await Task.sleep(for: .milliseconds(Int(delay * 1000))) }
                try await call.answer(with: capabilities, headers: headers)
                return call
            }
        }
    }
}
