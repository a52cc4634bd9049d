import Foundation

/// Where the repository and the shared, read-only recordings (`../shared/testdata` next to the repository) are,
/// found from this file's location so tests do not depend on the working directory. Tests that read shared data
/// skip with a clear message when it is absent: `.enabled(if: SharedTestData.exists("speech"), "…")`.
public enum SharedTestData {
    /// The repository's root folder.
    public static let repository: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The shared test data folder (it may be absent).
    public static let root: String = repository.deletingLastPathComponent().appendingPathComponent("shared/testdata")
        .path

    /// The shared speech recordings folder.
    public static let speech: String = path("speech")

    /// Whether the shared speech recordings are present.
    public static var isPresent: Bool { FileManager.default.fileExists(atPath: speech) }

    /// The path of `relative` inside the shared test data folder.
    public static func path(_ relative: String) -> String { root + "/" + relative }

    /// Whether `relative` exists inside the shared test data folder.
    public static func exists(_ relative: String) -> Bool { FileManager.default.fileExists(atPath: path(relative)) }
}
