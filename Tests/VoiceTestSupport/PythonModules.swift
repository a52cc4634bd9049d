import Foundation

/// Whether python3 can import the modules a measuring script needs (PESQ and its companions come from PyPI, which
/// `make test-deps` tries to install): tests that run such a script skip with this reason instead of failing.
public enum PythonModules {
    /// Why `python3 -c "import …"` fails for `modules`, or nil when it succeeds.
    public static func unavailableReason(_ modules: [String]) -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", "import " + modules.joined(separator: ", ")]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return "python3 is not runnable: \(error)" }
        process.waitUntilExit()
        return process.terminationStatus == 0
            ? nil
            : "python3 lacks one of \(modules.joined(separator: ", ")) (pip install \(modules.joined(separator: " ")))"
    }
}
