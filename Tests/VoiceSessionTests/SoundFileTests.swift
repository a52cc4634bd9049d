import Foundation
import Testing
import VoiceCore

@testable import VoiceSession
import VoiceTestSupport

@Suite struct SoundFileTests {
    private static func sine(_ frequency: Double, rate: Int, count: Int, amplitude: Double = 12_000) -> [Int16] {
        (0..<count).map { Int16((amplitude * sin(2 * Double.pi * frequency * Double($0) / Double(rate))).rounded()) }
    }

    /// Writes `wav` into `dir` and returns the path.
    private static func write(_ wav: WAVFile, _ name: String, in dir: String) throws -> String {
        let path = dir + "/" + name
        try wav.write(toFile: path)
        return path
    }

    /// A 16-bit PCM file's bytes with the `fmt ` fields patched (the WAV writer only writes valid files).
    private static func patchedPCM(formatTag: UInt16? = nil, bits: UInt16? = nil, blockAlign: UInt16? = nil) throws
        -> [UInt8]
    {
        var bytes = try WAVFile(format: .mono16k, samples: sine(440, rate: 16_000, count: 1_600)).encoded()
        func put16(_ value: UInt16, at offset: Int) {
            bytes[offset] = UInt8(value & 0xFF)
            bytes[offset + 1] = UInt8(value >> 8)
        }
        if let formatTag { put16(formatTag, at: 20) }
        if let blockAlign { put16(blockAlign, at: 32) }
        if let bits { put16(bits, at: 34) }
        return bytes
    }

    @Test func acceptsMonoPCMAtEachAllowedRate() throws {
        let dir = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for rate in [8_000, 16_000, 32_000] {
            let samples = Self.sine(425, rate: rate, count: rate / 10)
            let path = try Self.write(
                WAVFile(format: AudioFormat(sampleRate: rate), samples: samples), "ok.wav", in: dir)
            let file = try SoundFile(path: path)
            #expect(file.sampleRate == rate && file.samples == samples)
        }
    }

    /// Each broken property is rejected with an error that names it.
    @Test func rejectsEachOffendingPropertyByName() throws {
        let dir = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let tone = Self.sine(440, rate: 16_000, count: 1_600)
        let stereo = try Self.write(
            WAVFile(format: AudioFormat(sampleRate: 16_000, channels: 2), samples: tone + tone), "stereo.wav", in: dir)
        let rate48k = try Self.write(
            WAVFile(format: .mono48k, samples: Self.sine(440, rate: 48_000, count: 4_800)), "48k.wav", in: dir)
        let rate44k = try Self.write(
            WAVFile(format: AudioFormat(sampleRate: 44_100), samples: tone), "44k.wav", in: dir)
        let float = try Self.write(
            WAVFile(format: .mono16k, samples: tone.map { Float($0) / 32768 }), "float.wav", in: dir)
        let empty = try Self.write(WAVFile(format: .mono16k, samples: [Int16]()), "empty.wav", in: dir)
        func raw(_ bytes: [UInt8], _ name: String) throws -> String {
            let path = dir + "/" + name
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            return path
        }
        let eightBit = try raw(Self.patchedPCM(bits: 8, blockAlign: 1), "8bit.wav")
        let mp3 = try raw(Self.patchedPCM(formatTag: 0x0055), "mp3.wav")
        let alaw = try raw(Self.patchedPCM(formatTag: 0x0006, bits: 8, blockAlign: 1), "alaw.wav")
        var rng = SplitMix64(seed: 7)
        let garbage = try raw((0..<500).map { _ in UInt8.random(in: 0...255, using: &rng) }, "garbage.wav")
        let truncated = try raw(Array(try Self.patchedPCM().prefix(30)), "truncated.wav")

        let cases: [(String, SoundFileError.Property, [String])] = [
            (stereo, .channelCount, ["channel count", "2 channels"]),
            (rate48k, .sampleRate, ["sample rate", "48000 Hz"]),
            (rate44k, .sampleRate, ["sample rate", "44100 Hz"]),
            (float, .codec, ["codec", "IEEE float"]),
            (eightBit, .bitDepth, ["bit depth", "8-bit"]),
            (mp3, .codec, ["codec", "MP3"]),
            (alaw, .codec, ["codec", "A-law"]),
            (garbage, .malformed, ["malformed", "not a WAV file"]),
            (truncated, .malformed, ["malformed", "'fmt '"]),
            (empty, .empty, ["no samples"]),
            (dir + "/missing.wav", .unreadable, ["unreadable", "not found"])
        ]
        for (path, property, phrases) in cases {
            do {
                _ = try SoundFile(path: path)
                Issue.record("\(path) was accepted")
            } catch {
                #expect(error.property == property, "\(path): \(error)")
                #expect(error.description.contains(path))
                for phrase in phrases { #expect(error.description.contains(phrase), "\(error.description)") }
                #expect(error.description.contains("mono, 16-bit PCM WAV file at 8, 16 or 32 kHz"))
            }
        }
    }

    @Test func controllerRejectsBadFileAndKeepsPlayingTheCurrentOne() throws {
        let dir = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let good = try Self.write(
            WAVFile(format: .mono16k, samples: [Int16](repeating: 1_000, count: 800)), "good.wav", in: dir)
        let bad = try Self.write(
            WAVFile(format: AudioFormat(sampleRate: 16_000, channels: 2), samples: [Int16](repeating: 5, count: 320)),
            "bad.wav", in: dir)
        let controller = AudioController(deviceFormat: .mono16k)
        try controller.startPlayingSoundFile(good, loop: true)
        #expect(throws: SoundFileError.self) { try controller.startPlayingSoundFile(bad, loop: false) }
        var block = [Int16](repeating: 0, count: 160)
        block.withUnsafeMutableBufferPointer { controller.mix(into: $0) }
        #expect(block.allSatisfy { $0 == 1_000 })
    }

    /// At the device's own rate the looped output is the file repeated, sample for sample, across 10 ms blocks
    /// that do not line up with the file's length.
    @Test func loopAtDeviceRateIsTheFileRepeatedExactly() throws {
        var rng = SplitMix64(seed: 42)
        let samples = (0..<1_234).map { _ in Int16.random(in: -20_000...20_000, using: &rng) }
        let controller = AudioController(deviceFormat: .mono16k)
        try controller.startPlayingSoundFile(SoundFile(wav: WAVFile(format: .mono16k, samples: samples)), loop: true)
        var output: [Int16] = []
        var block = [Int16](repeating: 0, count: 160)
        for _ in 0..<40 {
            block.withUnsafeMutableBufferPointer { buffer in
                buffer.update(repeating: 0)
                controller.mix(into: buffer)
            }
            output += block
        }
        let expected = (0..<output.count).map { samples[$0 % samples.count] }
        #expect(output == expected)
    }

    /// Resampled to the device rate, a looped periodic sound has no discontinuity at the loop point: the
    /// output matches the same tone generated directly at the device rate, across several loops.
    @Test(arguments: [(8_000, 48_000), (16_000, 48_000), (32_000, 48_000), (8_000, 44_100)])
    func resampledLoopIsGapless(rates: (Int, Int)) throws {
        let (fileRate, deviceRate) = rates
        let frequency = 400.0
        // Whole cycles, so the file is periodic; 100 ms, so the loop is a whole number of samples at every
        // device rate (see SoundFile.samples(atRate:loop:)).
        let cycles = 40
        let count = fileRate * cycles / Int(frequency)
        let amplitude = 12_000.0
        let file = try SoundFile(
            wav: WAVFile(
                format: AudioFormat(sampleRate: fileRate), samples: Self.sine(frequency, rate: fileRate, count: count)))
        let format = AudioFormat(sampleRate: deviceRate)
        let controller = AudioController(deviceFormat: format)
        try controller.startPlayingSoundFile(file, loop: true)
        let loopLength = Int((Double(count) * Double(deviceRate) / Double(fileRate)).rounded())
        var output: [Int16] = []
        var block = [Int16](repeating: 0, count: format.samplesPerBlock)
        while output.count < 4 * loopLength {
            block.withUnsafeMutableBufferPointer { buffer in
                buffer.update(repeating: 0)
                controller.mix(into: buffer)
            }
            output += block
        }
        let maxStep = amplitude * 2 * Double.pi * frequency / Double(deviceRate)
        var worstError = 0.0
        var worstStep = 0.0
        for i in 0..<(4 * loopLength) {
            let t = Double(i % loopLength) / Double(deviceRate)
            let expected = amplitude * sin(2 * Double.pi * frequency * t)
            worstError = max(worstError, abs(Double(output[i]) - expected))
            if i > 0 { worstStep = max(worstStep, abs(Double(output[i]) - Double(output[i - 1]))) }
        }
        #expect(worstError < 0.01 * amplitude, "largest deviation from the ideal tone: \(worstError)")
        #expect(worstStep < maxStep * 1.02 + 2, "largest sample step \(worstStep), the tone's own \(maxStep)")
    }

    @Test func oneShotPlaysOnceThenSilence() throws {
        let samples = Self.sine(500, rate: 8_000, count: 800)  // 100 ms
        let controller = AudioController(deviceFormat: .mono16k)
        try controller.startPlayingSoundFile(SoundFile(wav: WAVFile(format: .mono8k, samples: samples)), loop: false)
        var output: [Int16] = []
        var block = [Int16](repeating: 0, count: 160)
        for _ in 0..<20 {
            block.withUnsafeMutableBufferPointer { buffer in
                buffer.update(repeating: 0)
                controller.mix(into: buffer)
            }
            output += block
        }
        let lastSound = output.lastIndex { abs($0) > 50 } ?? 0
        #expect((1_580..<1_600).contains(lastSound), "100 ms at 16 kHz, then silence (last sound at \(lastSound))")
        #expect(output[1_620...].allSatisfy { $0 == 0 })
    }
}
