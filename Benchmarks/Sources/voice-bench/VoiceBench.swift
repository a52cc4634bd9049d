import ArgumentParser
import Foundation

/// `voice-bench`: side-by-side timings of VoiceEngine's Swift wrappers against a plain C loop making the same
/// library calls on the same input. One subcommand per suite; each prints name, Swift µs, C µs and the ratio per
/// operation, and with `--json` ends with one JSON line `{"suite":…,"results":[…]}`.
///
/// Adding a suite (e.g. `aec`, `jitter`): write a `SideBySideSuite` (a `ParsableCommand` whose `makeCases()`
/// returns the operations, each a Swift closure and a C closure running N iterations) and list it in
/// `subcommands` below; option parsing, alternation, medians and both output formats come with the protocol.
@main
struct VoiceBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "voice-bench",
        abstract: "Times VoiceEngine's Swift wrappers against a plain C loop making the same library calls.",
        discussion: "Build in release: swift run -c release --package-path Benchmarks voice-bench codec [--json]",
        subcommands: [
            CodecSuite.self, SRTPSuite.self, JitterBench.self, AECBench.self, PipelineBench.self, LiveBench.self,
            SIPSuite.self, ConferenceBench.self, WebRTCSuite.self, KeyingBench.self
        ]
    )

    /// As `voice-engine` does: a failure is one `error:` line (plus the usage line for a usage error), exit 64
    /// for usage, 1 otherwise; `--help` prints the help and exits 0.
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            let code = exitCode(for: error)
            if code == .success { exit(withError: error) }
            var text = fullMessage(for: error)
            if text.hasPrefix("Error: ") { text = String(text.dropFirst("Error: ".count)) }
            FileHandle.standardError.write(Data("error: \(text)\n".utf8))
            Foundation.exit(code.rawValue)
        }
    }
}
