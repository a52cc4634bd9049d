import Foundation
import Testing
import VoiceEngine
import VoiceLab
import VoiceTestSupport

private let packageRoot = SharedTestData.repository
private let haveSpeech = [DemoCall.defaultInputA, DemoCall.defaultInputB].allSatisfy {
    FileManager.default.fileExists(atPath: packageRoot.appendingPathComponent($0).path)
}

/// `voice-engine demo` itself, run as a subprocess with a bounded wait (the call behind it: DemoTests).
@Suite(.tags(.cli), .scheduledByTags) struct DemoCommandTests {
    static var binary: URL? { CommandTestSupport.voiceEngineBinary }

    /// Runs the tool with output to a file and at most `seconds` of wall time (then it is terminated).
    private func run(_ arguments: [String], seconds: Double = 60) throws -> (status: Int32, output: String) {
        let log = TestFiles.temporaryDirectory().appendingPathComponent("out.txt")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: log.deletingLastPathComponent()) }
        let handle = try FileHandle(forWritingTo: log)
        let process = Process()
        process.executableURL = Self.binary
        process.arguments = arguments
        process.currentDirectoryURL = packageRoot
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
            Issue.record("voice-engine \(arguments.joined(separator: " ")) did not finish in \(seconds) s")
        }
        try handle.close()
        return (process.terminationStatus, try String(contentsOf: log, encoding: .utf8))
    }

    @Test(.enabled(if: binary != nil, "voice-engine binary not built"))
    func badFlagsGiveClearErrors() throws {
        let cases: [([String], String)] = [
            (["--profile", "moon"], "--profile moon: use one of clean, wifi, lte, congested"),
            (["--loss", "150"], "--loss"),
            (["--jitter=-3"], "--jitter: -3.0 must be within 0...2000"),
            (["--duration", "0"], "--duration"),
            (["--jitter-buffer", "magic"], "--jitter-buffer magic: use adaptive or speexdsp"),
            (["--input-a", "/nonexistent/a.wav"], "no such file"),
            (["--turns", "0.1"], "--turns: 0.1 must be within 0.2...600 seconds")
        ]
        for (flags, message) in cases {
            let result = try run(["demo", "--out", NSTemporaryDirectory() + "/demo-bad-flags"] + flags, seconds: 30)
            #expect(result.status != 0, "\(flags) should fail")
            #expect(result.output.contains(message), "\(flags): \(result.output)")
        }
    }

    @Test(.enabled(if: binary != nil && haveSpeech, "voice-engine binary or speech vectors missing"))
    func commandPrintsTheSummaryAndWhereTheReportsAre() throws {
        let dir = TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let result = try run(["demo", "--duration", "2", "--profile", "lte", "--no-srtp", "--out", dir.path])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("A → B") && result.output.contains("B → A"))
        #expect(result.output.contains("plain RTP"))
        #expect(result.output.contains(dir.appendingPathComponent("report.html").path))
        #expect(result.output.contains(dir.appendingPathComponent("report.json").path))
        let report = try DemoCall.Report.decode(
            Data(contentsOf: dir.appendingPathComponent("report.json")))
        #expect(report.configuration.srtpSuite == nil && report.configuration.network == .lte)
    }
}
