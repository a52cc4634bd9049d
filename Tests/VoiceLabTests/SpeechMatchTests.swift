import Foundation
import Testing
import VoiceCore

@testable import VoiceTestSupport

/// The live-call tests' measure of "was the speech heard": its fast search must score what the sample-by-sample
/// search scores, and find speech whose delay moves in steps while the recording runs.
@Suite("SpeechMatch: speech heard through a moving delay")
struct SpeechMatchTests {
    static let vectors = SharedTestData.repository.appendingPathComponent("TestVectors")

    static func speech(_ name: String) throws -> [Int16] {
        try WAVFile.read(path: vectors.appendingPathComponent(name).path).int16Samples
    }

    /// `sent` as a receiver records it: delayed 1.24 s, then 90 ms more every 2 s (a jitter buffer growing under
    /// bursts), at −6 dB with low noise.
    static func heardThroughSteps(_ sent: [Int16]) -> [Int16] {
        var generator = SplitMix64(seed: 7)
        var heard: [Int16] = []
        var delay = 19_840
        var index = 0
        while index < sent.count + 30_000 {
            if index > 0, index % 32_000 == 0 { delay += 1_440 }
            let source = index - delay
            let value = source >= 0 && source < sent.count ? Int(sent[source]) / 2 : 0
            heard.append(Int16(value + Int(generator.next() % 61) - 30))
            index += 1
        }
        return heard
    }

    @Test func theFastSearchScoresWhatTheExhaustiveOneDoes() throws {
        let sent = try Self.speech("speech_like_16k.wav")
        let heard = Self.heardThroughSteps(sent)
        let decimated = SpeechMatch.decimatedBy4(sent)
        var windows = 0
        // Every window with speech, searched ±0.15 s around the delay of its 2 s piece.
        for at in stride(from: 20_000, to: heard.count - 4_000, by: 4_000) {
            let observed = heard[at..<(at + 4_000)]
            guard SpeechMatch.level(observed) > 300 else { continue }
            let center = at - (19_840 + at / 32_000 * 1_440)
            var exhaustive = -1.0
            for from in (center - 2_400)...(center + 2_400) where from >= 0 && from + 4_000 <= sent.count {
                exhaustive = max(exhaustive, SpeechMatch.correlation(sent[from..<(from + 4_000)], observed))
            }
            let fast = SpeechMatch.bestCorrelation(
                of: observed, in: sent, decimated: decimated, from: center - 2_400, through: center + 2_400)
            #expect(abs(fast - exhaustive) < 0.01, "window at \(at): fast \(fast), exhaustive \(exhaustive)")
            windows += 1
        }
        #expect(windows >= 10)
    }

    @Test func speechBehindADelayGrowingInStepsIsHeardAndOtherSpeechIsNot() throws {
        let sent = try Self.speech("speech_like_16k.wav")
        let other = try Self.speech("speech_like_16k_b.wav")
        let heard = Self.heardThroughSteps(sent)
        let match = SpeechMatch.piecewiseMedian(sent: sent, heard: heard, maximumOffsetSeconds: 30)
        let control = SpeechMatch.piecewiseMedian(sent: other, heard: heard, maximumOffsetSeconds: 30)
        #expect(match > 0.9, "\(match)")
        #expect(control < 0.5, "\(control)")
    }
}
