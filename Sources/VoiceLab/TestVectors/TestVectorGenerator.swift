import VoiceEngine
import Foundation
import VoiceCore
import VoiceDSP

/// Writes the WAV files a ``TestVectorManifest`` describes. Deterministic: the same manifest gives the same
/// files, so the vectors in the repository can always be regenerated and checked against.
public enum TestVectorGenerator {
    /// The samples of one vector, as 16-bit PCM.
    public static func samples(for spec: TestVectorManifest.VectorSpec) throws -> [Int16] {
        let rate = spec.sampleRate
        let floats: [Float]
        switch spec.signal {
        case "sine":
            floats = SignalGenerator.sine(
                frequency: spec.frequency ?? 1_000, amplitude: spec.amplitude ?? 0.5, sampleRate: rate,
                seconds: spec.seconds)
        case "sweep":
            floats = SignalGenerator.sweep(
                from: spec.frequency ?? 50, to: spec.toFrequency ?? Double(rate) * 0.45,
                amplitude: spec.amplitude ?? 0.5,
                sampleRate: rate, seconds: spec.seconds)
        case "speechLike":
            floats = SignalGenerator.speechLike(
                sampleRate: rate, seconds: spec.seconds, seed: spec.seed ?? 1, level: spec.amplitude ?? 0.3)
        case "whiteNoise":
            floats = SignalGenerator.whiteNoise(
                rms: spec.amplitude ?? 0.1, sampleRate: rate, seconds: spec.seconds, seed: spec.seed ?? 1)
        case "pinkNoise":
            floats = SignalGenerator.pinkNoise(
                rms: spec.amplitude ?? 0.1, sampleRate: rate, seconds: spec.seconds, seed: spec.seed ?? 1)
        case "silence":
            floats = SignalGenerator.silence(sampleRate: rate, seconds: spec.seconds)
        default:
            throw TestVectorError.unknownSignal(spec.signal)
        }
        return SignalGenerator.toInt16(floats)
    }

    /// Generates every vector of the manifest in `directory`; returns the file names written.
    @discardableResult
    public static func generateAll(in directory: URL) throws -> [String] {
        let manifest = try TestVectorManifest.load(from: directory.appendingPathComponent("manifest.json"))
        for spec in manifest.vectors {
            let pcm = try samples(for: spec)
            try WAVFile.write(
                pcm16: pcm, format: AudioFormat(sampleRate: spec.sampleRate, channels: 1),
                to: directory.appendingPathComponent(spec.file).path)
        }
        return manifest.vectors.map(\.file)
    }
}
