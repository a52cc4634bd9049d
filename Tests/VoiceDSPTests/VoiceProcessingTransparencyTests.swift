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
/// denoiser at -15 dB, the default before, cost 0.35-0.52 PESQ-WB on clean speech and measures 1.7-18 dB here (alone,
/// below); the default now costs 0.00-0.12 PESQ-WB (`voice-engine aec`; through `simulate`, with Opus, 0.00-0.07) and
/// measures 0.00-0.43 dB.
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

    static let cleanLimitDB = 0.6

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

    /// `speech` plus seeded noise (the project's white or pink generator) at `snrDB` against the speech's active level.
    static func noisy(_ speech: [Int16], pink: Bool, snrDB: Double, seed: UInt64) -> [Int16] {
        let seconds = Double(speech.count) / 16_000
        let noise = (pink
            ? SignalGenerator.pinkNoise(sampleRate: 16_000, seconds: seconds, seed: seed)
            : SignalGenerator.whiteNoise(sampleRate: 16_000, seconds: seconds, seed: seed)).map(Double.init)
        // Active speech level: mean power of the 20 ms frames within 30 dB of the loudest.
        let powers = stride(from: 0, to: speech.count - 319, by: 320).map { start in
            speech[start..<start + 320].reduce(0.0) { $0 + Double($1) * Double($1) } / 320
        }
        let loudest = powers.max() ?? 0
        let active = powers.filter { $0 > loudest / 1000 }
        let level = active.reduce(0, +) / Double(max(active.count, 1))
        let noisePower = noise.reduce(0.0) { $0 + $1 * $1 } / Double(noise.count)
        let scale = (level / noisePower).squareRoot() * Foundation.pow(10, -snrDB / 20)
        return zip(speech, noise).map { Int16(clamping: Int((Double($0) + scale * $1).rounded())) }
    }

    /// Noise suppression must help: on speech plus white or pink noise at 5, 10 and 20 dB SNR the output is closer to
    /// the clean talker than the microphone was. (PESQ-WB on the same kind of material, `noisy-speech.py`: +0.05 to
    /// +0.4 for white and pink; the table is in TestVectors/aec/README.md.)
    @Test func noiseSuppressionBringsNoisySpeechCloserToTheTalker() throws {
        let talkers = try Self.talkers().filter { $0.1.count <= 12 * 16_000 }.prefix(2).map { ($0.0, Array($0.1.prefix(8 * 16_000))) }
        #expect(talkers.count == 2)
        for (name, speech) in talkers {
            for (pink, snr) in [(false, 5.0), (false, 20.0), (true, 10.0)] {
                let mic = Self.noisy(speech, pink: pink, snrDB: snr, seed: 1500)
                let before = Self.distance(speech, mic)
                let after = Self.distance(speech, try Self.processed(mic))
                print("noise \(name) \(pink ? "pink" : "white") \(snr) dB: mic \(String(format: "%.2f", before)) dB, out \(String(format: "%.2f", after)) dB")
                #expect(after < before - 0.5, "\(name), \(pink ? "pink" : "white") noise at \(snr) dB: \(before) -> \(after) dB")
            }
        }
    }
}
