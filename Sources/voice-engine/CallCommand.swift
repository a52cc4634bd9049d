import ArgumentParser
import Dispatch
import Foundation
import VoiceEngine
import VoiceWebRTC

#if canImport(Glibc)
    import Glibc
#endif

/// `voice-engine call`: a real-time call between two processes over UDP (SRTP by default), on ALSA, file or null
/// devices. Keys are exchanged by hand as `a=crypto` lines, or given on the command line.
struct CallCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "call",
        abstract:
            "A real-time call with another voice-engine over UDP: --listen PORT on one side, --connect HOST:PORT on "
            + "the other.",
        discussion: """
            Media is Opus over RTP, protected with SRTP (SDES keys) unless --no-srtp, RTP and RTCP on one port; \
            each side sends to where the peer's authenticated packets come from (symmetric RTP), so the listener \
            needs no address.

            Keys: each side prints its own a=crypto line (clearly marked: it contains that side's key and is meant \
            only for the other side) and reads the peer's line from stdin, unless it is given with \
            --remote-crypto 'a=crypto:…' or --remote-key BASE64. With --local-key BASE64 and --remote-key BASE64 \
            on both sides (crosswise) nothing is printed or read: the non-interactive mode for scripts and tests.

            Devices: --mic and --speaker take `null`, `file:PATH.wav` (the microphone plays the file, the speaker \
            writes a WAV) or an ALSA PCM name (`default`, `hw:0,0`, `plughw:1,0`). A file microphone sets the \
            rate; otherwise --rate. Every device runs in real time.

            --capture FILE.pcapng records every datagram sent and received, SRTP as on the wire, for Wireshark, \
            `voice-engine rtp-dump` and `voice-engine replay` (give replay the peer's key to decode what we heard).

            The call ends after --duration seconds, on Ctrl-C, or when no media arrived for --media-timeout seconds \
            after it was established. The caller gives up after --connect-timeout seconds when nobody answers. \
            The end-of-call report (JSON, the schema of CallReport) goes to --report. Exit status: 0 when media \
            flowed both ways; 1 when it never did (no answer, every packet failing authentication) or a device, \
            the network or an output file failed; 64 for bad options; 65 for a malformed key or a=crypto line.

            --webrtc offer|answer instead of --listen/--connect: ICE (full agents, the offerer controls), DTLS-SRTP \
            and Opus as a browser speaks them, signalled by pasting SDP: the offering side prints its offer on \
            stdout and reads the answer from stdin, the answering side the other way round (each SDP ends with an \
            empty line). Candidates are gathered on --bind: one address, several separated by commas, or `all` \
            (every interface that is up, IPv4 and IPv6; default 127.0.0.1); with --turn ADDR:PORT --turn-secret S \
            also server-reflexive and relayed ones. Devices as above (null, file: or ALSA) at 48 kHz mono, without \
            echo cancellation (use a headset).
            """)

    @Option(help: ArgumentHelp("Wait for the peer on this UDP port (0: any free port).", valueName: "port"))
    var listen: Int?
    @Option(
        help: ArgumentHelp(
            "Call the peer listening at this address: an IPv4 address, an IPv6 address in brackets ([::1]:5004) or "
                + "a host name (localhost), and a port.",
            valueName: "host:port"))
    var connect: String?
    @Option(
        help: ArgumentHelp(
            "Local IPv4 or IPv6 address to bind (default: :: — IPv6 and IPv4 on one socket — or 0.0.0.0 where "
                + "IPv6 is off; the connecting side binds any free port).", valueName: "address"))
    var bind: String?
    @Option(
        help: ArgumentHelp(
            "Listening side: send to this address before the peer's first packet.", valueName: "host:port"))
    var remote: String?

    @Flag(help: "Plain RTP, no encryption (both sides must agree).")
    var noSRTP = false
    @Option(
        help: ArgumentHelp(
            "SRTP suite of our key: AES_CM_128_HMAC_SHA1_80, AES_CM_128_HMAC_SHA1_32, AES_256_CM_HMAC_SHA1_80, "
                + "AEAD_AES_128_GCM or AEAD_AES_256_GCM (the peer must use the same)."))
    var suite: String = SRTPCryptoSuite.aesCM128HmacSHA1_80.rawValue
    @Option(help: "Our key material (key||salt, base64). Default: fresh random, printed as an a=crypto line.")
    var localKey: String?
    @Option(help: "The peer's key material (key||salt, base64), in --suite.")
    var remoteKey: String?
    @Option(help: ArgumentHelp("The peer's a=crypto line, as it printed it.", valueName: "line"))
    var remoteCrypto: String?

    @OptionGroup var media: CallMediaOptions
    @Flag(help: "A file microphone starts again at its end instead of going silent.")
    var loopMic = false

    @Option(help: "Hang up after this many seconds (default: until Ctrl-C).")
    var duration: Double?
    @Option(help: "Hang up when no media arrived for this many seconds after the call was established.")
    var mediaTimeout: Double = 10
    @Option(help: "Caller: give up when no authenticated media arrived from the peer within this many seconds.")
    var connectTimeout: Double = 10
    @Option(help: "Write the end-of-call report (JSON) here.")
    var report: String?
    @Option(help: ArgumentHelp(
        "Record every datagram sent and received (SRTP as on the wire) into this pcapng file, for Wireshark, "
            + "rtp-dump and replay.", valueName: "file.pcapng"))
    var capture: String?

    @Option(help: ArgumentHelp(
        "Call another voice-engine over ICE and DTLS-SRTP, signalled by pasting SDP: 'offer' on one side, "
            + "'answer' on the other (no --listen/--connect).", valueName: "offer|answer"))
    var webrtc: String?
    @Option(help: ArgumentHelp(
        "With --webrtc: a TURN server (numeric IPv4 address or [IPv6]:port) for server-reflexive and relayed "
            + "candidates.", valueName: "address:port"))
    var turn: String?
    @Option(help: "With --turn: the server's shared secret (coturn use-auth-secret: TURN REST API credentials).")
    var turnSecret: String?

    func validate() throws {
        if let webrtc {
            guard webrtc == "offer" || webrtc == "answer" else { throw ValidationError("--webrtc takes offer or answer") }
            guard listen == nil, connect == nil, remote == nil, localKey == nil, remoteKey == nil, remoteCrypto == nil,
                  !noSRTP, capture == nil
            else { throw ValidationError("--webrtc replaces --listen/--connect/--remote, the keys and --capture") }
            try OptionRange("--duration", 0.1...86_400, "seconds").check(duration)
            guard media.rate == 48_000 else { throw ValidationError("--webrtc runs at 48 kHz: --rate \(media.rate) is not taken") }
            guard (turn == nil) == (turnSecret == nil) else { throw ValidationError("--turn and --turn-secret go together") }
            if let turn, WebRTCCallMode.turnAddress(turn) == nil {
                throw ValidationError("--turn \(turn): expected a numeric IPv4 address or [IPv6] with a port")
            }
            return
        }
        if turn != nil || turnSecret != nil { throw ValidationError("--turn is for --webrtc calls") }
        guard (listen == nil) != (connect == nil) else {
            throw ValidationError("give exactly one of --listen PORT and --connect HOST:PORT")
        }
        try OptionRange("--listen", 0...65_535, "(a UDP port; 0: any free port)").check(listen)
        try OptionRange("--duration", 0.1...86_400, "seconds").check(duration)
        try OptionRange("--media-timeout", 0.1...3_600, "seconds").check(mediaTimeout)
        try OptionRange("--connect-timeout", 0.1...3_600, "seconds").check(connectTimeout)
        if noSRTP && (localKey != nil || remoteKey != nil || remoteCrypto != nil) {
            throw ValidationError("--no-srtp cannot be combined with keys")
        }
        if remoteKey != nil && remoteCrypto != nil {
            throw ValidationError("give the peer's key once: --remote-key or --remote-crypto")
        }
        guard SRTPCryptoSuite(rawValue: suite) != nil else {
            throw ValidationError("--suite \(suite) is not one of \(SRTPCryptoSuite.allCases.map(\.rawValue))")
        }
        if connect != nil && remote != nil { throw ValidationError("--remote is for the listening side") }
    }

    func run() throws {
        if let webrtc {
            let status = WebRTCCallMode.run(WebRTCCallMode.Plan(
                offering: webrtc == "offer", host: bind ?? "127.0.0.1", microphone: media.mic, speaker: media.speaker,
                loopMicrophone: loopMic, duration: duration ?? 86_400, connectTimeout: connectTimeout,
                turn: turn.flatMap(WebRTCCallMode.turnAddress).map {
                    TURNServer(address: $0, credentials: .restAPI(secret: turnSecret ?? "", user: "voice-engine"))
                }))
            if status != 0 { throw ExitCode(status) }
            return
        }
        let plan = try makePlan()
        let status = CallRunner.runBlocking(plan)
        if status != 0 { throw ExitCode(status) }
    }

    /// Everything from the flags that needs no I/O, as a Sendable value for the async part.
    private func makePlan() throws -> CallPlan {
        try OutputPaths.checkFile(report, option: "--report")
        try OutputPaths.checkFile(capture, option: "--capture")
        try media.checkOutputs()
        let remoteEndpoint = try connect.map { try PeerAddress.resolve($0, option: "--connect") }
            ?? remote.map { try PeerAddress.resolve($0, option: "--remote") }
        if let remoteEndpoint, remoteEndpoint.port == 0 { throw ValidationError("the peer's port cannot be 0") }
        let bindHost = bind ?? (PeerAddress.hostHasIPv6 ? "::" : "0.0.0.0")
        let local: UDPEndpoint
        do { local = try UDPEndpoint(host: bindHost, port: 0) } catch {
            throw ValidationError("--bind \(bindHost): \(error)")
        }
        if let remoteEndpoint, remoteEndpoint.isIPv6, !local.isIPv6 {
            throw ValidationError("--bind \(bindHost) is IPv4 and cannot reach the IPv6 peer \(remoteEndpoint)")
        }

        var opus = MediaStreamConfiguration.defaultOpus
        opus.bitrate = media.bitrate
        return CallPlan(
            listening: listen != nil, bindHost: bindHost, bindPort: listen ?? 0, remote: remoteEndpoint,
            srtp: noSRTP ? nil : CallPlan.Keys(
                suite: SRTPCryptoSuite(rawValue: suite)!, localKey: localKey, remoteKey: remoteKey,
                remoteCrypto: remoteCrypto),
            microphone: LiveDeviceName(media.mic), speaker: LiveDeviceName(media.speaker), rate: media.rate, loopMicrophone: loopMic,
            stream: media.applyingEchoCancellerChoice(MediaStreamConfiguration(opus: opus, voiceProcessing: !media.noVoiceProcessing)),
            duration: duration, mediaTimeout: mediaTimeout, connectTimeout: connectTimeout, report: report,
            capture: capture)
    }
}

/// The parsed command line.
struct CallPlan: Sendable {
    struct Keys: Sendable {
        var suite: SRTPCryptoSuite
        var localKey: String?
        var remoteKey: String?
        var remoteCrypto: String?
    }
    var listening: Bool
    var bindHost: String
    var bindPort: Int
    var remote: UDPEndpoint?
    var srtp: Keys?
    var microphone: LiveDeviceName
    var speaker: LiveDeviceName
    var rate: Int
    var loopMicrophone: Bool
    var stream: MediaStreamConfiguration
    var duration: Double?
    var mediaTimeout: Double
    var connectTimeout: Double
    var report: String?
    var capture: String?
}

/// Why the call could not go ahead: printed as one `error:` line; exit status 65 for a malformed key or a=crypto
/// line, 1 otherwise.
struct CallSetupError: Error, CustomStringConvertible {
    var description: String
    var status: Int32 = 1
}

enum CallRunner {
    /// Runs the async call on the cooperative pool while the main thread waits; returns the exit status.
    static func runBlocking(_ plan: CallPlan) -> Int32 {
        let done = DispatchSemaphore(value: 0)
        let status = StatusBox()
        Task {
            do {
                status.value = try await run(plan)
            } catch let error as CallSetupError {
                say("error: \(error)")
                status.value = error.status
            } catch {
                say("error: \(error)")
                status.value = 1
            }
            done.signal()
        }
        done.wait()
        return status.value
    }

    static func run(_ plan: CallPlan) async throws -> Int32 {
        // The capture file is opened first: an unwritable path fails before anything else happens.
        let recorder: PacketCaptureRecorder?
        do { recorder = try plan.capture.map { try PacketCaptureRecorder(path: $0) } } catch {
            throw CallSetupError(description: "--capture: \(error)")
        }
        defer { _ = try? recorder?.close() }
        let transport: UDPMediaTransport
        do {
            transport = try await UDPMediaTransport.bind(
                host: plan.bindHost, port: plan.bindPort, remote: plan.remote,
                configuration: UDPMediaTransport.Configuration(capture: recorder, receive: .consumerPolls))
        } catch {
            let local = (try? UDPEndpoint(host: plan.bindHost, port: plan.bindPort))?.description
            throw CallSetupError(description: "cannot bind \(local ?? plan.bindHost): \(error)")
        }
        say(
            (plan.listening ? "listening on " : "calling \(plan.remote!) from ")
                + "\(transport.localEndpoint)" + localAddressesHint(transport.localEndpoint))

        var stream = plan.stream
        if let keys = plan.srtp {
            do { stream.srtp = try await exchangeKeys(keys) } catch {
                await transport.close()
                throw error
            }
        } else {
            say("SRTP is off (--no-srtp): media is sent in the clear")
        }

        let devices: (capture: any AudioDevice, playout: any AudioDevice)
        do {
            devices = try LiveDeviceName.openPair(
                microphone: plan.microphone, speaker: plan.speaker, sampleRate: plan.rate,
                loopMicrophone: plan.loopMicrophone)
        } catch {
            await transport.close()
            throw CallSetupError(description: error.description)
        }
        say("microphone \(plan.microphone), speaker \(plan.speaker), \(devices.capture.format)")

        let session = AudioSession(clock: MonotonicClock())
        await session.startEngine()
        let call: LiveCall
        do {
            call = try LiveCall(
                callID: CallID(plan.listening ? "listener" : "caller"), configuration: stream, transport: transport,
                capture: devices.capture, playout: devices.playout, session: session,
                options: LiveCallOptions(mediaTimeoutSeconds: plan.mediaTimeout))
            try call.start()
        } catch {
            devices.capture.close()
            devices.playout.close()
            await transport.close()
            throw CallSetupError(description: "\(error)")
        }

        // Whatever comes first ends the call: Ctrl-C, the duration, or the call ending by itself.
        let (hangups, hangup) = AsyncStream.makeStream(of: AudioSessionEndReason.self, bufferingPolicy: .unbounded)
        signal(SIGINT, SIG_IGN)
        let interrupt = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        interrupt.setEventHandler {
            say("hanging up (Ctrl-C)")
            hangup.yield(.localHangup)
        }
        interrupt.resume()
        defer {
            interrupt.cancel()
            signal(SIGINT, SIG_DFL)
        }
        if let duration = plan.duration {
            Task {
                try? await Task.sleep(for: .milliseconds(Int((duration * 1000).rounded())))
                hangup.yield(.localHangup)
            }
        }
        if !plan.listening {
            // Nobody answering must not keep the caller waiting for ever.
            Task {
                try? await Task.sleep(for: .milliseconds(Int((plan.connectTimeout * 1000).rounded())))
                if !call.isEstablished { hangup.yield(.localHangup) }
            }
        }
        let events = call.events
        Task {
            for await event in events {
                say("call: \(event)")
                if case .ended(let cause) = event { hangup.yield(cause) }
            }
        }
        var cause = AudioSessionEndReason.localHangup
        for await first in hangups {
            cause = first
            break
        }
        let result = await call.stop(cause: cause)
        hangup.finish()
        if let recorder {
            // The call closed the transport: nothing records any more.
            do {
                let summary = try recorder.close()
                say(
                    "capture: \(summary.packets) datagrams written to \(summary.path)"
                        + (summary.notRecorded > 0 ? " (\(summary.notRecorded) not recorded)" : ""))
            } catch {
                say("error: --capture: \(error)")
                return 1
            }
        }

        if let path = plan.report {
            do { try result.report.jsonData().write(to: URL(fileURLWithPath: path)) } catch {
                say("error: --report \(path): \(error.localizedDescription)")
                return 1
            }
        }
        printSummary(result)
        if let problem = result.playoutWriteError {
            say("error: the speaker file is incomplete: \(problem)")
            return 1
        }
        if !result.wasEstablished {
            say("error: " + notEstablishedReason(result, plan: plan))
            return 1
        }
        return 0
    }

    /// Why media never flowed both ways, as far as this side can tell.
    static func notEstablishedReason(_ result: LiveCallResult, plan: CallPlan) -> String {
        let r = result.report
        let failed = r.drops.counts.authenticationFailed + r.drops.counts.rtcpAuthenticationFailed
        if failed > 0 && r.rtp.received == 0 {
            return "every packet from the peer (\(failed)) failed SRTP authentication: the keys do not match "
                + "(each side's --remote-key or a=crypto line must be the other side's key, in the same --suite)"
        }
        if r.rtp.received == 0 && !plan.listening, let peer = plan.remote {
            return "nobody answered at \(peer) within \(plan.connectTimeout) s (--connect-timeout): is the peer "
                + "listening there, and does a firewall let UDP through?"
        }
        if r.rtp.received == 0 { return "no media arrived from the peer" }
        return "media arrived but ours never reached the peer (is the peer's address right?)"
    }

    /// Our `a=crypto` line is printed (marked) when we generated the key; the peer's comes from the flags or stdin.
    static func exchangeKeys(_ keys: CallPlan.Keys) async throws -> MediaStreamSRTP {
        let local: SDESCryptoAttribute
        do { local = try LiveCallKeys.localAttribute(suite: keys.suite, base64Key: keys.localKey) } catch {
            throw CallSetupError(description: "--local-key: \(error)", status: 65)
        }
        if keys.localKey == nil {
            // The one place a key is shown: the line the user must hand to the peer.
            let block =
                "----- give this line to the other side (it holds this call's key; share it with no one else) -----\n"
                + local.attributeLine + "\n-----\n"
            FileHandle.standardOutput.write(Data(block.utf8))  // unbuffered: visible before we wait for stdin
        }
        let remote: SDESCryptoAttribute
        do {
            if let line = keys.remoteCrypto {
                remote = try LiveCallKeys.remoteAttribute(line: line, suite: keys.suite)
            } else if let key = keys.remoteKey {
                remote = try LiveCallKeys.remoteAttribute(suite: keys.suite, base64Key: key)
            } else {
                say("paste the other side's a=crypto line and press Enter:")
                guard let line = await readLineFromStandardInput() else {
                    throw CallSetupError(description: "no a=crypto line on standard input")
                }
                remote = try LiveCallKeys.remoteAttribute(line: line, suite: keys.suite)
            }
            return try LiveCallKeys.streamKeys(local: local, remote: remote)
        } catch let error as SDESError {
            throw CallSetupError(description: "the peer's key: \(error)", status: 65)
        }
    }

    /// One line from stdin, read off the cooperative pool (it blocks until the user presses Enter).
    static func readLineFromStandardInput() async -> String? {
        await withCheckedContinuation { (c: CheckedContinuation<String?, Never>) in
            DispatchQueue.global().async { c.resume(returning: readLine(strippingNewline: true)) }
        }
    }

    /// When bound to the wildcard address, the interface addresses the peer can use (IPv6 ones only when the
    /// socket is IPv6; link-local IPv6 addresses are left out, they need a zone to be dialled).
    static func localAddressesHint(_ endpoint: UDPEndpoint) -> String {
        guard endpoint.address.isUnspecified else { return "" }
        var addresses: [String] = []
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return "" }
        defer { freeifaddrs(list) }
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = cursor {
            cursor = entry.pointee.ifa_next
            guard let address = entry.pointee.ifa_addr, let found = UDPEndpoint(socketAddress: address),
                !found.isIPv6 || endpoint.isIPv6
            else { continue }
            if case .v6(let high, _) = found.address, high >> 54 == 0x3FA { continue }  // fe80::/10
            addresses.append(UDPEndpoint(address: found.address, port: endpoint.port).description)
        }
        return addresses.isEmpty ? "" : " (reachable as " + addresses.joined(separator: ", ") + ")"
    }

    static func printSummary(_ result: LiveCallResult) {
        let r = result.report
        let s = result.statistics
        func f(_ x: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", x) }
        let received = r.rtp.expected > 0
        say(
            "call ended (\(result.cause)) after \(f(r.durationSeconds)) s: sent \(s.datagramsSent) datagrams"
                + (s.datagramsNoRemote > 0 ? " (\(s.datagramsNoRemote) held back before the peer was known)" : "")
                + ", received \(r.rtp.received) of \(r.rtp.expected) RTP (lost \(r.rtp.lost))"
                + (received
                    ? ", jitter \(f(r.jitter.interarrivalMilliseconds)) ms, RTT "
                        + (r.rtt.meanMilliseconds.map { f($0) + " ms" } ?? "n/a")
                        + ", buffer \(f(r.jitterBuffer.meanDelayMilliseconds, 0)) ms, concealed "
                        + "\(f(r.jitterBuffer.concealmentRatio * 100)) %, MOS \(f(r.quality.mos, 2))"
                    : ""))
        say(
            "media thread: \(s.ticks) ticks (\(s.lateTicks) late, \(s.delayedTicks) begun a tick late), \(s.captureUnderruns) capture underruns, "
                + "\(s.playoutOverflows) playout overflows; drops \(r.drops.total); devices: "
                + "mic \(result.capture.xruns) xruns, speaker \(result.playout.xruns) xruns")
    }
}

/// The exit status handed from the call's task to the waiting main thread.
private final class StatusBox: @unchecked Sendable {
    // @unchecked Sendable: written once by the task before it signals the semaphore the reader waits on.
    var value: Int32 = 0
}

/// Status and diagnostics go to stderr, so stdout carries only the a=crypto line to hand over.
func say(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

/// A peer's `HOST:PORT` from the command line: an IPv4 address, an IPv6 address in brackets (`[::1]:5004`, RFC 3986)
/// or a host name, resolved here (IPv4 first where a name has both, as most peers listen on IPv4).
enum PeerAddress {
    /// `HOST:PORT` split at the last colon (so `[::1]:5060` gives `[::1]`), or nil when no integer port follows it.
    static func split(_ text: String) -> (host: String, port: Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]) else { return nil }
        return (String(text[..<colon]), port)
    }

    /// Whether this host can open IPv6 sockets (the kernel may have IPv6 off).
    static var hostHasIPv6: Bool {
        let fd = socket(AF_INET6, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { return false }
        close(fd)
        return true
    }

    static func resolve(_ text: String, option: String) throws -> UDPEndpoint {
        let usage = "expected HOST:PORT (an IPv4 address, [IPv6 address] or a host name; port 1...65535)"
        guard let (host, port) = split(text), (1...65_535).contains(port) else {
            throw ValidationError("\(option) \(text): \(usage)")
        }
        if host.hasPrefix("[") != host.hasSuffix("]") || (!host.hasPrefix("[") && host.contains(":")) {
            throw ValidationError("\(option) \(text): \(usage) — an IPv6 address goes in brackets, e.g. [::1]:5004")
        }
        if host.hasPrefix("[") {
            guard let endpoint = try? UDPEndpoint(host: host, port: port), endpoint.isIPv6 else {
                throw ValidationError("\(option) \(text): \(host) is not an IPv6 address")
            }
            return endpoint
        }
        if let endpoint = try? UDPEndpoint(host: host, port: port) { return endpoint }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        defer { if list != nil { freeaddrinfo(list) } }
        var found: [UDPEndpoint] = []
        var cursor = status == 0 ? list : nil
        while let entry = cursor {
            cursor = entry.pointee.ai_next
            if let address = entry.pointee.ai_addr, let endpoint = UDPEndpoint(socketAddress: address) {
                found.append(UDPEndpoint(address: endpoint.address, port: UInt16(port)))
            }
        }
        guard let endpoint = found.first(where: { !$0.isIPv6 }) ?? found.first else {
            let reason = status == 0 ? "no address" : String(cString: gai_strerror(status))
            throw CommandFailure.runtime("\(option) \(text): cannot resolve \(host): \(reason)")
        }
        return endpoint
    }
}

/// The devices and codec of a live call, shared by `call` and `sip call`/`sip listen` so both take and check them alike.
struct CallMediaOptions: ParsableArguments {
    @Option(help: "Microphone: null, file:IN.wav, or an ALSA PCM name.")
    var mic: String = "default"
    @Option(help: "Speaker: null, file:OUT.wav, or an ALSA PCM name.")
    var speaker: String = "default"
    @Option(help: "Device rate in Hz when the microphone is not a file.")
    var rate: Int = 48_000
    @Flag(help: "Skip voice processing (echo cancellation, noise suppression, AGC).")
    var noVoiceProcessing = false
    @Flag(help: "Voice processing without the echo canceller: noise suppression and VAD only (a headset).")
    var noEchoCanceller = false
    @Option(help: "Opus bitrate in bits per second.")
    var bitrate: Int = 32_000

    func validate() throws {
        try Self.checkRate(rate, within: 8_000...192_000)
        try SimulateCommand.bitrateRange.check(bitrate)
    }

    /// A device rate: within `range` and a multiple of 100 Hz (10 ms frames). `phone` declares its own device
    /// options (other help, at most 48 kHz) and shares the checks.
    static func checkRate(_ rate: Int, within range: ClosedRange<Double>) throws {
        try OptionRange("--rate", range, "Hz").check(rate)
        guard rate % 100 == 0 else { throw ValidationError("--rate \(rate): must be a multiple of 100 Hz") }
    }

    /// `configuration` with `--no-echo-canceller` applied.
    func applyingEchoCancellerChoice(_ configuration: MediaStreamConfiguration) -> MediaStreamConfiguration {
        var c = configuration
        if noEchoCanceller { c.echoCanceller.stages.remove(.echoFilter) }
        return c
    }

    /// A `file:` speaker's path is checked before the call, not after it.
    func checkOutputs() throws { try Self.checkSpeakerFile(speaker) }

    static func checkSpeakerFile(_ speaker: String) throws {
        if speaker.hasPrefix("file:") { try OutputPaths.checkFile(String(speaker.dropFirst(5)), option: "--speaker") }
    }
}
