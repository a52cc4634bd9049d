import Foundation
import VoiceEngine

/// PESQ-WB (ITU-T P.862.2) through `Benchmarks/scripts/pesq-wb.py` (PyPI's `pesq`), for the benchmarks' quality
/// columns. nil when the script cannot score (Python or `pesq` absent: exit 3), so a table shows the column as
/// missing instead of failing; the project's own measure (`SpectralDistance`) is always there.
enum PESQ {
    /// This file is Benchmarks/Sources/voice-bench/PESQ.swift: the script is two folders up, in scripts/.
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/pesq-wb.py").path

    /// MOS-LQO of `degraded` against `reference` (16 kHz mono), `degraded` first shifted back by its overall delay.
    static func wideband(reference: [Int16], degraded: [Int16], sampleRate: Int = 16_000) -> Double? {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("voice-bench-pesq-\(getpid())")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let ref = dir.appendingPathComponent("ref.wav").path
        let deg = dir.appendingPathComponent("deg.wav").path
        do {
            try WAVFile.write(pcm16: reference, format: AudioFormat(sampleRate: sampleRate), to: ref)
            try WAVFile.write(pcm16: degraded, format: AudioFormat(sampleRate: sampleRate), to: deg)
        } catch { return nil }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script, ref, deg, "--align"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return Double(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
