internal import COpus

/// An Opus decoder: the sole owner of one libopus `OpusDecoder*`, freed in `deinit`.
///
/// Three ways to produce a frame, matching the receive chain's decisions: `decode` a packet that arrived,
/// `decodeFEC` a lost frame from the in-band FEC carried by the packet after it, or `conceal` a lost frame (PLC).
/// All write into caller buffers and never allocate. Not thread-safe: use from one thread at a time.
public final class OpusDecoder {
    /// Output sample rate in Hz (any supported rate, independent of the rate the sender encoded at).
    public let sampleRate: Int
    /// Output channels (1 or 2); output is interleaved.
    public let channels: Int
    /// The most samples per channel one Opus packet can hold: 120 ms at `sampleRate`. A `decode` buffer of
    /// `maxFrameSamples * channels` never fails with `.bufferTooSmall`.
    public var maxFrameSamples: Int { sampleRate * 120 / 1000 }

    private let handle: OpaquePointer
    private let channelCount: Int32

    /// Creates a decoder.
    /// - Throws: `OpusError` `.badArgument` with `field` `sampleRate` or `channels` when unsupported.
    public init(sampleRate: Int, channels: Int) throws(OpusError) {
        if !OpusEncoderConfiguration.supportedSampleRates.contains(sampleRate) {
            throw OpusEncoderConfiguration.invalid("sampleRate", call: "OpusDecoder.init")
        }
        if channels != 1 && channels != 2 {
            throw OpusEncoderConfiguration.invalid("channels", call: "OpusDecoder.init")
        }
        var error: Int32 = OPUS_OK
        let created = opus_decoder_create(Int32(sampleRate), Int32(channels), &error)
        try checkOpus(error, "opus_decoder_create")
        guard let created else { throw OpusError(.allocFail, call: "opus_decoder_create") }
        handle = created
        self.sampleRate = sampleRate
        self.channels = channels
        channelCount = Int32(channels)
    }

    deinit {
        opus_decoder_destroy(handle)
    }

    /// Decodes one received packet.
    /// - Parameters:
    ///   - packet: a non-empty Opus packet (a lost packet is `conceal`ed or `decodeFEC`ed instead).
    ///   - pcm: interleaved output; its capacity must hold the packet's duration
    ///     (`OpusPacket.samplesPerChannel(in:sampleRate:)`), `maxFrameSamples * channels` always does.
    /// - Returns: Samples per channel written.
    /// - Throws: `.invalidPacket` for an empty or corrupt packet, `.bufferTooSmall` when `pcm` is too short.
    /// - Complexity: no allocation.
    public func decode(_ packet: UnsafeBufferPointer<UInt8>, into pcm: UnsafeMutableBufferPointer<Int16>)
        throws(OpusError) -> Int
    {
        guard let data = packet.baseAddress, !packet.isEmpty else {
            throw OpusError(.invalidPacket, call: "opus_decode")
        }
        guard let output = pcm.baseAddress, pcm.count >= channels else {
            throw OpusError(.bufferTooSmall, call: "opus_decode")
        }
        return try checkOpus(
            opus_decode(
                handle, data, Int32(clamping: packet.count), output, Int32(clamping: pcm.count / channels), 0),
            "opus_decode")
    }

    /// Recovers the lost frame that precedes `nextPacket` from `nextPacket`'s in-band FEC (SILK LBRR) data.
    /// Afterwards decode `nextPacket` itself normally. When `nextPacket` carries no FEC (CELT mode, FEC off, or
    /// the encoder spent no bits on it) libopus falls back to concealment for the lost frame.
    /// - Parameters:
    ///   - nextPacket: the packet received after the loss.
    ///   - frameSamples: samples per channel of the lost frame (a multiple of 2.5 ms); usually the duration of
    ///     `nextPacket`.
    ///   - pcm: interleaved output of at least `frameSamples * channels` samples (a shorter buffer traps).
    /// - Returns: Samples per channel written (`frameSamples`).
    /// - Throws: `.invalidPacket` for an empty or corrupt packet, `.badArgument` for a `frameSamples` libopus
    ///   rejects.
    public func decodeFEC(
        from nextPacket: UnsafeBufferPointer<UInt8>, frameSamples: Int, into pcm: UnsafeMutableBufferPointer<Int16>
    ) throws(OpusError) -> Int {
        precondition(frameSamples > 0, "OpusDecoder.decodeFEC: frameSamples must be positive, got \(frameSamples)")
        precondition(
            pcm.count >= frameSamples * channels,
            "OpusDecoder.decodeFEC: pcm holds \(pcm.count) samples, needs \(frameSamples * channels)")
        guard let data = nextPacket.baseAddress, !nextPacket.isEmpty else {
            throw OpusError(.invalidPacket, call: "opus_decode(decode_fec=1)")
        }
        return try checkOpus(
            opus_decode(
                handle, data, Int32(clamping: nextPacket.count), pcm.baseAddress!, Int32(clamping: frameSamples), 1),
            "opus_decode(decode_fec=1)")
    }

    /// Packet loss concealment: synthesises `frameSamples` samples per channel for a frame that never arrived.
    /// - Parameters:
    ///   - frameSamples: samples per channel to produce, a multiple of 2.5 ms (e.g. the expected frame size).
    ///   - pcm: interleaved output of at least `frameSamples * channels` samples (a shorter buffer traps).
    /// - Returns: Samples per channel written.
    /// - Throws: `.badArgument` when `frameSamples` is not a multiple of 2.5 ms.
    public func conceal(frameSamples: Int, into pcm: UnsafeMutableBufferPointer<Int16>) throws(OpusError) -> Int {
        precondition(frameSamples > 0, "OpusDecoder.conceal: frameSamples must be positive, got \(frameSamples)")
        precondition(
            pcm.count >= frameSamples * channels,
            "OpusDecoder.conceal: pcm holds \(pcm.count) samples, needs \(frameSamples * channels)")
        return try checkOpus(
            opus_decode(handle, nil, 0, pcm.baseAddress!, Int32(clamping: frameSamples), 0), "opus_decode(NULL)")
    }

    /// Resets the decoder state, e.g. when the sender restarts its stream.
    public func reset() throws(OpusError) {
        try checkOpus(ve_opus_decoder_reset_state(handle), "opus_decoder_ctl(OPUS_RESET_STATE)")
    }

    /// Duration, in samples per channel, of the last decoded or concealed frame.
    public var lastPacketDuration: Int {
        get throws(OpusError) {
            var value: Int32 = 0
            try checkOpus(
                ve_opus_decoder_get_last_packet_duration(handle, &value),
                "opus_decoder_ctl(OPUS_GET_LAST_PACKET_DURATION)")
            return Int(value)
        }
    }

    /// The range-decoder state after the last packet; see `OpusEncoder.finalRange`.
    package var finalRange: UInt32 {
        get throws(OpusError) {
            var value: UInt32 = 0
            try checkOpus(ve_opus_decoder_get_final_range(handle, &value), "opus_decoder_ctl(OPUS_GET_FINAL_RANGE)")
            return value
        }
    }

    /// Sets an output gain in Q8 dB (`256` = +1 dB), range -32768...32767.
    public func setGain(q8dB: Int) throws(OpusError) {
        guard let gain = Int32(exactly: q8dB), (-32768...32767).contains(gain) else {
            throw OpusError(.badArgument, call: "opus_decoder_ctl(OPUS_SET_GAIN)", field: "q8dB")
        }
        try checkOpus(ve_opus_decoder_set_gain(handle, gain), "opus_decoder_ctl(OPUS_SET_GAIN)")
    }

    // MARK: Array conveniences (no allocation when `pcm` is uniquely referenced; its count is the capacity)

    /// `decode(_:into:)` on arrays; `pcm` is not resized. Returns samples per channel written.
    public func decode(_ packet: [UInt8], into pcm: inout [Int16]) throws(OpusError) -> Int {
        try packet.withUnsafeBufferPointer { (input) throws(OpusError) -> Int in
            try pcm.withUnsafeMutableBufferPointer { (output) throws(OpusError) -> Int in
                try decode(input, into: output)
            }
        }
    }

    /// `decodeFEC(from:frameSamples:into:)` on arrays; `pcm` is not resized.
    public func decodeFEC(from nextPacket: [UInt8], frameSamples: Int, into pcm: inout [Int16]) throws(OpusError)
        -> Int
    {
        try nextPacket.withUnsafeBufferPointer { (input) throws(OpusError) -> Int in
            try pcm.withUnsafeMutableBufferPointer { (output) throws(OpusError) -> Int in
                try decodeFEC(from: input, frameSamples: frameSamples, into: output)
            }
        }
    }

    /// `conceal(frameSamples:into:)` on an array; `pcm` is not resized.
    public func conceal(frameSamples: Int, into pcm: inout [Int16]) throws(OpusError) -> Int {
        try pcm.withUnsafeMutableBufferPointer { (output) throws(OpusError) -> Int in
            try conceal(frameSamples: frameSamples, into: output)
        }
    }

    // MARK: Packet inspection (forwarded to `OpusPacket`)

    /// Whether `packet` carries in-band FEC data for the frame before it; see `OpusPacket.hasFEC(_:)`.
    public static func packetHasFEC(_ packet: UnsafeBufferPointer<UInt8>) -> Bool { OpusPacket.hasFEC(packet) }

    /// Samples per channel `packet` decodes to at `sampleRate`; see `OpusPacket.samplesPerChannel(in:sampleRate:)`.
    public static func packetSamplesPerChannel(_ packet: UnsafeBufferPointer<UInt8>, sampleRate: Int)
        throws(OpusError) -> Int
    {
        try OpusPacket.samplesPerChannel(in: packet, sampleRate: sampleRate)
    }
}
