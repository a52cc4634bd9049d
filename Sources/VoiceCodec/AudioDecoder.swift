/// The codecs a stream can be negotiated to: Opus, or one of the telephony codecs.
public enum AudioCodec: Sendable, Hashable, CustomStringConvertible {
    case opus
    case telephony(TelephonyCodec)

    public static let pcmu = AudioCodec.telephony(.pcmu)
    public static let pcma = AudioCodec.telephony(.pcma)
    public static let g722 = AudioCodec.telephony(.g722)

    /// The RTP clock rate (48 kHz for Opus, RFC 7587; 8 kHz for G.711 and G.722, RFC 3551).
    public var rtpClockRate: Int {
        switch self {
        case .opus: 48_000
        case .telephony(let codec): codec.rtpClockRate
        }
    }

    /// The one audio rate the codec codes, nil for Opus (which codes at 8, 12, 16, 24 or 48 kHz).
    public var fixedSampleRate: Int? {
        switch self {
        case .opus: nil
        case .telephony(let codec): codec.sampleRate
        }
    }

    /// The SDP `a=rtpmap` encoding name.
    public var encodingName: String {
        switch self {
        case .opus: "opus"
        case .telephony(let codec): codec.encodingName
        }
    }

    /// The payload type: the static one of a telephony codec (RFC 3551), 111 for Opus (dynamic; WebRTC's usual).
    public var staticPayloadType: UInt8 {
        switch self {
        case .opus: 111
        case .telephony(let codec): codec.payloadType
        }
    }

    public var description: String { encodingName }
}

/// One decoder for whichever codec a stream negotiated, with the three ways a receive chain produces a frame:
/// `decode` a packet that arrived, `decodeFEC` a lost frame from the packet after it (Opus in-band FEC; the
/// telephony codecs have none and conceal), or `conceal` a lost frame (Opus PLC, spandsp's PLC for G.711/G.722).
/// All write into caller buffers and never allocate. Not thread-safe.
public final class AudioDecoder {
    public let codec: AudioCodec
    /// Output rate in Hz: any Opus rate, or the telephony codec's own rate.
    public let sampleRate: Int
    private let opus: OpusDecoder?
    private let telephony: TelephonyDecoder?

    /// Creates a mono decoder.
    /// - Throws: `OpusError` `.badArgument` (`sampleRate`) for a rate Opus does not support or that is not the
    ///   telephony codec's own.
    public init(codec: AudioCodec, sampleRate: Int) throws(OpusError) {
        self.codec = codec
        self.sampleRate = sampleRate
        switch codec {
        case .opus:
            opus = try OpusDecoder(sampleRate: sampleRate, channels: 1)
            telephony = nil
        case .telephony(let t):
            guard sampleRate == t.sampleRate else {
                throw OpusError(.badArgument, call: "AudioDecoder.init", field: "sampleRate")
            }
            opus = nil
            telephony = TelephonyDecoder(codec: t)
        }
    }

    /// Decodes one received payload. Returns samples written.
    /// - Throws: `.invalidPacket` for an empty or corrupt payload, `.bufferTooSmall` when `pcm` is too short.
    @inline(__always)
    public func decode(_ payload: UnsafeBufferPointer<UInt8>, into pcm: UnsafeMutableBufferPointer<Int16>)
        throws(OpusError) -> Int
    {
        if let opus { return try opus.decode(payload, into: pcm) }
        return try telephony!.decode(payload, into: pcm)
    }

    /// Recovers the frame lost before `nextPacket` from its in-band FEC (Opus); conceals it otherwise.
    /// - Precondition: `pcm` holds `frameSamples`.
    public func decodeFEC(
        from nextPacket: UnsafeBufferPointer<UInt8>, frameSamples: Int, into pcm: UnsafeMutableBufferPointer<Int16>
    ) throws(OpusError) -> Int {
        if let opus { return try opus.decodeFEC(from: nextPacket, frameSamples: frameSamples, into: pcm) }
        return telephony!.conceal(frameSamples: frameSamples, into: pcm)
    }

    /// Synthesises `frameSamples` for a frame that never arrived (for Opus a multiple of 2.5 ms).
    /// - Precondition: `pcm` holds `frameSamples`.
    public func conceal(frameSamples: Int, into pcm: UnsafeMutableBufferPointer<Int16>) throws(OpusError) -> Int {
        if let opus { return try opus.conceal(frameSamples: frameSamples, into: pcm) }
        return telephony!.conceal(frameSamples: frameSamples, into: pcm)
    }

    /// Samples per channel `payload` decodes to at ``sampleRate`` and whether it carries FEC for the frame before
    /// it; nil for a malformed Opus packet, an empty payload, or one longer than 120 ms (Opus' longest packet,
    /// which receive buffers are sized for).
    public func durationAndFEC(of payload: UnsafeBufferPointer<UInt8>) -> (samples: Int, hasFEC: Bool)? {
        switch codec {
        case .opus: return OpusPacket.durationAndFEC(of: payload, sampleRate: sampleRate)
        case .telephony(let t):
            let samples = t.samples(inPayloadBytes: payload.count)
            return payload.isEmpty || samples * 25 > sampleRate * 3 ? nil : (samples, false)
        }
    }

    /// Whether `payload` carries FEC for the frame before it (only Opus does).
    public func hasFEC(_ payload: UnsafeBufferPointer<UInt8>) -> Bool {
        opus != nil && OpusPacket.hasFEC(payload)
    }

    /// Resets the decoder state, e.g. when the sender restarts its stream.
    public func reset() throws(OpusError) {
        if let opus { try opus.reset() } else { telephony!.reset() }
    }
}
