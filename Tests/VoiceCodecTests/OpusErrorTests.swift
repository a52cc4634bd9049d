import Testing
import VoiceCodec

/// Bad configurations, corrupt packets and short buffers give typed errors, never crashes.
@Suite struct OpusErrorTests {
    struct InvalidCase: Sendable, CustomTestStringConvertible {
        let field: String
        let configuration: OpusEncoderConfiguration
        var testDescription: String { field }
    }

    static let invalidConfigurations: [InvalidCase] = [
        .init(field: "sampleRate", configuration: .init(sampleRate: 44_100)),
        .init(field: "sampleRate", configuration: .init(sampleRate: 0)),
        .init(field: "channels", configuration: .init(channels: 0)),
        .init(field: "channels", configuration: .init(channels: 3)),
        .init(field: "bitrate", configuration: .init(bitrate: 1_000)),
        .init(field: "bitrate", configuration: .init(bitrate: 1_000_000)),
        .init(field: "complexity", configuration: .init(complexity: -1)),
        .init(field: "complexity", configuration: .init(complexity: 11)),
        .init(field: "expectedLossPercent", configuration: .init(expectedLossPercent: 101)),
        .init(field: "expectedLossPercent", configuration: .init(expectedLossPercent: -5))
    ]

    @Test(arguments: invalidConfigurations)
    func invalidConfigurationThrowsBadArgumentNamingTheField(_ invalid: InvalidCase) {
        let error = #expect(throws: OpusError.self) { try OpusEncoder(configuration: invalid.configuration) }
        #expect(error?.kind == .badArgument)
        #expect(error?.code == -1)
        #expect(error?.field == invalid.field)
        #expect(error?.description.contains(invalid.field) == true)
    }

    @Test func decoderRejectsUnsupportedRateAndChannels() {
        let rate = #expect(throws: OpusError.self) { try OpusDecoder(sampleRate: 22_050, channels: 1) }
        #expect(rate?.kind == .badArgument && rate?.field == "sampleRate")
        let channels = #expect(throws: OpusError.self) { try OpusDecoder(sampleRate: 48_000, channels: 3) }
        #expect(channels?.kind == .badArgument && channels?.field == "channels")
    }

    @Test(arguments: [
        [UInt8](),  // empty: not an Opus packet (a lost packet is concealed, not decoded)
        [0x03],  // code 3 without its frame-count byte
        [0x03, 0x00],  // code 3 with zero frames
        [0x01, 0x01],  // code 1 (two equal frames) with an odd payload
        [0xFF, 0xFF, 0xFF, 0xFF],  // code 3, 63 frames of 20 ms: longer than 120 ms
        [0x0B, 0xFF, 0xFF, 0xFF]  // code 3 VBR with frame lengths past the end
    ])
    func corruptPacketThrowsInvalidPacketAndDecoderCarriesOn(_ garbage: [UInt8]) throws {
        let decoder = try OpusDecoder(sampleRate: 48_000, channels: 1)
        var pcm = [Int16](repeating: 0, count: decoder.maxFrameSamples)
        let error = #expect(throws: OpusError.self) { try decoder.decode(garbage, into: &pcm) }
        #expect(error?.kind == .invalidPacket)
        #expect(error?.call == "opus_decode")

        let good = try encodeAll(
            CodecTestSignals.roundTripTone(sampleRate: 48_000, channels: 1, samplesPerChannel: 960),
            configuration: .init())
        #expect(try decoder.decode(good[0], into: &pcm) == 960)
    }

    @Test func decodeIntoTooSmallBufferThrowsBufferTooSmall() throws {
        let packets = try encodeAll(
            CodecTestSignals.roundTripTone(sampleRate: 48_000, channels: 1, samplesPerChannel: 2_880),
            configuration: .init(frameDuration: .ms60))
        let decoder = try OpusDecoder(sampleRate: 48_000, channels: 1)
        var pcm = [Int16](repeating: 0, count: 1_920)  // 40 ms for a 60 ms packet
        let error = #expect(throws: OpusError.self) { try decoder.decode(packets[0], into: &pcm) }
        #expect(error?.kind == .bufferTooSmall)
        #expect(error?.code == -2)
        #expect(error?.call == "opus_decode")
        pcm = [Int16](repeating: 0, count: 2_880)
        #expect(try decoder.decode(packets[0], into: &pcm) == 2_880)
    }

    @Test func encodeIntoEmptyBufferThrowsBufferTooSmall() throws {
        let encoder = try OpusEncoder(configuration: .init())
        var empty = [UInt8]()
        let pcm = [Int16](repeating: 0, count: 960)
        let error = #expect(throws: OpusError.self) { try encoder.encode(pcm, into: &empty) }
        #expect(error?.kind == .bufferTooSmall)
    }

    @Test func concealAndFECRejectDurationsThatAreNotMultiplesOf2_5ms() throws {
        let decoder = try OpusDecoder(sampleRate: 48_000, channels: 1)
        var pcm = [Int16](repeating: 0, count: 960)
        let conceal = #expect(throws: OpusError.self) { try decoder.conceal(frameSamples: 100, into: &pcm) }
        #expect(conceal?.kind == .badArgument)
        #expect(conceal?.call == "opus_decode(NULL)")

        let packet = try encodeAll([Int16](repeating: 0, count: 960), configuration: .init())[0]
        let fec = #expect(throws: OpusError.self) { try decoder.decodeFEC(from: packet, frameSamples: 100, into: &pcm) }
        #expect(fec?.kind == .badArgument)
        let empty = #expect(throws: OpusError.self) { try decoder.decodeFEC(from: [], frameSamples: 960, into: &pcm) }
        #expect(empty?.kind == .invalidPacket)
    }

    @Test func errorKindsMapFromLibopusCodes() {
        let expected: [(Int32, OpusError.Kind)] = [
            (-1, .badArgument), (-2, .bufferTooSmall), (-3, .internalError), (-4, .invalidPacket),
            (-5, .unimplemented), (-6, .invalidState), (-7, .allocFail), (-42, .unknown(-42))
        ]
        for (code, kind) in expected {
            let error = OpusError(code: code, call: "opus_test")
            #expect(error.kind == kind)
            #expect(OpusError(kind, call: "opus_test") == error)
            #expect(error.description.contains("opus_test") && error.description.contains("\(code)"))
        }
    }
}
