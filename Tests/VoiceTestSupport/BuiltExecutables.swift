import Foundation

/// Executables of this package (`voice-engine`) that tests run as subprocesses.
public enum BuiltExecutables {
    /// The built executable `name`, or nil when it is absent: the test bundle and the tools are built into the
    /// same directory (or the bundle one level below it).
    public static func url(_ name: String) -> URL? {
        let dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [dir, dir.deletingLastPathComponent()] {
            let url = candidate.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        return nil
    }
}
