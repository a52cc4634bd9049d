import VoiceEngine
import VoiceLab

/// The inputs every benchmark uses, made deterministically from a seed so that each run, and the Swift and C
/// sides of one run, see exactly the same samples and packets.
public enum Fixtures {
    /// Seed of the speech-like signal.
    public static let seed: UInt64 = 0x5EED_0BE7
    /// Length of the signal the loops cycle through: long enough to include talk spurts and pauses.
    public static let seconds = 4.0

    /// Mono speech-like 16-bit PCM at `sampleRate` (talk spurts and pauses; see `SignalGenerator.speechLike`).
    public static func speech(sampleRate: Int, seconds: Double = Fixtures.seconds) -> FixedBuffer<Int16> {
        FixedBuffer(
            copying: SignalGenerator.toInt16(
                SignalGenerator.speechLike(sampleRate: sampleRate, seconds: seconds, seed: seed)))
    }

    /// The encoder settings a call uses: voip, mono, 20 ms, VBR, complexity 9, in-band FEC for 10 % expected
    /// loss, no DTX (so every frame is really coded); 24 kb/s at 16 kHz, 32 kb/s at 48 kHz.
    public static func opusConfiguration(sampleRate: Int) -> OpusEncoderConfiguration {
        OpusEncoderConfiguration(
            sampleRate: sampleRate, channels: 1, application: .voip, frameDuration: .ms20,
            bitrate: sampleRate >= 48_000 ? 32_000 : 24_000, complexity: 9, variableBitrate: true,
            inbandFEC: true, expectedLossPercent: 10, dtx: false)
    }

    /// Quality every resampler benchmark uses (speexdsp's default for VoIP-grade desktop use).
    public static let resamplerQuality = 5

    /// SSRC of the RTP packets the SRTP benchmarks protect.
    public static let rtpSSRC: UInt32 = 0x5EED_0001

    /// One 20 ms Opus RTP packet as a call sends it: a 12-byte header (version 2, payload type 111, sequence 0,
    /// ``rtpSSRC``) and the median-sized frame of the 16 kHz speech encoded with ``opusConfiguration(sampleRate:)``.
    public static func opusRTPPacket() throws(OpusError) -> FixedBuffer<UInt8> {
        let stream = try EncodedStream(
            pcm: speech(sampleRate: 16_000), configuration: opusConfiguration(sampleRate: 16_000))
        let bySize = (0..<stream.count).sorted { stream.lengths.pointer[$0] < stream.lengths.pointer[$1] }
        var bytes: [UInt8] = [0x80, 111, 0, 0, 0, 0, 0, 0]
        bytes += withUnsafeBytes(of: rtpSSRC.bigEndian) { Array($0) }
        bytes += stream.packet(bySize[stream.count / 2])
        return FixedBuffer(copying: bytes)
    }

    /// Copies the RTP packet `template` into `buffer` with sequence number `sequence` (bytes 2-3, network order):
    /// where every SRTP benchmark iteration starts, since protect and unprotect work in place.
    @inlinable
    public static func copyRTPPacket(
        _ template: UnsafeRawBufferPointer, into buffer: UnsafeMutableRawBufferPointer, sequence: UInt16
    ) {
        buffer.copyMemory(from: template)
        buffer[2] = UInt8(truncatingIfNeeded: sequence >> 8)
        buffer[3] = UInt8(truncatingIfNeeded: sequence)
    }

    /// The master key of `suite` the SRTP benchmarks use: seeded, so every run protects the same bytes.
    public static func srtpKey(_ suite: SRTPCryptoSuite) -> SRTPMasterKey {
        var generator = SeededGenerator(seed: seed &+ UInt64(SRTPCryptoSuite.allCases.firstIndex(of: suite)!))
        return SRTPMasterKey.random(for: suite, using: &generator)
    }
}

/// A stream of Opus packets, stored back to back with their offsets and lengths (the layout the C loop reads).
public final class EncodedStream {
    public let bytes: FixedBuffer<UInt8>
    public let offsets: FixedBuffer<Int32>
    public let lengths: FixedBuffer<Int32>
    public var count: Int { offsets.count }

    /// Encodes every whole frame of `pcm` with a fresh encoder of `configuration`.
    public init(pcm: FixedBuffer<Int16>, configuration: OpusEncoderConfiguration) throws(OpusError) {
        let encoder = try OpusEncoder(configuration: configuration)
        let frame = configuration.samplesPerFrame
        let packet = FixedBuffer<UInt8>(count: OpusEncoder.maxPacketBytes, repeating: 0)
        var all: [UInt8] = []
        var offsets: [Int32] = []
        var lengths: [Int32] = []
        for index in 0..<(pcm.count / frame) {
            let length = try encoder.encode(pcm.slice(index * frame, frame), into: packet.pointer)
            offsets.append(Int32(all.count))
            lengths.append(Int32(length))
            all.append(contentsOf: packet.pointer[0..<length])
        }
        bytes = FixedBuffer(copying: all)
        self.offsets = FixedBuffer(copying: offsets)
        self.lengths = FixedBuffer(copying: lengths)
    }

    /// Packet `index` (not bounds-checked beyond a debug assertion).
    @inlinable
    public func packet(_ index: Int) -> UnsafeBufferPointer<UInt8> {
        bytes.slice(Int(offsets.pointer[index]), Int(lengths.pointer[index]))
    }
}
