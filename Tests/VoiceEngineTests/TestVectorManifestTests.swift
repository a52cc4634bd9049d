import Foundation
import Testing
import VoiceEngine
import VoiceLab
import VoiceTestSupport

/// The project's TestVectors folder, found from this file's location so tests run from any directory.
private let vectorsDirectory = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("TestVectors")

private let manifest = try! TestVectorManifest.load(from: vectorsDirectory.appendingPathComponent("manifest.json"))

@Suite("Test-vector manifest", .tags(.slow), .scheduledByTags)
struct TestVectorManifestTests {
    @Test("manifest check meets its threshold", arguments: manifest.checks.map(\.name))
    func manifestCheckMeetsThreshold(name: String) throws {
        let runner = try TestVectorRunner(directory: vectorsDirectory)
        let check = try #require(runner.manifest.checks.first { $0.name == name })
        let result = try runner.run(check)
        #expect(result.passed, "\(name): \(result.metric) = \(result.value), minimum \(result.minimum)")
    }

    @Test("committed vectors are what the generator makes", arguments: manifest.vectors.map(\.file))
    func committedVectorMatchesGenerator(file: String) throws {
        let spec = try #require(manifest.vectors.first { $0.file == file })
        let committed = try WAVFile.read(path: vectorsDirectory.appendingPathComponent(file).path)
        #expect(committed.format == AudioFormat(sampleRate: spec.sampleRate, channels: 1))
        let generated = try TestVectorGenerator.samples(for: spec)
        let stored = committed.int16Samples
        #expect(stored.count == generated.count)
        // One LSB of tolerance: libm's sin/exp may differ in the last bit between machines.
        let worst = zip(stored, generated).map { abs(Int($0) - Int($1)) }.max() ?? 0
        #expect(worst <= 1, "\(file) differs from the generator by up to \(worst) LSB; run `make vectors`")
    }

    @Test func everyCheckHasADescriptionAndAPositiveThreshold() {
        for check in manifest.checks {
            #expect(check.description?.isEmpty == false, "\(check.name) has no description")
            #expect(check.min > 0, "\(check.name) has no real threshold")
        }
    }

    @Test func malformedManifestIsRejectedWithTheReason() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ve-manifest-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data("{\"vectors\": 3}".utf8).write(to: folder.appendingPathComponent("manifest.json"))
        #expect {
            _ = try TestVectorRunner(directory: folder)
        } throws: { error in
            guard case .malformedManifest = error as? TestVectorError else { return false }
            return true
        }
        #expect(throws: TestVectorError.self) {
            _ = try TestVectorRunner(directory: folder.appendingPathComponent("missing"))
        }
    }

    @Test func unknownCheckKindIsRejected() throws {
        let runner = try TestVectorRunner(directory: vectorsDirectory)
        var check = runner.manifest.checks[0]
        check.kind = "noSuchCheck"
        #expect(throws: TestVectorError.unknownCheck("noSuchCheck")) { try runner.run(check) }
    }
}
