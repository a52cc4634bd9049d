/// Why a WAV file could not be read or written. Every message names what is wrong, so a rejected ringtone
/// or test vector says how to fix it.
public enum WAVError: VoiceEngineError, Equatable {
    /// No file at `path`.
    case fileNotFound(path: String)
    /// The file exists but could not be read (permissions, a directory, an I/O error).
    case unreadable(path: String, reason: String)
    /// Fewer bytes than the 12-byte RIFF/WAVE header.
    case truncatedHeader(byteCount: Int)
    /// The first 12 bytes are not `RIFF....WAVE`; `found` is what is there (e.g. `"RF64"`, `"fLaC"`).
    case notRIFFWAVE(found: String)
    /// No `fmt ` chunk before the end of the file.
    case missingFormatChunk
    /// The `fmt ` chunk is shorter than its format needs (16 bytes, 40 for WAVE_FORMAT_EXTENSIBLE).
    case formatChunkTooShort(size: Int, required: Int)
    /// The `fmt ` chunk declares more bytes than the file holds.
    case truncatedFormatChunk(declaredSize: Int, available: Int)
    /// A codec other than PCM or IEEE float (`formatTag` is the WAVE format tag, e.g. 0x0055 for MP3).
    case unsupportedCodec(formatTag: UInt16)
    /// A WAVE_FORMAT_EXTENSIBLE file whose sub-format GUID is not the standard PCM or float one.
    case unsupportedSubformat(guid: String)
    /// A bit depth other than 16 for PCM or 32 for float.
    case unsupportedBitDepth(bits: Int, encoding: WAVSampleEncoding)
    /// The format declares zero channels.
    case zeroChannels
    /// The format declares a sample rate of zero.
    case zeroSampleRate
    /// The declared block align is not channels × bytes per sample.
    case inconsistentBlockAlign(declared: Int, expected: Int)
    /// No `data` chunk before the end of the file.
    case missingDataChunk
    /// The samples do not fit the 32-bit sizes of a RIFF file.
    case tooLargeForWAV(dataBytes: Int)
    /// The format cannot be expressed in a WAV header (more than 65535 channels, a rate above 2³² Hz).
    case formatNotRepresentable(AudioFormat)
    /// Writing the file failed.
    case writeFailed(path: String, reason: String)

    public var identifier: String {
        switch self {
        case .fileNotFound: "wav.fileNotFound"
        case .unreadable: "wav.unreadable"
        case .truncatedHeader: "wav.truncatedHeader"
        case .notRIFFWAVE: "wav.notRIFFWAVE"
        case .missingFormatChunk: "wav.missingFormatChunk"
        case .formatChunkTooShort: "wav.formatChunkTooShort"
        case .truncatedFormatChunk: "wav.truncatedFormatChunk"
        case .unsupportedCodec: "wav.unsupportedCodec"
        case .unsupportedSubformat: "wav.unsupportedSubformat"
        case .unsupportedBitDepth: "wav.unsupportedBitDepth"
        case .zeroChannels: "wav.zeroChannels"
        case .zeroSampleRate: "wav.zeroSampleRate"
        case .inconsistentBlockAlign: "wav.inconsistentBlockAlign"
        case .missingDataChunk: "wav.missingDataChunk"
        case .tooLargeForWAV: "wav.tooLargeForWAV"
        case .formatNotRepresentable: "wav.formatNotRepresentable"
        case .writeFailed: "wav.writeFailed"
        }
    }

    public var description: String {
        switch self {
        case .fileNotFound(let path):
            "WAV file not found: \(path)"
        case .unreadable(let path, let reason):
            "WAV file \(path) could not be read: \(reason)"
        case .truncatedHeader(let byteCount):
            "not a WAV file: \(byteCount) bytes is shorter than the 12-byte RIFF/WAVE header"
        case .notRIFFWAVE(let found):
            "not a WAV file: expected a RIFF/WAVE header, found \(found)"
        case .missingFormatChunk:
            "WAV file has no 'fmt ' chunk describing its samples"
        case .formatChunkTooShort(let size, let required):
            "WAV 'fmt ' chunk is \(size) bytes, its format needs at least \(required)"
        case .truncatedFormatChunk(let declared, let available):
            "WAV 'fmt ' chunk declares \(declared) bytes but the file ends after \(available)"
        case .unsupportedCodec(let tag):
            "unsupported WAV codec \(WAVError.codecName(tag)); only 16-bit PCM (0x0001) and 32-bit IEEE float "
                + "(0x0003) are supported"
        case .unsupportedSubformat(let guid):
            "unsupported WAVE_FORMAT_EXTENSIBLE sub-format \(guid); only PCM and IEEE float are supported"
        case .unsupportedBitDepth(let bits, let encoding):
            "unsupported WAV bit depth: \(bits)-bit \(encoding == .pcm16 ? "PCM" : "IEEE float"); "
                + "only 16-bit PCM and 32-bit float are supported"
        case .zeroChannels:
            "WAV format declares zero channels"
        case .zeroSampleRate:
            "WAV format declares a sample rate of 0 Hz"
        case .inconsistentBlockAlign(let declared, let expected):
            "WAV block align is \(declared) bytes, but channels × bytes per sample is \(expected)"
        case .missingDataChunk:
            "WAV file has no 'data' chunk"
        case .tooLargeForWAV(let dataBytes):
            "\(dataBytes) bytes of samples do not fit a WAV file (limit about 4 GiB)"
        case .formatNotRepresentable(let format):
            "\(format) cannot be stored in a WAV header"
        case .writeFailed(let path, let reason):
            "could not write WAV file \(path): \(reason)"
        }
    }

    /// `0x0055 (MP3)`: the tag in hex, with its name when it is a well-known one.
    static func codecName(_ tag: UInt16) -> String {
        let digits = String(tag, radix: 16, uppercase: true)
        let hex = "0x" + String(repeating: "0", count: 4 - digits.count) + digits
        let name: String? =
            switch tag {
            case 0x0001: "PCM"
            case 0x0002: "Microsoft ADPCM"
            case 0x0003: "IEEE float"
            case 0x0006: "A-law"
            case 0x0007: "µ-law"
            case 0x0011: "IMA ADPCM"
            case 0x0031: "GSM 6.10"
            case 0x0050: "MPEG audio"
            case 0x0055: "MP3"
            case 0x00FF: "AAC"
            case 0x2000: "AC-3"
            case 0x704F: "Opus"
            case 0xF1AC: "FLAC"
            case 0xFFFE: "WAVE_FORMAT_EXTENSIBLE"
            default: nil
            }
        return name.map { "\(hex) (\($0))" } ?? hex
    }
}
