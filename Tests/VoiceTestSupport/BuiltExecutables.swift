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

extension BuiltExecutables {
    /// Runs the built executable `name` with `arguments` to its end: its exit status, stdout and stderr.
    public static func run(_ name: String, _ arguments: [String]) throws -> (
        status: Int32, stdout: String, stderr: String
    ) {
        guard let executable = url(name) else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: name])
        }
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (
            process.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self)
        )
    }
}
