import ArgumentParser
import Foundation
import VoiceEngine

/// `voice-engine demo`: the main job. Until the engine is assembled (issue 8) it checks the test vectors
/// through the real codec and resampler and says plainly that the demo call is not there yet.
struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run a demo call (for now: the codec and resampler test-vector checks).")

    @Option(help: "Folder holding the test vectors and their manifest.")
    var vectors: String = "TestVectors"

    func run() throws {
        print("VoiceEngine demo")
        print("The two-endpoint demo call is not assembled yet (it needs the jitter buffer, devices and media streams).")
        print("Running what exists: the test-vector checks through libopus and the speexdsp resampler.\n")
        let results = try TestVectorRunner(directory: URL(fileURLWithPath: vectors)).runAll()
        try VectorsCommand.report(results, json: false)
        if results.contains(where: { !$0.passed }) { throw ExitCode.failure }
    }
}
