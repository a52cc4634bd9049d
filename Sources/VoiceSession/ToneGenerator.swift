#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Generates a call-progress tone with its exact cadence, one block at a time, without allocating.
///
/// Timing is sample-exact: segment boundaries fall at `round(cumulative ms × rate / 1000)`, so at 8, 16 and
/// 48 kHz every on and off segment lasts exactly `ms × rate / 1000` samples and the cadence never drifts.
///
/// No clicks: the oscillators run continuously (phase-continuous across every segment boundary and every
/// block) and the tone is gated by an envelope that ramps on and off over ``rampMilliseconds`` (5 ms by default)
/// inside each on segment, with a quarter-sine shape. The first and last sample of an on segment are therefore
/// small but not zero, and off segments are exactly zero.
public struct ToneGenerator: Sendable {
    /// What is played.
    public let spec: ToneSpec
    /// The rate rendered at.
    public let sampleRate: Int
    /// Samples of each cadence segment (exact for whole-sample durations).
    public let segmentSamples: [Int]
    /// Ramp length in samples, at most half of the shortest on segment.
    public let rampSamples: Int

    private var increments: [Double]
    private var phases: [Double]
    private let componentAmplitude: Double
    private var segment = 0
    private var offset = 0
    /// Samples rendered so far.
    public private(set) var position: Int64 = 0
    /// Whether a non-repeating cadence has finished (all later samples are silence).
    public private(set) var isFinished = false

    /// - Parameters:
    ///   - spec: the tone.
    ///   - sampleRate: the rate to render at; every frequency must be below half of it.
    ///   - rampMilliseconds: on/off ramp length.
    public init(spec: ToneSpec, sampleRate: Int, rampMilliseconds: Double = 5) {
        precondition(sampleRate > 0, "sample rate must be positive")
        precondition(
            spec.frequencies.allSatisfy { $0 < Double(sampleRate) / 2 }, "tone frequencies must be below Nyquist")
        self.spec = spec
        self.sampleRate = sampleRate
        var boundaries: [Int] = []
        var cumulative = 0
        for segment in spec.cadence {
            cumulative += segment.milliseconds
            boundaries.append(Int((Double(cumulative) * Double(sampleRate) / 1000).rounded()))
        }
        segmentSamples = zip(boundaries, [0] + boundaries).map { $0 - $1 }
        precondition(spec.cadence.isEmpty || cumulative * sampleRate >= 1000, "the cadence is shorter than a sample")
        let shortestOn = zip(spec.cadence, segmentSamples).filter { $0.0.isOn }.map(\.1).min() ?? Int.max
        rampSamples = max(0, min(Int((rampMilliseconds * Double(sampleRate) / 1000).rounded()), shortestOn / 2))
        increments = spec.frequencies.map { 2 * Double.pi * $0 / Double(sampleRate) }
        phases = [Double](repeating: 0, count: spec.frequencies.count)
        componentAmplitude = spec.amplitude * 32767 / Double(spec.frequencies.count)
    }

    /// The envelope gain (0 ... 1) of sample `k` of a segment of `length` samples that is on or off.
    /// A continuous tone (no cadence) is one on segment of unbounded length.
    public func envelope(isOn: Bool, sample k: Int, of length: Int) -> Double {
        guard isOn else { return 0 }
        let r = rampSamples
        guard r > 0 else { return 1 }
        var g = 1.0
        if k < r { g = sin(Double.pi / 2 * Double(k + 1) / Double(r + 1)) }
        let fromEnd = length - 1 - k
        if fromEnd < r { g = min(g, sin(Double.pi / 2 * Double(fromEnd + 1) / Double(r + 1))) }
        return g
    }

    /// Writes the next `buffer.count / channels` samples into `buffer` (interleaved, the same value in every
    /// channel), replacing what is there. Never allocates.
    public mutating func render(into buffer: UnsafeMutableBufferPointer<Int16>, channels: Int = 1) {
        generate(into: buffer, channels: channels, mixing: false)
    }

    /// Adds the next `buffer.count / channels` samples to `buffer` with saturation (a sum beyond Int16's range
    /// clips instead of wrapping). Never allocates.
    public mutating func mix(into buffer: UnsafeMutableBufferPointer<Int16>, channels: Int = 1) {
        generate(into: buffer, channels: channels, mixing: true)
    }

    private mutating func generate(into buffer: UnsafeMutableBufferPointer<Int16>, channels: Int, mixing: Bool) {
        precondition(channels > 0 && buffer.count % channels == 0, "buffer must hold whole interleaved frames")
        let frames = buffer.count / channels
        let continuous = spec.cadence.isEmpty
        for i in 0..<frames {
            var gain = 0.0
            if !isFinished {
                if continuous {
                    gain = envelope(isOn: true, sample: offset, of: Int.max)
                    if offset < rampSamples { offset += 1 }
                } else {
                    let length = segmentSamples[segment]
                    gain = envelope(isOn: spec.cadence[segment].isOn, sample: offset, of: length)
                    offset += 1
                    if offset >= length { advanceSegment() }
                }
            }
            var value = 0.0
            for c in 0..<phases.count {
                if gain > 0 { value += cos(phases[c]) }
                var p = phases[c] + increments[c]
                if p >= 2 * Double.pi { p -= 2 * Double.pi }
                phases[c] = p
            }
            let sample = Int32((value * componentAmplitude * gain).rounded())
            for ch in 0..<channels {
                let index = i * channels + ch
                buffer[index] = mixing ? saturatingAdd(buffer[index], sample) : Int16(clamping: sample)
            }
        }
        position += Int64(frames)
    }

    private mutating func advanceSegment() {
        offset = 0
        segment += 1
        if segment == segmentSamples.count {
            segment = 0
            if !spec.repeats { isFinished = true }
        }
        // Zero-length segments (sub-sample durations at low rates) are skipped.
        while segmentSamples[segment] == 0 && !isFinished {
            segment += 1
            if segment == segmentSamples.count {
                segment = 0
                if !spec.repeats { isFinished = true }
            }
        }
    }
}

/// `a + b` clipped to Int16's range: mixing two loud signals clips rather than wraps to a full-scale click.
@inline(__always)
func saturatingAdd(_ a: Int16, _ b: Int32) -> Int16 {
    Int16(clamping: Int32(a) + b)
}
