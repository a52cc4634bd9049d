import ArgumentParser
import Foundation
import VoiceEngine
import VoiceLab

/// `voice-engine vectors generate|check`: the project's own WAV test vectors and their manifest of checks.
struct VectorsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vectors",
        abstract: "Generate the WAV test vectors, or run the manifest's quality checks on them.",
        subcommands: [Generate.self, Check.self]
    )

    struct Generate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write every WAV file the manifest describes (deterministic: same seed, same file).")

        @Option(help: "Folder holding manifest.json; the WAV files are written beside it.")
        var directory: String = "TestVectors"

        func run() throws {
            try OutputPaths.checkFolder(directory, option: "--directory")
            let folder = URL(fileURLWithPath: directory)
            let written = try TestVectorGenerator.generateAll(in: folder)
            for file in written { print("wrote \(folder.appendingPathComponent(file).path)") }
        }
    }

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run each check of the manifest and print the measured value against its threshold.")

        @Option(help: "Folder holding manifest.json and the WAV files.")
        var directory: String = "TestVectors"

        @Flag(help: "Print the results as JSON.")
        var json = false

        func run() throws {
            let results = try TestVectorRunner(directory: URL(fileURLWithPath: directory)).runAll()
            try VectorsCommand.report(results, json: json)
            if results.contains(where: { !$0.passed }) { throw CommandFailure.alreadyPrinted(.failure) }
        }
    }

    /// Prints a table (or JSON) of check results.
    static func report(_ results: [TestVectorResult], json: Bool) throws {
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            print(String(decoding: try encoder.encode(results), as: UTF8.self))
            return
        }
        let width = max(5, results.map(\.name.count).max() ?? 5)
        print(
            "check".padding(toLength: width, withPad: " ", startingAt: 0)
                + "  metric                 measured   minimum  result")
        for r in results {
            let name = r.name.padding(toLength: width, withPad: " ", startingAt: 0)
            let metric = r.metric.padding(toLength: 21, withPad: " ", startingAt: 0)
            print(
                "\(name)  \(metric)  \(String(format: "%8.2f", r.value))  \(String(format: "%8.2f", r.minimum))  \(r.passed ? "pass" : "FAIL")"
            )
        }
        print("\(results.filter(\.passed).count) passed, \(results.filter { !$0.passed }.count) failed")
    }
}
