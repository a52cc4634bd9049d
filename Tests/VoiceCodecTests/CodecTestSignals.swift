import Foundation
import VoiceCodec
import VoiceTestSupport

/// Deterministic signals and measurements for the codec tests (kept local so this target depends on nothing but
/// VoiceCodec).
enum CodecTestSignals {
    /// A sum of sines (interleaved when stereo; the right channel is the same partials at 3/4 amplitude, phase
    /// shifted, so a channel swap or a mono downmix would be detected).
    static func harmonicTone(
        partials: [(frequency: Double, amplitude: Double)], sampleRate: Int, channels: Int, samplesPerChannel: Int
    ) -> [Int16] {
        var out = [Int16](repeating: 0, count: samplesPerChannel * channels)
        for n in 0..<samplesPerChannel {
            let t = Double(n) / Double(sampleRate)
            for ch in 0..<channels {
                var value = 0.0
                for p in partials {
                    value += p.amplitude * sin(2 * .pi * p.frequency * t + Double(ch) * 0.9)
                }
                if ch == 1 { value *= 0.75 }
                out[n * channels + ch] = Int16(clamping: Int((value * 32767).rounded()))
            }
        }
        return out
    }

    /// The tone used for round trips: 440 Hz with two harmonics, all inside the narrowband passband.
    static func roundTripTone(sampleRate: Int, channels: Int, samplesPerChannel: Int) -> [Int16] {
        harmonicTone(
            partials: [(440, 0.25), (880, 0.12), (1320, 0.06)], sampleRate: sampleRate, channels: channels,
            samplesPerChannel: samplesPerChannel)
    }

    /// A speech-like mono signal: a glottal-style harmonic series whose pitch glides between 110 and 190 Hz,
    /// shaped by two fixed formant bumps and a 4 Hz syllabic envelope that never quite reaches silence.
    static func speechLike(sampleRate: Int, samplesPerChannel: Int) -> [Int16] {
        var out = [Int16](repeating: 0, count: samplesPerChannel)
        var phase = 0.0
        let nyquist = Double(sampleRate) / 2
        for n in 0..<samplesPerChannel {
            let t = Double(n) / Double(sampleRate)
            let f0 = 150 + 40 * sin(2 * .pi * 0.7 * t)
            phase += 2 * .pi * f0 / Double(sampleRate)
            var value = 0.0
            var k = 1.0
            while k * f0 < min(3_800, nyquist - 200) {
                let f = k * f0
                let formant = exp(-pow((f - 600) / 250, 2)) + 0.6 * exp(-pow((f - 1_800) / 400, 2)) + 0.05
                value += formant / k.squareRoot() * sin(k * phase)
                k += 1
            }
            let envelope = 0.55 + 0.45 * sin(2 * .pi * 4 * t)
            out[n] = Int16(clamping: Int((value * envelope * 9_000).rounded()))
        }
        return out
    }

    /// White noise in -amplitude...amplitude.
    static func noise(count: Int, amplitude: Int16, seed: UInt64) -> [Int16] {
        var rng = SplitMix64(seed: seed)
        return (0..<count).map { _ in Int16.random(in: -amplitude...amplitude, using: &rng) }
    }
}

/// Signal comparisons.
enum CodecMetrics {
    /// SNR in dB of `test` against `reference` over `range` of channel `channel` (interleaved with `channels`),
    /// where `test[n + delay]` is compared with `reference[n]`.
    static func snr(
        reference: [Int16], test: [Int16], delay: Int = 0, channels: Int = 1, channel: Int = 0, range: Range<Int>
    ) -> Double {
        var signal = 0.0
        var error = 0.0
        for n in range {
            let r = Double(reference[n * channels + channel])
            let d = Double(test[(n + delay) * channels + channel])
            signal += r * r
            error += (r - d) * (r - d)
        }
        return 10 * log10(signal / max(error, 1e-9))
    }

    /// Normalised cross-correlation of `test[n + delay]` with `reference[n]` over `range` of one channel.
    static func correlation(
        reference: [Int16], test: [Int16], delay: Int, channels: Int = 1, channel: Int = 0, range: Range<Int>
    ) -> Double {
        var rr = 0.0
        var dd = 0.0
        var rd = 0.0
        for n in range {
            let r = Double(reference[n * channels + channel])
            let d = Double(test[(n + delay) * channels + channel])
            rr += r * r
            dd += d * d
            rd += r * d
        }
        return rd / max((rr * dd).squareRoot(), 1e-9)
    }

    /// The delay in `delays` that maximises the correlation.
    static func bestDelay(
        reference: [Int16], test: [Int16], delays: ClosedRange<Int>, channels: Int = 1, range: Range<Int>
    ) -> Int {
        delays.max { a, b in
            correlation(reference: reference, test: test, delay: a, channels: channels, range: range)
                < correlation(reference: reference, test: test, delay: b, channels: channels, range: range)
        }!
    }
}

/// Encodes `pcm` frame by frame with a fresh encoder, returning the packets.
func encodeAll(_ pcm: [Int16], configuration: OpusEncoderConfiguration) throws -> [[UInt8]] {
    let encoder = try OpusEncoder(configuration: configuration)
    return try encodeAll(pcm, with: encoder)
}

/// Encodes whole frames of `pcm` with `encoder`, returning the packets.
func encodeAll(_ pcm: [Int16], with encoder: OpusEncoder) throws -> [[UInt8]] {
    let frame = encoder.configuration.samplesPerFrame
    var packets: [[UInt8]] = []
    var buffer = [UInt8](repeating: 0, count: OpusEncoder.maxPacketBytes)
    var start = 0
    while start + frame <= pcm.count {
        let bytes = try Array(pcm[start..<start + frame]).withUnsafeBufferPointer { input in
            try buffer.withUnsafeMutableBufferPointer { try encoder.encode(input, into: $0) }
        }
        packets.append(Array(buffer[0..<bytes]))
        start += frame
    }
    return packets
}
