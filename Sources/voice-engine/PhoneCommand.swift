import ArgumentParser
import Foundation
import VoiceClient

/// `voice-engine phone`: a softphone on the calling client, driven by typed commands (from a terminal, a script
/// or tmux), printing the client's and the calls' events as they happen.
struct PhoneCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "phone",
        abstract:
            "A softphone on VoiceClient: register, call, answer, hang up, mute, hold, message (commands on stdin).",
        discussion: """
            Commands, one a line: call USER [X-Name=value …] | call-sip USER@DOMAIN[:PORT] [X-Name=value …] | \
            call-number +E164 | call-conference ROOM | answer | hangup | mute on|off | hold on|off | \
            dtmf KEYS | message USER TEXT | status | wait SECONDS | quit. They act on the latest call; `wait` \
            pauses the commands (for scripts). Events go to stdout, one a line ("event: …", "call N: …", \
            "call N: key K" for a key the peer sent, "call N: codec C" after the end); errors to stderr. The \
            registration is signed here with the application secret from --secret-file, standing in for the \
            app's server (SignedRegistration.sign). End of input quits. Exit status: 0, 64 usage, 65 an \
            unreadable secret file, 1 the client did not start.
            """)

    @Option(help: "The user ID to register.")
    var user: String
    @Option(help: "The service host (Kamailio and the registration service).")
    var server: String = "127.0.0.1"
    @Option(help: "Kamailio's SIP port (5061 for TLS, 5060 with --insecure-plaintext).")
    var sipPort: Int?
    @Option(help: "The registration service's port (8443 for HTTPS, 8080 with --insecure-plaintext).")
    var registrationPort: Int?
    @Option(
        name: .customLong("ca-file"),
        help: "PEM file of the CA the service's certificate must chain to (default: the system's store).")
    var caFile: String?
    @Option(help: "The name the service's certificate must carry (default: --server).")
    var serverName: String?
    @Flag(
        name: .customLong("insecure-plaintext"),
        help: "SIP over UDP and plain HTTP: the SIP password and the calls' keys cross the network in clear text.")
    var insecurePlaintext = false
    @Option(help: "The application key.")
    var applicationKey: String = "demo-application-key"
    @Option(name: .customLong("secret-file"), help: "File holding the application secret (the demo signs locally).")
    var secretFile: String
    @Option(help: "Microphone: an ALSA PCM name, file:PATH.wav or null.")
    var mic: String = "default"
    @Option(help: "Speaker: an ALSA PCM name, file:PATH.wav (records what was heard) or null.")
    var speaker: String = "default"
    @Option(help: "Device sample rate (a file microphone's own rate wins).")
    var rate: Int = 48_000
    @Option(help: "Seconds an unanswered call rings before it ends with 'no answer'.")
    var noAnswerTimeout: Int = 60
    @Option(help: "Answer incoming calls by itself after this many seconds (for scripts and the demo).")
    var autoAnswer: Double?

    func validate() throws {
        do { _ = try UserID.validate(user) } catch { throw ValidationError("--user: \(error)") }
        try OptionRange("--sip-port", 1...65_535, "").check(sipPort)
        try OptionRange("--registration-port", 1...65_535, "").check(registrationPort)
        if insecurePlaintext && (caFile != nil || serverName != nil) {
            throw ValidationError("--insecure-plaintext checks no certificate: drop --ca-file and --server-name")
        }
        try OptionRange("--no-answer-timeout", 1...3_600, "s").check(noAnswerTimeout)
        try OptionRange("--auto-answer", 0...3_600, "s").check(autoAnswer)
        try CallMediaOptions.checkRate(rate, within: 8_000...48_000)
    }

    func run() throws {
        // A speaker file that cannot be written fails now, not when the first call is answered.
        try CallMediaOptions.checkSpeakerFile(speaker)
        let secret: String
        do {
            secret = try String(contentsOfFile: secretFile, encoding: .utf8).trimmingCharacters(
                in: .whitespacesAndNewlines)
        } catch {
            throw CommandFailure.dataError("\(secretFile): cannot read it")
        }
        guard !secret.isEmpty else { throw CommandFailure.dataError("\(secretFile): the application secret is empty") }
        let key = applicationKey
        let transport: VoiceClientConfiguration.Transport =
            insecurePlaintext
            ? .insecurePlaintextUDPAndHTTP
            : .tls(trustRoots: caFile.map { .pemFile($0) } ?? .system, serverName: serverName)
        let configuration = VoiceClientConfiguration(
            applicationKey: key, serviceHost: server, transport: transport, sipPort: sipPort,
            registrationPort: registrationPort,
            audio: CallAudioDevices(microphone: mic, speaker: speaker, sampleRate: rate),
            noAnswerTimeout: .seconds(Double(noAnswerTimeout)))
        let client = try VoiceClient(userID: user, configuration: configuration) { userID in
            // Sequences only grow: milliseconds since 1970.
            SignedRegistration.sign(
                userID: userID, applicationKey: key, sequence: UInt64(Date().timeIntervalSince1970 * 1000),
                applicationSecret: secret)
        }
        let autoAnswer = autoAnswer
        try runBlocking { try await Softphone(client: client, autoAnswer: autoAnswer).run() }
    }
}

/// The softphone's loop: client events and typed commands, in one task each.
actor Softphone {
    let client: VoiceClient
    let autoAnswer: Double?
    private var calls: [Call] = []

    init(client: VoiceClient, autoAnswer: Double?) {
        self.client = client
        self.autoAnswer = autoAnswer
    }

    /// Runs until `quit` or the end of stdin; a client that does not start fails (its event says why).
    func run() async throws {
        let events = client.events
        let (started, startedContinuation) = AsyncStream.makeStream(of: Bool.self)
        Task {
            for await event in events {
                self.show(event)
                if case .started = event { startedContinuation.yield(true) }
                if case .failed = event { startedContinuation.yield(false) }
            }
        }
        await client.start()
        var iterator = started.makeAsyncIterator()
        guard await iterator.next() == true else {
            await client.terminate()
            throw CommandFailure.alreadyPrinted(.failure)
        }
        for await line in Self.stdinLines() {
            let words = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            guard let verb = words.first else { continue }
            if verb == "quit" { break }
            await perform(verb, Array(words.dropFirst()))
        }
        await client.terminate()
    }

    private func perform(_ verb: String, _ arguments: [String]) async {
        do {
            switch verb {
            case "call", "call-sip", "call-number", "call-conference":
                guard let target = arguments.first else { return complain("\(verb): whom?") }
                let headers = Self.headers(arguments.dropFirst())
                let call: Call
                switch verb {
                case "call": call = try await client.callUser(target, headers: headers)
                case "call-sip": call = try await client.callSIP(target, headers: headers)
                case "call-number": call = try await client.callPhoneNumber(target, headers: headers)
                default: call = try await client.callConference(target, headers: headers)
                }
                adopt(call)
            case "answer": try await latest()?.answer()
            case "hangup": try await latest()?.hangup()
            case "mute": try await latest()?.mute(arguments.first != "off")
            case "hold": try await latest()?.hold(arguments.first != "off")
            case "dtmf":
                guard let keys = arguments.first, arguments.count == 1 else { return complain("dtmf KEYS") }
                try await latest()?.sendDTMF(keys)
            case "message":
                guard arguments.count >= 2 else { return complain("message USER TEXT") }
                let id = try await client.send(
                    message: arguments.dropFirst().joined(separator: " "), to: [arguments[0]])
                say("message \(id): sending to \(arguments[0])")
            case "wait":
                guard let seconds = arguments.first.flatMap(Double.init), (0...3_600).contains(seconds) else {
                    return complain("wait SECONDS")
                }
                try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
            case "status":
                for (index, call) in calls.enumerated() { say("call \(index + 1): \(call.remote) \(await call.state)") }
            default:
                complain("unknown command '\(verb)'")
            }
        } catch {
            complain("\(verb): \(error)")
        }
    }

    private func latest() -> Call? {
        if calls.isEmpty { complain("no call") }
        return calls.last
    }

    /// Follows a call: its state changes and, at the end, its details.
    private func adopt(_ call: Call) {
        calls.append(call)
        let number = calls.count
        say(
            "call \(number): \(call.direction) \(call.remote)"
                + call.headers.sorted { $0.key < $1.key }.map { " \($0.key)=\($0.value)" }.joined())
        let updates = call.updates
        Task {
            for await update in updates {
                if case .dtmfReceived(let key) = update { say("call \(number): key \(key)") }
                if case .reconnecting = update { say("call \(number): reconnecting") }
                if case .reconnected = update { say("call \(number): reconnected") }
                guard case .stateChanged(let state) = update else { continue }
                var line = "call \(number): \(state)"
                if state == .ended {
                    let details = await call.details
                    line +=
                        " (\(details.endCause.map { "\($0)" } ?? "?")" + (details.error.map { ", \($0)" } ?? "")
                        + String(format: ", %.1f s)", Double(details.duration.nanoseconds) / 1e9)
                }
                say(line)
                if state == .ended, await call.details.establishedAt != nil { await showCodec(call, number) }
            }
        }
    }

    /// The codec the call's media sent, from its report (attached just after the end).
    private nonisolated func showCodec(_ call: Call, _ number: Int) async {
        for _ in 0..<100 {
            if let stream = await call.mediaReport?.stream {
                // The static payload types are G.711/G.722's (RFC 3551); the engine's one dynamic codec is Opus.
                let codec = TelephonyCodec.allCases.first { $0.payloadType == stream.payloadType }
                say("call \(number): codec \(codec?.encodingName ?? "opus")")
                return
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    private func show(_ event: VoiceClientEvent) {
        switch event {
        case .incomingCall(let incoming):
            say("event: incoming call from \(incoming.caller)" + (incoming.viaPush ? " (push)" : ""))
            adopt(incoming.call)
            if let autoAnswer {
                let call = incoming.call
                Task {
                    try? await Task.sleep(for: .milliseconds(Int(autoAnswer * 1000)))
                    do { try await call.answer() } catch { self.complain("answer: \(error)") }
                }
            }
        case .messageReceived(let message): say("event: message from \(message.sender): \(message.text)")
        default: say("event: \(event)")
        }
    }

    /// One line on stdout, written at once (scripts read the events as they happen).
    private nonisolated static func say(_ text: String) { FileHandle.standardOutput.write(Data((text + "\n").utf8)) }
    private nonisolated func say(_ text: String) { Self.say(text) }

    private nonisolated func complain(_ text: String) { FileHandle.standardError.write(Data("error: \(text)\n".utf8)) }

    /// `X-Name=value` words as custom headers.
    static func headers(_ words: ArraySlice<String>) -> [String: String] {
        var headers: [String: String] = [:]
        for word in words {
            guard let equals = word.firstIndex(of: "=") else { continue }
            headers[String(word[..<equals])] = String(word[word.index(after: equals)...])
        }
        return headers
    }

    /// Lines typed on stdin, read on a thread of their own (the read blocks); finished at the end of input.
    static func stdinLines() -> AsyncStream<String> {
        let (lines, continuation) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .unbounded)
        Thread.detachNewThread {
            while let line = readLine() { continuation.yield(line.trimmingCharacters(in: .whitespaces)) }
            continuation.finish()
        }
        return lines
    }
}
