import Foundation
import Testing
import VoiceCore
import VoiceTestSupport

@Suite struct WAVReadTests {
    typealias B = WAVBytes
    let ramp: [Int16] = [0, 1, -1, 32767, -32768, 1234, -4321, 7]

    @Test func readsCanonicalPCM16Mono() throws {
        let bytes = B.riff(B.fmt(rate: 8_000), B.chunk("data", B.pcm16Data(ramp)))
        let wav = try WAVFile(bytes: bytes)
        #expect(wav.format == AudioFormat(sampleRate: 8_000, channels: 1))
        #expect(wav.encoding == .pcm16)
        #expect(wav.int16Samples == ramp)
        #expect(wav.frameCount == ramp.count)
        #expect(wav.duration == .milliseconds(1))
    }

    @Test func readsFromFoundationData() throws {
        let bytes = B.riff(B.fmt(channels: 2, rate: 44_100), B.chunk("data", B.pcm16Data(ramp)))
        let wav = try WAVFile(bytes: Data(bytes))
        #expect(wav.format == AudioFormat(sampleRate: 44_100, channels: 2))
        #expect(wav.frameCount == 4)
        #expect(wav.int16Samples == ramp)
    }

    @Test func convertsPCM16ToFloatByDividingBy32768() throws {
        let wav = try WAVFile(bytes: B.riff(B.fmt(), B.chunk("data", B.pcm16Data([-32768, 16384, 0, 32767]))))
        #expect(wav.floatSamples == [-1, 0.5, 0, Float(32767) / 32768])
    }

    @Test func convertsFloatToInt16WithRoundingAndClipping() throws {
        let input: [Float] = [1, -1, 0.5, 1.5, -2, .nan, 0.99999, 1.0 / 65536, -1.0 / 65536 * 0.9, .infinity]
        let bytes = B.riff(
            B.chunk("fmt ", B.fmtBody(tag: 3, channels: 1, rate: 16_000, bits: 32) + B.le16(0)),
            B.chunk("fact", B.le32(input.count)), B.chunk("data", B.float32Data(input)))
        let wav = try WAVFile(bytes: bytes)
        #expect(wav.encoding == .float32)
        #expect(wav.floatSamples.count == input.count)
        #expect(wav.floatSamples[0] == 1 && wav.floatSamples[5].isNaN)
        #expect(wav.int16Samples == [32767, -32768, 16384, 32767, -32768, 0, 32767, 1, 0, 32767])
    }

    @Test func readsWaveFormatExtensiblePCMAndFloat() throws {
        let pcm = B.riff(
            B.extensibleFmt(channels: 2, rate: 48_000, bits: 16, guid: B.subformatGUID(tag: 1)),
            B.chunk("data", B.pcm16Data(ramp)))
        let pcmWAV = try WAVFile(bytes: pcm)
        #expect(pcmWAV.encoding == .pcm16)
        #expect(pcmWAV.format == AudioFormat(sampleRate: 48_000, channels: 2))
        #expect(pcmWAV.int16Samples == ramp)

        let floats: [Float] = [0.25, -0.75, 0.125]
        let float = B.riff(
            B.extensibleFmt(channels: 1, rate: 22_050, bits: 32, guid: B.subformatGUID(tag: 3)),
            B.chunk("fact", B.le32(3)), B.chunk("data", B.float32Data(floats)))
        let floatWAV = try WAVFile(bytes: float)
        #expect(floatWAV.encoding == .float32)
        #expect(floatWAV.format.sampleRate == 22_050)
        #expect(floatWAV.floatSamples == floats)
    }

    @Test func skipsListFactAndCueChunksAroundTheAudio() throws {
        let list = B.chunk("LIST", B.id("INFO") + B.chunk("INAM", Array("a tone\0".utf8)))
        let bytes = B.riff(
            B.chunk("cue ", B.le32(0)), B.fmt(), B.chunk("fact", B.le32(8)), list,
            B.chunk("data", B.pcm16Data(ramp)), B.chunk("LIST", Array("trailer".utf8)))
        #expect(try WAVFile(bytes: bytes).int16Samples == ramp)
    }

    @Test func skipsThePadByteAfterAnOddSizedChunk() throws {
        // A 5-byte chunk is followed by one pad byte; missing it would misread the data chunk header.
        let odd = B.chunk("junk", [1, 2, 3, 4, 5])
        #expect(odd.count == 14)
        let bytes = B.riff(B.fmt(), odd, B.chunk("data", B.pcm16Data(ramp)))
        #expect(try WAVFile(bytes: bytes).int16Samples == ramp)
    }

    @Test func oddSizedDataChunkKeepsWholeSamplesAndNextChunkIsFound() throws {
        // 7 data bytes hold 3 whole samples; the fmt chunk after it (and its pad byte) must still be found.
        let data = B.chunk("data", Array(B.pcm16Data([10, 20, 30]) + [0x7F]))
        let wav = try WAVFile(bytes: B.riff(data, B.fmt(rate: 11_025)))
        #expect(wav.int16Samples == [10, 20, 30])
        #expect(wav.format.sampleRate == 11_025)
    }

    @Test(arguments: [0xFFFF_FFFF, 0x7FFF_F000, 1_000])
    func clampsOversizedDataChunkToWholeFramesInTheFile(declaredSize: Int) throws {
        // Stereo: 4 whole frames plus 3 stray bytes of a fifth.
        let payload = B.pcm16Data(ramp) + [1, 2, 3]
        let bytes = B.riff(
            B.fmt(channels: 2), B.chunk("data", payload, declaredSize: declaredSize, pad: false),
            riffSize: 0xFFFF_FFFF)
        let wav = try WAVFile(bytes: bytes)
        #expect(wav.frameCount == 4)
        #expect(wav.int16Samples == ramp)
    }

    @Test func emptyDataChunkGivesNoSamples() throws {
        let wav = try WAVFile(bytes: B.riff(B.fmt(), B.chunk("data", [])))
        #expect(wav.frameCount == 0)
        #expect(wav.int16Samples.isEmpty)
        #expect(wav.duration == .zero)
    }

    // MARK: Errors

    static let errorCases: [(String, [UInt8], WAVError)] = {
        let data = B.chunk("data", B.pcm16Data([1, 2]))
        return [
            ("empty input", [], .truncatedHeader(byteCount: 0)),
            ("11 bytes", Array(B.riff()[0..<11]), .truncatedHeader(byteCount: 11)),
            ("RIFX", B.id("RIFX") + B.le32(4) + B.id("WAVE"), .notRIFFWAVE(found: "\"RIFX\"")),
            ("AVI form", B.id("RIFF") + B.le32(4) + B.id("AVI "), .notRIFFWAVE(found: "RIFF form type \"AVI \"")),
            (
                "binary", [0x00, 0xFF, 0x10, 0x80] + [UInt8](repeating: 0, count: 8),
                .notRIFFWAVE(found: "bytes 00 FF 10 80")
            ),
            ("no fmt", B.riff(data), .missingFormatChunk),
            ("header only", B.riff(), .missingFormatChunk),
            (
                "fmt 14 bytes",
                B.riff(B.chunk("fmt ", Array(B.fmtBody(tag: 1, channels: 1, rate: 8_000, bits: 16)[0..<14])), data),
                .formatChunkTooShort(size: 14, required: 16)
            ),
            ("fmt cut off", Array(B.riff(B.fmt())[0..<30]), .truncatedFormatChunk(declaredSize: 16, available: 10)),
            ("MP3", B.riff(B.fmt(tag: 0x55, bits: 0, blockAlign: 1), data), .unsupportedCodec(formatTag: 0x0055)),
            ("A-law", B.riff(B.fmt(tag: 6, bits: 8), data), .unsupportedCodec(formatTag: 0x0006)),
            ("24-bit PCM", B.riff(B.fmt(bits: 24), data), .unsupportedBitDepth(bits: 24, encoding: .pcm16)),
            ("8-bit PCM", B.riff(B.fmt(bits: 8), data), .unsupportedBitDepth(bits: 8, encoding: .pcm16)),
            ("64-bit float", B.riff(B.fmt(tag: 3, bits: 64), data), .unsupportedBitDepth(bits: 64, encoding: .float32)),
            ("zero channels", B.riff(B.fmt(channels: 0), data), .zeroChannels),
            ("zero rate", B.riff(B.fmt(rate: 0), data), .zeroSampleRate),
            (
                "block align", B.riff(B.fmt(channels: 2, blockAlign: 2), data),
                .inconsistentBlockAlign(declared: 2, expected: 4)
            ),
            ("no data", B.riff(B.fmt(), B.chunk("LIST", B.id("INFO"))), .missingDataChunk),
            (
                "extensible too short",
                B.riff(B.chunk("fmt ", B.fmtBody(tag: 0xFFFE, channels: 1, rate: 8_000, bits: 16) + B.le16(0)), data),
                .formatChunkTooShort(size: 18, required: 40)
            ),
            (
                "extensible MP3",
                B.riff(B.extensibleFmt(channels: 1, rate: 8_000, bits: 16, guid: B.subformatGUID(tag: 0x55)), data),
                .unsupportedCodec(formatTag: 0x0055)
            ),
            (
                "extensible foreign GUID",
                B.riff(B.extensibleFmt(channels: 1, rate: 8_000, bits: 16, guid: Array(1...16)), data),
                .unsupportedSubformat(guid: "04030201-0605-0807-090A-0B0C0D0E0F10")
            )
        ]
    }()

    @Test(arguments: errorCases)
    func rejectsMalformedInputWithTheReason(name: String, bytes: [UInt8], expected: WAVError) {
        #expect(throws: expected, "\(name)") { try WAVFile(bytes: bytes) }
    }

    @Test func errorMessagesNameTheCodecAndTheProblem() {
        #expect(WAVError.unsupportedCodec(formatTag: 0x0055).description.contains("0x0055 (MP3)"))
        #expect(WAVError.unsupportedCodec(formatTag: 0x0006).description.contains("0x0006 (A-law)"))
        #expect(WAVError.unsupportedCodec(formatTag: 0x1234).description.contains("0x1234"))
        #expect(WAVError.unsupportedBitDepth(bits: 24, encoding: .pcm16).description.contains("24-bit PCM"))
        #expect(WAVError.inconsistentBlockAlign(declared: 2, expected: 4).description.contains("2"))
        #expect(WAVError.missingDataChunk.description.contains("'data'"))
        #expect(WAVError.missingDataChunk.identifier == "wav.missingDataChunk")
        #expect(
            WAVError.truncatedHeader(byteCount: 3).errorDescription
                == WAVError.truncatedHeader(byteCount: 3).description)
    }

    @Test func missingFileIsReportedAsNotFound() {
        let path = temporaryPath("absent.wav")
        #expect(throws: WAVError.fileNotFound(path: path)) { try WAVFile(contentsOfFile: path) }
    }

    @Test func directoryIsReportedAsUnreadableWithTheSystemReason() throws {
        let path = temporaryPath("dir.wav")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: path) }
        do {
            _ = try WAVFile(contentsOfFile: path)
            Issue.record("reading a directory succeeded")
        } catch {
            guard case .unreadable(let errorPath, let reason) = error else {
                Issue.record("expected .unreadable, got \(error)")
                return
            }
            #expect(errorPath == path)
            #expect(reason.lowercased().contains("directory"))
        }
    }

    // MARK: Real recordings

    @Test(
        .enabled(if: SharedTestData.isPresent, "shared test data not found at ../shared/testdata; skipped"),
        arguments: [
            ("jfk_16k_mono.wav", 16_000), ("jfk_48k_mono.wav", 48_000),
            ("pystoi_clean_16k.wav", 16_000), ("webrtcvad_leaktest_8k.wav", 8_000)
        ])
    func readsSharedSpeechRecordings(file: String, rate: Int) throws {
        let path = SharedTestData.speech + "/" + file
        let original = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let wav = try WAVFile(contentsOfFile: path)
        #expect(wav.format == AudioFormat(sampleRate: rate, channels: 1))
        #expect(wav.encoding == .pcm16)
        #expect(wav.duration.seconds > 4 && wav.duration.seconds < 12)
        #expect(wav.int16Samples.contains { abs(Int($0)) > 1_000 }, "speech should not be near-silent")
        // These files are canonical 44-byte-header PCM: writing them back must reproduce every byte.
        if original.count >= 44, Array(original[36..<40]) == B.id("data") {
            #expect(try wav.encoded() == original)
        }
    }
}
