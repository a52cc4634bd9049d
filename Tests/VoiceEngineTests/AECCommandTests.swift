import Foundation
import Testing

/// `voice-engine aec` on the double-talk vector: the figures a user judges a canceller by, each with what it covers.
@Suite struct AECCommandTests {
    static let folder = "TestVectors/aec"

    @Test(.enabled(if: CommandTestSupport.voiceEngineBinary != nil, "voice-engine not built"))
    func reportsFirstTwoSecondsAndNearEndMeasuresWithTheirCoverage() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("aec-command-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let report = dir.appendingPathComponent("report.json")
        let process = Process()
        process.executableURL = CommandTestSupport.voiceEngineBinary
        process.arguments = [
            "aec", "--far", "\(Self.folder)/far_16k.wav", "--mic", "\(Self.folder)/mic_double_talk.wav",
            "--near", "\(Self.folder)/near_double_talk.wav", "--out", dir.appendingPathComponent("out.wav").path,
            "--report", report.path,
        ]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(output)")
        #expect(output.contains("in the first 2 s of far-end speech from"), "\(output)")
        #expect(output.contains("near-end-active 20 ms frames"), "\(output)")
        // PESQ-WB when python3 has `pesq`, else the reason and the segmental SNR standing in: never silent.
        #expect(output.contains("near-end PESQ-WB (P.862.2): "), "\(output)")
        let json = try #require(JSONSerialization.jsonObject(with: Data(contentsOf: report)) as? [String: Any])
        let first = try #require(json["erleFirst2sDB"] as? Double)
        let blocks = try #require(json["erleFirst2sBlocks"] as? Int)
        #expect(blocks > 50 && blocks <= 200, "first 2 s cover \(blocks) blocks")
        #expect(first > 20, "ERLE in the first 2 s \(first) dB")
    }
}
