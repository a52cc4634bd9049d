import Foundation
import VoiceCore

#if canImport(Glibc)
import Glibc
#endif

/// linphonec (Debian's `linphone-cli`, liblinphone 5.1) as a far end for tests: the console softphone of another
/// SIP stack and media engine (belle-sip, mediastreamer2) than baresip's, driven through its stdin. It runs with a
/// private HOME holding its configuration and databases, offers and answers only G.711 (PCMU, PCMA) with
/// `telephone-event`, SDES-SRTP mandatory and RTCP on its own port (no rtcp-mux), and uses WAV files instead of a
/// sound card (`soundcard use files`): mediastreamer2's file player is its microphone and its file recorder keeps
/// what it decoded, both paced by its own media ticker, so no sound device is needed. Keys it receives are printed
/// as `Receiving tone X`; keys typed on its stdin during a call are sent as RFC 4733 events.
///
/// Twinkle's console (`twinkle-console`) does not fit: with no sound card its ALSA capture
/// must be the `null` or `file` plugin, which hands it samples at once instead of at the sampling rate, and Twinkle
/// discards the surplus and sends no audio. linphonec creates its SIP listening points only once its core opened
/// its database in `$HOME/.local/share/linphone`: without that directory it runs with no SIP port at all.
public final class LinphonePeer: @unchecked Sendable {
    public static let executable = "/usr/bin/linphonec"
    public static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: executable) }

    public let directory: URL
    public let sipPort: Int
    /// What linphonec decoded during its call (its file recorder, 8 kHz for G.711).
    public let recording: URL
    /// Its own log with every SIP message, when started with `tracesSIP`.
    public let trace: URL
    private let process: ChildProcessGroup
    private let input: FileHandle

    /// An account linphonec registers (over UDP, with its `+sip.instance`, so a registrar that grants GRUUs gives
    /// it one and it uses it as its Contact).
    public struct Account: Sendable {
        /// `sip:user@domain`.
        public var identity: String
        /// The registrar and outbound proxy, `sip:host:port`.
        public var proxy: String
        /// The digest username (it may differ from the identity's user, as ephemeral credentials do) and password.
        public var username: String
        public var password: String

        public init(identity: String, proxy: String, username: String, password: String) {
            (self.identity, self.proxy, self.username, self.password) = (identity, proxy, username, password)
        }
    }

    /// Starts linphonec listening on UDP `sipPort` (RTP on `rtpPort`, RTCP on `rtpPort + 1`) with `microphone` (a
    /// mono WAV, played from its start when a call begins) and, with `autoAnswer`, answering every call; with
    /// `account`, registered there. With `tracesSIP` its log (`linphonec-trace.log`) holds every SIP message.
    public init(
        directory: URL, sipPort: Int, rtpPort: Int, microphone: String, autoAnswer: Bool = true,
        account: Account? = nil, tracesSIP: Bool = false
    ) throws {
        self.directory = directory
        self.sipPort = sipPort
        recording = directory.appendingPathComponent("linphone-heard.wav")
        let home = directory.appendingPathComponent("home")
        try FileManager.default.createDirectory(
            at: home.appendingPathComponent(".local/share/linphone"), withIntermediateDirectories: true)
        let configuration = directory.appendingPathComponent("linphonerc")
        try Self.configuration(sipPort: sipPort, rtpPort: rtpPort, account: account).write(
            to: configuration, atomically: true, encoding: .utf8)

        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else { throw ChildProcessGroup.SpawnError(description: "pipe failed") }
        trace = directory.appendingPathComponent("linphonec-trace.log")
        let arguments =
            ["HOME=\(home.path)", Self.executable, "-c", configuration.path] + (autoAnswer ? ["-a"] : [])
            + (tracesSIP ? ["-d", "6", "-l", trace.path] : [])
        do {
            process = try ChildProcessGroup(
                "/usr/bin/env", arguments, log: directory.appendingPathComponent("linphonec.log"),
                stdinDescriptor: pipeEnds[0])
        } catch {
            close(pipeEnds[0])
            close(pipeEnds[1])
            throw error
        }
        close(pipeEnds[0])
        input = FileHandle(fileDescriptor: pipeEnds[1], closeOnDealloc: true)
        send("soundcard use files")
        send("play \(microphone)")
        send("record \(recording.path)")
    }

    /// One command line on linphonec's stdin (`call sip:…`, digits to send as DTMF, `terminate`, `quit`).
    public func send(_ command: String) {
        input.write(Data((command + "\n").utf8))
    }

    public var isRunning: Bool { process.isRunning }

    /// Everything linphonec printed.
    public var output: String { (try? String(contentsOf: process.log, encoding: .utf8)) ?? "" }

    public var logTail: String { process.logTail }

    /// The keys linphonec reported receiving, in order.
    public var receivedKeys: String {
        var keys = ""
        for line in output.split(separator: "\n") {
            guard let range = line.range(of: "Receiving tone "), let key = line[range.upperBound...].first else {
                continue
            }
            keys.append(key)
        }
        return keys
    }

    /// Waits until linphonec has bound its SIP port (on `[::]`, so in /proc/net/udp6); false after `timeout`.
    public func waitUntilListening(timeout: Duration = .seconds(10)) async -> Bool {
        let needle = String(format: ":%04X ", sipPort)
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline, process.isRunning {
            for table in ["/proc/net/udp6", "/proc/net/udp"] {
                let text = (try? String(contentsOfFile: table, encoding: .utf8)) ?? ""
                let bound = text.split(separator: "\n").dropFirst().contains { line in
                    let columns = line.split(separator: " ", omittingEmptySubsequences: true)
                    return columns.count > 1 && (columns[1] + " ").hasSuffix(needle)
                }
                if bound { return true }
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    /// Waits until linphonec printed a line containing `text`; false after `timeout`.
    public func waitForOutput(_ text: String, timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if output.contains(text) { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    /// What linphonec decoded, at 16 kHz; waits for the WAV header its recorder writes when the call ends.
    public func heard() async throws -> [Int16] {
        for _ in 0..<50 {
            if let file = try? WAVFile.read(path: recording.path), file.frameCount > 0 {
                return SpeechMatch.to16k(file.int16Samples, rate: file.format.sampleRate)
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        return []
    }

    /// `quit`, then the process group's SIGTERM/SIGKILL if it has not exited within 3 s.
    public func stop() {
        if process.isRunning { send("quit") }
        let deadline = Date().addingTimeInterval(3)
        while process.isRunning, Date() < deadline { usleep(20_000) }
        process.stop()
    }

    /// The codecs liblinphone adds enabled unless its configuration lists them: all disabled but G.711.
    static let disabledCodecs = [
        ("opus", 48_000), ("SILK", 16_000), ("speex", 16_000), ("speex", 8_000), ("speex", 32_000),
        ("G729", 8_000), ("G722", 8_000), ("GSM", 8_000)
    ]

    static func configuration(sipPort: Int, rtpPort: Int, account: Account?) -> String {
        var text = """
            [sip]
            sip_port=\(sipPort)
            sip_tcp_port=0
            sip_tls_port=0
            default_proxy=\(account == nil ? -1 : 0)
            supported_encryptions=srtp
            media_encryption=srtp
            media_encryption_mandatory=1
            [rtp]
            audio_rtp_port=\(rtpPort)
            rtcp_mux=0
            [sound]
            echocancellation=0
            [video]
            enabled=0
            capture=0
            display=0

            """
        if let account {
            let user = account.identity.dropFirst(4).split(separator: "@").first.map(String.init) ?? ""
            let domain = account.identity.split(separator: "@").last.map(String.init) ?? ""
            text += """
                [proxy_0]
                reg_proxy=<\(account.proxy);transport=udp>
                reg_identity=\(account.identity)
                reg_expires=300
                reg_sendregister=1
                publish=0
                [auth_info_0]
                username=\(user)
                userid=\(account.username)
                passwd=\(account.password)
                domain=\(domain)

                """
        }
        let codecs = [("PCMU", 8_000, true), ("PCMA", 8_000, true)] + disabledCodecs.map { ($0.0, $0.1, false) }
        for (index, codec) in codecs.enumerated() {
            text += """
                [audio_codec_\(index)]
                mime=\(codec.0)
                rate=\(codec.1)
                channels=\(codec.0 == "opus" ? 2 : 1)
                enabled=\(codec.2 ? 1 : 0)

                """
        }
        return text
    }
}
