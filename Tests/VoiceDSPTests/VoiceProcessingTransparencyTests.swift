import Foundation
import Testing
import VoiceCore
import VoiceDSP
import VoiceLab
import VoiceTestSupport

/// Issue 15, must-deliver 5: voice processing (canceller, residual-echo and noise suppression, VAD) must leave clean
/// near-end speech alone when there is no echo, and noise suppression must help noisy speech. Measured with the
/// project's own measure (``SpectralDistance``, dB against the clean talker) on the real speech of
/// ../shared/testdata/speech, through the canceller exactly as a call runs it (a silent far end: nothing played).
///
/// Calibration (PESQ-WB, `Benchmarks/scripts/pesq-wb.py`, same clips, `voice-engine aec --far SILENCE`): speexdsp's
/// denoiser at -15 dB, the default before, cost 0.35-0.52 PESQ-WB on clean speech and measured 1.0-1.6 dB here; the
/// default now costs 0.02-0.12 PESQ-WB and measures under 0.5 dB.
@Suite("Voice processing is transparent on clean speech", .enabled(if: SharedTestData.isPresent, "../shared/testdata/speech absent"))
struct VoiceProcessingTransparencyTests {
    /// The 16 kHz clean talkers of the shared set (at least 4 s each).
    static func talkers() throws -> [(String, [Int16])] {
        let names = try FileManager.default.contentsOfDirectory(atPath: SharedTestData.speech).sorted()
        return try names.filter { $0.hasSuffix("_16k.wav") || $0.hasSuffix("_16k_mono.wav") }.compactMap { name in
            let file = try WAVFile.read(path: SharedTestData.speech + "/" + name)
            guard file.format.sampleRate == 16_000, file.format.channels == 1 else { return nil }
            return (name, file.int16Samples)
        }
    }

    static func processed(_ mic: [Int16], _ configuration: EchoCancellerConfiguration = EchoCancellerConfiguration())
        throws -> [Int16]
    {
        try AECRunner.runEngine(far: [Int16](repeating: 0, count: mic.count), mic: mic, configuration: configuration).output
    }

    /// speexdsp's preprocessor alone, denoising at -15 dB (its output one frame late, shifted back).
    static func speexDenoised(_ mic: [Int16]) throws -> [Int16] {
        let pre = try Preprocessor(configuration: PreprocessorConfiguration(sampleRate: 16_000, noiseSuppressionDB: -15))
        var out = mic
        out.withUnsafeMutableBufferPointer { o in
            for start in stride(from: 0, to: o.count - 159, by: 160) {
                pre.process(UnsafeMutableBufferPointer(rebasing: o[start..<start + 160]))
            }
        }
        return Array(out.dropFirst(pre.latencySamples)) + [Int16](repeating: 0, count: pre.latencySamples)
    }

    static let cleanLimitDB = 1.0

    static func distance(_ clean: [Int16], _ degraded: [Int16]) -> Double {
        SpectralDistance.measure(reference: clean, degraded: degraded, sampleRate: 16_000, maximumLagMilliseconds: 50)
            .decibels
    }

    @Test func cleanSpeechPassesUndamaged() throws {
        let talkers = try Self.talkers()
        #expect(talkers.count >= 4)
        for (name, speech) in talkers {
            let now = Self.distance(speech, try Self.processed(speech))
            // What the canceller did before: speexdsp's denoiser at -15 dB on the same speech (the measure must see it).
            let speex = Self.distance(speech, try Self.speexDenoised(speech))
            print("transparency \(name): \(String(format: "%.2f", now)) dB, speexdsp -15 dB \(String(format: "%.2f", speex)) dB")
            #expect(now < Self.cleanLimitDB, "\(name): voice processing moved clean speech \(now) dB")
            #expect(speex > now, "\(name): the measure does not see speexdsp's damage (\(speex) dB)")
        }
    }
}
