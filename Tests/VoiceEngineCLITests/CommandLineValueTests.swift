import Foundation
import Testing
import VoiceCore
import VoiceTestSupport

/// No command-line value crashes `voice-engine`: every numeric option of every command, fed inf, nan, negative,
/// zero, huge and random values, ends in a clean exit — 64 with one `error:` line naming the option when the value
/// is out of range, otherwise the command's own clean failure on a missing input (65 or 1), never a signal.
@Suite(.tags(.cli), .scheduledByTags, .serialized) struct CommandLineValueTests {
    static var binary: URL? { CommandTestSupport.voiceEngineBinary }
    static let missingWAV = "/nonexistent-\(UUID().uuidString).wav"

    /// One numeric option and the arguments that make a valid value fail fast on a missing input afterwards.
    struct NumericOption: CustomStringConvertible {
        var command: [String]
        var option: String
        var description: String { "\(command[0]) \(option)" }
    }

    static func options(output dir: String) -> [NumericOption] {
        let simulate = ["simulate", "--input", missingWAV, "--out", "\(dir)/s.wav"]
        let demo = ["demo", "--input-a", missingWAV, "--out", "\(dir)/demo"]
        let call = ["call", "--connect", "127.0.0.1:9", "--mic", "file:\(missingWAV)", "--speaker", "null", "--no-srtp"]
        let listen = ["call", "--mic", "file:\(missingWAV)", "--speaker", "null", "--no-srtp"]
        let aec = ["aec", "--far", missingWAV, "--mic", missingWAV, "--out", "\(dir)/a.wav"]
        // TCP to the discard port on loopback: a valid value fails fast with "transport failed" (69).
        let sip = ["sip", "options", "sip:a@127.0.0.1:9", "--transport", "tcp"]
        return ["--loss", "--jitter", "--delay", "--drift", "--bitrate"].map {
            NumericOption(command: simulate, option: $0)
        }
            + ["--duration", "--loss", "--jitter", "--turns", "--seed"].map { NumericOption(command: demo, option: $0) }
            + ["--duration", "--media-timeout", "--connect-timeout", "--rate", "--bitrate"].map {
                NumericOption(command: call, option: $0)
            }
            + [NumericOption(command: listen, option: "--listen")]
            + ["--tail-ms", "--steady-state-from", "--agc", "--noise-suppression"].map {
                NumericOption(command: aec, option: $0)
            }
            + ["--seconds", "--rate"].map { NumericOption(command: ["play", missingWAV], option: $0) }
            + [NumericOption(command: ["replay", "\(dir)/missing.pcap", "--out", "\(dir)/r.wav"], option: "--rate")]
            + [NumericOption(command: sip, option: "--t1")]
            // Nobody answers on the discard port: a valid value ends in "not established" (1) or no answer (69).
            + ["--duration", "--answer-timeout", "--rate", "--bitrate"].map {
                NumericOption(
                    command: [
                        "sip", "call", "sip:a@127.0.0.1:9", "--transport", "tcp", "--answer-timeout", "2", "--mic",
                        "null", "--speaker", "null"
                    ], option: $0)
            }
            + [
                NumericOption(
                    command: ["sip", "listen", "--listen", "127.0.0.1:0", "--answer-timeout", "1"],
                    option: "--answer-after")
            ]
            // A missing secret file: a valid value ends in 65 before the client starts.
            + ["--sip-port", "--registration-port", "--rate", "--no-answer-timeout", "--auto-answer"].map {
                NumericOption(command: ["phone", "--user", "alice", "--secret-file", missingWAV], option: $0)
            }
            // A --stats-dir that cannot be created: a valid value ends in 1 before the server listens.
            + ["--t1", "--talkers", "--media-threads"].map {
                NumericOption(
                    command: [
                        "conference-server", "--bind", "127.0.0.1:0", "--stats-dir",
                        "/nonexistent-\(UUID().uuidString)/rooms"
                    ],
                    option: $0)
            }
    }

    /// Special values every option gets, and seeded random ones over twenty decades, both signs.
    static func values(seed: UInt64) -> [String] {
        var generator = SeededGenerator(seed: seed)
        let special = ["inf", "-inf", "nan", "0", "-1", "-5", "1e9", "1e300", "-1e300", "0.0001", "4294967296"]
        let random = (0..<3).map { _ -> String in
            let magnitude = pow(10, Double.random(in: -6...14, using: &generator))
            let value = Bool.random(using: &generator) ? magnitude : -magnitude
            return Bool.random(using: &generator) ? String(value) : String(Int64(value.rounded()))
        }
        return special + random
    }

    @Test(
        "every numeric option of every command exits cleanly on inf, nan, negative, zero, huge and random values",
        .enabled(if: binary != nil, "voice-engine binary missing (it is built next to the test bundle)"),
        .timeLimit(.minutes(5)))
    func everyNumericOptionExitsCleanly() throws {
        let dir = TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var runs = 0
        for (index, option) in Self.options(output: dir.path).enumerated() {
            for value in Self.values(seed: 0xC11 &+ UInt64(index)) {
                let arguments = option.command + ["\(option.option)=\(value)"]
                let child = try CallCommandTests.Child(arguments)
                let end = child.wait(until: Date().addingTimeInterval(30))
                runs += 1
                let context = "\(arguments.joined(separator: " ")) → \(end.status): \(end.output)"
                #expect(!end.killed, "hung: \(context)")
                #expect(child.process.terminationReason == .exit, "killed by a signal: \(context)")
                // `sip` has classes of its own: 69 no answer or transport failure (`voice-engine sip --help`).
                let clean: Set<Int32> = option.command[0] == "sip" ? [1, 64, 65, 69] : [1, 64, 65]
                #expect(clean.contains(end.status), "\(context)")
                let errors = end.output.split(separator: "\n").filter { $0.hasPrefix("error:") }
                #expect(errors.count == 1, "not exactly one error line: \(context)")
                #expect(!end.output.contains("NSCocoaErrorDomain") && !end.output.contains("Fatal error"), "\(context)")
                if end.status == 64 {
                    #expect(
                        errors.first?.contains(option.option) == true, "the error does not name the option: \(context)")
                    #expect(
                        end.output.contains("Usage: voice-engine \(option.command[0])"), "no usage line: \(context)")
                }
            }
        }
        print("\(runs) runs, all clean")
    }

    /// Each bad value a user can give, with the option and its range in the one error line.
    @Test(
        .enabled(if: binary != nil, "voice-engine binary missing"),
        arguments: [
            (
                ["simulate", "--input", "x.wav", "--out", "y.wav", "--jitter", "inf"],
                "--jitter inf: must be within 0...1000 ms"
            ),
            (
                ["simulate", "--input", "x.wav", "--out", "y.wav", "--delay", "inf"],
                "--delay inf: must be within 0...5000 ms"
            ),
            (
                ["simulate", "--input", "x.wav", "--out", "y.wav", "--jitter", "1e9"],
                "--jitter 1000000000.0: must be within 0...1000 ms"
            ),
            (
                ["simulate", "--input", "x.wav", "--out", "y.wav", "--bitrate", "0"],
                "--bitrate 0: must be within 6000...510000"
            ),
            (
                ["aec", "--far", "x.wav", "--mic", "y.wav", "--out", "z.wav", "--steady-state-from", "nan"],
                "--steady-state-from nan: must be within 0...86400 seconds"
            ),
            (
                ["aec", "--far", "x.wav", "--mic", "y.wav", "--out", "z.wav", "--steady-state-from", "inf"],
                "--steady-state-from inf: must be within 0...86400 seconds"
            ),
            (
                ["aec", "--far", "x.wav", "--mic", "y.wav", "--out", "z.wav", "--steady-state-from=-5"],
                "--steady-state-from -5.0: must be within 0...86400 seconds"
            ),
            (
                ["call", "--connect", "127.0.0.1:9", "--duration", "inf"],
                "--duration inf: must be within 0.1...86400 seconds"
            ),
            (
                ["call", "--connect", "127.0.0.1:9", "--duration", "1e300"],
                "--duration 1e+300: must be within 0.1...86400 seconds"
            ),
            (
                ["sip", "options", "sip:a@127.0.0.1", "--t1", "9223372036854775807"],
                "--t1 9223372036854775807: must be within 1...60000 ms"
            ),
            (
                ["phone", "--user", "alice", "--secret-file", "s", "--rate", "44101"],
                "--rate 44101: must be a multiple of 100 Hz"
            ),
            (
                ["phone", "--user", "alice", "--secret-file", "s", "--rate", "96000"],
                "--rate 96000: must be within 8000...48000 Hz"
            ),
            (
                ["phone", "--user", "alice", "--secret-file", "s", "--sip-port", "0"],
                "--sip-port 0: must be within 1...65535\n"
            ),
            (
                ["phone", "--user", "alice", "--secret-file", "s", "--auto-answer", "nan"],
                "--auto-answer nan: must be within 0...3600 s"
            ),
            (
                ["conference-server", "--bind", "127.0.0.1:0", "--talkers", "17"],
                "--talkers 17: must be within 1...16 talkers"
            ),
            (
                ["conference-server", "--bind", "127.0.0.1:0", "--media-address", "media.invalid"],
                "--media-address media.invalid: must be an IPv4 or IPv6 address"
            )
        ] as [([String], String)])
    func badValuesFromTheIssueAreRefusedNamingOptionAndRange(arguments: [String], message: String) throws {
        let end = try CallCommandTests.Child(arguments).wait(until: Date().addingTimeInterval(30))
        #expect(end.status == 64, "\(end.output)")
        #expect(end.output.hasPrefix("error: \(message)"), "\(end.output)")
        #expect(end.output.contains("Usage: voice-engine \(arguments[0])"), "\(end.output)")
    }

    /// `sip --ca-file` (the trust root of `--transport tls`) is checked before any traffic: a file that cannot be
    /// read, one without a PEM certificate, or the option without TLS is a usage error (64) naming the file and
    /// why; a readable CA bundle passes, and the command then fails on the transport (69: nobody on port 9).
    @Test(.enabled(if: binary != nil, "voice-engine binary missing"))
    func caFileIsCheckedBeforeAnyTraffic() throws {
        let dir = TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let notPEM = dir.appendingPathComponent("not-a-ca.pem").path
        try "not a certificate\n".write(toFile: notPEM, atomically: true, encoding: .utf8)
        let options = ["sip", "options", "sip:a@127.0.0.1:9", "--t1", "50"]
        for (extra, message) in [
            (
                ["--transport", "tls", "--ca-file", "/nonexistent-ca.pem"],
                "--ca-file /nonexistent-ca.pem: No such file or directory"
            ),
            (["--transport", "tls", "--ca-file", notPEM], "--ca-file \(notPEM): "),
            (["--transport", "tcp", "--ca-file", notPEM], "--ca-file \(notPEM): only for --transport tls")
        ] {
            let end = try CallCommandTests.Child(options + extra).wait(until: Date().addingTimeInterval(30))
            #expect(end.status == 64, "\(extra): \(end.output)")
            #expect(end.output.hasPrefix("error: \(message)"), "\(end.output)")
            #expect(end.output.contains("Usage: voice-engine sip"), "\(end.output)")
            #expect(end.output.split(separator: "\n").filter { $0.hasPrefix("error:") }.count == 1, "\(end.output)")
        }
        let notPEMEnd = try CallCommandTests.Child(options + ["--transport", "tls", "--ca-file", notPEM]).wait(
            until: Date().addingTimeInterval(30))
        #expect(notPEMEnd.output.contains("PEM"), "the reason is not given: \(notPEMEnd.output)")
        let bundle = "/etc/ssl/certs/ca-certificates.crt"
        if FileManager.default.isReadableFile(atPath: bundle) {
            let end = try CallCommandTests.Child(options + ["--transport", "tls", "--ca-file", bundle]).wait(
                until: Date().addingTimeInterval(30))
            #expect(end.status == 69, "\(end.output)")
        }
    }

    @Test(
        "--help of the tool and of every command prints its help and exits 0",
        .enabled(if: binary != nil, "voice-engine binary missing"))
    func helpOfEveryCommandExitsZero() throws {
        for command in [
            [], ["demo"], ["simulate"], ["replay"], ["rtp-dump"], ["call"], ["aec"], ["play"], ["devices"],
            ["vectors"], ["vectors", "check"], ["aec-vectors"],
            ["phone"], ["conference-server"]
        ] {
            let end = try CallCommandTests.Child(command + ["--help"]).wait(until: Date().addingTimeInterval(30))
            #expect(end.status == 0 && end.output.contains("USAGE: voice-engine"), "\(command): \(end.output)")
            #expect(!end.output.split(separator: "\n").contains { $0.hasPrefix("error:") }, "\(command): \(end.output)")
        }
        let root = try CallCommandTests.Child(["--help"]).wait(until: Date().addingTimeInterval(30))
        let help = root.output.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(
            help.contains("64 usage") && help.contains("65 bad input data") && help.contains("1 runtime failure"),
            "\(help)")
    }

    @Test(
        "a missing vectors folder is one error line with the system's reason, no Foundation dump",
        .enabled(if: binary != nil, "voice-engine binary missing"))
    func missingVectorFolderIsOneReadableLine() throws {
        for command in [["vectors", "check"], ["aec-vectors", "check"]] {
            let end = try CallCommandTests.Child(command + ["--directory", "/nonexistent-vectors"])
                .wait(until: Date().addingTimeInterval(30))
            #expect(end.status != 0 && end.output.hasPrefix("error: cannot read /nonexistent-vectors/manifest.json: "))
            #expect(end.output.split(separator: "\n").count == 1, "\(end.output)")
            #expect(!end.output.contains("NSCocoaErrorDomain") && !end.output.contains("UserInfo"), "\(end.output)")
        }
    }

    @Test(
        "output paths are checked before any work: --out, --report, --write-trace of simulate; --out of aec and replay; --stats-dir of conference-server; --speaker file: of phone",
        .enabled(if: binary != nil, "voice-engine binary missing"))
    func unwritableOutputPathsFailBeforeWork() throws {
        let bad = "/nonexistent-\(UUID().uuidString)/file"
        let speech = "TestVectors/speech_like_16k.wav"
        for arguments in [
            ["simulate", "--input", speech, "--out", bad],
            ["simulate", "--input", speech, "--out", "/tmp/ok-\(UUID().uuidString).wav", "--report", bad],
            ["simulate", "--input", speech, "--out", "/tmp/ok-\(UUID().uuidString).wav", "--write-trace", bad],
            ["aec", "--far", speech, "--mic", speech, "--out", bad],
            ["replay", "missing.pcap", "--out", bad],
            ["vectors", "generate", "--directory", bad + "/deeper"],
            ["conference-server", "--bind", "127.0.0.1:0", "--stats-dir", bad + "/deeper"],
            ["phone", "--user", "alice", "--secret-file", "/nonexistent-secret", "--speaker", "file:" + bad]
        ] {
            let end = try CallCommandTests.Child(arguments).wait(until: Date().addingTimeInterval(30))
            #expect(end.status == 1, "\(arguments): \(end.output)")
            #expect(end.output.hasPrefix("error: ") && end.output.contains(bad), "\(end.output)")
            #expect(end.output.contains("No such file or directory"), "\(end.output)")
            #expect(
                !end.output.contains("packets:") && !end.output.contains("event:"),
                "worked before failing: \(end.output)")
        }
    }

    /// `conference-server --stats-dir` makes its folder and writes a probe file in it before listening, so a folder
    /// the file system refuses fails at start with the system's reason: under a regular file ("Not a directory"),
    /// and under /proc, which `access(W_OK)` lets root write to (as root here) but where nothing can be created.
    @Test(.enabled(if: binary != nil, "voice-engine binary missing"))
    func statsDirThatCannotBeWrittenIsRefusedAtStart() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("stats-file-\(UUID().uuidString)").path
        try Data("a file, not a folder".utf8).write(to: URL(fileURLWithPath: file))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let cases: [(path: String, reason: String)] = [
            (file + "/rooms", "Not a directory"),
            ("/proc/rooms-\(UUID().uuidString)", "No such file or directory"),
            // An existing /proc folder: made already, but no file can be created in it.
            ("/proc/self", "cannot write in the folder")
        ]
        for (path, reason) in cases {
            let end = try CallCommandTests.Child(["conference-server", "--bind", "127.0.0.1:0", "--stats-dir", path])
                .wait(until: Date().addingTimeInterval(30))
            #expect(end.status == 1, "\(path): \(end.output)")
            #expect(
                end.output.hasPrefix("error: --stats-dir \(path): ") && end.output.contains(reason), "\(end.output)")
            #expect(!end.output.contains("conference server: sip"), "listened before refusing: \(end.output)")
        }
        // A folder that can be made is made at start (before any room closes).
        let fresh = FileManager.default.temporaryDirectory.appendingPathComponent("stats-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: fresh) }
        let server = try CallCommandTests.Child(["conference-server", "--bind", "127.0.0.1:0", "--stats-dir", fresh])
        var isFolder: ObjCBool = false
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, !FileManager.default.fileExists(atPath: fresh, isDirectory: &isFolder) {
            Thread.sleep(forTimeInterval: 0.05)
        }
        kill(server.process.processIdentifier, SIGTERM)
        let end = server.wait(until: Date().addingTimeInterval(20))
        #expect(isFolder.boolValue, "the stats folder was not made at start: \(end.output)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: fresh).isEmpty, "the probe file was left behind")
    }
}
