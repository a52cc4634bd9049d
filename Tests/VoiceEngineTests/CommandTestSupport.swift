import Foundation

/// Finding the `voice-engine` tool for the tests that run it as a subprocess.
enum CommandTestSupport {
    /// The built `voice-engine` executable, or nil when it is absent: the test bundle and the tool are built into
    /// the same directory (or the bundle one level below it).
    static var voiceEngineBinary: URL? {
        let dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [dir, dir.deletingLastPathComponent()] {
            let url = candidate.appendingPathComponent("voice-engine")
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        return nil
    }
}
