import Foundation
import Testing
import VoiceEngine
import VoiceLab
import VoiceTestSupport

private let aecDirectory = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("TestVectors/aec")

private let aecManifest = try! AECVectorManifest.load(from: aecDirectory.appendingPathComponent("manifest.json"))

@Suite("AEC test vectors", .tags(.slow), .scheduledByTags)
struct AECVectorTests {
    /// `min`/`max` are what the canceller reaches today (with a margin) and are enforced. The stricter targets
    /// (`target`) stay in the manifest; each one not met is recorded as a known issue, visible in the test output.
    /// A check that is itself not met yet carries a `shortfall` note and is recorded as a known issue too (which
    /// turns into a failure as soon as it passes, so the note gets removed).
    @Test("AEC check meets its threshold", arguments: aecManifest.checks.map(\.name))
    func aecCheckMeetsThreshold(name: String) throws {
        var runner = try AECVectorRunner(directory: aecDirectory)
        let check = try #require(runner.manifest.checks.first { $0.name == name })
        let result = try runner.run(check)
        if let shortfall = check.shortfall {
            withKnownIssue("known shortfall: \(name) \(shortfall) (measured \(result.value))") {
                #expect(result.passed)
            }
            return
        }
        #expect(result.value.isFinite)
        #expect(
            result.passed,
            "\(name): \(result.metric) = \(result.value), thresholds \(String(describing: check.min)) ... \(String(describing: check.max))"
        )
        if let target = check.target, !result.targetMet {
            withKnownIssue("target not met: \(name) \(result.metric) = \(result.value), target \(target)") {
                #expect(result.value >= target)
            }
        }
    }

    @Test func committedMicrophoneVectorIsWhatTheGeneratorMakes() throws {
        let vector = try #require(aecManifest.vectors.first { $0.scenario.name == "linear_short_tail" })
        let signals = AECVectorGenerator.generate(vector.scenario)
        let stored = try WAVFile.read(path: aecDirectory.appendingPathComponent(vector.mic).path).int16Samples
        #expect(stored.count == signals.mic.count)
        let worst = zip(stored, signals.mic).map { abs(Int($0) - Int($1)) }.max() ?? 0
        #expect(worst <= 1, "run `voice-engine aec-vectors generate`")
    }

    @Test func everyAECCheckHasAThresholdAndAScenario() {
        for check in aecManifest.checks {
            #expect(check.min != nil || check.max != nil, "\(check.name) has no threshold")
            #expect(aecManifest.vectors.contains { $0.scenario.name == check.scenario }, "\(check.name): no scenario")
        }
    }
}
