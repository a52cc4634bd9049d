import ArgumentParser
import Foundation
import VoiceEngine
import VoiceWebRTC

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
    @Option(
        help: ArgumentHelp(
            "Record every datagram sent and received (SRTP as on the wire) into this pcapng file, for Wireshark, "
                + "rtp-dump and replay.", valueName: "file.pcapng"))
    var capture: String?

    @Option(
        help: ArgumentHelp(
            "Call another voice-engine over ICE and DTLS-SRTP, signalled by pasting SDP: 'offer' on one side, "
                + "'answer' on the other (no --listen/--connect).", valueName: "offer|answer"))
    var webrtc: String?
    @Option(
        help: ArgumentHelp(
            "With --webrtc: a TURN server (numeric IPv4 address or [IPv6]:port) for server-reflexive and relayed "
                + "candidates.", valueName: "address:port"))
    var turn: String?
    @Option(help: "With --turn: the server's shared secret (coturn use-auth-secret: TURN REST API credentials).")
    var turnSecret: String?

    func validate() throws {
        if let webrtc {
            guard webrtc == "offer" || webrtc == "answer" else {
                throw ValidationError("--webrtc takes offer or answer")
            }
            guard listen == nil, connect == nil, remote == nil, localKey == nil, remoteKey == nil, remoteCrypto == nil,
                !noSRTP, capture == nil
            else { throw ValidationError("--webrtc replaces --listen/--connect/--remote, the keys and --capture") }
            try OptionRange("--duration", 0.1...86_400, "seconds").check(duration)
            guard media.rate == 48_000 else {
                throw ValidationError("--webrtc runs at 48 kHz: --rate \(media.rate) is not taken")
            }
            guard (turn == nil) == (turnSecret == nil) else {
                throw ValidationError("--turn and --turn-secret go together")
            }
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
            try WebRTCCallMode.run(
                WebRTCCallMode.Plan(
                    offering: webrtc == "offer", host: bind ?? "127.0.0.1", microphone: media.mic,
                    speaker: media.speaker,
                    loopMicrophone: loopMic, duration: duration ?? 86_400, connectTimeout: connectTimeout,
                    turn: turn.flatMap(WebRTCCallMode.turnAddress).map {
                        TURNServer(address: $0, credentials: .restAPI(secret: turnSecret ?? "", user: "voice-engine"))
                    }))
            return
        }
        try CallRunner.perform(try makePlan())
    }

    /// Everything from the flags that needs no I/O, as a Sendable value for the async part.
    private func makePlan() throws -> CallPlan {
        try OutputPaths.checkFile(report, option: "--report")
        try OutputPaths.checkFile(capture, option: "--capture")
        try media.checkOutputs()
        let remoteEndpoint =
            try connect.map { try PeerAddress.resolve($0, option: "--connect") }
            ?? remote.map { try PeerAddress.resolve($0, option: "--remote") }
        if let remoteEndpoint, remoteEndpoint.port == 0 { throw CommandFailure.usage("the peer's port cannot be 0") }
        let bindHost = bind ?? (PeerAddress.hostHasIPv6 ? "::" : "0.0.0.0")
        let local: UDPEndpoint
        do { local = try UDPEndpoint(host: bindHost, port: 0) } catch {
            throw CommandFailure.usage("--bind \(bindHost): \(error)")
        }
        if let remoteEndpoint, remoteEndpoint.isIPv6, !local.isIPv6 {
            throw CommandFailure.usage("--bind \(bindHost) is IPv4 and cannot reach the IPv6 peer \(remoteEndpoint)")
        }

        var opus = MediaStreamConfiguration.defaultOpus
        opus.bitrate = media.bitrate
        return CallPlan(
            listening: listen != nil, bindHost: bindHost, bindPort: listen ?? 0, remote: remoteEndpoint,
            srtp: noSRTP
                ? nil
                : CallPlan.Keys(
                    suite: SRTPCryptoSuite(rawValue: suite)!, localKey: localKey, remoteKey: remoteKey,
                    remoteCrypto: remoteCrypto),
            microphone: LiveDeviceName(media.mic), speaker: LiveDeviceName(media.speaker), rate: media.rate,
            loopMicrophone: loopMic,
            stream: media.applyingEchoCancellerChoice(
                MediaStreamConfiguration(opus: opus, voiceProcessing: !media.noVoiceProcessing)),
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
