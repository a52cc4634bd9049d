import Foundation

/// PESQ-WB (ITU-T P.862.2) of a processed file against the clean near end, through PyPI's `pesq` when python3
/// has it. Optional by design: `voice-engine aec` falls back to the segmental SNR it always reports.
enum NearEndPESQ {
    /// The score, or why there is none (python3 or `pesq` missing, a rate other than 16 kHz, no speech found).
    static func score(reference: String, degraded: String, sampleRate: Int) -> (mos: Double?, reason: String?) {
        guard sampleRate == 16_000 else { return (nil, "PESQ-WB needs 16 kHz (this file is \(sampleRate) Hz)") }
        let program = """
            import sys, wave
            try:
                import numpy as np
                from pesq import pesq
            except ImportError:
                sys.exit(3)
            def read(path):
                with wave.open(path, "rb") as w:
                    return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype("float64") / 32768.0
            ref, deg = read(sys.argv[1]), read(sys.argv[2])
            n = min(len(ref), len(deg))
            try:
                print("%.3f" % pesq(16000, ref[:n], deg[:n], "wb"))
            except Exception:
                sys.exit(4)
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", program, reference, degraded]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return (nil, "python3 not found") }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        switch process.terminationStatus {
        case 0:
            let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            return (Double(text), Double(text) == nil ? "unreadable PESQ output" : nil)
        case 3: return (nil, "python3 has no pesq module (pip install pesq)")
        case 4: return (nil, "PESQ found no utterance in the near end")
        default: return (nil, "python3 could not run PESQ (exit \(process.terminationStatus))")
        }
    }
}
