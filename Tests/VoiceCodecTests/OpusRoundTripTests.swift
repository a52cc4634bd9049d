import Testing
import VoiceCodec

/// Encode/decode round trips through real libopus.
@Suite struct OpusRoundTripTests {
    static let rates = [8_000, 12_000, 16_000, 24_000, 48_000]

    /// Measured on libopus 1.3.1 with the 440 Hz harmonic tone: SNR 11.6...15.5 dB and correlation
    /// 0.965...0.986 after aligning by the encoder's lookahead, over every rate, channel count and duration.
    static let snrFloorDB = 9.0
    static let correlationFloor = 0.94

    @Test(arguments: rates, [1, 2])
    func roundTripReproducesToneAtEveryFrameDuration(sampleRate: Int, channels: Int) throws {
        for duration in OpusFrameDuration.allCases {
            let configuration = OpusEncoderConfiguration(
                sampleRate: sampleRate, channels: channels, frameDuration: duration,
                bitrate: channels == 1 ? 32_000 : 48_000)
            let encoder = try OpusEncoder(configuration: configuration)
            let decoder = try OpusDecoder(sampleRate: sampleRate, channels: channels)
            let frame = configuration.samplesPerChannelPerFrame
            #expect(frame == sampleRate * duration.rawValue / 1000)

            let input = CodecTestSignals.roundTripTone(
                sampleRate: sampleRate, channels: channels, samplesPerChannel: sampleRate)  // 1 s
            var packet = [UInt8](repeating: 0, count: OpusEncoder.maxPacketBytes)
            var pcm = [Int16](repeating: 0, count: decoder.maxFrameSamples * channels)
            var decoded: [Int16] = []
            var start = 0
            while start + configuration.samplesPerFrame <= input.count {
                let bytes = try encoder.encode(
                    Array(input[start..<start + configuration.samplesPerFrame]), into: &packet)
                #expect(bytes > 2 && bytes <= OpusEncoder.maxPacketBytes)
                #expect(packet.count == OpusEncoder.maxPacketBytes, "encode must not resize the caller's buffer")
                let payload = Array(packet[0..<bytes])
                #expect(
                    try payload.withUnsafeBufferPointer {
                        try OpusPacket.samplesPerChannel(in: $0, sampleRate: sampleRate)
                    } == frame)
                let samples = try decoder.decode(payload, into: &pcm)
                #expect(samples == frame)
                #expect(try decoder.finalRange == encoder.finalRange, "decoder and encoder range coders disagree")
                decoded += pcm[0..<samples * channels]
                start += configuration.samplesPerFrame
            }
            #expect(decoded.count == input.count / configuration.samplesPerFrame * configuration.samplesPerFrame)

            let delay = try encoder.lookaheadSamples
            #expect(delay > 0 && delay < frame + sampleRate / 100)
            let range = (sampleRate / 10)..<(decoded.count / channels - delay)  // skip the 100 ms start-up
            for channel in 0..<channels {
                let snr = CodecMetrics.snr(
                    reference: input, test: decoded, delay: delay, channels: channels, channel: channel, range: range)
                let correlation = CodecMetrics.correlation(
                    reference: input, test: decoded, delay: delay, channels: channels, channel: channel, range: range)
                #expect(
                    snr > Self.snrFloorDB,
                    "\(sampleRate) Hz \(channels) ch \(duration.rawValue) ms channel \(channel): SNR \(snr) dB")
                #expect(
                    correlation > Self.correlationFloor,
                    "\(sampleRate) Hz \(channels) ch \(duration.rawValue) ms channel \(channel): r = \(correlation)")
            }
        }
    }

    @Test func decoderAtAnotherRateReproducesTheSameTone() throws {
        // Sender at 48 kHz, receiver asks for 16 kHz: libopus resamples internally.
        let encoder = try OpusEncoder(configuration: .init(sampleRate: 48_000, bitrate: 32_000))
        let decoder = try OpusDecoder(sampleRate: 16_000, channels: 1)
        let input = CodecTestSignals.roundTripTone(sampleRate: 48_000, channels: 1, samplesPerChannel: 48_000)
        var pcm = [Int16](repeating: 0, count: decoder.maxFrameSamples)
        var decoded: [Int16] = []
        for packet in try encodeAll(input, with: encoder) {
            let samples = try decoder.decode(packet, into: &pcm)
            #expect(samples == 320)
            decoded += pcm[0..<samples]
        }
        #expect(decoded.count == 16_000)
        let reference = CodecTestSignals.roundTripTone(sampleRate: 16_000, channels: 1, samplesPerChannel: 16_000)
        let range = 1_600..<15_000
        let delay = CodecMetrics.bestDelay(reference: reference, test: decoded, delays: 0...400, range: range)
        let correlation = CodecMetrics.correlation(reference: reference, test: decoded, delay: delay, range: range)
        #expect(correlation > Self.correlationFloor, "r = \(correlation) at delay \(delay)")
    }

    @Test func resetEncoderAndDecoderReproduceTheirFirstOutput() throws {
        let configuration = OpusEncoderConfiguration(sampleRate: 16_000, bitrate: 24_000)
        let encoder = try OpusEncoder(configuration: configuration)
        let decoder = try OpusDecoder(sampleRate: 16_000, channels: 1)
        let input = CodecTestSignals.speechLike(sampleRate: 16_000, samplesPerChannel: 3_200)  // 10 frames

        func run() throws -> ([[UInt8]], [Int16]) {
            let packets = try encodeAll(input, with: encoder)
            var pcm = [Int16](repeating: 0, count: 320)
            var decoded: [Int16] = []
            for packet in packets {
                _ = try decoder.decode(packet, into: &pcm)
                decoded += pcm
            }
            return (packets, decoded)
        }
        let first = try run()
        let continued = try run()
        try encoder.reset()
        try decoder.reset()
        let afterReset = try run()
        #expect(first.0 != continued.0, "without reset the encoder carries state, so packets differ")
        #expect(afterReset.0 == first.0)
        #expect(afterReset.1 == first.1)
    }

    @Test func concealmentContinuesTheSignalForTheRequestedDuration() throws {
        let encoder = try OpusEncoder(configuration: .init(sampleRate: 48_000, bitrate: 32_000))
        let decoder = try OpusDecoder(sampleRate: 48_000, channels: 1)
        let input = CodecTestSignals.roundTripTone(sampleRate: 48_000, channels: 1, samplesPerChannel: 48_000 / 5)
        var pcm = [Int16](repeating: 0, count: 960)
        for packet in try encodeAll(input, with: encoder) { _ = try decoder.decode(packet, into: &pcm) }
        let lastEnergy = pcm.reduce(0.0) { $0 + Double($1) * Double($1) }

        pcm = [Int16](repeating: 0, count: 960)
        let written = try decoder.conceal(frameSamples: 960, into: &pcm)
        #expect(written == 960)
        #expect(try decoder.lastPacketDuration == 960)
        let concealedEnergy = pcm.reduce(0.0) { $0 + Double($1) * Double($1) }
        // PLC extrapolates the tone rather than emitting silence, at a comparable level.
        #expect(concealedEnergy > lastEnergy * 0.1, "concealed \(concealedEnergy) vs last frame \(lastEnergy)")
    }
}
