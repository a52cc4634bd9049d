import ArgumentParser
import BenchmarkFixtures
import CBaseline
import VoiceEngine

/// `voice-bench codec`: Opus encode/decode per 20 ms frame, G.711/G.722 encode+decode and concealment per 20 ms
/// frame, and resampling per 10 ms block, Swift wrapper vs C.
///
/// Both sides get their own codec or resampler state created with the same settings (the C side makes exactly the
/// calls the wrapper makes: `opus_encoder_create` + the same ctls, `opus_encode`; `opus_decoder_create`,
/// `opus_decode`; spandsp's `g711_*`/`g722_*`, `plc_rx`, `plc_fillin`; `speex_resampler_init`,
/// `speex_resampler_process_int`), read the same input buffers and write
/// into buffers of the same capacity.
struct CodecSuite: SideBySideSuite {
    static let suiteName = "codec"
    static let configuration = CommandConfiguration(
        commandName: "codec",
        abstract:
            "Opus encode/decode, G.711/G.722 encode+decode and PLC (20 ms), resampling (10 ms): Swift wrappers vs a plain C loop."
    )

    @OptionGroup var options: SideBySideOptions

    func makeCases() throws -> [SideBySideCase] {
        [
            try encodeCase(sampleRate: 16_000),
            try encodeCase(sampleRate: 48_000),
            try decodeCase(sampleRate: 16_000),
            try decodeCase(sampleRate: 48_000),
            try concealCase(sampleRate: 16_000),
            telephonyCase(.pcmu), telephonyCase(.pcma), telephonyCase(.g722),
            telephonyConcealCase(.pcmu), telephonyConcealCase(.pcma), telephonyConcealCase(.g722),
            try resampleCase(from: 48_000, to: 16_000),
            try resampleCase(from: 16_000, to: 48_000)
        ]
    }

    private func encodeCase(sampleRate: Int) throws -> SideBySideCase {
        let workload = try OpusEncodeWorkload(sampleRate: sampleRate)
        let config = workload.configuration
        let c = CHandle(
            cb_encoder_create(
                Int32(config.sampleRate), Int32(config.channels), config.application == .voip ? 1 : 0,
                Int32(config.bitrate), Int32(config.complexity), config.variableBitrate ? 1 : 0,
                config.inbandFEC ? 1 : 0, Int32(config.expectedLossPercent), config.dtx ? 1 : 0),
            "cb_encoder_create", destroy: cb_encoder_destroy)
        let packet = FixedBuffer<UInt8>(count: OpusEncoder.maxPacketBytes, repeating: 0)
        var next = 0
        return SideBySideCase(
            name: "Opus.encode.20ms.\(sampleRate / 1000)k",
            swift: { workload.run($0) },
            c: { n in
                let total = cb_encode_loop(
                    c.pointer, workload.pcm.pointer.baseAddress, Int32(workload.frameSamples),
                    Int32(workload.frameCount), Int64(next), Int64(n), packet.pointer.baseAddress,
                    Int32(packet.count))
                precondition(total >= 0, "opus_encode failed: \(total)")
                next = (next + n) % workload.frameCount
                return Int(total)
            })
    }

    private func decodeCase(sampleRate: Int) throws -> SideBySideCase {
        let workload = try OpusDecodeWorkload(sampleRate: sampleRate)
        let c = CHandle(cb_decoder_create(Int32(sampleRate), 1), "cb_decoder_create", destroy: cb_decoder_destroy)
        let pcm = FixedBuffer<Int16>(count: workload.pcm.count, repeating: 0)
        let stream = workload.stream
        var next = 0
        return SideBySideCase(
            name: "Opus.decode.20ms.\(sampleRate / 1000)k",
            swift: { workload.run($0) },
            c: { n in
                let total = cb_decode_loop(
                    c.pointer, stream.bytes.pointer.baseAddress, stream.offsets.pointer.baseAddress,
                    stream.lengths.pointer.baseAddress, Int32(stream.count), Int64(next), Int64(n),
                    pcm.pointer.baseAddress, Int32(pcm.count))
                precondition(total >= 0, "opus_decode failed: \(total)")
                next = (next + n) % stream.count
                return Int(total)
            })
    }

    private func concealCase(sampleRate: Int) throws -> SideBySideCase {
        let workload = try OpusConcealWorkload(sampleRate: sampleRate)
        let c = CHandle(cb_decoder_create(Int32(sampleRate), 1), "cb_decoder_create", destroy: cb_decoder_destroy)
        let pcm = FixedBuffer<Int16>(count: workload.pcm.count, repeating: 0)
        // Bring the C decoder to the same state: the same real packets first.
        let stream = try EncodedStream(
            pcm: Fixtures.speech(sampleRate: sampleRate),
            configuration: Fixtures.opusConfiguration(sampleRate: sampleRate))
        let warmed = cb_decode_loop(
            c.pointer, stream.bytes.pointer.baseAddress, stream.offsets.pointer.baseAddress,
            stream.lengths.pointer.baseAddress, Int32(stream.count), 0,
            Int64(min(OpusConcealWorkload.warmUpPackets, stream.count)), pcm.pointer.baseAddress, Int32(pcm.count))
        precondition(warmed >= 0, "opus_decode failed: \(warmed)")
        return SideBySideCase(
            name: "Opus.conceal.20ms.\(sampleRate / 1000)k",
            swift: { workload.run($0) },
            c: { n in
                let total = cb_conceal_loop(c.pointer, Int64(n), pcm.pointer.baseAddress, Int32(workload.frameSamples))
                precondition(total >= 0, "opus_decode(NULL) failed: \(total)")
                return Int(total)
            })
    }

    private static func cCodec(_ codec: TelephonyCodec) -> Int32 {
        switch codec {
        case .pcmu: 0
        case .pcma: 1
        case .g722: 2
        }
    }

    private func telephonyCase(_ codec: TelephonyCodec) -> SideBySideCase {
        let workload = TelephonyWorkload(codec: codec)
        let c = CHandle(
            cb_telephony_create(Self.cCodec(codec)), "cb_telephony_create", destroy: cb_telephony_destroy)
        let payload = FixedBuffer<UInt8>(count: workload.payload.count, repeating: 0)
        let pcm = FixedBuffer<Int16>(count: workload.pcm.count, repeating: 0)
        var next = 0
        return SideBySideCase(
            name: "\(codec.encodingName).encode+decode.20ms",
            swift: { workload.run($0) },
            c: { n in
                let total = cb_telephony_loop(
                    c.pointer, workload.input.pointer.baseAddress, Int32(workload.frameSamples),
                    Int32(workload.frameCount), Int64(next), Int64(n), payload.pointer.baseAddress,
                    pcm.pointer.baseAddress)
                next = (next + n) % workload.frameCount
                return Int(total)
            })
    }

    /// Every other frame lost: both sides decode the same received frame and conceal the next one, so every
    /// concealment starts a gap (pitch search and synthesis, the costly part of spandsp's PLC) and each side's
    /// concealer state follows the same real audio.
    private func telephonyConcealCase(_ codec: TelephonyCodec) -> SideBySideCase {
        let workload = TelephonyWorkload(codec: codec)
        let c = CHandle(
            cb_telephony_create(Self.cCodec(codec)), "cb_telephony_create", destroy: cb_telephony_destroy)
        let pcm = FixedBuffer<Int16>(count: workload.pcm.count, repeating: 0)
        var next = 0
        return SideBySideCase(
            name: "\(codec.encodingName).decode+conceal.20ms",
            swift: { workload.decodeAndConceal($0) },
            c: { n in
                let total = cb_telephony_conceal_loop(
                    c.pointer, workload.encoded.pointer.baseAddress, Int32(workload.payload.count),
                    Int32(workload.frameSamples), Int32(workload.frameCount), Int64(next), Int64(n),
                    pcm.pointer.baseAddress)
                next = (next + 2 * n) % workload.frameCount
                return Int(total)
            })
    }

    private func resampleCase(from inputRate: Int, to outputRate: Int) throws -> SideBySideCase {
        let workload = try ResampleWorkload(inputRate: inputRate, outputRate: outputRate)
        let c = CHandle(
            cb_resampler_create(1, UInt32(inputRate), UInt32(outputRate), Int32(workload.quality)),
            "cb_resampler_create", destroy: cb_resampler_destroy)
        let output = FixedBuffer<Int16>(count: workload.output.count, repeating: 0)
        var next = 0
        return SideBySideCase(
            name: "Resampler.process.10ms.\(inputRate / 1000)k-\(outputRate / 1000)k",
            swift: { workload.run($0) },
            c: { n in
                let total = cb_resample_loop(
                    c.pointer, workload.input.pointer.baseAddress, Int32(workload.blockSamples),
                    Int32(workload.blockCount), Int64(next), Int64(n), output.pointer.baseAddress,
                    UInt32(output.count))
                precondition(total >= 0, "speex_resampler_process_int failed: \(total)")
                next = (next + n) % workload.blockCount
                return Int(total)
            })
    }
}

/// Owns one C baseline handle and destroys it with the closure that uses it.
final class CHandle {
    let pointer: OpaquePointer
    private let destroy: (OpaquePointer) -> Void

    init(_ pointer: OpaquePointer?, _ call: String, destroy: @escaping (OpaquePointer) -> Void) {
        guard let pointer else { fatalError("\(call) failed") }
        self.pointer = pointer
        self.destroy = destroy
    }

    deinit { destroy(pointer) }
}
