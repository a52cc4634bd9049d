import Foundation
import Testing
import VoiceCore
import VoiceDSP
import VoiceLab
import VoiceTestSupport

/// Voice processing (canceller, residual-echo and noise suppression, VAD) must leave clean
/// near-end speech alone when there is no echo, and noise suppression must help noisy speech. Measured with the
/// project's own measure (``SpectralDistance``, dB against the clean talker) on the real speech of
/// ../shared/testdata/speech, through the canceller exactly as a call runs it (a silent far end: nothing played).
///
/// Calibration (PESQ-WB, `Benchmarks/scripts/pesq-wb.py`, same clips, `voice-engine aec --far SILENCE`): speexdsp's
/// denoiser at -15 dB, the default before, cost 0.35-0.52 PESQ-WB on clean speech and measures 1.7-18 dB here (alone,
/// below); the default now costs 0.00-0.12 PESQ-WB (`voice-engine aec`; through `simulate`, with Opus, 0.00-0.07) and
/// measures 0.00-0.43 dB.
@Suite(
    "Voice processing is transparent on clean speech", .tags(.slow), .scheduledByTags,
    .enabled(if: SharedTestData.isPresent, "../shared/testdata/speech absent"))
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
        try AECRunner.runEngine(far: [Int16](repeating: 0, count: mic.count), mic: mic, configuration: configuration)
            .output
    }

    /// speexdsp's preprocessor alone, denoising at -15 dB (its output one frame late, shifted back).
    static func speexDenoised(_ mic: [Int16]) throws -> [Int16] {
        let pre = try Preprocessor(
            configuration: PreprocessorConfiguration(sampleRate: 16_000, noiseSuppressionDB: -15))
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
            // A damaging reference: speexdsp's denoiser at -15 dB on the same speech (the measure must see it).
            let speex = Self.distance(speech, try Self.speexDenoised(speech))
            print(
                "transparency \(name): \(String(format: "%.2f", now)) dB, speexdsp -15 dB \(String(format: "%.2f", speex)) dB"
            )
            #expect(now < Self.cleanLimitDB, "\(name): voice processing moved clean speech \(now) dB")
            #expect(speex > now, "\(name): the measure does not see speexdsp's damage (\(speex) dB)")
        }
    }

    /// `speech` plus seeded noise (the project's white or pink generator) at `snrDB` against the speech's active level.
    static func noisy(_ speech: [Int16], pink: Bool, snrDB: Double, seed: UInt64) -> [Int16] {
        let seconds = Double(speech.count) / 16_000
        let noise =
            (pink
            ? SignalGenerator.pinkNoise(sampleRate: 16_000, seconds: seconds, seed: seed)
            : SignalGenerator.whiteNoise(sampleRate: 16_000, seconds: seconds, seed: seed)).map(Double.init)
        return mixed(speech, noise, snrDB: snrDB)
    }

    /// `speech` plus seeded brown noise (the white generator through a leaky integrator: 1/f² above 0.25 Hz, nearly all
    /// its power under 300 Hz) at `snrDB` against the speech's active level.
    static func brownNoisy(_ speech: [Int16], snrDB: Double, seed: UInt64) -> [Int16] {
        var state = 0.0
        let brown = SignalGenerator.whiteNoise(sampleRate: 16_000, seconds: Double(speech.count) / 16_000, seed: seed)
            .map {
                state = 0.9999 * state + Double($0)
                return state
            }
        return mixed(speech, brown, snrDB: snrDB)
    }

    /// `speech` plus `noise` scaled to `snrDB` under the speech's active level (the mean power of its 20 ms frames
    /// within 30 dB of the loudest).
    static func mixed(_ speech: [Int16], _ noise: [Double], snrDB: Double) -> [Int16] {
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
        let talkers = try Self.talkers().filter { $0.1.count <= 12 * 16_000 }.prefix(2).map {
            ($0.0, Array($0.1.prefix(8 * 16_000)))
        }
        #expect(talkers.count == 2)
        for (name, speech) in talkers {
            for (pink, snr) in [(false, 5.0), (false, 20.0), (true, 10.0)] {
                let mic = Self.noisy(speech, pink: pink, snrDB: snr, seed: 1500)
                let before = Self.distance(speech, mic)
                let after = Self.distance(speech, try Self.processed(mic))
                print(
                    "noise \(name) \(pink ? "pink" : "white") \(snr) dB: mic \(String(format: "%.2f", before)) dB, out \(String(format: "%.2f", after)) dB"
                )
                #expect(
                    after < before - 0.5,
                    "\(name), \(pink ? "pink" : "white") noise at \(snr) dB: \(before) -> \(after) dB")
            }
        }
    }

    /// PESQ-WB of `degraded` against `reference` through `Benchmarks/scripts/pesq-wb.py` (PyPI's `pesq`), or `nil`
    /// with the reason when python3 or `pesq` is missing. The WAVs are kept in `folder`.
    static func pesq(reference: [Int16], degraded: [Int16], folder: URL, name: String) throws -> (Double?, String) {
        let format = AudioFormat(sampleRate: 16_000, channels: 1)
        let ref = folder.appendingPathComponent("\(name)_ref.wav")
        let deg = folder.appendingPathComponent("\(name).wav")
        try WAVFile.write(pcm16: reference, format: format, to: ref.path)
        try WAVFile.write(pcm16: degraded, format: format, to: deg.path)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "Benchmarks/scripts/pesq-wb.py", ref.path, deg.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return (nil, "python3 not runnable: \(error)") }
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0, let mos = Double(text.trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            return (nil, "pesq-wb.py exited \(process.terminationStatus) (pip install pesq)")
        }
        return (mos, "")
    }

    /// Brown noise (a rumble: nearly all its power under 300 Hz) must not be made worse. It was, in PESQ-WB
    /// (`noisy-speech.py`, five talkers, 0-20 dB SNR: -0.05 mean, worst clip -0.45; jfk at 0 and 5 dB -0.27 and -0.39)
    /// while the suppression depth was set by the background from 300 Hz up: brown noise still stands loud at
    /// 300-1000 Hz, and the full depth there cut the voice's weak harmonics. With the depth from 1 kHz up: +0.02 mean,
    /// worst clip -0.07 (TestVectors/aec/README.md). Here (this generator's brown noise, 8 s) the old depth moved jfk
    /// from 2.58 to 7.47 dB at 0 dB SNR and from 1.54 to 2.49 dB at 5 dB; now (quiet threshold -57 dBFS, kept for
    /// the linear noise vector's ERLE) 3.15 and 1.99 — the output may sit a little further than the microphone (the
    /// Wiener gain's residual is not the noise's texture) while PESQ-WB rises (3.22 -> 3.36, 4.04 -> 4.08), so the
    /// tolerance is 0.75 dB: ten times under the old damage. PESQ-WB, checked too when python3 has `pesq`, did not see
    /// the old loss on this generator's noise (3.22 -> 3.37, 4.04 -> 4.04).
    @Test func brownNoiseIsNotMadeWorse() throws {
        let talkers = try Self.talkers().filter { $0.1.count <= 12 * 16_000 }.prefix(2).map {
            ($0.0, Array($0.1.prefix(8 * 16_000)))
        }
        #expect(talkers.count == 2)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("brown-noise-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        for (name, speech) in talkers {
            for snr in [0.0, 5.0] {
                let mic = Self.brownNoisy(speech, snrDB: snr, seed: 1502)
                let out = try Self.processed(mic)
                let before = Self.distance(speech, mic)
                let after = Self.distance(speech, out)
                let clip = "\(name.replacingOccurrences(of: ".wav", with: ""))_brown_\(Int(snr))"
                let (micScore, reason) = try Self.pesq(
                    reference: speech, degraded: mic, folder: folder, name: clip + "_mic")
                let (outScore, _) = try Self.pesq(reference: speech, degraded: out, folder: folder, name: clip + "_out")
                print(
                    "noise \(name) brown \(snr) dB: mic \(String(format: "%.2f", before)) dB, out \(String(format: "%.2f", after)) dB; "
                        + "PESQ-WB " + (micScore.map { String(format: "mic %.2f", $0) } ?? reason)
                        + (outScore.map { String(format: ", out %.2f", $0) } ?? ""))
                #expect(
                    after < before + Self.brownToleranceDB,
                    "\(name), brown noise at \(snr) dB: \(before) -> \(after) dB")
                if let micScore, let outScore {
                    #expect(
                        outScore >= micScore - Self.brownPESQToleranceDB,
                        "\(name), brown noise at \(snr) dB: PESQ-WB \(micScore) -> \(outScore)")
                }
            }
        }
    }

    static let brownToleranceDB = 0.75
    static let brownPESQToleranceDB = 0.1
}
