import Testing
import VoiceCodec

/// Encoder settings, at creation and changed while running, change what libopus produces.
@Suite struct OpusSettingsTests {
    static let speech48k = CodecTestSignals.speechLike(sampleRate: 48_000, samplesPerChannel: 48_000 * 2)

    static func averageSize(_ packets: some Collection<[UInt8]>) -> Double {
        Double(packets.reduce(0) { $0 + $1.count }) / Double(packets.count)
    }

    @Test func lowerBitrateAtRuntimeShrinksPackets() throws {
        let encoder = try OpusEncoder(configuration: .init(sampleRate: 48_000, bitrate: 64_000))
        let half = Self.speech48k.count / 2
        let high = try encodeAll(Array(Self.speech48k[..<half]), with: encoder)
        try encoder.setBitrate(12_000)
        #expect(encoder.configuration.bitrate == 12_000)
        let low = try encodeAll(Array(Self.speech48k[half...]), with: encoder)
        let highAverage = Self.averageSize(high.dropFirst(5))
        let lowAverage = Self.averageSize(low.dropFirst(5))
        // 64 kb/s is 160 bytes per 20 ms, 12 kb/s is 30: expect at least a 2.5x drop.
        #expect(lowAverage * 2.5 < highAverage, "64 kb/s: \(highAverage) B, 12 kb/s: \(lowAverage) B")
    }

    @Test(arguments: OpusFrameDuration.allCases)
    func constantBitrateGivesExactPacketSizes(duration: OpusFrameDuration) throws {
        let configuration = OpusEncoderConfiguration(
            sampleRate: 48_000, application: .audio, frameDuration: duration, bitrate: 32_000,
            variableBitrate: false)
        let packets = try encodeAll(Array(Self.speech48k[..<48_000]), configuration: configuration)
        let expected = 32_000 * duration.rawValue / 1000 / 8
        #expect(packets.allSatisfy { $0.count == expected }, "sizes \(Set(packets.map(\.count))) != \(expected)")
    }

    @Test func switchingToConstantBitrateAtRuntimeFixesPacketSize() throws {
        let encoder = try OpusEncoder(configuration: .init(sampleRate: 48_000, bitrate: 32_000))
        let vbr = try encodeAll(Array(Self.speech48k[..<48_000]), with: encoder)
        #expect(Set(vbr.map(\.count)).count > 1, "VBR packet sizes vary")
        try encoder.setVariableBitrate(false)
        #expect(encoder.configuration.variableBitrate == false)
        let cbr = try encodeAll(Array(Self.speech48k[48_000...]), with: encoder)
        #expect(cbr.allSatisfy { $0.count == 80 }, "sizes \(Set(cbr.map(\.count)))")
    }

    @Test func enablingFECAtRuntimeAddsFECData() throws {
        let input = CodecTestSignals.speechLike(sampleRate: 16_000, samplesPerChannel: 32_000)
        let encoder = try OpusEncoder(configuration: .init(sampleRate: 16_000, bitrate: 24_000))
        let before = try encodeAll(Array(input[..<16_000]), with: encoder)
        try encoder.setInbandFEC(true)
        try encoder.setExpectedLossPercent(20)
        #expect(encoder.configuration.inbandFEC && encoder.configuration.expectedLossPercent == 20)
        let after = try encodeAll(Array(input[16_000...]), with: encoder)
        #expect(before.allSatisfy { !OpusPacket.hasFEC($0) })
        #expect(after.filter { OpusPacket.hasFEC($0) }.count > after.count / 2)

        // Expected loss 0 stops spending bits on FEC even with FEC on.
        try encoder.setExpectedLossPercent(0)
        let noLoss = try encodeAll(Array(input[..<16_000]), with: encoder)
        #expect(noLoss.dropFirst(2).allSatisfy { !OpusPacket.hasFEC($0) })
    }

    @Test func enablingDTXAtRuntimeSuppressesSilence() throws {
        let silence = [Int16](repeating: 0, count: 16_000)
        let encoder = try OpusEncoder(configuration: .init(sampleRate: 16_000, bitrate: 24_000))
        let before = try encodeAll(silence, with: encoder)
        try encoder.setDTX(true)
        #expect(encoder.configuration.dtx)
        let after = try encodeAll(silence + silence, with: encoder)
        #expect(before.allSatisfy { $0.count > 2 })
        #expect(after.suffix(40).filter { $0.count <= 2 }.count >= 36)
    }

    @Test func complexityChangesTheBitstream() throws {
        let input = Array(Self.speech48k[..<19_200])
        let low = try encodeAll(input, configuration: .init(sampleRate: 48_000, complexity: 0))
        let encoder = try OpusEncoder(configuration: .init(sampleRate: 48_000, complexity: 0))
        try encoder.setComplexity(10)
        #expect(encoder.configuration.complexity == 10)
        let high = try encodeAll(input, with: encoder)
        let reference = try encodeAll(input, configuration: .init(sampleRate: 48_000, complexity: 10))
        #expect(high == reference, "setComplexity(10) encodes exactly as a complexity-10 encoder")
        #expect(high != low)
    }

    @Test func settersRejectOutOfRangeValuesAndKeepTheConfiguration() throws {
        let encoder = try OpusEncoder(configuration: .init())
        let original = encoder.configuration
        #expect(throws: OpusError(.badArgument, call: "OpusEncoderConfiguration.validate", field: "bitrate")) {
            try encoder.setBitrate(100)
        }
        #expect(throws: OpusError(.badArgument, call: "OpusEncoderConfiguration.validate", field: "complexity")) {
            try encoder.setComplexity(11)
        }
        #expect(
            throws: OpusError(.badArgument, call: "OpusEncoderConfiguration.validate", field: "expectedLossPercent")
        ) {
            try encoder.setExpectedLossPercent(-1)
        }
        #expect(encoder.configuration == original)
    }

    @Test func packetInspectionReadsDurationModeAndChannels() throws {
        for duration in OpusFrameDuration.allCases {
            let celt = try encodeAll(
                Array(Self.speech48k[..<9_600]),
                configuration: .init(
                    sampleRate: 48_000, channels: 1, application: .restrictedLowDelay, frameDuration: duration))
            let silk = try encodeAll(
                CodecTestSignals.speechLike(sampleRate: 8_000, samplesPerChannel: 1_600),
                configuration: .init(sampleRate: 8_000, frameDuration: duration, bitrate: 12_000))
            let stereo = try encodeAll(
                CodecTestSignals.roundTripTone(sampleRate: 48_000, channels: 2, samplesPerChannel: 9_600),
                configuration: .init(sampleRate: 48_000, channels: 2, frameDuration: duration, bitrate: 64_000))
            let samples48k = 48 * duration.rawValue
            try celt[1].withUnsafeBufferPointer { (packet) throws in
                #expect(OpusPacket.mode(of: packet) == .celt)
                #expect(OpusPacket.channels(of: packet) == 1)
                #expect(try OpusPacket.samplesPerChannel(in: packet, sampleRate: 48_000) == samples48k)
                #expect(try OpusPacket.samplesPerChannel(in: packet, sampleRate: 8_000) == samples48k / 6)
                // CELT frames are at most 20 ms, so longer durations are several frames in one packet.
                #expect(try OpusPacket.frameCount(in: packet) == max(1, duration.rawValue / 20))
                #expect(OpusPacket.bandwidth(of: packet) == .fullband)
            }
            try silk[1].withUnsafeBufferPointer { (packet) throws in
                #expect(OpusPacket.mode(of: packet) == .silk)
                #expect(OpusPacket.bandwidth(of: packet) == .narrowband)
                #expect(try OpusDecoder.packetSamplesPerChannel(packet, sampleRate: 8_000) == 8 * duration.rawValue)
            }
            stereo[1].withUnsafeBufferPointer { #expect(OpusPacket.channels(of: $0) == 2) }
        }
        [UInt8]().withUnsafeBufferPointer { empty in
            #expect(OpusPacket.mode(of: empty) == nil)
            #expect(!OpusPacket.hasFEC(empty))
            #expect(throws: OpusError.self) { try OpusPacket.frameCount(in: empty) }
        }
    }
}
