#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// How a WAV file stores its samples: the two encodings the engine reads and writes.
public enum WAVSampleEncoding: String, Sendable, Hashable, CustomStringConvertible {
    /// 16-bit signed little-endian PCM (format tag 0x0001).
    case pcm16
    /// 32-bit IEEE float little-endian, nominal range [-1, 1] (format tag 0x0003).
    case float32

    public var description: String { rawValue }
}

/// A whole WAV file in memory: its format and interleaved samples.
///
/// Reading is strict and total: any input either decodes or throws a ``WAVError`` naming what is wrong; it
/// never traps. Unknown chunks (LIST, fact, cue, …) are skipped, pad bytes of odd-sized chunks included, and a
/// `data` chunk that declares more bytes than the file holds (streaming writers leave 0xFFFFFFFF or
/// 0x7FFFF000 there) is clamped to the whole sample frames present. The redundant byte-rate field is not
/// checked. Writing produces canonical files: a 44-byte header for PCM, and for float a `fmt ` chunk with
/// cbSize 0 plus the `fact` chunk that non-PCM formats require (58-byte header).
///
/// Meant for test vectors, ringtones and recordings, not the real-time path: it holds the whole file.
public struct WAVFile: Sendable, Equatable {
    /// Sample rate and channel count.
    public let format: AudioFormat
    private let storage: Storage

    private enum Storage: Sendable, Equatable {
        case pcm16([Int16])
        case float32([Float])
    }

    /// Wraps 16-bit samples (interleaved; a whole number of frames).
    public init(format: AudioFormat, samples: [Int16]) {
        precondition(samples.count % format.channels == 0, "interleaved samples must fill whole frames")
        self.format = format
        storage = .pcm16(samples)
    }

    /// Wraps float samples in [-1, 1] (interleaved; a whole number of frames).
    public init(format: AudioFormat, samples: [Float]) {
        precondition(samples.count % format.channels == 0, "interleaved samples must fill whole frames")
        self.format = format
        storage = .float32(samples)
    }

    /// How the samples are stored (and will be written).
    public var encoding: WAVSampleEncoding {
        switch storage {
        case .pcm16: .pcm16
        case .float32: .float32
        }
    }

    /// Samples per channel.
    public var frameCount: Int {
        switch storage {
        case .pcm16(let s): s.count / format.channels
        case .float32(let s): s.count / format.channels
        }
    }

    /// Length of the audio.
    public var duration: MediaTime {
        MediaTime(nanoseconds: Int64(frameCount) * 1_000_000_000 / Int64(format.sampleRate))
    }

    /// Interleaved 16-bit samples; float samples are scaled by 32768, rounded and clipped to Int16's range.
    public var int16Samples: [Int16] {
        switch storage {
        case .pcm16(let s): s
        case .float32(let s): s.map(WAVFile.int16)
        }
    }

    /// Interleaved float samples; 16-bit samples are divided by 32768, so they lie in [-1, 1).
    public var floatSamples: [Float] {
        switch storage {
        case .pcm16(let s): s.map { Float($0) / 32768 }
        case .float32(let s): s
        }
    }

    /// Float to 16-bit with clipping (NaN becomes 0): a clipped sample is a bounded error, a wrapped one a click.
    @usableFromInline
    static func int16(_ x: Float) -> Int16 {
        guard !x.isNaN else { return 0 }
        let scaled = (x * 32768).rounded()
        return Int16(max(-32768, min(32767, scaled)))
    }
}

// MARK: - Reading

extension WAVFile {
    /// Decodes a WAV file held in memory (`[UInt8]`, `Data`, …).
    /// - Throws: ``WAVError`` naming what is wrong; never traps on any input.
    public init(bytes: some ContiguousBytes) throws(WAVError) {
        let result = bytes.withUnsafeBytes { WAVParser.parse($0) }
        self = try result.get()
    }

    /// Reads and decodes the WAV file at `path`.
    /// - Throws: ``WAVError/fileNotFound(path:)``, ``WAVError/unreadable(path:reason:)`` or a decoding error.
    public init(contentsOfFile path: String) throws(WAVError) {
        try self.init(bytes: try POSIXFile.readAll(path))
    }

    /// Same as ``init(contentsOfFile:)``, for call sites that read better as a verb.
    public static func read(path: String) throws(WAVError) -> WAVFile {
        try WAVFile(contentsOfFile: path)
    }
}

/// The chunk walk and `fmt ` validation, on raw bytes so no input can index out of range.
private enum WAVParser {
    /// Fields of a validated `fmt ` chunk.
    struct Format {
        var encoding: WAVSampleEncoding
        var channels: Int
        var sampleRate: Int
        var blockAlign: Int
    }

    static func parse(_ bytes: UnsafeRawBufferPointer) -> Result<WAVFile, WAVError> {
        Result { () throws(WAVError) in try decode(bytes) }
    }

    static func decode(_ bytes: UnsafeRawBufferPointer) throws(WAVError) -> WAVFile {
        guard bytes.count >= 12 else { throw .truncatedHeader(byteCount: bytes.count) }
        let riff = fourCC(bytes, 0)
        let form = fourCC(bytes, 8)
        guard riff == "RIFF", form == "WAVE" else {
            throw .notRIFFWAVE(found: riff == "RIFF" ? "RIFF form type \(quoted(bytes, 8))" : quoted(bytes, 0))
        }

        // The RIFF size is ignored: streaming writers leave it wrong, and the file's real end is known.
        var format: Format?
        var data: Range<Int>?
        var offset = 12
        while bytes.count - offset >= 8 {
            let id = fourCC(bytes, offset)
            let size = Int(u32(bytes, offset + 4))
            let body = offset + 8
            let available = bytes.count - body
            if id == "fmt ", format == nil {
                guard size <= available else { throw .truncatedFormatChunk(declaredSize: size, available: available) }
                format = try parseFormat(UnsafeRawBufferPointer(rebasing: bytes[body..<body + size]))
            } else if id == "data", data == nil {
                data = body..<body + min(size, available)
            }
            guard size < available else { break }  // this chunk reaches the end of the file
            offset = body + size + (size & 1)  // odd-sized chunks are followed by a pad byte
        }

        guard let format else { throw .missingFormatChunk }
        guard let data else { throw .missingDataChunk }
        let frames = data.count / format.blockAlign  // a clamped or ragged tail keeps whole frames only
        let sampleCount = frames * format.channels
        let samples = UnsafeRawBufferPointer(rebasing: bytes[data])
        let audioFormat = AudioFormat(sampleRate: format.sampleRate, channels: format.channels)
        switch format.encoding {
        case .pcm16:
            let values = [Int16](unsafeUninitializedCapacity: sampleCount) { buffer, initialized in
                for i in 0..<sampleCount {
                    buffer[i] = Int16(bitPattern: u16(samples, 2 * i))
                }
                initialized = sampleCount
            }
            return WAVFile(format: audioFormat, samples: values)
        case .float32:
            let values = [Float](unsafeUninitializedCapacity: sampleCount) { buffer, initialized in
                for i in 0..<sampleCount {
                    buffer[i] = Float(bitPattern: u32(samples, 4 * i))
                }
                initialized = sampleCount
            }
            return WAVFile(format: audioFormat, samples: values)
        }
    }

    /// The tail every standard KSDATAFORMAT_SUBTYPE GUID shares after its 2-byte format tag and 2 zero bytes.
    static let subformatSuffix: [UInt8] = [0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71]

    static func parseFormat(_ chunk: UnsafeRawBufferPointer) throws(WAVError) -> Format {
        guard chunk.count >= 16 else { throw .formatChunkTooShort(size: chunk.count, required: 16) }
        var tag = u16(chunk, 0)
        let channels = Int(u16(chunk, 2))
        let sampleRate = Int(u32(chunk, 4))
        let blockAlign = Int(u16(chunk, 12))
        let bits = Int(u16(chunk, 14))

        if tag == 0xFFFE {
            // WAVE_FORMAT_EXTENSIBLE: cbSize(2) validBits(2) channelMask(4) subformat GUID(16).
            guard chunk.count >= 40 else { throw .formatChunkTooShort(size: chunk.count, required: 40) }
            guard u16(chunk, 26) == 0, subformatSuffix.indices.allSatisfy({ chunk[28 + $0] == subformatSuffix[$0] })
            else { throw .unsupportedSubformat(guid: guidString(UnsafeRawBufferPointer(rebasing: chunk[24..<40]))) }
            tag = u16(chunk, 24)
        }

        let encoding: WAVSampleEncoding
        switch tag {
        case 0x0001: encoding = .pcm16
        case 0x0003: encoding = .float32
        default: throw .unsupportedCodec(formatTag: tag)
        }
        let bytesPerSample = encoding == .pcm16 ? 2 : 4
        guard bits == 8 * bytesPerSample else { throw .unsupportedBitDepth(bits: bits, encoding: encoding) }
        guard channels > 0 else { throw .zeroChannels }
        guard sampleRate > 0 else { throw .zeroSampleRate }
        guard blockAlign == channels * bytesPerSample else {
            throw .inconsistentBlockAlign(declared: blockAlign, expected: channels * bytesPerSample)
        }
        return Format(encoding: encoding, channels: channels, sampleRate: sampleRate, blockAlign: blockAlign)
    }

    static func u16(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt16 {
        UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
    }

    static func u32(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt32 {
        UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    /// Four bytes as text when they are printable ASCII (chunk ids always are), else nil.
    static func fourCC(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> String? {
        let raw = bytes[offset..<offset + 4]
        guard raw.allSatisfy({ (0x20...0x7E).contains($0) }) else { return nil }
        return String(decoding: raw, as: UTF8.self)
    }

    /// Four bytes for an error message: `"fLaC"`, or hex when not printable.
    static func quoted(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> String {
        if let text = fourCC(bytes, offset) { return "\"\(text)\"" }
        return "bytes " + bytes[offset..<offset + 4].map { hex($0, digits: 2) }.joined(separator: " ")
    }

    /// A GUID in its registry spelling, e.g. `00000055-0000-0010-8000-00AA00389B71`.
    static func guidString(_ g: UnsafeRawBufferPointer) -> String {
        let tail = g[8..<16].map { hex($0, digits: 2) }
        return hex(u32(g, 0), digits: 8) + "-" + hex(u16(g, 4), digits: 4) + "-" + hex(u16(g, 6), digits: 4) + "-"
            + tail[0..<2].joined() + "-" + tail[2..<8].joined()
    }

    static func hex(_ value: some BinaryInteger, digits: Int) -> String {
        let text = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}

// MARK: - Writing

extension WAVFile {
    /// The file's bytes: a canonical 44-byte-header PCM file, or for float a `fmt ` chunk with cbSize 0 and a
    /// `fact` chunk (58-byte header).
    /// - Throws: ``WAVError/tooLargeForWAV(dataBytes:)`` past RIFF's 4 GiB, or
    ///   ``WAVError/formatNotRepresentable(_:)``.
    public func encoded() throws(WAVError) -> [UInt8] {
        let bytesPerSample = encoding == .pcm16 ? 2 : 4
        let blockAlign = format.channels * bytesPerSample
        guard blockAlign <= Int(UInt16.max), format.sampleRate <= Int(UInt32.max),
            format.sampleRate * blockAlign <= Int(UInt32.max)
        else { throw .formatNotRepresentable(format) }
        let dataBytes = frameCount * blockAlign
        let headerBytes = encoding == .pcm16 ? 44 : 58
        guard headerBytes - 8 + dataBytes <= Int(UInt32.max) else { throw .tooLargeForWAV(dataBytes: dataBytes) }

        var out: [UInt8] = []
        out.reserveCapacity(headerBytes + dataBytes)
        func put(_ text: String) { out.append(contentsOf: text.utf8) }
        func put16(_ v: Int) { withUnsafeBytes(of: UInt16(v).littleEndian) { out.append(contentsOf: $0) } }
        func put32(_ v: Int) { withUnsafeBytes(of: UInt32(v).littleEndian) { out.append(contentsOf: $0) } }

        put("RIFF")
        put32(headerBytes - 8 + dataBytes)
        put("WAVE")
        put("fmt ")
        put32(encoding == .pcm16 ? 16 : 18)
        put16(encoding == .pcm16 ? 0x0001 : 0x0003)
        put16(format.channels)
        put32(format.sampleRate)
        put32(format.sampleRate * blockAlign)
        put16(blockAlign)
        put16(8 * bytesPerSample)
        if encoding == .float32 {
            put16(0)  // cbSize
            put("fact")
            put32(4)
            put32(frameCount)
        }
        put("data")
        put32(dataBytes)
        switch storage {
        case .pcm16(let samples):
            for s in samples { put16(Int(UInt16(bitPattern: s))) }
        case .float32(let samples):
            for s in samples { put32(Int(s.bitPattern)) }
        }
        return out  // sample data is always an even number of bytes, so no pad byte
    }

    /// Writes the file to `path`, replacing any file there.
    /// - Throws: ``WAVError/writeFailed(path:reason:)`` or an encoding error.
    public func write(toFile path: String) throws(WAVError) {
        try POSIXFile.writeAll(try encoded(), to: path)
    }

    /// Writes 16-bit samples as a PCM WAV file in one call.
    public static func write(pcm16 samples: [Int16], format: AudioFormat, to path: String) throws(WAVError) {
        try WAVFile(format: format, samples: samples).write(toFile: path)
    }

    /// Writes float samples as a 32-bit IEEE float WAV file in one call.
    public static func write(float32 samples: [Float], format: AudioFormat, to path: String) throws(WAVError) {
        try WAVFile(format: format, samples: samples).write(toFile: path)
    }
}

/// Whole-file I/O with `errno` reasons ("Permission denied"), which say more than Foundation's wrapped codes.
private enum POSIXFile {
    static func readAll(_ path: String) throws(WAVError) -> [UInt8] {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT { throw .fileNotFound(path: path) }
            throw .unreadable(path: path, reason: reason(code))
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw .unreadable(path: path, reason: reason(errno))
            }
            if n == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<n])
        }
    }

    static func writeAll(_ bytes: [UInt8], to path: String) throws(WAVError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { throw .writeFailed(path: path, reason: reason(errno)) }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
            if n < 0 {
                if errno == EINTR { continue }
                let code = errno
                close(fd)
                throw .writeFailed(path: path, reason: reason(code))
            }
            written += n
        }
        guard close(fd) == 0 else { throw .writeFailed(path: path, reason: reason(errno)) }
    }

    static func reason(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}
