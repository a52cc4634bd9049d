internal import CSpanDSP

/// The fixed-rate telephony codecs, coded by spandsp: G.711 µ-law and A-law (RFC 3551 PCMU/PCMA, 8 kHz) and
/// G.722 at 64 kb/s (16 kHz audio; its RTP clock is 8000, RFC 3551 §4.5.2).
public enum TelephonyCodec: String, Sendable, CaseIterable, Hashable {
    case pcmu
    case pcma
    case g722

    /// The audio rate the codec codes (8000 for G.711, 16000 for G.722).
    public var sampleRate: Int { self == .g722 ? 16_000 : 8_000 }
    /// The RTP clock rate: 8000 for all three (for G.722 a historical error kept by RFC 3551).
    public var rtpClockRate: Int { 8_000 }
    /// The static RTP payload type (RFC 3551 table 4).
    public var payloadType: UInt8 {
        switch self {
        case .pcmu: 0
        case .pcma: 8
        case .g722: 9
        }
    }
    /// The SDP `a=rtpmap` encoding name.
    public var encodingName: String {
        switch self {
        case .pcmu: "PCMU"
        case .pcma: "PCMA"
        case .g722: "G722"
        }
    }
    /// Samples one payload byte decodes to (one for G.711, two for G.722's 64 kb/s at 16 kHz).
    public var samplesPerByte: Int { self == .g722 ? 2 : 1 }

    /// Samples `payloadBytes` of payload decode to.
    public func samples(inPayloadBytes payloadBytes: Int) -> Int { payloadBytes * samplesPerByte }
    /// Payload bytes `samples` samples encode to (a G.722 frame has an even number of samples).
    public func payloadBytes(forSamples samples: Int) -> Int { samples / samplesPerByte }
}

/// A G.711 or G.722 encoder (spandsp), the sole owner of its coder state. Encoding writes into caller buffers and
/// never allocates. Not thread-safe.
public final class TelephonyEncoder {
    public let codec: TelephonyCodec
    private let g711: OpaquePointer?
    private let g722: OpaquePointer?

    public init(codec: TelephonyCodec) {
        self.codec = codec
        if codec == .g722 {
            guard let state = g722_encode_init(nil, 64_000, 0) else {
                preconditionFailure("g722_encode_init could not allocate its state")
            }
            (g711, g722) = (nil, state)
        } else {
            guard let state = g711_init(nil, Int32(codec == .pcmu ? G711_ULAW : G711_ALAW)) else {
                preconditionFailure("g711_init could not allocate its state")
            }
            (g711, g722) = (state, nil)
        }
    }

    deinit {
        if let g711 { g711_free(g711) }
        if let g722 { g722_encode_free(g722) }
    }

    /// Encodes `pcm` (mono at ``TelephonyCodec/sampleRate``; for G.722 an even count) into `payload`.
    /// - Returns: payload bytes written.
    /// - Throws: `.bufferTooSmall` when `payload` cannot hold `codec.payloadBytes(forSamples: pcm.count)` bytes.
    /// - Complexity: no allocation.
    public func encode(_ pcm: UnsafeBufferPointer<Int16>, into payload: UnsafeMutableBufferPointer<UInt8>)
        throws(OpusError) -> Int
    {
        let needed = codec.payloadBytes(forSamples: pcm.count)
        guard let input = pcm.baseAddress, needed > 0 else { return 0 }
        guard let output = payload.baseAddress, payload.count >= needed else {
            throw OpusError(.bufferTooSmall, call: codec == .g722 ? "g722_encode" : "g711_encode")
        }
        let count = Int32(clamping: needed * codec.samplesPerByte)
        if let g711 {
            return Int(g711_encode(g711, output, input, count))
        }
        return Int(g722_encode(g722!, output, input, count))
    }

    /// Resets the coder state (a stream discontinuity); G.711 is stateless.
    public func reset() {
        if let g722 { _ = g722_encode_init(g722, 64_000, 0) }
    }
}

/// A G.711 or G.722 decoder (spandsp) with spandsp's packet loss concealment (`plc_rx`/`plc_fillin`: pitch
/// repetition with overlap-add into the next good frame). Writes into caller buffers and never allocates.
/// Not thread-safe.
public final class TelephonyDecoder {
    public let codec: TelephonyCodec
    private let g711: OpaquePointer?
    private let g722: OpaquePointer?
    private let plc: UnsafeMutablePointer<plc_state_t>

    public init(codec: TelephonyCodec) {
        self.codec = codec
        (g711, g722) = Self.makeState(codec)
        guard let plc = plc_init(nil) else { preconditionFailure("plc_init could not allocate its state") }
        self.plc = plc
    }

    private static func makeState(_ codec: TelephonyCodec) -> (g711: OpaquePointer?, g722: OpaquePointer?) {
        if codec == .g722 {
            guard let state = g722_decode_init(nil, 64_000, 0) else {
                preconditionFailure("g722_decode_init could not allocate its state")
            }
            return (nil, state)
        }
        guard let state = g711_init(nil, Int32(codec == .pcmu ? G711_ULAW : G711_ALAW)) else {
            preconditionFailure("g711_init could not allocate its state")
        }
        return (state, nil)
    }

    deinit {
        if let g711 { g711_free(g711) }
        if let g722 { g722_decode_free(g722) }
        plc_free(plc)
    }

    /// The most samples `decode` writes for a payload of `payloadBytes`.
    public func maximumSamples(forPayloadBytes payloadBytes: Int) -> Int { codec.samples(inPayloadBytes: payloadBytes) }

    /// Decodes one received payload (every byte string is a valid payload of these codecs) and feeds the result
    /// to the concealer, which smooths the join after a concealed gap.
    /// - Returns: samples written (``TelephonyCodec/samples(inPayloadBytes:)``).
    /// - Throws: `.invalidPacket` for an empty payload, `.bufferTooSmall` when `pcm` cannot hold the samples.
    /// - Complexity: no allocation.
    public func decode(_ payload: UnsafeBufferPointer<UInt8>, into pcm: UnsafeMutableBufferPointer<Int16>)
        throws(OpusError) -> Int
    {
        let call = codec == .g722 ? "g722_decode" : "g711_decode"
        guard let input = payload.baseAddress, !payload.isEmpty else { throw OpusError(.invalidPacket, call: call) }
        let samples = codec.samples(inPayloadBytes: payload.count)
        guard let output = pcm.baseAddress, pcm.count >= samples else {
            throw OpusError(.bufferTooSmall, call: call)
        }
        let produced: Int32
        if let g711 {
            produced = g711_decode(g711, output, input, Int32(clamping: payload.count))
        } else {
            produced = g722_decode(g722!, output, input, Int32(clamping: payload.count))
        }
        plc_rx(plc, output, produced)
        return Int(produced)
    }

    /// Synthesises `frameSamples` samples for audio that never arrived (spandsp's PLC: repeats the last pitch
    /// period, fading to silence over 60 ms of continuous loss).
    /// - Returns: samples written (`frameSamples`).
    /// - Complexity: no allocation.
    public func conceal(frameSamples: Int, into pcm: UnsafeMutableBufferPointer<Int16>) -> Int {
        precondition(frameSamples >= 0, "TelephonyDecoder.conceal: frameSamples must not be negative")
        precondition(
            pcm.count >= frameSamples,
            "TelephonyDecoder.conceal: pcm holds \(pcm.count) samples, needs \(frameSamples)")
        guard frameSamples > 0, let output = pcm.baseAddress else { return 0 }
        return Int(plc_fillin(plc, output, Int32(clamping: frameSamples)))
    }

    /// Resets the decoder and the concealer (the sender restarted its stream).
    public func reset() {
        if let g722 { _ = g722_decode_init(g722, 64_000, 0) }
        _ = plc_init(plc)
    }
}
