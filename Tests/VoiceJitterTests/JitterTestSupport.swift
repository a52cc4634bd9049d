import VoiceCodec
import VoiceCore
import VoiceDSP
import VoiceJitter
import VoiceNetSim

/// Speech-like 16 kHz test audio and simulation helpers shared by the jitter tests.
enum JitterFixtures {
    /// `seconds` of speech-like audio (seeded), as 16-bit PCM at 16 kHz.
    /// Generated once (the generator is slow in debug builds) and repeated to the length asked for.
    static let speechLoop: [Int16] = SignalGenerator.toInt16(
        SignalGenerator.speechLike(sampleRate: 16_000, seconds: 12, seed: 7))

    static func speech(seconds: Double, seed: UInt64 = 7) -> [Int16] {
        let count = Int(seconds * 16_000)
        var out = [Int16]()
        out.reserveCapacity(count)
        while out.count < count { out += speechLoop.prefix(count - out.count) }
        return out
    }

    static func run(
        _ strategy: JitterBufferStrategy, seconds: Double, network: JitterSimulation.Network,
        encoder: OpusEncoderConfiguration = JitterSimulation.Configuration.defaultEncoder, seed: UInt64 = 7
    ) throws -> JitterSimulation.Result {
        var configuration = JitterSimulation.Configuration(encoder: encoder, network: network)
        configuration.drainMilliseconds = 1_000
        return try JitterSimulation.run(input: speech(seconds: seconds, seed: seed), configuration: configuration, strategy: strategy)
    }

    static func adaptive() throws -> AdaptiveJitterBuffer { try AdaptiveJitterBuffer() }
    static func speex() throws -> SpeexJitterBuffer { try SpeexJitterBuffer() }

    /// Largest absolute difference between neighbouring samples: a click shows up as a step far above what the
    /// decoded speech itself contains.
    static func maxStep(_ x: ArraySlice<Int16>) -> Int {
        var best = 0
        var previous = Int(x.first ?? 0)
        for s in x.dropFirst() {
            best = max(best, abs(Int(s) - previous))
            previous = Int(s)
        }
        return best
    }
}
