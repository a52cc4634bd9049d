import Foundation

/// Files and folders a test writes, under the system's temporary folder with unique names, so that tests running
/// in parallel never share them.
public enum TestFiles {
    /// A new folder for the files written by a test.
    public static func temporaryDirectory(prefix: String = "stream-tests") -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// `bytes` written to a new file whose name ends in `name`.
    public static func temporaryFile(_ bytes: [UInt8], name: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(UUID().uuidString)-\(name)")
        try Data(bytes).write(to: url)
        return url
    }
}
