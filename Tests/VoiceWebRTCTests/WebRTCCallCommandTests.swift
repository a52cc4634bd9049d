import Foundation
import Testing
import VoiceEngine
import VoiceTestSupport

/// `voice-engine call --webrtc offer|answer` between two processes on loopback: the test pastes the offer printed
/// by one into the other and the answer back, both play the speech file for 6 s; full ICE, DTLS-SRTP and Opus
/// must carry it both ways (what each side recorded follows the speech; a reversed-speech control does not).
/// The same two processes behind NATs: `NATTraversalTests.callCommandAcrossTheNATs`.
@Suite(
    "voice-engine call --webrtc between two processes", .tags(.live, .cli), .scheduledByTags, .timeLimit(.minutes(1)),
    .enabled(if: BuiltExecutables.url("voice-engine") != nil, "the voice-engine tool is not built"),
    .enabled(if: FileManager.default.fileExists(atPath: speechPath), "no speech file"))
struct WebRTCCallCommandTests {
    /// One `voice-engine call --webrtc` process: stdin/stdout pipes for the SDP, stderr in a log, speaker in a WAV.
    /// Started with posix_spawn (`ChildProcessGroup`), not Foundation's `Process`, which missed a child's exit
    /// while another `Process` ran and kept these tests serialized.
    struct Peer {
        let process: ChildProcessGroup
        let input: Pipe
        let output: Pipe
        let heard: URL
        let log: URL
        var logText: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
        /// The exit status, nil while the process runs.
        var exitStatus: Int32? { process.isRunning ? nil : process.exitStatus }

        /// `wrapper`: what runs the tool (e.g. `ip netns exec NAME`); `extra`: more options.
        init(_ role: String, in directory: URL, wrapper: [String] = [], extra: [String] = []) throws {
            let tool = try #require(BuiltExecutables.url("voice-engine"))
            heard = directory.appendingPathComponent("\(role).wav")
            log = directory.appendingPathComponent("\(role).log")
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            let arguments =
                [
                    "call", "--webrtc", role, "--mic", "file:\(speechPath)", "--loop-mic",
                    "--speaker", "file:\(heard.path)", "--duration", "6"
                ] + extra
            input = Pipe()
            output = Pipe()
            // Close-on-exec, so that no other child started meanwhile holds these ends (the spawned peer gets its
            // own as stdin and stdout, without the flag).
            for handle in [
                input.fileHandleForReading, input.fileHandleForWriting, output.fileHandleForReading,
                output.fileHandleForWriting
            ] {
                _ = fcntl(handle.fileDescriptor, F_SETFD, FD_CLOEXEC)
            }
            process = try ChildProcessGroup(
                wrapper.first ?? tool.path,
                wrapper.isEmpty ? arguments : Array(wrapper.dropFirst()) + [tool.path] + arguments, log: log,
                stdinDescriptor: input.fileHandleForReading.fileDescriptor,
                stdoutDescriptor: output.fileHandleForWriting.fileDescriptor)
            try input.fileHandleForReading.close()
            try output.fileHandleForWriting.close()
        }

        /// Reads one SDP block (up to its empty line) from stdout.
        func readBlock(timeout: TimeInterval) -> String {
            var text = ""
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline, !text.contains("\n\n") {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                text += String(decoding: chunk, as: UTF8.self)
            }
            return text
        }

        func write(_ text: String) { input.fileHandleForWriting.write(Data(text.utf8)) }
    }

    /// Pastes the offer into the answerer and the answer back, then waits for both to end; returns the offer.
    @discardableResult
    static func signal(_ offerer: Peer, _ answerer: Peer, timeout: TimeInterval = 20) -> String {
        let offer = offerer.readBlock(timeout: 10)
        answerer.write(offer)
        let answer = answerer.readBlock(timeout: 10)
        offerer.write(answer)
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline, offerer.process.isRunning || answerer.process.isRunning {
            Thread.sleep(forTimeInterval: 0.05)
        }
        return offer + answer
    }

    /// Each side's recording from 1 s on (the first second holds the handshake and the jitter buffer filling)
    /// must follow the speech far better than the reversed speech.
    static func expectSpeechBothWays(_ peers: [Peer]) throws {
        let speech = try WAVFile(contentsOfFile: speechPath).int16Samples
        for peer in peers {
            let tail = try WAVFile(contentsOfFile: peer.heard.path).int16Samples.dropFirst(48_000)
            let similar = bestEnvelopeCorrelation(tail, speech)
            let control = bestEnvelopeCorrelation(tail, speech.reversed())
            print(
                "\(peer.heard.lastPathComponent): envelope correlation \(similar), reversed-speech control \(control)")
            #expect(
                similar > 0.8 && similar > control + 0.15,
                "envelope correlation \(similar) vs reversed control \(control)")
        }
    }

    @Test func twoEnginesCallEachOtherOverICEAndDTLS() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "webrtc-call-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // Host candidates on two interfaces each (IPv4 and IPv6 loopback): the IPv6 pair must win.
        let offerer = try Peer("offer", in: directory, extra: ["--bind", "127.0.0.1,::1"])
        let answerer = try Peer("answer", in: directory, extra: ["--bind", "127.0.0.1,::1"])
        defer {
            offerer.process.stop()
            answerer.process.stop()
        }
        let sdp = Self.signal(offerer, answerer)
        #expect(sdp.contains("a=candidate:") && sdp.contains("a=fingerprint:sha-256") && !sdp.contains("ice-lite"))
        #expect(sdp.contains("a=setup:actpass") && (sdp.contains("a=setup:active") || sdp.contains("a=setup:passive")))
        let logs = offerer.logText + answerer.logText
        print(logs)
        #expect(offerer.exitStatus == 0 && answerer.exitStatus == 0, "\(logs)")
        #expect(logs.contains("ICE connected, pair [::1]"), "\(logs)")
        #expect(sdp.contains(" 127.0.0.1 ") && sdp.contains(" ::1 "))
        try Self.expectSpeechBothWays([offerer, answerer])
    }

    /// A call on ALSA devices: the offerer's microphone and speaker are ALSA PCMs (alsa-lib's `null` plugin, defined
    /// in an asoundrc of the test's own, so no sound card is needed; timer-paced like a card), the answerer plays
    /// the speech file. Both must connect and carry packets both ways at 50 per second, the ALSA microphone
    /// delivering at least 90 % of the 10 ms blocks in time (3 of ~400 short at load 25; 54–107 before the
    /// microphone kept a period's cushion in its ring).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/env"), "no /usr/bin/env"))
    func aCallRunsOnALSADevices() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "webrtc-alsa-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try "pcm.vetestnull {\n    type null\n}\n".write(
            to: directory.appendingPathComponent(".asoundrc"), atomically: true, encoding: .utf8)
        let offerer = try Peer(
            "offer", in: directory, wrapper: ["/usr/bin/env", "HOME=\(directory.path)"],
            extra: ["--mic", "vetestnull", "--speaker", "vetestnull", "--duration", "4"])
        let answerer = try Peer("answer", in: directory, extra: ["--duration", "4"])
        defer {
            offerer.process.stop()
            answerer.process.stop()
        }
        Self.signal(offerer, answerer)
        let logs = offerer.logText + answerer.logText
        print(logs.split(separator: "\n").filter { !$0.hasPrefix("ALSA lib") }.joined(separator: "\n"))
        #expect(offerer.exitStatus == 0 && answerer.exitStatus == 0, "\(logs)")
        #expect(offerer.logText.contains("webrtc: microphone vetestnull, speaker vetestnull, 48 kHz mono"), "\(logs)")
        let short = offerer.logText.firstMatch(of: /microphone vetestnull: (\d+) short blocks/).flatMap { Int($0.1) }
        #expect(
            short.map { $0 < 40 } == true, "the ALSA microphone missed \(short.map(String.init) ?? "?") of ~400 blocks")
        let received = offerer.logText.firstMatch(of: /packets sent (\d+), received (\d+)/).flatMap {
            (Int($0.1), Int($0.2))
        }
        #expect((received?.0 ?? 0) > 120 && (received?.1 ?? 0) > 120, "\(String(describing: received))")
    }

    /// `--mic`/`--speaker` take ALSA PCM names as the SDES call does: a name is opened as an ALSA device (a card
    /// that exists nowhere fails with the option, the name and ALSA's reason, exit 1, before any SDP), and
    /// another rate than the transport's 48 kHz is refused as a bad option (64).
    @Test func alsaDevicesAreOpenedByName() async throws {
        let tool = try #require(BuiltExecutables.url("voice-engine"))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "webrtc-alsa-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        func run(_ arguments: [String]) async throws -> (Int32?, String) {
            let log = directory.appendingPathComponent("\(UUID().uuidString).log")
            let child = try ChildProcessGroup(
                tool.path, ["call", "--webrtc", "answer"] + arguments, log: log,
                stdin: URL(fileURLWithPath: "/dev/null"))
            defer { child.stop() }
            let status = await child.wait(timeout: .seconds(20))
            return (status, (try? String(contentsOf: log, encoding: .utf8)) ?? "")
        }
        for (option, other) in [("--mic", "--speaker"), ("--speaker", "--mic")] {
            let (status, log) = try await run([option, "plughw:97,0", other, "null", "--duration", "1"])
            #expect(status == 1, "\(log)")
            #expect(log.contains("error: \(option) plughw:97,0: ") && !log.contains("supports only"), "\(log)")
            #expect(!log.contains("v=0"), "no SDP before the devices opened: \(log)")
        }
        let (status, log) = try await run(["--mic", "null", "--speaker", "null", "--rate", "16000"])
        #expect(status == 64 && log.contains("--webrtc runs at 48 kHz"), "\(log)")
    }
}
