#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Foundation
import VoiceEngine

/// One call between two baresip processes on loopback, configured through temporary config directories: Opus
/// 16 kHz mono 32 kb/s complexity 5 VBR, application voip (as the engine) unless asked otherwise, SRTP (mandatory SDES), the WAV as microphone (aufile), no speaker module
/// (baresip has no clocked file speaker, which favours it a little), `speex_pp` when voice processing is on.
struct BaresipCall {
    let executable: String
    /// The Opus application the reference runs with unless asked otherwise (`voice-bench live
    /// --baresip-application`): the engine's own (`MediaStreamConfiguration.defaultOpus`), see ``config(port:wav:processing:application:)``.
    static let defaultApplication = "voip"

    /// baresip on the PATH's usual places, or nil.
    static func find() -> BaresipCall? {
        ["/usr/bin/baresip", "/usr/local/bin/baresip"].first(where: FileManager.default.isExecutableFile(atPath:))
            .map(BaresipCall.init(executable:))
    }

    func run(speech: WAVFile, seconds: Double, warmUp: Double, processing: Bool, application: String) throws -> LiveRun
    {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("voice-bench-baresip-\(getpid())")
        try? FileManager.default.removeItem(at: directory)
        defer { try? FileManager.default.removeItem(at: directory) }
        // aufile plays its file once: write one long enough for the whole run.
        let repeats = Int(((seconds + warmUp + 5) * 16_000) / Double(max(speech.int16Samples.count, 1))) + 1
        let wavPath = directory.appendingPathComponent("speech.wav").path
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try WAVFile.write(
            pcm16: Array([[Int16]](repeating: speech.int16Samples, count: repeats).joined()),
            format: speech.format, to: wavPath)
        let ports = try (0..<2).map { _ in try Self.freePort() }
        var processes: [Process] = []
        defer {
            for process in processes where process.isRunning { kill(process.processIdentifier, SIGKILL) }
            for process in processes { process.waitUntilExit() }
        }
        for (index, name) in ["a", "b"].enumerated() {
            let config = directory.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: config, withIntermediateDirectories: true)
            try Self.config(port: ports[index], wav: wavPath, processing: processing, application: application)
                .write(to: config.appendingPathComponent("config"), atomically: true, encoding: .utf8)
            try
                "<sip:\(name)@127.0.0.1:\(ports[index])>;regint=0;mediaenc=srtp-mand;audio_codecs=opus;answermode=auto\n"
                .write(to: config.appendingPathComponent("accounts"), atomically: true, encoding: .utf8)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            var arguments = ["-f", config.path, "-t", "\(Int(seconds + warmUp + 10))"]
            if name == "b" { arguments += ["-e", "/dial sip:a@127.0.0.1:\(ports[0])"] }
            process.arguments = arguments
            let log = directory.appendingPathComponent("\(name).log")
            FileManager.default.createFile(atPath: log.path, contents: nil)
            process.standardOutput = try FileHandle(forWritingTo: log)
            process.standardError = process.standardOutput
            try process.run()
            processes.append(process)
            if name == "a" { usleep(500_000) }  // listening before b dials
        }
        usleep(useconds_t((warmUp + 1) * 1e6))
        let before = processes.map { ThreadCost.read(pid: $0.processIdentifier) }
        usleep(useconds_t(seconds * 1e6))
        let after = processes.map { ThreadCost.read(pid: $0.processIdentifier) }
        for (index, name) in ["a", "b"].enumerated() {
            let log = (try? String(contentsOf: directory.appendingPathComponent("\(name).log"), encoding: .utf8)) ?? ""
            guard Self.isIntact(log: log) else {
                throw LiveBenchFailure(
                    "baresip \(name) (port \(ports[index])) did not carry audio both ways; its log:\n"
                        + log.suffix(1500))
            }
        }
        var threads: [Int: ThreadCost.Thread] = [:]
        for (b, a) in zip(before, after) { threads.merge(a.since(b).threads) { x, _ in x } }
        let delta = ThreadCost(threads: threads)
        return LiveRun(
            cpuMillisecondsPerCallSecond: Double(delta.cpuNanoseconds) / 1e6 / seconds,
            wakeupsPerCallSecond: Double(delta.switches) / seconds,
            threadCount: after.map(\.threads.count).reduce(0, +),
            threads: delta)
    }

    /// The call was established and the last status line shows audio both ways at about 32 kb/s.
    static func isIntact(log: String) -> Bool {
        guard log.contains("Call established"), let range = log.range(of: "audio=", options: .backwards) else {
            return false
        }
        let rates = log[range.upperBound...].prefix(while: { $0 != " " }).split(separator: "/").compactMap { Int($0) }
        return rates.count == 2 && rates.allSatisfy { $0 > 20_000 }
    }

    /// `application` is the Opus encoder's (`opus_application`): baresip's default is `audio`, which at 16 kHz
    /// 32 kb/s complexity 5 encodes every frame as CELT (libopus' mode threshold for a signal it assumes is not
    /// voice), where the engine's `voip` encodes SILK — about three times the encoder's CPU (5.9 against 2.0 ms per
    /// second of jfk_16k_mono.wav, libopus 1.3.1). `voip` gives both programs the same codec settings.
    static func config(port: Int, wav: String, processing: Bool, application: String) -> String {
        """
        poll_method epoll
        net_interface 127.0.0.1
        sip_listen 127.0.0.1:\(port)
        audio_source aufile,\(wav)
        ausrc_srate 16000
        auplay_srate 16000
        ausrc_channels 1
        auplay_channels 1
        module_path /usr/lib/baresip/modules
        module opus.so
        module srtp.so
        module aufile.so
        \(processing ? "module speex_pp.so" : "")
        module_app account.so
        module_app menu.so
        opus_bitrate 32000
        opus_complexity 5
        opus_application \(application)
        opus_samplerate 16000
        opus_stereo no
        opus_sprop_stereo no

        """
    }

    /// A UDP and TCP port free on loopback now (the kernel's choice).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard ok else { throw LiveBenchFailure("no free port on 127.0.0.1 for baresip") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
