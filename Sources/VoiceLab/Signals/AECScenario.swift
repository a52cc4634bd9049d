import VoiceEngine
import Foundation

/// A synthetic echo-cancellation scenario: a far-end talker played through a loudspeaker into a room and picked up,
/// with its delay, the two clocks' drift, a near-end talker, noise and loudspeaker distortion. The project's AEC
/// test vectors and the `aec` benchmark are made from these, deterministically from the seeds.
public struct AECScenario: Codable, Sendable, Equatable {
    public var name: String
    public var sampleRate: Int = 16_000
    /// Long enough for a steady state after convergence and, under drift, after the drift compensation settles;
    /// the checks measure the second half.
    public var seconds: Double = 20
    /// Seed of the far-end speech-like talker.
    public var farSeed: UInt64 = 101
    /// Background noise in the far-end signal itself (what the remote microphone picked up around the talker),
    /// pink, dBFS RMS (sine-referenced), or `nil` for a perfectly silent background (write `null` in a manifest).
    /// Real far-end speech always has one; it matters to MDF, which learns the echo path only at the frequencies
    /// the reference excites, and the synthetic talker alone is purely harmonic. -50 dBFS by default: a quiet room
    /// at the far end, about 35 dB under the talker.
    public var farNoiseDBFS: Double? = -50
    /// Reverberation time (RT60) of the synthetic room, ms.
    public var rt60Milliseconds: Double = 150
    /// Length of the room impulse response, ms.
    public var impulseResponseMilliseconds: Double = 60
    /// Seed of the impulse response's reflections.
    public var roomSeed: UInt64 = 7
    /// Bulk delay from loudspeaker to microphone (device buffering plus flight time), ms.
    public var delayMilliseconds: Double = 40
    /// When set, the bulk delay switches to this value halfway through (a device latency change).
    public var delayAfterChangeMilliseconds: Double?
    /// Loudspeaker clock faster than the microphone's by this many ppm (negative: slower).
    public var driftPPM: Double = 0
    /// Echo level relative to the far end, dB (the peak tap of the room response).
    public var echoGainDB: Double = -6
    /// Seed of a near-end talker (double talk), or `nil` for none.
    public var nearSeed: UInt64?
    public var nearLevel: Double = 0.3
    /// Pink noise at the microphone, dBFS RMS (sine-referenced), or `nil` for none.
    public var noiseDBFS: Double?
    /// Loudspeaker soft clipping: `tanh(k·x)/k` with this `k`, or `nil` for a linear loudspeaker.
    public var softClip: Double?

    public init(name: String) { self.name = name }

    private enum CodingKeys: String, CodingKey {
        case name, sampleRate, seconds, farSeed, farNoiseDBFS, rt60Milliseconds, impulseResponseMilliseconds, roomSeed
        case delayMilliseconds, delayAfterChangeMilliseconds, driftPPM, echoGainDB, nearSeed, nearLevel, noiseDBFS
        case softClip
    }

    /// Decodes a scenario in which every field but `name` may be left out (it then keeps its default), so a
    /// manifest lists only what makes the scenario special.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(name: try c.decode(String.self, forKey: .name))
        sampleRate = try c.decodeIfPresent(Int.self, forKey: .sampleRate) ?? sampleRate
        seconds = try c.decodeIfPresent(Double.self, forKey: .seconds) ?? seconds
        farSeed = try c.decodeIfPresent(UInt64.self, forKey: .farSeed) ?? farSeed
        if c.contains(.farNoiseDBFS) { farNoiseDBFS = try c.decodeIfPresent(Double.self, forKey: .farNoiseDBFS) }
        rt60Milliseconds = try c.decodeIfPresent(Double.self, forKey: .rt60Milliseconds) ?? rt60Milliseconds
        impulseResponseMilliseconds =
            try c.decodeIfPresent(Double.self, forKey: .impulseResponseMilliseconds) ?? impulseResponseMilliseconds
        roomSeed = try c.decodeIfPresent(UInt64.self, forKey: .roomSeed) ?? roomSeed
        delayMilliseconds = try c.decodeIfPresent(Double.self, forKey: .delayMilliseconds) ?? delayMilliseconds
        delayAfterChangeMilliseconds = try c.decodeIfPresent(Double.self, forKey: .delayAfterChangeMilliseconds)
        driftPPM = try c.decodeIfPresent(Double.self, forKey: .driftPPM) ?? driftPPM
        echoGainDB = try c.decodeIfPresent(Double.self, forKey: .echoGainDB) ?? echoGainDB
        nearSeed = try c.decodeIfPresent(UInt64.self, forKey: .nearSeed)
        nearLevel = try c.decodeIfPresent(Double.self, forKey: .nearLevel) ?? nearLevel
        noiseDBFS = try c.decodeIfPresent(Double.self, forKey: .noiseDBFS)
        softClip = try c.decodeIfPresent(Double.self, forKey: .softClip)
    }
}

/// The signals of one scenario, as 16-bit PCM at the scenario's rate, all the same length.
public struct AECSignals: Sendable {
    /// What was sent to the loudspeaker (the reference the canceller is given).
    public var far: [Int16]
    /// The microphone: echo + near end + noise.
    public var mic: [Int16]
    /// The clean near-end talker, sample-aligned with `mic` (silence when there is none).
    public var near: [Int16]
    /// The echo alone, as it reaches the microphone.
    public var echo: [Int16]
}

/// Makes ``AECSignals`` for an ``AECScenario``.
public enum AECVectorGenerator {
    /// Generates the scenario's signals (deterministic for given seeds).
    public static func generate(_ s: AECScenario) -> AECSignals {
        let rate = s.sampleRate
        let count = Int((s.seconds * Double(rate)).rounded())
        var far = SignalGenerator.speechLike(sampleRate: rate, seconds: s.seconds, seed: s.farSeed, level: 0.3)
        if let floor = s.farNoiseDBFS {
            let background = SignalGenerator.pinkNoise(
                rms: Foundation.pow(10, floor / 20) / 2.0.squareRoot(), sampleRate: rate, seconds: s.seconds,
                seed: s.farSeed &+ 7919)
            for i in far.indices { far[i] = max(-1, min(1, far[i] + background[i])) }
        }
        let farQuantized = SignalGenerator.toFloat(SignalGenerator.toInt16(far))
        // Loudspeaker: optional soft clip, then the speaker's clock (drift) as heard on the microphone's clock.
        var speaker = farQuantized
        if let k = s.softClip, k > 0 { speaker = speaker.map { Float(tanh(Double($0) * k) / k) } }
        if s.driftPPM != 0 { speaker = resampleForDrift(speaker, ppm: s.driftPPM, count: count) }
        let h = roomImpulseResponse(
            sampleRate: rate, rt60Milliseconds: s.rt60Milliseconds, lengthMilliseconds: s.impulseResponseMilliseconds,
            gainDB: s.echoGainDB, seed: s.roomSeed)
        let room = FFT.convolve(speaker, h)
        let d1 = Int((s.delayMilliseconds * Double(rate) / 1000).rounded())
        let d2 = s.delayAfterChangeMilliseconds.map { Int(($0 * Double(rate) / 1000).rounded()) } ?? d1
        var echo = [Float](repeating: 0, count: count)
        for n in 0..<count {
            let d = n < count / 2 ? d1 : d2
            let k = n - d
            if k >= 0 && k < room.count { echo[n] = room[k] }
        }
        let near: [Float] =
            s.nearSeed.map {
                SignalGenerator.speechLike(sampleRate: rate, seconds: s.seconds, seed: $0, level: s.nearLevel)
            } ?? [Float](repeating: 0, count: count)
        let noise: [Float] =
            s.noiseDBFS.map {
                SignalGenerator.pinkNoise(
                    rms: Foundation.pow(10, $0 / 20) / 2.0.squareRoot(), sampleRate: rate, seconds: s.seconds,
                    seed: 4242)
            } ?? [Float](repeating: 0, count: count)
        let mic = (0..<count).map { echo[$0] + near[$0] + noise[$0] }
        return AECSignals(
            far: SignalGenerator.toInt16(far), mic: SignalGenerator.toInt16(mic), near: SignalGenerator.toInt16(near),
            echo: SignalGenerator.toInt16(echo))
    }

    /// A synthetic room response: a direct path (1 ms in) followed by exponentially decaying diffuse
    /// reflections (seeded Gaussian noise, decaying 60 dB over `rt60`), peak tap at `gainDB`.
    public static func roomImpulseResponse(
        sampleRate: Int, rt60Milliseconds: Double, lengthMilliseconds: Double, gainDB: Double, seed: UInt64
    ) -> [Float] {
        var rng = SeededGenerator(seed: seed)
        let length = max(2, Int(lengthMilliseconds * Double(sampleRate) / 1000))
        let direct = sampleRate / 1000
        let decay = 6.9078 / (rt60Milliseconds / 1000 * Double(sampleRate))  // ln(1000) per rt60
        var h = [Float](repeating: 0, count: length)
        for n in direct + 1..<length {
            h[n] = Float(0.3 * rng.nextGaussian() * Foundation.exp(-decay * Double(n - direct)))
        }
        if direct < length { h[direct] = 1 }
        let gain = Float(Foundation.pow(10, gainDB / 20))
        return h.map { $0 * gain }
    }

    /// The loudspeaker signal on the microphone's clock: sample `n` is the far end at `n·(1 + ppm·10⁻⁶)`, read by
    /// windowed-sinc interpolation (an independent method from the engine's speexdsp resampler).
    static func resampleForDrift(_ x: [Float], ppm: Double, count: Int) -> [Float] {
        let ratio = 1 + ppm / 1_000_000
        let half = 16
        var out = [Float](repeating: 0, count: count)
        for n in 0..<count {
            let t = Double(n) * ratio
            let base = Int(t.rounded(.down))
            let frac = t - Double(base)
            var acc = 0.0
            for k in (-half + 1)...half {
                let i = base + k
                guard i >= 0 && i < x.count else { continue }
                let u = Double(k) - frac
                let sinc = abs(u) < 1e-9 ? 1 : sin(Double.pi * u) / (Double.pi * u)
                let window = 0.5 + 0.5 * cos(Double.pi * u / Double(half))
                acc += Double(x[i]) * sinc * window
            }
            out[n] = Float(acc)
        }
        return out
    }
}
