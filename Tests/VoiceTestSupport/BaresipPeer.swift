import Foundation
import VoiceCore

/// baresip (Debian's) as a far end for tests: one account on loopback with auto-answer, one codec (Opus unless
/// told: G.711 or G.722 for telephony), SRTP
/// mandatory, a speech file as microphone (repeated to outlast the call), an ALSA null speaker, the `sndfile`
/// dump of what it decoded in its directory, and SIP traffic traced into its log (`-s`). Unless told, with SDES it
/// does not multiplex RTCP (`rtcp_mux no`): its reports go to the peer's RTCP port and it takes reports only on its
/// own; with DTLS-SRTP it does.
/// baresip 1.0 answers only requests whose Request-URI user is its account's (else 404): a stand-in gateway or
/// conference server is given the number or room as `user`.
public enum BaresipPeer {
    public static let executable = "/usr/bin/baresip"
    public static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: executable) }

    /// Writes `config` and `accounts` into `directory` and returns baresip's arguments.
    /// - Parameters:
    ///   - user: the account's user, `sip:<user>@127.0.0.1:<port>`.
    ///   - microphone: a 16-bit mono WAV already long enough for the call (``repeated(_:seconds:into:)``).
    ///   - mediaEncryption: the account's `mediaenc`: `srtp-mand` (SDES) or `dtls_srtp` (RFC 5763/5764, baresip's
    ///     `dtls_srtp` module).
    ///   - rtcpMux: whether it offers and accepts `a=rtcp-mux`; nil: with `dtls_srtp` only. Without it each
    ///     component (RTP, RTCP) runs its own DTLS-SRTP handshake (RFC 5764 §4.1).
    ///   - controlPort: loads `ctrl_tcp` on 127.0.0.1 at this port (netstring JSON commands such as `sndcode`, and
    ///     every event, DTMF included, sent to the connected client).
    ///   - codec: the only codec baresip loads and offers: `opus`, `g711` (PCMU and PCMA) or `g722`.
    ///   - audioRate: its source's and player's rate (`ausrc_srate`, `auplay_srate`).
    public static func configure(
        directory: URL, port: Int, user: String = "b", microphone: String, seconds: Int = 40,
        mediaEncryption: String = "srtp-mand", rtcpMux: Bool? = nil, controlPort: Int? = nil, codec: String = "opus",
        audioRate: Int = 16_000
    ) throws -> [String] {
        let codecNames = ["opus": "opus", "g711": "PCMU,PCMA", "g722": "G722"]
        precondition(codecNames[codec] != nil, "BaresipPeer.configure: no codec \(codec)")
        let multiplexes = rtcpMux ?? (mediaEncryption == "dtls_srtp")
        var keyingLines =
            (mediaEncryption == "dtls_srtp" ? "module dtls_srtp.so\n" : "") + "rtcp_mux \(multiplexes ? "yes" : "no")\n"
        if let controlPort { keyingLines += "module_app ctrl_tcp.so\nctrl_tcp_listen 127.0.0.1:\(controlPort)\n" }
        let config = """
            poll_method epoll
            net_interface 127.0.0.1
            sip_listen 127.0.0.1:\(port)
            audio_source aufile,\(microphone)
            audio_player alsa,null
            ausrc_srate \(audioRate)
            auplay_srate \(audioRate)
            ausrc_channels 1
            auplay_channels 1
            module_path /usr/lib/baresip/modules
            module \(codec).so
            module srtp.so
            module aufile.so
            module alsa.so
            module sndfile.so
            module_app account.so
            module_app menu.so
            snd_path \(directory.path)
            opus_bitrate 32000
            opus_stereo no
            opus_sprop_stereo no
            \(keyingLines)
            """
        try config.write(to: directory.appendingPathComponent("config"), atomically: true, encoding: .utf8)
        try
            "<sip:\(user)@127.0.0.1:\(port)>;regint=0;mediaenc=\(mediaEncryption);audio_codecs=\(codecNames[codec]!);answermode=auto\n"
            .write(to: directory.appendingPathComponent("accounts"), atomically: true, encoding: .utf8)
        return ["-f", directory.path, "-s", "-t", "\(seconds)"]
    }

    /// A copy of `speech` repeated to last at least `seconds` (aufile plays once and baresip hangs up at its end).
    public static func repeated(_ speech: String, seconds: Double, into directory: URL) throws -> String {
        let source = try WAVFile.read(path: speech)
        let count = source.int16Samples.count
        let repeats = Int(seconds * Double(source.format.sampleRate) / Double(max(count, 1))) + 1
        let path = directory.appendingPathComponent("baresip-source.wav").path
        try WAVFile.write(
            pcm16: Array([[Int16]](repeating: source.int16Samples, count: repeats).joined()), format: source.format,
            to: path)
        return path
    }

    /// What baresip decoded (its `sndfile` dump), at 16 kHz; waits for the WAV header baresip writes at the end.
    public static func heard(in directory: URL) throws -> [Int16] {
        for _ in 0..<50 {
            let dumps = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            if let decoded = dumps.first(where: { $0.hasSuffix("-dec.wav") }) {
                let file = try WAVFile.read(path: directory.appendingPathComponent(decoded).path)
                if file.frameCount > 0 { return SpeechMatch.to16k(file.int16Samples, rate: file.format.sampleRate) }
            }
            usleep(100_000)
        }
        return []
    }
}
