import ArgumentParser
import Dispatch
import Foundation
import NIOCore
import NIOPosix
import VoiceClient
import VoiceEngine
import VoiceSIP

#if canImport(Glibc)
import Glibc
#endif

/// What `sip call` and `sip listen` share: who we are, the media devices, and how long the call lasts.
struct SIPCallOptions: ParsableArguments {
    @Option(help: "Our address-of-record (From, Contact user), e.g. sip:alice@example.com.")
    var from: String?
    @Flag(help: "REGISTER the address-of-record at --server first (and unregister at the end).")
    var register = false
    @Option(name: .customLong("header"), help: "Custom header 'X-Name: value' for the INVITE or our 200 (repeatable).")
    var headers: [String] = []
    @OptionGroup var media: CallMediaOptions
    @Flag(help: "Offer SDES-SRTP but accept plain RTP (default: SRTP required, RTP/SAVP).")
    var optionalSRTP = false
    @Option(help: "Hang up this many seconds after the call is established (default: until Ctrl-C or the peer's BYE).")
    var duration: Double?
    @Option(help: "Give up when the call is not established within this many seconds.")
    var answerTimeout: Double = 60
    @Option(
        help: ArgumentHelp(
            "DTMF keys to send once the call is established (0-9 * # A-D); more with 'dtmf <keys>' lines on stdin.",
            valueName: "keys"))
    var dtmf: String?

    func validate() throws {
        try OptionRange("--duration", 0.1...86_400, "seconds").check(duration)
        try OptionRange("--answer-timeout", 0.1...3_600, "seconds").check(answerTimeout)
        if let dtmf {
            do { _ = try DTMFDigit.parse(dtmf) } catch { throw ValidationError("--dtmf: \(error)") }
        }
        for header in headers where !(header.lowercased().hasPrefix("x-") && header.contains(":")) {
            throw ValidationError("--header '\(header)': expected 'X-Name: value'")
        }
    }

    var headerPairs: [(String, String)] {
        headers.map { header in
            let colon = header.firstIndex(of: ":")!
            return (
                String(header[..<colon]), header[header.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            )
        }
    }
}

extension SIPCommand {
    /// `voice-engine sip call`: place one call with media.
    struct Call: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Place a call: INVITE with an SDP offer (Opus, SDES-SRTP), media through a live call, BYE at the end.",
            discussion: """
                The call goes to --server (an outbound proxy such as Kamailio) when given, otherwise to the target's \
                host and port. It ends after --duration seconds, on Ctrl-C (BYE, or CANCEL while ringing), or on the \
                peer's BYE. Exit status: 0 the call was established and media flowed both ways; 1 it was rejected \
                (status and reason printed), the media never flowed, or a device failed; 64 bad arguments; 69 no \
                answer or the transport failed; 77 the credentials were refused.
                """)
        @Argument(help: "Whom to call, e.g. sip:bob@example.com or sip:bob@127.0.0.1:5070.")
        var target: String
        @OptionGroup var call: SIPCallOptions
        @OptionGroup var connection: SIPCommand.Connection

        func run() throws {
            let target = try parseURI(self.target, option: "target")
            try call.media.checkOutputs()
            try SIPCallSession.run(connection: connection, options: call, defaultServer: target) {
                agent, capabilities in
                try await agent.call(target, offering: capabilities, headers: call.headerPairs)
            }
        }
    }
}

/// One SIP call with media from the command line: endpoint, optional registration, the call's events, a
/// `LiveCall` started on the negotiated media, hang-up on Ctrl-C / --duration / the peer's BYE.
enum SIPCallSession {
    /// Runs the call to its end; throws why it failed, with the exit status `sip call --help` documents.
    static func run(
        connection: SIPCommand.Connection, options: SIPCallOptions, defaultServer: SIPURI?,
        start: @escaping @Sendable (SIPUserAgent, AudioCapabilities) async throws -> SIPCall
    ) throws {
        let kind = try connection.transportKind()
        let credentials = try connection.credentials()
        let t1 = connection.t1
        let timers = SIPTimerConfiguration(
            t1: .milliseconds(t1), t2: .milliseconds(max(4000, t1 * 8)), t4: .milliseconds(max(5000, t1 * 10)))
        let server: SocketAddress? =
            try connection.server.map { try socketAddress($0, option: "--server") }
            ?? defaultServer.map { try connection.serverAddress(default: $0) }
        if options.register && (server == nil || options.from == nil) {
            throw CommandFailure.usage("--register needs --server and --from")
        }
        let aor =
            try options.from.map { try parseURI($0, option: "--from") } ?? SIPURI(user: "voice-engine", host: "invalid")
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let loop = group.next()
        let local =
            try connection.bind.map { try socketAddress($0, option: "--bind") }
            ?? routedAddress(to: server ?? SocketAddress(ipAddress: "127.0.0.1", port: 5060), on: loop)
        let traced = connection.trace
        let useProxy = connection.server != nil
        let tls = try connection.tlsConfiguration()
        let ended = try runBlocking { () -> CommandFailure? in
            let endpoint: SIPEndpoint
            do {
                endpoint = try await SIPEndpoint.start(
                    on: loop, udp: kind == .udp ? local : nil, tcp: kind == .tcp ? local : nil,
                    configuration: SIPEndpointConfiguration(timers: timers, tls: tls))
            } catch {
                throw CommandFailure.unavailable("\(error)")
            }
            if traced { endpoint.onTrace { FileHandle.standardError.write(Data(($0 + "\n").utf8)) } }
            let agent = SIPUserAgent(
                endpoint: endpoint, credentials: credentials,
                configuration: SIPUserAgentConfiguration(
                    addressOfRecord: aor, outboundProxy: useProxy ? server.map { SIPPeer(kind, $0) } : nil,
                    transport: kind))
            return try await closingAfterwards(endpoint) {
                var registration: SIPRegistration?
                if options.register, let server {
                    let r = SIPRegistration(
                        configuration: SIPRegistrationConfiguration(
                            addressOfRecord: aor, server: SIPPeer(kind, server), expires: 300),
                        sender: agent.sender)
                    let result = try await r.register()
                    guard result.succeeded else {
                        throw CommandFailure(
                            "REGISTER: \(result.statusCode) \(result.reasonPhrase)",
                            status: result.statusCode == 401 || result.statusCode == 407 ? .noPermission : .failure)
                    }
                    say("registered \(aor) for \(result.grantedExpires) s")
                    registration = r
                }
                let failure = try await runCall(agent: agent, local: local, options: options, start: start)
                if let registration { _ = try? await registration.unregister() }
                return failure
            }
        }
        if let ended { throw ended }
    }

    /// Places or awaits the call and runs its media until hang-up. Returns why the call failed once it was under
    /// way (the registration is still removed then), nil when media flowed both ways; throws when it could not
    /// be set up.
    static func runCall(
        agent: SIPUserAgent, local: SocketAddress, options: SIPCallOptions,
        start: @escaping @Sendable (SIPUserAgent, AudioCapabilities) async throws -> SIPCall
    ) async throws -> CommandFailure? {
        // RTP on the address SIP uses (a wildcard bind announces loopback: give --bind for other peers).
        let bound = local.ipAddress ?? "127.0.0.1"
        let host = bound == "0.0.0.0" ? "127.0.0.1" : bound
        let transport: UDPMediaTransport
        do { transport = try await UDPMediaTransport.bind(host: host, port: 0) } catch {
            throw CommandFailure.runtime("cannot bind the RTP socket on \(host): \(error)")
        }
        var send = OpusEncoderConfiguration()
        send.bitrate = options.media.bitrate
        let suites: [SRTPCryptoSuite] = [.aesCM128HmacSHA1_80, .aesCM128HmacSHA1_32]
        let capabilities = AudioCapabilities(
            address: host,
            port: Int(transport.localEndpoint.port), send: send,
            srtp: options.optionalSRTP ? .optional(suites) : .required(suites))

        // Whatever comes first ends the call: Ctrl-C, the duration, the peer, the media timing out.
        let (stops, stop) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .unbounded)
        signal(SIGINT, SIG_IGN)
        let interrupt = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        interrupt.setEventHandler { stop.yield("Ctrl-C") }
        interrupt.resume()
        defer {
            interrupt.cancel()
            signal(SIGINT, SIG_DFL)
        }
        let answerTimeout = options.answerTimeout
        let timeoutTask = Task {
            try await Task.sleep(for: .milliseconds(Int(answerTimeout * 1000)))
            stop.yield("not established within \(answerTimeout) s")
        }
        // Placing or waiting for the call races Ctrl-C and --answer-timeout (nobody may ever call `sip listen`).
        let starting = Task { () throws -> SIPCall in try await start(agent, capabilities) }
        Task {
            _ = try? await starting.value
            stop.yield("started")  // also when starting failed: its error is read below
        }
        var first = ""
        for await next in stops {
            first = next
            break
        }
        guard first == "started" else {
            starting.cancel()
            timeoutTask.cancel()
            await transport.close()
            return .runtime("no call: \(first)")
        }
        let call: SIPCall
        do {
            call = try await starting.value
        } catch let error as SIPError where error.kind == .timeout || error.kind == .transport || error.kind == .tls {
            timeoutTask.cancel()
            await transport.close()
            throw CommandFailure.unavailable("no answer: \(error.reason)")
        } catch {
            timeoutTask.cancel()
            await transport.close()
            throw error
        }
        let established = Established()
        let events = call.events
        Task {
            for await event in events {
                say("sip: \(event)")
                switch event {
                case .established(let media, let headers):
                    timeoutTask.cancel()
                    if !headers.isEmpty { say("sip: headers" + headers.map { " \($0.name): \($0.value)" }.joined()) }
                    established.media = media
                    stop.yield("established")
                case .mediaUpdated(let media, _):
                    // Hold, resume or re-key (ours or the peer's re-INVITE): into the running media.
                    do { try established.live?.update(media) } catch { say("sip: media update failed: \(error)") }
                case .ended(let end):
                    established.end = end
                    stop.yield("ended")
                case .dtmfReceived(let digit, _):
                    say("dtmf: received \(digit)")
                case .progress:
                    break
                }
            }
        }
        var reason = ""
        for await next in stops where next != "started" {
            reason = next
            break
        }
        guard reason == "established", let media = established.media else {
            timeoutTask.cancel()
            if established.end == nil { await call.hangUp() }
            await transport.close()
            let end = established.end
            let message = "the call was not established: \(end.map { "\($0)" } ?? reason)"
            if let end, end.cause == .failed, end.statusCode == 408 || end.statusCode == nil {
                return .unavailable(message)
            }
            if let end, end.statusCode == 503, end.reasonPhrase == "Transport Error" { return .unavailable(message) }
            if let code = end?.statusCode, code == 401 || code == 407 { return .noPermission(message) }
            return .runtime(message)
        }
        let sipMedia: SIPCallMedia
        do {
            sipMedia = try SIPCallMedia(
                negotiated: media, callID: CallID("sip"), transport: transport,
                devices: CallAudioDevices(
                    microphone: options.media.mic, speaker: options.media.speaker, sampleRate: options.media.rate,
                    voiceProcessing: !options.media.noVoiceProcessing),
                options: LiveCallOptions(mediaTimeoutSeconds: 10), adjust: options.media.applyingEchoCancellerChoice)
            established.live = sipMedia
        } catch {
            await call.hangUp()
            await transport.close()
            throw CommandFailure.runtime("\(error)")
        }
        say(
            "media: \(media.srtp.map { "\($0)" } ?? "plain RTP") to \(media.remoteAddress):\(media.remotePort), ptime \(media.ptime) ms"
        )
        if let duration = options.duration {
            Task {
                try await Task.sleep(for: .milliseconds(Int(duration * 1000)))
                stop.yield("duration")
            }
        }
        let mediaEvents = sipMedia.live.events
        Task {
            for await event in mediaEvents {
                if case .ended = event { stop.yield("media ended") }
                if case .dtmfReceived(let digit) = event { say("dtmf: received \(digit)") }
            }
        }
        SIPCallDTMF.start(keys: options.dtmf, live: sipMedia.live, call: call)
        for await next in stops where next != "established" {
            reason = next
            break
        }
        say("hanging up (\(reason))")
        let result = await sipMedia.stop(cause: established.end == nil ? .localHangup : .remoteHangup)
        if established.end == nil { await call.hangUp() }
        stop.finish()
        CallRunner.printSummary(result)
        if let problem = result.playoutWriteError {
            return .runtime("the speaker file is incomplete: \(problem)")
        }
        guard result.wasEstablished else { return .runtime("media did not flow both ways") }
        return nil
    }

    private final class Established: @unchecked Sendable {
        private let lock = NSLock()
        private var _media: NegotiatedAudio?
        private var _end: SIPCallEnd?
        var media: NegotiatedAudio? {
            get { lock.withLock { _media } }
            set { lock.withLock { _media = newValue } }
        }
        var end: SIPCallEnd? {
            get { lock.withLock { _end } }
            set { lock.withLock { _end = newValue } }
        }
        private var _live: SIPCallMedia?
        /// The running media, once started, for the re-INVITEs that change it.
        var live: SIPCallMedia? {
            get { lock.withLock { _live } }
            set { lock.withLock { _live = newValue } }
        }
    }
}
