internal import COpus

/// An Opus encoder: the sole owner of one libopus `OpusEncoder*`, freed in `deinit`.
///
/// Encoding writes into caller-provided buffers and never allocates, so it is safe on the audio thread.
/// Not thread-safe: use one encoder from one thread at a time.
public final class OpusEncoder {
    /// Recommended packet buffer capacity in bytes. libopus documents 4000 bytes as the size that never limits
    /// the encoder; a single 20 ms frame is at most 1275 bytes, but 40/60 ms frames are coded as up to three
    /// sub-frames and can exceed that at high bitrates. A smaller buffer also caps the packet size (libopus
    /// lowers quality to fit), so use this unless you mean to cap it.
    public static let maxPacketBytes = 4000

    /// The configuration in effect; setters update it after libopus accepts the change.
    public private(set) var configuration: OpusEncoderConfiguration

    private let handle: OpaquePointer
    private let samplesPerChannelPerFrame: Int32
    private let samplesPerFrame: Int

    /// Creates an encoder and applies every setting of `configuration`.
    /// - Throws: `OpusError` `.badArgument` naming the field when the configuration is invalid; the failing
    ///   libopus call otherwise.
    public init(configuration: OpusEncoderConfiguration) throws(OpusError) {
        try configuration.validate()
        var error: Int32 = OPUS_OK
        let created = opus_encoder_create(
            Int32(configuration.sampleRate), Int32(configuration.channels), configuration.application.cValue, &error
        )
        try checkOpus(error, "opus_encoder_create")
        guard let created else { throw OpusError(.allocFail, call: "opus_encoder_create") }
        handle = created
        self.configuration = configuration
        samplesPerChannelPerFrame = Int32(configuration.samplesPerChannelPerFrame)
        samplesPerFrame = configuration.samplesPerFrame
        try applySettings(configuration)
    }

    deinit {
        opus_encoder_destroy(handle)
    }

    private func applySettings(_ c: OpusEncoderConfiguration) throws(OpusError) {
        try checkOpus(ve_opus_encoder_set_bitrate(handle, Int32(c.bitrate)), "opus_encoder_ctl(OPUS_SET_BITRATE)")
        try checkOpus(
            ve_opus_encoder_set_complexity(handle, Int32(c.complexity)), "opus_encoder_ctl(OPUS_SET_COMPLEXITY)")
        try checkOpus(ve_opus_encoder_set_vbr(handle, c.variableBitrate ? 1 : 0), "opus_encoder_ctl(OPUS_SET_VBR)")
        try checkOpus(
            ve_opus_encoder_set_inband_fec(handle, c.inbandFEC ? 1 : 0), "opus_encoder_ctl(OPUS_SET_INBAND_FEC)")
        try checkOpus(
            ve_opus_encoder_set_packet_loss_perc(handle, Int32(c.expectedLossPercent)),
            "opus_encoder_ctl(OPUS_SET_PACKET_LOSS_PERC)")
        try checkOpus(ve_opus_encoder_set_dtx(handle, c.dtx ? 1 : 0), "opus_encoder_ctl(OPUS_SET_DTX)")
    }

    /// Encodes exactly one frame.
    /// - Parameters:
    ///   - pcm: `configuration.samplesPerFrame` interleaved samples (a different count is a programming error
    ///     and traps).
    ///   - packet: where the Opus packet is written; its count is the capacity (see `maxPacketBytes`).
    /// - Returns: The packet length in bytes. With DTX on, silence yields packets of 1-2 bytes, which need not
    ///   be transmitted.
    /// - Throws: `OpusError` from `opus_encode` (e.g. `.bufferTooSmall`); `.bufferTooSmall` for an empty buffer.
    /// - Complexity: no allocation.
    public func encode(_ pcm: UnsafeBufferPointer<Int16>, into packet: UnsafeMutableBufferPointer<UInt8>)
        throws(OpusError) -> Int
    {
        precondition(
            pcm.count == samplesPerFrame,
            "OpusEncoder.encode takes exactly one frame: \(samplesPerFrame) interleaved samples, got \(pcm.count)")
        guard let output = packet.baseAddress, !packet.isEmpty else {
            throw OpusError(.bufferTooSmall, call: "opus_encode")
        }
        return try checkOpus(
            opus_encode(handle, pcm.baseAddress!, samplesPerChannelPerFrame, output, Int32(clamping: packet.count)),
            "opus_encode")
    }

    /// Encodes one frame from an array into `packet`, whose existing count is the capacity; `packet` is not
    /// resized, so no allocation happens when it is uniquely referenced.
    /// - Returns: The number of bytes of `packet` that hold the encoded packet.
    public func encode(_ pcm: [Int16], into packet: inout [UInt8]) throws(OpusError) -> Int {
        try pcm.withUnsafeBufferPointer { (input) throws(OpusError) -> Int in
            try packet.withUnsafeMutableBufferPointer { (output) throws(OpusError) -> Int in
                try encode(input, into: output)
            }
        }
    }

    /// Changes the target bitrate (bits per second, `OpusEncoderConfiguration.bitrateRange`) from the next frame.
    public func setBitrate(_ bps: Int) throws(OpusError) {
        try OpusEncoderConfiguration.validateBitrate(bps)
        try checkOpus(ve_opus_encoder_set_bitrate(handle, Int32(bps)), "opus_encoder_ctl(OPUS_SET_BITRATE)")
        configuration.bitrate = bps
    }

    /// Changes the complexity (0...10).
    public func setComplexity(_ c: Int) throws(OpusError) {
        try OpusEncoderConfiguration.validateComplexity(c)
        try checkOpus(ve_opus_encoder_set_complexity(handle, Int32(c)), "opus_encoder_ctl(OPUS_SET_COMPLEXITY)")
        configuration.complexity = c
    }

    /// Switches between variable and hard constant bitrate.
    public func setVariableBitrate(_ on: Bool) throws(OpusError) {
        try checkOpus(ve_opus_encoder_set_vbr(handle, on ? 1 : 0), "opus_encoder_ctl(OPUS_SET_VBR)")
        configuration.variableBitrate = on
    }

    /// Turns in-band FEC on or off (effective in SILK/hybrid mode with a non-zero expected loss).
    public func setInbandFEC(_ on: Bool) throws(OpusError) {
        try checkOpus(ve_opus_encoder_set_inband_fec(handle, on ? 1 : 0), "opus_encoder_ctl(OPUS_SET_INBAND_FEC)")
        configuration.inbandFEC = on
    }

    /// Tells the encoder the packet loss to expect (0...100 %), typically from RTCP receiver reports.
    public func setExpectedLossPercent(_ p: Int) throws(OpusError) {
        try OpusEncoderConfiguration.validateExpectedLoss(p)
        try checkOpus(
            ve_opus_encoder_set_packet_loss_perc(handle, Int32(p)), "opus_encoder_ctl(OPUS_SET_PACKET_LOSS_PERC)")
        configuration.expectedLossPercent = p
    }

    /// Turns discontinuous transmission on or off.
    public func setDTX(_ on: Bool) throws(OpusError) {
        try checkOpus(ve_opus_encoder_set_dtx(handle, on ? 1 : 0), "opus_encoder_ctl(OPUS_SET_DTX)")
        configuration.dtx = on
    }

    /// Resets the codec state (as at creation) while keeping every setting; use at a stream discontinuity.
    public func reset() throws(OpusError) {
        try checkOpus(ve_opus_encoder_reset_state(handle), "opus_encoder_ctl(OPUS_RESET_STATE)")
    }

    /// The encoder's algorithmic delay in samples per channel at `configuration.sampleRate`: decoded output
    /// lags the input by this much (e.g. 312 at 48 kHz voip = 6.5 ms).
    public var lookaheadSamples: Int {
        get throws(OpusError) {
            var value: Int32 = 0
            try checkOpus(ve_opus_encoder_get_lookahead(handle, &value), "opus_encoder_ctl(OPUS_GET_LOOKAHEAD)")
            return Int(value)
        }
    }

    /// Whether the encoder is currently in DTX (the last frames were silence coded as DTX packets).
    public var isInDTX: Bool {
        get throws(OpusError) {
            var value: Int32 = 0
            try checkOpus(ve_opus_encoder_get_in_dtx(handle, &value), "opus_encoder_ctl(OPUS_GET_IN_DTX)")
            return value != 0
        }
    }

    /// The range-coder state after the last packet; equals the decoder's `finalRange` after decoding that packet
    /// when both sides agree bit-exactly (the check the Opus conformance tests use).
    package var finalRange: UInt32 {
        get throws(OpusError) {
            var value: UInt32 = 0
            try checkOpus(ve_opus_encoder_get_final_range(handle, &value), "opus_encoder_ctl(OPUS_GET_FINAL_RANGE)")
            return value
        }
    }
}
