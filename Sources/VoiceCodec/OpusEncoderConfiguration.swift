internal import COpus

/// The libopus coding mode to optimise for; fixed when the encoder is created.
public enum OpusApplication: Sendable, Hashable, CaseIterable {
    /// `OPUS_APPLICATION_VOIP`: speech intelligibility; uses SILK at speech bitrates, which is what carries
    /// in-band FEC.
    case voip
    /// `OPUS_APPLICATION_AUDIO`: fidelity for music and mixed content.
    case audio
    /// `OPUS_APPLICATION_RESTRICTED_LOWDELAY`: CELT only, lowest delay; no SILK, hence no in-band FEC.
    case restrictedLowDelay

    var cValue: Int32 {
        switch self {
        case .voip: OPUS_APPLICATION_VOIP
        case .audio: OPUS_APPLICATION_AUDIO
        case .restrictedLowDelay: OPUS_APPLICATION_RESTRICTED_LOWDELAY
        }
    }
}

/// The duration of audio one `encode` call consumes and one packet carries.
public enum OpusFrameDuration: Int, Sendable, CaseIterable {
    case ms10 = 10
    case ms20 = 20
    case ms40 = 40
    case ms60 = 60

    /// Duration in milliseconds.
    public var milliseconds: Int { rawValue }

    /// Samples per channel in one frame at `sampleRate`.
    public func samplesPerChannel(atSampleRate sampleRate: Int) -> Int { sampleRate * rawValue / 1000 }
}

/// Everything an `OpusEncoder` is created with. Values are validated by `validate()` (called by
/// `OpusEncoder.init`), so a bad value becomes a thrown `OpusError` of kind `.badArgument` naming the field.
public struct OpusEncoderConfiguration: Sendable, Hashable {
    /// The sample rates libopus accepts for PCM input and output.
    public static let supportedSampleRates: [Int] = [8_000, 12_000, 16_000, 24_000, 48_000]
    /// Bitrates accepted, in bits per second: the range RFC 6716 defines for Opus (6 kb/s to 510 kb/s).
    public static let bitrateRange: ClosedRange<Int> = 6_000...510_000

    /// PCM sample rate in Hz: 8000, 12000, 16000, 24000 or 48000.
    public var sampleRate: Int
    /// 1 (mono) or 2 (stereo, interleaved).
    public var channels: Int
    /// Coding mode, fixed for the encoder's lifetime.
    public var application: OpusApplication
    /// Frame duration of every `encode` call.
    public var frameDuration: OpusFrameDuration
    /// Target bitrate in bits per second (see `bitrateRange`).
    public var bitrate: Int
    /// Encoder complexity 0...10: CPU cost against quality.
    public var complexity: Int
    /// Variable bitrate (true) or hard constant bitrate (false).
    public var variableBitrate: Bool
    /// In-band forward error correction (SILK LBRR): each packet carries a low-rate copy of the previous frame.
    /// Only takes effect in SILK or hybrid mode (voip at speech bitrates) and with `expectedLossPercent > 0`.
    public var inbandFEC: Bool
    /// The packet loss the encoder should expect, 0...100; drives how many bits it spends on FEC.
    public var expectedLossPercent: Int
    /// Discontinuous transmission: during silence the encoder emits 1-2 byte packets (and, after a while,
    /// none worth sending) to save bandwidth.
    public var dtx: Bool

    public init(
        sampleRate: Int = 48_000, channels: Int = 1, application: OpusApplication = .voip,
        frameDuration: OpusFrameDuration = .ms20, bitrate: Int = 32_000, complexity: Int = 9,
        variableBitrate: Bool = true, inbandFEC: Bool = false, expectedLossPercent: Int = 0, dtx: Bool = false
    ) {
        self.sampleRate = sampleRate
        self.channels = channels
        self.application = application
        self.frameDuration = frameDuration
        self.bitrate = bitrate
        self.complexity = complexity
        self.variableBitrate = variableBitrate
        self.inbandFEC = inbandFEC
        self.expectedLossPercent = expectedLossPercent
        self.dtx = dtx
    }

    /// Samples per channel in one frame: `sampleRate * frameDuration / 1000` (e.g. 960 for 20 ms at 48 kHz).
    public var samplesPerChannelPerFrame: Int { frameDuration.samplesPerChannel(atSampleRate: sampleRate) }

    /// Interleaved samples in one frame, the exact count `OpusEncoder.encode` takes:
    /// `samplesPerChannelPerFrame * channels`.
    public var samplesPerFrame: Int { samplesPerChannelPerFrame * channels }

    /// Checks every field against what libopus accepts.
    /// - Throws: `OpusError` of kind `.badArgument` whose `field` names the first invalid field
    ///   (`sampleRate`, `channels`, `bitrate`, `complexity` or `expectedLossPercent`).
    public func validate() throws(OpusError) {
        if !Self.supportedSampleRates.contains(sampleRate) { throw Self.invalid("sampleRate") }
        if channels != 1 && channels != 2 { throw Self.invalid("channels") }
        try Self.validateBitrate(bitrate)
        try Self.validateComplexity(complexity)
        try Self.validateExpectedLoss(expectedLossPercent)
    }

    static func validateBitrate(_ bps: Int) throws(OpusError) {
        if !bitrateRange.contains(bps) { throw invalid("bitrate") }
    }

    static func validateComplexity(_ c: Int) throws(OpusError) {
        if !(0...10).contains(c) { throw invalid("complexity") }
    }

    static func validateExpectedLoss(_ p: Int) throws(OpusError) {
        if !(0...100).contains(p) { throw invalid("expectedLossPercent") }
    }

    static func invalid(_ field: String, call: String = "OpusEncoderConfiguration.validate") -> OpusError {
        OpusError(.badArgument, call: call, field: field)
    }
}
