import ArgumentParser
import Foundation
import VoiceEngine
import VoiceLab

/// `voice-engine aec-vectors generate|check`: the echo-canceller test vectors in TestVectors/aec.
struct AECVectorsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "aec-vectors", abstract: "Generate the AEC test vectors, or run their checks.",
        subcommands: [Generate.self, Check.self])

    struct Generate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write the WAV files TestVectors/aec/manifest.json describes.")
        @Option(help: "Folder holding the AEC manifest.json.")
        var directory: String = "TestVectors/aec"
        func run() throws {
            try OutputPaths.checkFolder(directory, option: "--directory")
            for file in try AECVectorRunner.generateAll(in: URL(fileURLWithPath: directory)) {
                print("wrote \(directory)/\(file)")
            }
        }
    }

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run the AEC checks and print measured values against thresholds.")
        @Option(help: "Folder holding the AEC manifest.json and WAV files.")
        var directory: String = "TestVectors/aec"
        @Flag(help: "Also run raw speex MDF and print a scenario table (engine vs raw ERLE).")
        var table = false
        func run() throws {
            var runner = try AECVectorRunner(directory: URL(fileURLWithPath: directory))
            let results = try runner.runAll()
            let width = max(5, results.map(\.name.count).max() ?? 5)
            for r in results {
                let bound = [
                    r.min.map { ">= \(String(format: "%.1f", $0))" }, r.max.map { "<= \(String(format: "%.1f", $0))" }
                ].compactMap { $0 }.joined(separator: " ")
                let target =
                    r.target.map {
                        r.targetMet
                            ? "  (target \(String(format: "%.1f", $0)) met)"
                            : "  (target \(String(format: "%.1f", $0)) NOT met)"
                    } ?? ""
                print(
                    "\(r.name.padding(toLength: width, withPad: " ", startingAt: 0))  \(r.metric.padding(toLength: 22, withPad: " ", startingAt: 0))  \(String(format: "%8.2f", r.value))  \(bound)  \(r.passed ? "pass" : "FAIL")\(target)"
                )
            }
            print("\(results.filter(\.passed).count) passed, \(results.filter { !$0.passed }.count) failed")
            if table {
                print("\nscenario               erle_raw  erle_engine  nearSegSNR(engine/raw)  drift_est")
                for vector in runner.manifest.vectors {
                    let dir = URL(fileURLWithPath: directory)
                    let far = try WAVFile.read(path: dir.appendingPathComponent(vector.far).path).int16Samples
                    let mic = try WAVFile.read(path: dir.appendingPathComponent(vector.mic).path).int16Samples
                    let near = try vector.near.map {
                        try WAVFile.read(path: dir.appendingPathComponent($0).path).int16Samples
                    }
                    let r = try AECBenchmark.run(
                        name: vector.scenario.name, far: far, mic: mic, near: near,
                        sampleRate: vector.scenario.sampleRate,
                        configuration: vector.configuration)
                    func f(_ v: Double?) -> String { v.map { String(format: "%6.1f", $0) } ?? "   n/a" }
                    print(
                        "\(r.name.padding(toLength: 22, withPad: " ", startingAt: 0))  \(f(r.erleRaw))    \(f(r.erleEngine))     \(f(r.nearEndSegSNREngine))/\(f(r.nearEndSegSNRRaw))          \(f(r.estimatedDriftPPM))"
                    )
                }
            }
            if results.contains(where: { !$0.passed }) { throw CommandFailure.alreadyPrinted(.failure) }
        }
    }
}
