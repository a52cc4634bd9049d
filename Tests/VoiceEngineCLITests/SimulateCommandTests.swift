import Foundation
import Testing
import VoiceEngine
import VoiceLab
import VoiceTestSupport

/// `voice-engine simulate` as a user runs it, on the project's own test vectors (the one-way simulation behind it:
/// OneWaySimulationTests).
@Suite(.tags(.cli), .scheduledByTags) struct SimulateCommandTests {
    static let speech = "TestVectors/speech_like_16k.wav"
    static var binary: URL? { CommandTestSupport.voiceEngineBinary }

    @Test(
        .enabled(
            if: binary != nil && FileManager.default.fileExists(atPath: speech),
            "voice-engine binary or test vector missing"))
    func commandLineWritesOutputAndReportAndRejectsBadInput() throws {
        let dir = TestFiles.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("out.wav").path
        let report = dir.appendingPathComponent("r.json").path
        let traceOut = dir.appendingPathComponent("trace.csv").path
        let ok = try run([
            "simulate", "--input", Self.speech, "--out", out, "--loss", "5", "--burst", "--jitter", "15",
            "--seed", "3",
            "--report", report, "--write-trace", traceOut
        ])
        #expect(ok.status == 0, "\(ok.output)")
        let wav = try WAVFile.read(path: out)
        #expect(wav.format == AudioFormat(sampleRate: 16_000))
        let decoded = try JSONDecoder().decode(
            CallReport.self, from: Data(contentsOf: URL(fileURLWithPath: report)))
        #expect(decoded.rtp.received + decoded.rtp.lost == decoded.rtp.expected)
        #expect(decoded.rtp.lost > 0)
        #expect(decoded.quality.mos < 4.41)
        #expect(try NetworkTrace(contentsOf: URL(fileURLWithPath: traceOut)).records.count > 100)

        let missing = try run([
            "simulate", "--input", dir.appendingPathComponent("nope.wav").path, "--out", out
        ])
        #expect(missing.status != 0 && missing.output.contains("not found"))
        let badTrace = dir.appendingPathComponent("bad.csv")
        try "send_ms,arrival_ms\n0,20\n20,abc\n".write(to: badTrace, atomically: true, encoding: .utf8)
        let malformed = try run([
            "simulate", "--input", Self.speech, "--out", out, "--trace", badTrace.path
        ])
        #expect(malformed.status != 0 && malformed.output.contains("line 3"))
        let absentTrace = dir.appendingPathComponent("absent.csv").path
        let unreadable = try run(["simulate", "--input", Self.speech, "--out", out, "--trace", absentTrace])
        #expect(unreadable.status != 0 && unreadable.output.contains("cannot read trace \(absentTrace): no such file"))
        let notWAV = dir.appendingPathComponent("bad.wav")
        try Data([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]).write(to: notWAV)
        let badWAV = try run(["simulate", "--input", notWAV.path, "--out", out])
        #expect(badWAV.status != 0 && badWAV.output.contains("WAV"))
    }

    private func run(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = Self.binary
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
