/// The shape of a PCM stream: sample rate and channel count. Samples are interleaved.
public struct AudioFormat: Hashable, Sendable, CustomStringConvertible {
    /// Samples per second per channel.
    public var sampleRate: Int
    /// Interleaved channels (1 = mono, 2 = stereo).
    public var channels: Int

    public init(sampleRate: Int, channels: Int = 1) {
        precondition(sampleRate > 0, "sample rate must be positive")
        precondition(channels > 0, "channel count must be positive")
        self.sampleRate = sampleRate
        self.channels = channels
    }

    /// The rates the engine's codec and processing stages run at (Opus's native rates).
    public static let voiceRates: [Int] = [8_000, 12_000, 16_000, 24_000, 48_000]

    public static let mono8k = AudioFormat(sampleRate: 8_000)
    public static let mono16k = AudioFormat(sampleRate: 16_000)
    public static let mono48k = AudioFormat(sampleRate: 48_000)

    /// Samples per channel in `milliseconds` of audio. The duration must hold a whole number of samples.
    @inlinable
    public func samplesPerChannel(milliseconds: Int) -> Int {
        precondition(
            (sampleRate * milliseconds) % 1000 == 0,
            "\(milliseconds) ms is not a whole number of samples at \(sampleRate) Hz")
        return sampleRate * milliseconds / 1000
    }

    /// Interleaved samples (all channels) in `milliseconds` of audio.
    @inlinable
    public func interleavedSamples(milliseconds: Int) -> Int {
        samplesPerChannel(milliseconds: milliseconds) * channels
    }

    /// Samples per channel in one 10 ms block, the engine's unit of processing.
    @inlinable
    public var samplesPerBlock: Int { samplesPerChannel(milliseconds: AudioFrame.durationMilliseconds) }

    public var description: String {
        "\(sampleRate) Hz \(channels == 1 ? "mono" : channels == 2 ? "stereo" : "\(channels) ch")"
    }
}
