import Foundation
import Testing
import VoiceCore
import VoiceTestSupport

@Suite struct WAVWriteTests {
    typealias B = WAVBytes

    static func sine(frames: Int, channels: Int, rate: Int) -> [Int16] {
        (0..<frames * channels).map { i in
            let t = Double(i / channels) / Double(rate)
            return Int16((sin(2 * .pi * 440 * t + Double(i % channels)) * 30_000).rounded())
        }
    }

    @Test(arguments: [(8_000, 1), (11_025, 1), (16_000, 2), (44_100, 2), (48_000, 1), (22_050, 3)])
    func pcm16RoundTripsThroughAFile(rate: Int, channels: Int) throws {
        let format = AudioFormat(sampleRate: rate, channels: channels)
        let samples = Self.sine(frames: 1_000, channels: channels, rate: rate)
        let path = temporaryPath("pcm.wav")
        defer { try? FileManager.default.removeItem(atPath: path) }
        try WAVFile.write(pcm16: samples, format: format, to: path)
        let back = try WAVFile.read(path: path)
        #expect(back.format == format)
        #expect(back.encoding == .pcm16)
        #expect(back.int16Samples == samples)
    }

    @Test(arguments: [(11_025, 1), (44_100, 2), (48_000, 1)])
    func float32RoundTripsBitExactlyThroughAFile(rate: Int, channels: Int) throws {
        let format = AudioFormat(sampleRate: rate, channels: channels)
        var rng = SplitMix64(seed: UInt64(rate))
        let samples = (0..<999 * channels).map { _ in Float.random(in: -1...1, using: &rng) }
        let path = temporaryPath("float.wav")
        defer { try? FileManager.default.removeItem(atPath: path) }
        try WAVFile(format: format, samples: samples).write(toFile: path)
        let back = try WAVFile(contentsOfFile: path)
        #expect(back.format == format)
        #expect(back.encoding == .float32)
        #expect(back.floatSamples == samples)
    }

    @Test func pcm16FileHasTheCanonical44ByteHeader() throws {
        let samples: [Int16] = [1, -2, 3, -4]
        let bytes = try WAVFile(format: AudioFormat(sampleRate: 11_025, channels: 2), samples: samples).encoded()
        let expected =
            B.id("RIFF") + B.le32(44 - 8 + 8) + B.id("WAVE")
            + B.id("fmt ") + B.le32(16) + B.le16(1) + B.le16(2) + B.le32(11_025) + B.le32(44_100) + B.le16(4)
            + B.le16(16)
            + B.id("data") + B.le32(8) + B.pcm16Data(samples)
        #expect(bytes == expected)
    }

    @Test func float32FileHasCbSizeAndFactChunk() throws {
        let samples: [Float] = [0.5, -0.25, 1]
        let bytes = try WAVFile(format: AudioFormat(sampleRate: 48_000), samples: samples).encoded()
        let expected =
            B.id("RIFF") + B.le32(58 - 8 + 12) + B.id("WAVE")
            + B.id("fmt ") + B.le32(18) + B.le16(3) + B.le16(1) + B.le32(48_000) + B.le32(192_000) + B.le16(4)
            + B.le16(32)
            + B.le16(0) + B.id("fact") + B.le32(4) + B.le32(3)
            + B.id("data") + B.le32(12) + B.float32Data(samples)
        #expect(bytes == expected)
    }

    @Test func bytesRoundTripPreservesEncodingAndSamples() throws {
        let pcm = WAVFile(format: .mono8k, samples: [Int16.min, 0, Int16.max])
        #expect(try WAVFile(bytes: pcm.encoded()) == pcm)
        let float = WAVFile(format: .mono16k, samples: [Float(-1), 0, 0.999])
        #expect(try WAVFile(bytes: Data(float.encoded())) == float)
    }

    @Test func emptyFileRoundTrips() throws {
        let empty = WAVFile(format: .mono48k, samples: [Int16]())
        let bytes = try empty.encoded()
        #expect(bytes.count == 44)
        #expect(try WAVFile(bytes: bytes).frameCount == 0)
    }

    @Test func writingIntoMissingDirectoryFailsWithTheSystemReason() {
        let path = temporaryPath("no-such-dir") + "/out.wav"
        do {
            try WAVFile.write(pcm16: [0], format: .mono8k, to: path)
            Issue.record("writing into a missing directory succeeded")
        } catch {
            #expect(error == .writeFailed(path: path, reason: "No such file or directory"))
        }
    }

    @Test func formatBeyondWAVHeaderLimitsIsRejected() {
        let format = AudioFormat(sampleRate: 8_000, channels: 70_000)
        #expect(throws: WAVError.formatNotRepresentable(format)) {
            try WAVFile(format: format, samples: [Int16]()).encoded()
        }
    }
}
