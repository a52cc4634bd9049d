internal import COpus

/// Inspection of Opus packets without decoding them (RFC 6716 §3.1, the TOC byte), for the jitter buffer and
/// the receive chain: how long a packet plays, whether it can repair the frame before it.
public enum OpusPacket {
    /// The coding mode signalled by a packet's TOC byte.
    public enum Mode: Sendable, Hashable {
        /// Linear-prediction (speech) layer only; carries in-band FEC when the encoder enabled it.
        case silk
        /// SILK below 8 kHz plus CELT above; carries in-band FEC like SILK.
        case hybrid
        /// MDCT layer only; has no in-band FEC.
        case celt
    }

    /// The audio bandwidth signalled by a packet's TOC byte.
    public enum Bandwidth: Int, Sendable, Hashable {
        case narrowband = 4_000
        case mediumband = 6_000
        case wideband = 8_000
        case superwideband = 12_000
        case fullband = 20_000

        /// Passband edge in Hz.
        public var passbandHz: Int { rawValue }
    }

    /// The packet's coding mode, or `nil` for an empty packet.
    public static func mode(of packet: UnsafeBufferPointer<UInt8>) -> Mode? {
        guard let toc = packet.first else { return nil }
        let config = toc >> 3
        return config < 12 ? .silk : (config < 16 ? .hybrid : .celt)
    }

    /// The packet's audio bandwidth, or `nil` for an empty packet.
    public static func bandwidth(of packet: UnsafeBufferPointer<UInt8>) -> Bandwidth? {
        guard let toc = packet.first else { return nil }
        let config = Int(toc >> 3)
        switch config {
        case 0..<4: return .narrowband
        case 4..<8: return .mediumband
        case 8..<12: return .wideband
        case 12..<14: return .superwideband
        case 14..<16: return .fullband
        case 16..<20: return .narrowband
        case 20..<24: return .wideband
        case 24..<28: return .superwideband
        default: return .fullband
        }
    }

    /// Channels the packet was coded with (1 or 2), or `nil` for an empty packet.
    public static func channels(of packet: UnsafeBufferPointer<UInt8>) -> Int? {
        guard let toc = packet.first else { return nil }
        return toc & 0x04 != 0 ? 2 : 1
    }

    /// Number of Opus frames in the packet (1...48).
    /// - Throws: `.invalidPacket` when the packet is empty or its frame count cannot be read.
    public static func frameCount(in packet: UnsafeBufferPointer<UInt8>) throws(OpusError) -> Int {
        guard let data = packet.baseAddress, !packet.isEmpty else {
            throw OpusError(.invalidPacket, call: "opus_packet_get_nb_frames")
        }
        return try checkOpus(
            opus_packet_get_nb_frames(data, Int32(clamping: packet.count)), "opus_packet_get_nb_frames")
    }

    /// Samples per channel the packet decodes to at `sampleRate` (its duration).
    /// - Throws: `.invalidPacket` when the packet is empty or malformed, `.badArgument` for an unsupported rate.
    public static func samplesPerChannel(in packet: UnsafeBufferPointer<UInt8>, sampleRate: Int) throws(OpusError)
        -> Int
    {
        guard let data = packet.baseAddress, !packet.isEmpty else {
            throw OpusError(.invalidPacket, call: "opus_packet_get_nb_samples")
        }
        guard OpusEncoderConfiguration.supportedSampleRates.contains(sampleRate) else {
            throw OpusError(.badArgument, call: "opus_packet_get_nb_samples", field: "sampleRate")
        }
        return try checkOpus(
            opus_packet_get_nb_samples(data, Int32(clamping: packet.count), Int32(sampleRate)),
            "opus_packet_get_nb_samples")
    }

    /// Whether the packet carries in-band FEC (SILK LBRR) data for the frame before it, i.e. whether
    /// `OpusDecoder.decodeFEC(from:...)` on it will recover real audio rather than fall back to concealment.
    ///
    /// libopus 1.3.1 has no `opus_packet_has_lbrr`, so this reads RFC 6716 §4.2.3 directly: in SILK and hybrid
    /// packets the first frame's SILK layer starts with, per channel (mid, then side), one VAD flag per 20 ms
    /// SILK frame followed by the LBRR flag. These flags are coded with probability one half, so they are the
    /// leading bits of the frame's first byte. Returns `false` for CELT-only, empty or malformed packets.
    public static func hasFEC(_ packet: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let toc = packet.first, toc >> 3 < 16, let layout = layout(of: packet) else { return false }
        return hasFEC(packet, layout)
    }

    /// What a jitter buffer reads of every packet, with one `opus_packet_parse`: its duration in samples per
    /// channel at `sampleRate` (as ``samplesPerChannel(in:sampleRate:)``) and ``hasFEC(_:)``; `nil` where
    /// ``samplesPerChannel(in:sampleRate:)`` throws. A packet the parse rejects but whose duration libopus still
    /// reads (a malformed frame length) gets that duration and no FEC, as the two calls gave.
    public static func durationAndFEC(of packet: UnsafeBufferPointer<UInt8>, sampleRate: Int) -> (
        samples: Int, hasFEC: Bool
    )? {
        guard let toc = packet.first, OpusEncoderConfiguration.supportedSampleRates.contains(sampleRate) else {
            return nil
        }
        guard let layout = layout(of: packet) else {
            return (try? samplesPerChannel(in: packet, sampleRate: sampleRate)).map { ($0, false) }
        }
        // What opus_packet_get_nb_samples computes from the frame count the parse gave: frames times the TOC's
        // frame size, refused above 120 ms.
        let perFrame = Int(opus_packet_get_samples_per_frame(packet.baseAddress!, Int32(sampleRate)))
        let samples = layout.frames * perFrame
        guard samples * 25 <= sampleRate * 3 else { return nil }
        return (samples, toc >> 3 < 16 && hasFEC(packet, layout))
    }

    /// Frame count, first frame's size and where its data starts (opus_packet_parse), or `nil` when malformed.
    private static func layout(of packet: UnsafeBufferPointer<UInt8>) -> (frames: Int, firstSize: Int, offset: Int)? {
        guard let data = packet.baseAddress, !packet.isEmpty else { return nil }
        var payloadOffset: Int32 = 0
        return withUnsafeTemporaryAllocation(of: UnsafePointer<UInt8>?.self, capacity: 48) { frames in
            withUnsafeTemporaryAllocation(of: Int16.self, capacity: 48) { sizes in
                let count = opus_packet_parse(
                    data, Int32(clamping: packet.count), nil, frames.baseAddress, sizes.baseAddress!, &payloadOffset)
                return count >= 1 ? (Int(count), Int(sizes[0]), Int(payloadOffset)) : nil
            }
        }
    }

    /// The LBRR flags of a SILK or hybrid packet whose layout parsed (see ``hasFEC(_:)``).
    private static func hasFEC(
        _ packet: UnsafeBufferPointer<UInt8>, _ layout: (frames: Int, firstSize: Int, offset: Int)
    ) -> Bool {
        guard layout.firstSize >= 1, let toc = packet.first else { return false }
        let config = Int(toc >> 3)
        // SILK frames per Opus frame: 10 and 20 ms -> 1, 40 ms -> 2, 60 ms -> 3; hybrid frames are 10 or 20 ms.
        let silkFrames = config < 12 ? max(1, (config & 3)) : 1
        let channels = toc & 0x04 != 0 ? 2 : 1
        let firstByte = packet[layout.offset]
        for channel in 0..<channels {
            let bit = channel * (silkFrames + 1) + silkFrames
            if firstByte & (0x80 >> UInt8(bit)) != 0 { return true }
        }
        return false
    }

    /// Array convenience for `hasFEC(_:)`.
    public static func hasFEC(_ packet: [UInt8]) -> Bool {
        packet.withUnsafeBufferPointer { hasFEC($0) }
    }
}
