import VoiceCore

#if canImport(Glibc)
import Glibc
#endif

/// What a file-backed microphone does when it reaches the end of its file.
public enum EndOfFileBehavior: Sendable, Hashable {
    /// Starts again from the first sample (a ringtone-like endless source).
    case loop
    /// Delivers silence from then on and sends ``DeviceEvent/endOfInput`` once.
    case silence
}

/// A WAV file as the microphone: each period delivers the file's next samples into the ring, in the file's
/// own format (file devices do not resample).
public final class FileCaptureDevice: ClockedAudioDevice, @unchecked Sendable {
    // @unchecked Sendable: see ClockedAudioDevice; this subclass adds only immutable state.

    /// Opens the WAV file at `path` (16-bit PCM or float, any rate and channel count).
    /// - Parameters:
    ///   - format: the format the chain expects; nil accepts the file's. A different format is an error.
    ///   - periodMilliseconds: period length; 10 ms by default.
    ///   - clocking: real-time thread or manual fast time.
    ///   - endOfFile: loop, or silence plus an end event.
    ///   - ring: the ring to fill; by default a new one of 32 periods.
    ///   - realtimePriority: SCHED_FIFO priority for the real-time thread, nil for normal scheduling.
    /// - Throws: ``AudioDeviceError/wav(_:)``, ``AudioDeviceError/formatMismatch(device:requested:found:)``,
    ///   ``AudioDeviceError/invalidPeriod(milliseconds:format:)``.
    public init(
        path: String, format: AudioFormat? = nil, periodMilliseconds: Int = 10, clocking: DeviceClocking,
        endOfFile: EndOfFileBehavior = .silence, ring: SampleRing? = nil, realtimePriority: Int32? = nil
    ) throws(AudioDeviceError) {
        let file: WAVFile
        do { file = try WAVFile(contentsOfFile: path) } catch { throw .wav(error) }
        if let format, format != file.format {
            throw .formatMismatch(device: path, requested: format, found: file.format)
        }
        try super.init(
            name: path, direction: .capture, format: file.format, periodMilliseconds: periodMilliseconds,
            clocking: clocking, ring: ring, realtimePriority: realtimePriority,
            port: FileSource(samples: file.int16Samples, endOfFile: endOfFile))
    }
}

/// A WAV file as the speaker: every period played is appended to the file as it happens (16-bit PCM, the
/// device's format); the header's sizes are written when the device is closed.
public final class FilePlayoutDevice: ClockedAudioDevice, @unchecked Sendable {
    // @unchecked Sendable: see ClockedAudioDevice; this subclass adds only immutable state.
    private let sink: FileSink

    /// Creates (or truncates) the WAV file at `path`.
    /// - Throws: ``AudioDeviceError/fileWriteFailed(path:reason:)``,
    ///   ``AudioDeviceError/invalidPeriod(milliseconds:format:)``.
    public init(
        path: String, format: AudioFormat, periodMilliseconds: Int = 10, clocking: DeviceClocking,
        ring: SampleRing? = nil, realtimePriority: Int32? = nil
    ) throws(AudioDeviceError) {
        let sink = try FileSink(path: path, format: format)
        self.sink = sink
        try super.init(
            name: path, direction: .playout, format: format, periodMilliseconds: periodMilliseconds,
            clocking: clocking, ring: ring, realtimePriority: realtimePriority, port: sink)
    }

    /// The first write or finalisation error, if any (the audio thread cannot throw; it stops writing).
    public var writeError: AudioDeviceError? { sink.error }

    /// Closes the device and reports whether the file was written completely.
    /// - Throws: ``AudioDeviceError/fileWriteFailed(path:reason:)``.
    public func finalize() throws(AudioDeviceError) {
        close()
        if let error = sink.error { throw error }
    }
}

/// A device that captures silence or discards what it plays, with the same timing as a real one.
public final class NullAudioDevice: ClockedAudioDevice, @unchecked Sendable {
    // @unchecked Sendable: see ClockedAudioDevice; this subclass adds no state.

    /// - Throws: ``AudioDeviceError/invalidPeriod(milliseconds:format:)``.
    public init(
        direction: AudioDirection, format: AudioFormat, periodMilliseconds: Int = 10, clocking: DeviceClocking,
        ring: SampleRing? = nil, realtimePriority: Int32? = nil
    ) throws(AudioDeviceError) {
        try super.init(
            name: "null", direction: direction, format: format, periodMilliseconds: periodMilliseconds,
            clocking: clocking, ring: ring, realtimePriority: realtimePriority, port: NullPort())
    }
}

// MARK: - Ports

final class NullPort: PeriodPort {
    func fill(_ buffer: UnsafeMutableBufferPointer<Int16>) -> Bool {
        buffer.update(repeating: 0)
        return false
    }
    func consume(_ buffer: UnsafeBufferPointer<Int16>) {}
    func finish() {}
}

/// The microphone's samples, copied once into storage this object owns; reading never allocates.
final class FileSource: PeriodPort {
    private let samples: UnsafeMutableBufferPointer<Int16>
    private let endOfFile: EndOfFileBehavior
    private var position = 0
    private var ended = false

    init(samples: [Int16], endOfFile: EndOfFileBehavior) {
        self.samples = .allocate(capacity: samples.count)
        _ = self.samples.initialize(from: samples)
        self.endOfFile = endOfFile
    }

    deinit { samples.deallocate() }

    func fill(_ buffer: UnsafeMutableBufferPointer<Int16>) -> Bool {
        var filled = 0
        while filled < buffer.count {
            if position == samples.count {
                if endOfFile == .loop && samples.count > 0 {
                    position = 0
                } else {
                    UnsafeMutableBufferPointer(rebasing: buffer[filled...]).update(repeating: 0)
                    let first = !ended
                    ended = true
                    return first
                }
            }
            let n = min(buffer.count - filled, samples.count - position)
            _ = UnsafeMutableBufferPointer(rebasing: buffer[filled..<filled + n])
                .update(fromContentsOf: UnsafeBufferPointer(rebasing: samples[position..<position + n]))
            filled += n
            position += n
        }
        return false
    }

    func consume(_ buffer: UnsafeBufferPointer<Int16>) {}
    func finish() {}
}

/// Streams 16-bit PCM to a WAV file with POSIX calls: a 44-byte header with placeholder sizes, the samples
/// appended per period (no allocation, one `write` per period), the sizes patched on `finish()`.
final class FileSink: PeriodPort, @unchecked Sendable {
    // @unchecked Sendable: `error` and the counters are written by the audio side while running and read by the
    // control plane only after the device has stopped (or as an advisory snapshot).
    let path: String
    private let format: AudioFormat
    private var descriptor: Int32
    private var dataBytes = 0
    private(set) var error: AudioDeviceError?
    #if _endian(big)
    private var swapped: [Int16] = []
    #endif

    init(path: String, format: AudioFormat) throws(AudioDeviceError) {
        self.path = path
        self.format = format
        descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw .fileWriteFailed(path: path, reason: String(cString: strerror(errno))) }
        let header = FileSink.header(format: format, dataBytes: 0)
        guard header.withUnsafeBytes({ FileSink.writeAll(descriptor, $0) }) else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw .fileWriteFailed(path: path, reason: reason)
        }
    }

    deinit { if descriptor >= 0 { close(descriptor) } }

    func fill(_ buffer: UnsafeMutableBufferPointer<Int16>) -> Bool { false }

    func consume(_ buffer: UnsafeBufferPointer<Int16>) {
        guard error == nil, descriptor >= 0 else { return }
        #if _endian(big)
        swapped.removeAll(keepingCapacity: true)
        swapped.append(contentsOf: buffer.map { $0.littleEndian })
        let ok = swapped.withUnsafeBytes { FileSink.writeAll(descriptor, $0) }
        #else
        let ok = FileSink.writeAll(descriptor, UnsafeRawBufferPointer(buffer))
        #endif
        if ok {
            dataBytes += buffer.count * 2
        } else {
            error = .fileWriteFailed(path: path, reason: String(cString: strerror(errno)))
        }
    }

    func finish() {
        guard descriptor >= 0 else { return }
        if error == nil {
            if dataBytes > Int(UInt32.max) - 36 {
                error = .fileWriteFailed(path: path, reason: "more than 4 GiB of samples do not fit a WAV file")
            } else {
                let header = FileSink.header(format: format, dataBytes: dataBytes)
                let ok = header.withUnsafeBytes { raw in pwrite(descriptor, raw.baseAddress, raw.count, 0) == raw.count
                }
                if !ok { error = .fileWriteFailed(path: path, reason: String(cString: strerror(errno))) }
            }
        }
        if close(descriptor) != 0 && error == nil {
            error = .fileWriteFailed(path: path, reason: String(cString: strerror(errno)))
        }
        descriptor = -1
    }

    private static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += n
        }
        return true
    }

    /// The canonical 44-byte PCM header (the same layout `WAVFile` writes).
    static func header(format: AudioFormat, dataBytes: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(44)
        func put(_ text: String) { out.append(contentsOf: text.utf8) }
        func put16(_ v: Int) {
            withUnsafeBytes(of: UInt16(truncatingIfNeeded: v).littleEndian) { out.append(contentsOf: $0) }
        }
        func put32(_ v: Int) {
            withUnsafeBytes(of: UInt32(truncatingIfNeeded: v).littleEndian) { out.append(contentsOf: $0) }
        }
        let blockAlign = format.channels * 2
        put("RIFF")
        put32(36 + dataBytes)
        put("WAVE")
        put("fmt ")
        put32(16)
        put16(1)
        put16(format.channels)
        put32(format.sampleRate)
        put32(format.sampleRate * blockAlign)
        put16(blockAlign)
        put16(16)
        put("data")
        put32(dataBytes)
        return out
    }
}
