/// One 10 ms block of interleaved 16-bit PCM: the unit every stage of the pipeline consumes and produces.
///
/// The sample storage is allocated once, when the frame is made; stages fill an existing frame in
/// place (`withUnsafeMutableSamples`), so a pipeline that reuses its frames allocates nothing per block.
public struct AudioFrame: Sendable {
    /// Every frame is 10 ms long, as in WebRTC and most voice engines.
    public static let durationMilliseconds = 10

    /// The format of `samples`.
    public let format: AudioFormat
    /// Interleaved samples; always `format.samplesPerBlock * format.channels` long.
    public private(set) var samples: [Int16]
    /// Position of the first sample, in samples per channel since the stream started (wraps never in practice).
    public var timestamp: Int64

    /// A silent frame.
    public init(format: AudioFormat, timestamp: Int64 = 0) {
        self.format = format
        self.samples = [Int16](repeating: 0, count: format.samplesPerBlock * format.channels)
        self.timestamp = timestamp
    }

    /// A frame holding `samples`, which must be exactly one 10 ms block of `format`.
    public init(format: AudioFormat, samples: [Int16], timestamp: Int64 = 0) {
        precondition(samples.count == format.samplesPerBlock * format.channels, "a frame is exactly 10 ms of samples")
        self.format = format
        self.samples = samples
        self.timestamp = timestamp
    }

    /// Samples per channel (one 10 ms block at `format.sampleRate`).
    @inlinable public var samplesPerChannel: Int { format.samplesPerBlock }

    /// Reads the samples without copying.
    @inlinable
    public func withUnsafeSamples<R>(_ body: (UnsafeBufferPointer<Int16>) throws -> R) rethrows -> R {
        try samples.withUnsafeBufferPointer(body)
    }

    /// Writes the samples in place; does not allocate while the frame's storage is uniquely referenced.
    public mutating func withUnsafeMutableSamples<R>(_ body: (UnsafeMutableBufferPointer<Int16>) throws -> R) rethrows
        -> R
    {
        try samples.withUnsafeMutableBufferPointer { try body($0) }
    }

    /// Sets every sample to zero.
    public mutating func silence() {
        withUnsafeMutableSamples { buffer in buffer.update(repeating: 0) }
    }
}
