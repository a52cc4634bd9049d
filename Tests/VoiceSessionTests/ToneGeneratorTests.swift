import Foundation
import Testing
import VoiceCore

@testable import VoiceSession

struct ToneCase: Sendable, CustomTestStringConvertible {
    let profile: ToneProfile
    let tone: CallProgressTone
    let rate: Int
    var testDescription: String { "\(profile) \(tone) at \(rate) Hz" }
}

private let toneCases: [ToneCase] = ToneProfile.all.flatMap { profile in
    CallProgressTone.allCases.flatMap { tone in
        [8_000, 16_000, 48_000].map { ToneCase(profile: profile, tone: tone, rate: $0) }
    }
}

@Suite struct ToneGeneratorTests {
    /// Renders `count` samples in 10 ms blocks, as the playout path does.
    private static func render(_ generator: inout ToneGenerator, count: Int, block: Int) -> [Int16] {
        var output = [Int16](repeating: 0, count: count)
        output.withUnsafeMutableBufferPointer { buffer in
            var start = 0
            while start < count {
                let n = min(block, count - start)
                generator.render(into: UnsafeMutableBufferPointer(rebasing: buffer[start..<start + n]))
                start += n
            }
        }
        return output
    }

    /// On/off ranges of `spec` over `cycles` cycles at `rate`, computed from the millisecond values.
    private static func segments(of spec: ToneSpec, rate: Int, cycles: Int) -> [(on: Bool, range: Range<Int>)] {
        var result: [(Bool, Range<Int>)] = []
        var start = 0
        for _ in 0..<cycles {
            for segment in spec.cadence {
                let length = segment.milliseconds * rate / 1000
                result.append((segment.isOn, start..<start + length))
                start += length
            }
        }
        return result
    }

    /// With a 0 Hz carrier the output is the envelope itself: non-zero on exactly the samples of each on
    /// segment, zero on exactly the samples of each off segment, for every profile's cadence at every rate.
    @Test(arguments: toneCases)
    func cadenceIsSampleExact(_ c: ToneCase) {
        var spec = c.profile.spec(for: c.tone)
        spec.frequencies = [0]
        var generator = ToneGenerator(spec: spec, sampleRate: c.rate)
        let segments = Self.segments(of: spec, rate: c.rate, cycles: 2)
        let output = Self.render(&generator, count: segments.last!.range.upperBound, block: c.rate / 100)
        for (on, range) in segments {
            let nonZero = output[range].filter { $0 != 0 }.count
            #expect(nonZero == (on ? range.count : 0), "\(on ? "on" : "off") segment \(range)")
        }
    }

    /// The real tone: off segments exactly silent, on segments start and end inside the ramp (no click), the
    /// largest step between samples is what the frequencies themselves allow plus the ramp's, and the block
    /// size does not change a sample (phase-continuous across blocks).
    @Test(arguments: toneCases)
    func toneHasNoClicks(_ c: ToneCase) {
        let spec = c.profile.spec(for: c.tone)
        var generator = ToneGenerator(spec: spec, sampleRate: c.rate)
        let segments = Self.segments(of: spec, rate: c.rate, cycles: 2)
        let output = Self.render(&generator, count: segments.last!.range.upperBound, block: c.rate / 100)
        let peak = spec.amplitude * 32767
        let componentPeak = peak / Double(spec.frequencies.count)
        let r = generator.rampSamples
        #expect(r == 5 * c.rate / 1000)
        let edge = peak * sin(Double.pi / 2 / Double(r + 1)) + 1
        for (on, range) in segments {
            if on {
                #expect(Double(abs(Int(output[range.first!]))) <= edge, "first sample of \(range) is inside the ramp")
                #expect(Double(abs(Int(output[range.last!]))) <= edge, "last sample of \(range) is inside the ramp")
                let middle = output[(range.lowerBound + r)..<(range.upperBound - r)]
                #expect(Double(middle.map { abs(Int($0)) }.max()!) > 0.8 * componentPeak, "on segment sounds")
            } else {
                #expect(output[range].allSatisfy { $0 == 0 }, "off segment \(range) is silent")
            }
        }
        let toneSlope = spec.frequencies.reduce(0) { $0 + componentPeak * 2 * Double.pi * $1 / Double(c.rate) }
        let rampSlope = peak * (Double.pi / 2) / Double(r + 1)
        let bound = toneSlope + rampSlope + 2
        let worst = zip(output.dropFirst(), output).map { abs(Int($0) - Int($1)) }.max()!
        #expect(Double(worst) <= bound, "largest step \(worst) > \(bound)")

        var other = ToneGenerator(spec: spec, sampleRate: c.rate)
        #expect(Self.render(&other, count: output.count, block: 97) == output, "block size changes nothing")
    }

    /// Goertzel power of `frequency` in `x`, relative to a full-scale sine.
    private static func level(_ x: ArraySlice<Int16>, frequency: Double, rate: Int) -> Double {
        let w = 2 * Double.pi * frequency / Double(rate)
        var s1 = 0.0
        var s2 = 0.0
        for v in x {
            let s = Double(v) / 32768 + 2 * cos(w) * s1 - s2
            s2 = s1
            s1 = s
        }
        let power = s1 * s1 + s2 * s2 - 2 * cos(w) * s1 * s2
        return 2 * power.squareRoot() / Double(x.count)
    }

    @Test func profilesSoundTheirE180Frequencies() {
        let rate = 16_000
        let checks: [(ToneProfile, CallProgressTone, present: [Double], absent: [Double])] = [
            (.us, .ringback, [440, 480], [425, 620]),
            (.us, .busy, [480, 620], [440, 425]),
            (.us, .callWaiting, [440], [480, 425]),
            (.eu, .ringback, [425], [440, 480]),
            (.eu, .busy, [425], [480, 620]),
            (.eu, .callWaiting, [425], [440])
        ]
        for (profile, tone, present, absent) in checks {
            let spec = profile.spec(for: tone)
            var generator = ToneGenerator(spec: spec, sampleRate: rate)
            let onSamples = spec.cadence[0].milliseconds * rate / 1000
            let output = Self.render(&generator, count: onSamples, block: 160)
            let window = output[(onSamples / 2 - 1_600)..<(onSamples / 2 + 1_600)]  // 200 ms mid-segment
            for f in present {
                #expect(Self.level(window, frequency: f, rate: rate) > 0.1, "\(profile) \(tone) has \(f) Hz")
            }
            for f in absent {
                #expect(Self.level(window, frequency: f, rate: rate) < 0.02, "\(profile) \(tone) lacks \(f) Hz")
            }
        }
    }

    @Test func profileCadencesAreTheE180Values() {
        #expect(ToneProfile.us.ringback.cadence == [.on(2_000), .off(4_000)])
        #expect(ToneProfile.us.busy.cadence == [.on(500), .off(500)])
        #expect(ToneProfile.us.callWaiting.cadence.first == .on(300))
        #expect(ToneProfile.eu.ringback.cadence == [.on(1_000), .off(4_000)])
        #expect(ToneProfile.eu.busy.cadence == [.on(500), .off(500)])
        let cw = ToneProfile.eu.callWaiting.cadence
        #expect(Array(cw.prefix(3)) == [.on(200), .off(200), .on(200)])
        #expect((3_000...5_000).contains(cw[3].milliseconds) && !cw[3].isOn)
        #expect(ToneProfile.named("eu") == .eu && ToneProfile.named("US") == .us && ToneProfile.named("xx") == nil)
    }

    @Test func nonRepeatingCadenceEndsInSilence() {
        let spec = ToneSpec(frequencies: [1_000], cadence: [.on(100), .off(50), .on(100)], repeats: false)
        var generator = ToneGenerator(spec: spec, sampleRate: 8_000)
        let output = Self.render(&generator, count: 8_000, block: 80)
        #expect(generator.isFinished)
        #expect(output[2_000...].allSatisfy { $0 == 0 }, "100 + 50 + 100 ms = 2000 samples, then silence")
        #expect(
            output[1_200..<2_000].filter { $0 != 0 }.count >= 550,
            "the second burst sounds (1 kHz at 8 kHz hits 0 on 2 of 8 samples)")
        #expect(output[800..<1_200].allSatisfy { $0 == 0 })
    }

    @Test func mixAddsWithSaturation() {
        var generator = ToneGenerator(spec: ToneSpec(frequencies: [0], cadence: [], amplitude: 0.5), sampleRate: 8_000)
        var buffer = [Int16](repeating: 30_000, count: 400)
        buffer.withUnsafeMutableBufferPointer { generator.mix(into: $0) }
        #expect(buffer[0] > 30_000 && buffer[0] < Int16.max, "ramp start adds a little")
        #expect(buffer[100...].allSatisfy { $0 == Int16.max }, "clipped, not wrapped")
    }
}
