import Testing
import VoiceCodec
import VoiceTestSupport

/// G.711 and G.722 through spandsp: round trips, the payload formats, concealment, bad payloads.
@Suite struct TelephonyCodecTests {
    /// Encodes `pcm` in 20 ms frames and decodes each payload with a fresh codec pair; returns payloads and output.
    static func roundTrip(_ codec: TelephonyCodec, _ pcm: [Int16]) throws -> (payloads: [[UInt8]], decoded: [Int16]) {
        let encoder = TelephonyEncoder(codec: codec)
        let decoder = TelephonyDecoder(codec: codec)
        let frame = codec.sampleRate / 50
        var payload = [UInt8](repeating: 0, count: 400)
        var out = [Int16](repeating: 0, count: frame)
        var payloads: [[UInt8]] = []
        var decoded: [Int16] = []
        var start = 0
        while start + frame <= pcm.count {
            let bytes = try pcm[start..<start + frame].withUnsafeBufferPointer { input in
                try payload.withUnsafeMutableBufferPointer { try encoder.encode(input, into: $0) }
            }
            #expect(bytes == codec.payloadBytes(forSamples: frame))
            let packet = Array(payload[0..<bytes])
            payloads.append(packet)
            let samples = try packet.withUnsafeBufferPointer { input in
                try out.withUnsafeMutableBufferPointer { try decoder.decode(input, into: $0) }
            }
            #expect(samples == frame)
            decoded += out[0..<samples]
            start += frame
        }
        return (payloads, decoded)
    }

    /// Measured with spandsp 0.0.6 on the speech-like signal (1 s): PCMU 37.4 dB, PCMA 36.9 dB SNR; G.722 (after
    /// its 22-sample delay) 0.999 correlation.
    @Test(arguments: [TelephonyCodec.pcmu, .pcma])
    func g711RoundTripKeepsSpeechAbove30dB(codec: TelephonyCodec) throws {
        let input = CodecTestSignals.speechLike(sampleRate: 8_000, samplesPerChannel: 8_000)
        let (payloads, decoded) = try Self.roundTrip(codec, input)
        #expect(payloads.count == 50 && payloads.allSatisfy { $0.count == 160 })
        let snr = CodecMetrics.snr(reference: input, test: decoded, range: 0..<decoded.count)
        #expect(snr > 30, "\(codec) SNR \(snr) dB")
    }

    @Test func g722RoundTripKeepsWidebandSpeech() throws {
        let input = CodecTestSignals.speechLike(sampleRate: 16_000, samplesPerChannel: 16_000)
        let (payloads, decoded) = try Self.roundTrip(.g722, input)
        #expect(payloads.count == 50 && payloads.allSatisfy { $0.count == 160 }, "64 kb/s: 160 bytes per 20 ms")
        let delay = CodecMetrics.bestDelay(reference: input, test: decoded, delays: 0...60, range: 0..<15_000)
        let correlation = CodecMetrics.correlation(reference: input, test: decoded, delay: delay, range: 0..<15_000)
        #expect(correlation > 0.98, "G.722 correlation \(correlation) at delay \(delay)")
    }

    /// The G.711 code words of the ITU-T tables, computed here from the standard's segment rule rather than taken
    /// from spandsp: silence is 0xFF (µ-law) and 0xD5 (A-law), full scale positive 0x80 and 0xAA.
    @Test func g711CodeWordsAreTheStandardOnes() throws {
        func encode(_ codec: TelephonyCodec, _ samples: [Int16]) throws -> [UInt8] {
            var out = [UInt8](repeating: 0, count: samples.count)
            let n = try samples.withUnsafeBufferPointer { input in
                try out.withUnsafeMutableBufferPointer { try TelephonyEncoder(codec: codec).encode(input, into: $0) }
            }
            return Array(out[0..<n])
        }
        #expect(try encode(.pcmu, [0, 32_767, -32_768]) == [0xFF, 0x80, 0x00])
        #expect(try encode(.pcma, [0, 32_767, -32_768]) == [0xD5, 0xAA, 0x2A])
        // µ-law: every code word decodes to the ITU-T value ((2·mantissa + 33) << exponent − 33) · 4 with its sign.
        let decoder = TelephonyDecoder(codec: .pcmu)
        let all = (0...255).map { UInt8($0) }
        var pcm = [Int16](repeating: 0, count: 256)
        _ = try all.withUnsafeBufferPointer { input in
            try pcm.withUnsafeMutableBufferPointer { try decoder.decode(input, into: $0) }
        }
        for code in 0...255 {
            let u = ~UInt8(code)
            let magnitude = ((2 * Int(u & 0x0F) + 33) << Int((u >> 4) & 0x07) - 33) * 4
            let expected = u & 0x80 != 0 ? -magnitude : magnitude
            // spandsp's decoder (and the reference tables) place the value in a 16-bit word: ×4 of the 14-bit one.
            #expect(Int(pcm[code]) == expected, "µ-law 0x\(String(code, radix: 16))")
        }
    }

    /// spandsp's PLC continues a voiced signal through a 20 ms loss (the concealed frame follows the tone's period)
    /// and fades to silence over a long loss.
    @Test(arguments: [TelephonyCodec.pcmu, .g722])
    func concealmentContinuesThenFades(codec: TelephonyCodec) throws {
        let rate = codec.sampleRate
        let frame = rate / 50
        let tone = CodecTestSignals.roundTripTone(sampleRate: rate, channels: 1, samplesPerChannel: rate)
        let encoder = TelephonyEncoder(codec: codec)
        let decoder = TelephonyDecoder(codec: codec)
        var payload = [UInt8](repeating: 0, count: frame)
        var out = [Int16](repeating: 0, count: frame)
        // 10 frames received, then frame 10 lost: compare the concealment with what would have been decoded.
        for k in 0..<10 {
            let n = try tone[(k * frame)..<((k + 1) * frame)].withUnsafeBufferPointer { input in
                try payload.withUnsafeMutableBufferPointer { try encoder.encode(input, into: $0) }
            }
            _ = try payload[0..<n].withUnsafeBufferPointer { input in
                try out.withUnsafeMutableBufferPointer { try decoder.decode(input, into: $0) }
            }
        }
        let concealed = out.withUnsafeMutableBufferPointer { decoder.conceal(frameSamples: frame, into: $0) }
        #expect(concealed == frame)
        let reference = Array(tone[(10 * frame)..<(11 * frame)])
        let delay = CodecMetrics.bestDelay(reference: reference, test: out + out, delays: 0...40, range: 0..<frame / 2)
        let correlation = CodecMetrics.correlation(
            reference: reference, test: out + out, delay: delay, range: 0..<frame / 2)
        #expect(correlation > 0.8, "\(codec) concealment correlation \(correlation)")
        #expect(out.map { abs(Int($0)) }.max()! > 2_000, "the concealed frame is not silence")
        // 200 ms more of loss: spandsp fades the repetition out; the last frame is silent.
        for _ in 0..<10 {
            _ = out.withUnsafeMutableBufferPointer { decoder.conceal(frameSamples: frame, into: $0) }
        }
        #expect(out.allSatisfy { $0 == 0 }, "\(codec) concealment must fade out over a long loss")
        #expect(out.withUnsafeMutableBufferPointer { decoder.conceal(frameSamples: 0, into: $0) } == 0)
    }

    /// Random payloads of random lengths (every byte string is a valid G.711/G.722 payload): they decode to the
    /// expected sample count; an empty payload and a short output buffer are typed errors, never a crash.
    @Test(arguments: TelephonyCodec.allCases)
    func randomPayloadsDecodeOrFailCleanly(codec: TelephonyCodec) throws {
        var rng = SplitMix64(seed: 0x7E1E_F0E5 &+ UInt64(codec.payloadType))
        let decoder = try AudioDecoder(codec: .telephony(codec), sampleRate: codec.sampleRate)
        var pcm = [Int16](repeating: 0, count: 4_000)
        for _ in 0..<500 {
            let length = Int.random(in: 0...1_500, using: &rng)
            let payload = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let capacity = Int.random(in: 0...pcm.count, using: &rng)
            let result = payload.withUnsafeBufferPointer { input in
                pcm.withUnsafeMutableBufferPointer { output in
                    Result { () throws(OpusError) -> Int in
                        try decoder.decode(input, into: UnsafeMutableBufferPointer(rebasing: output[0..<capacity]))
                    }
                }
            }
            switch result {
            case .success(let samples):
                #expect(samples == codec.samples(inPayloadBytes: length) && samples <= capacity && length > 0)
            case .failure(let error):
                #expect(
                    length == 0 ? error.kind == .invalidPacket : error.kind == .bufferTooSmall,
                    "\(length) bytes into \(capacity): \(error)")
            }
            let samples = codec.samples(inPayloadBytes: length)
            #expect(
                payload.withUnsafeBufferPointer { decoder.durationAndFEC(of: $0) }.map(\.samples)
                    == (length == 0 || samples > codec.sampleRate * 120 / 1000 ? nil : samples))
        }
    }

    @Test func audioDecoderRefusesARateTheCodecDoesNotCode() {
        #expect(throws: OpusError(.badArgument, call: "AudioDecoder.init", field: "sampleRate")) {
            try AudioDecoder(codec: .pcma, sampleRate: 16_000)
        }
        #expect(AudioCodec.g722.rtpClockRate == 8_000 && AudioCodec.g722.fixedSampleRate == 16_000)
        #expect(AudioCodec.opus.rtpClockRate == 48_000 && AudioCodec.opus.fixedSampleRate == nil)
    }

    @Test func anEncoderBufferTooSmallIsATypedError() throws {
        let pcm = [Int16](repeating: 100, count: 320)
        var payload = [UInt8](repeating: 0, count: 100)
        #expect(throws: OpusError(.bufferTooSmall, call: "g722_encode")) {
            try pcm.withUnsafeBufferPointer { input in
                try payload.withUnsafeMutableBufferPointer {
                    try TelephonyEncoder(codec: .g722).encode(input, into: $0)
                }
            }
        }
    }
}
