import Foundation
import Testing
import VoiceEngine
import VoiceLab
import VoiceTestSupport

/// `voice-engine aec` on the double-talk vector: the figures a user judges a canceller by, each with what it covers.
@Suite(.tags(.cli), .scheduledByTags) struct AECCommandTests {
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
            "--report", report.path
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

    /// A file that does not end on a 10 ms block: its last 129 samples are processed like the rest, not written as
    /// zeros. The far end is silent, so the near talker passes and the tail must carry
    /// about the microphone's energy.
    @Test(.enabled(if: CommandTestSupport.voiceEngineBinary != nil, "voice-engine not built"))
    func lastPartialBlockIsProcessed() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("aec-command-tail-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let count = 2 * 16_000 + 129
        let mic = (0..<count).map { Int16(3_000 * sin(2 * Double.pi * 440 * Double($0) / 16_000)) }
        let format = AudioFormat(sampleRate: 16_000, channels: 1)
        let (farURL, micURL, outURL) = (
            dir.appendingPathComponent("far.wav"), dir.appendingPathComponent("mic.wav"),
            dir.appendingPathComponent("out.wav")
        )
        try WAVFile.write(pcm16: [Int16](repeating: 0, count: count), format: format, to: farURL.path)
        try WAVFile.write(pcm16: mic, format: format, to: micURL.path)
        let process = Process()
        process.executableURL = CommandTestSupport.voiceEngineBinary
        process.arguments = ["aec", "--far", farURL.path, "--mic", micURL.path, "--out", outURL.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let out = try WAVFile.read(path: outURL.path).int16Samples
        #expect(out.count == count)
        func energy(_ x: ArraySlice<Int16>) -> Double { x.reduce(0) { $0 + Double($1) * Double($1) } }
        let tail = energy(out.suffix(129)) / energy(mic.suffix(129))
        #expect(tail > 0.5 && tail < 2, "energy of the last 129 samples against the microphone's: \(tail)")
    }
}
