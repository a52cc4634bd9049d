import VoiceCore
import VoiceDSP

/// Why a sound file (ringtone, progress tone recording) was rejected. ``property`` names what is wrong, so the
/// message says how to fix the file.
public struct SoundFileError: VoiceEngineError, Equatable {
    /// The property of the file that breaks the rules.
    public enum Property: String, Sendable, Hashable, CustomStringConvertible {
        /// Not mono.
        case channelCount = "channel count"
        /// Not 16 bits per sample.
        case bitDepth = "bit depth"
        /// Not 8, 16 or 32 kHz.
        case sampleRate = "sample rate"
        /// Not PCM (IEEE float, MP3, A-law …).
        case codec
        /// Not a well-formed WAV file (header, chunks, sizes).
        case malformed = "malformed file"
        /// Missing or unreadable.
        case unreadable = "unreadable file"
        /// No samples.
        case empty = "length"
        /// The conversion to the device rate failed.
        case resampling

        public var description: String { rawValue }
    }

    /// What is wrong.
    public let property: Property
    /// The file's path, or a name for a file given in memory.
    public let file: String
    /// The offending value or the reason (`"2 channels"`, the WAV parser's message).
    public let detail: String
    /// The WAV reader's error, when the file could not be read as WAV at all.
    public let wavError: WAVError?

    public init(property: Property, file: String, detail: String, wavError: WAVError? = nil) {
        self.property = property
        self.file = file
        self.detail = detail
        self.wavError = wavError
    }

    public var identifier: String {
        switch property {
        case .channelCount: "soundFile.channelCount"
        case .bitDepth: "soundFile.bitDepth"
        case .sampleRate: "soundFile.sampleRate"
        case .codec: "soundFile.codec"
        case .malformed: "soundFile.malformed"
        case .unreadable: "soundFile.unreadable"
        case .empty: "soundFile.empty"
        case .resampling: "soundFile.resampling"
        }
    }

    public var description: String {
        "sound file \(file) rejected: unsupported \(property): \(detail); a sound file must be a mono, 16-bit PCM "
            + "WAV file at 8, 16 or 32 kHz"
    }

    /// The rejection a WAV reader error means.
    init(wavError: WAVError, file: String) {
        let property: Property
        switch wavError {
        case .fileNotFound, .unreadable: property = .unreadable
        case .unsupportedCodec, .unsupportedSubformat: property = .codec
        case .unsupportedBitDepth: property = .bitDepth
        case .zeroChannels: property = .channelCount
        case .zeroSampleRate: property = .sampleRate
        default: property = .malformed
        }
        self.init(property: property, file: file, detail: wavError.description, wavError: wavError)
    }
}

/// A validated sound file: mono 16-bit PCM at 8, 16 or 32 kHz, as ARCHITECTURE.md §4 requires of ringtones.
public struct SoundFile: Sendable, Equatable {
    /// The sample rates a sound file may have.
    public static let allowedSampleRates = [8_000, 16_000, 32_000]

    /// The path or name it was loaded from.
    public let name: String
    /// The file's rate.
    public let sampleRate: Int
    /// Mono samples.
    public let samples: [Int16]

    /// Reads and validates the WAV file at `path`.
    /// - Throws: ``SoundFileError`` naming the offending property (or wrapping the WAV reader's error).
    public init(path: String) throws(SoundFileError) {
        let wav: WAVFile
        do { wav = try WAVFile(contentsOfFile: path) } catch { throw SoundFileError(wavError: error, file: path) }
        try self.init(wav: wav, name: path)
    }

    /// Validates a WAV file already in memory.
    /// - Throws: ``SoundFileError`` naming the offending property.
    public init(wav: WAVFile, name: String = "(in memory)") throws(SoundFileError) {
        // The WAV reader accepts 32-bit IEEE float; sound files must be PCM.
        guard wav.encoding == .pcm16 else {
            throw SoundFileError(property: .codec, file: name, detail: "32-bit IEEE float (format tag 0x0003)")
        }
        guard wav.format.channels == 1 else {
            throw SoundFileError(property: .channelCount, file: name, detail: "\(wav.format.channels) channels")
        }
        guard Self.allowedSampleRates.contains(wav.format.sampleRate) else {
            throw SoundFileError(property: .sampleRate, file: name, detail: "\(wav.format.sampleRate) Hz")
        }
        guard wav.frameCount > 0 else {
            throw SoundFileError(property: .empty, file: name, detail: "the file holds no samples")
        }
        self.name = name
        sampleRate = wav.format.sampleRate
        samples = wav.int16Samples
    }

    /// The samples converted to `rate`, ready to be mixed.
    ///
    /// For a loop the conversion treats the file as periodic: it converts several copies end to end and keeps
    /// the middle one, so the filter sees the file's own end before its start and the loop point has no
    /// discontinuity. A one-shot file is converted with silence around it. The result has
    /// `round(count × rate / sampleRate)` samples. When that product is not a whole number (an odd-length
    /// 32 kHz file at 48 kHz, an 8 kHz file whose length is not a multiple of 80 at 44.1 kHz), the loop is up to
    /// half a device sample shorter or longer than the file: a slip of at most half a sample period (10 µs at
    /// 48 kHz) at the loop point, and otherwise the loop is exact.
    /// - Throws: ``SoundFileError`` (``SoundFileError/Property/resampling``) if the resampler fails.
    public func samples(atRate rate: Int, loop: Bool) throws(SoundFileError) -> [Int16] {
        guard rate != sampleRate else { return samples }
        do {
            return try Self.resample(samples, from: sampleRate, to: rate, loop: loop)
        } catch {
            throw SoundFileError(property: .resampling, file: name, detail: error.description)
        }
    }

    private static func resample(
        _ x: [Int16], from inRate: Int, to outRate: Int, loop: Bool
    ) throws(ResamplerError) -> [Int16] {
        let resampler = try Resampler(inputRate: inRate, outputRate: outRate, channels: 1)
        let n = x.count
        let ratio = Double(outRate) / Double(inRate)
        let outLength = Int((Double(n) * ratio).rounded())
        // Copies either side of the kept one: enough to cover the filter's reach.
        let side = loop ? (resampler.inputLatency + n - 1) / n + 1 : 0
        var input: [Int16] = []
        input.reserveCapacity(n * (2 * side + 1))
        for _ in 0..<(2 * side + 1) { input += x }
        var output = [Int16](repeating: 0, count: resampler.maximumOutputCount(forInput: input.count) + 64)
        resampler.skipZeros()
        var produced = 0
        try input.withUnsafeBufferPointer { (inBuf) throws(ResamplerError) in
            try output.withUnsafeMutableBufferPointer { (outBuf) throws(ResamplerError) in
                produced = try resampler.process(inBuf, into: outBuf).produced
                produced += try resampler.drain(into: UnsafeMutableBufferPointer(rebasing: outBuf[produced...]))
            }
        }
        let start = Int((Double(side * n) * ratio).rounded())
        var result = [Int16](repeating: 0, count: outLength)
        let available = max(0, min(outLength, produced - start))
        result[0..<available] = output[start..<start + available]
        return result
    }
}
