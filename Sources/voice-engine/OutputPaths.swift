import Foundation
import VoiceEngine

/// Output paths are checked before any work starts, so a typo in `--out` fails at once instead of after a whole
/// call. A failure is a `CommandFailure.runtime` naming the option, the path and the system's reason.
enum OutputPaths {
    /// A file will be created (or replaced) at `path`: its folder must exist and be writable, and `path` must not
    /// be a folder.
    static func checkFile(_ path: String?, option: String) throws {
        guard let path else { return }
        if isFolder(path) { throw CommandFailure.runtime("\(option) \(path): is a folder, give a file name") }
        try checkWritableFolder(URL(fileURLWithPath: path).deletingLastPathComponent().path, option: option, path: path)
    }

    /// Files will be written into the folder `path`, which is created when missing: it must be a writable folder,
    /// or its parent must be.
    static func checkFolder(_ path: String?, option: String) throws {
        guard let path else { return }
        if FileManager.default.fileExists(atPath: path) {
            guard isFolder(path) else { throw CommandFailure.runtime("\(option) \(path): is a file, give a folder") }
            try checkWritableFolder(path, option: option, path: path)
        } else {
            try checkWritableFolder(
                URL(fileURLWithPath: path).deletingLastPathComponent().path, option: option, path: path)
        }
    }

    /// A long-running command writes into the folder `path` later (a server's reports): the folder is made now
    /// (its parent must exist) and a probe file is created in it and removed, so a folder that permissions allow
    /// but the file system refuses (`/proc`, a read-only mount: `access()` says yes to root there) fails at start
    /// with the system's reason instead of losing the first report.
    static func prepareFolder(_ path: String?, option: String) throws {
        guard let path else { return }
        if !FileManager.default.fileExists(atPath: path), mkdir(path, 0o755) != 0, errno != EEXIST {
            throw CommandFailure.runtime(
                "\(option) \(path): cannot create the folder: \(String(cString: strerror(errno)))")
        }
        guard isFolder(path) else { throw CommandFailure.runtime("\(option) \(path): is a file, give a folder") }
        let probe = URL(fileURLWithPath: path).appendingPathComponent(".write-probe-\(getpid())").path
        let descriptor = open(probe, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        guard descriptor >= 0 else {
            throw CommandFailure.runtime(
                "\(option) \(path): cannot write in the folder: \(String(cString: strerror(errno)))")
        }
        close(descriptor)
        unlink(probe)
    }

    private static func isFolder(_ path: String) -> Bool {
        var folder: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &folder) && folder.boolValue
    }

    private static func checkWritableFolder(_ folder: String, option: String, path: String) throws {
        guard access(folder, W_OK | X_OK) == 0 else {
            throw CommandFailure.runtime("\(option) \(path): \(String(cString: strerror(errno))) (folder \(folder))")
        }
    }
}

extension CommandFailure {
    /// A WAV input that cannot be read or parsed (exit 65), naming its path once.
    static func badWAV(_ path: String, _ error: WAVError) -> CommandFailure {
        switch error {
        case .fileNotFound, .unreadable: .dataError(error.description)
        default: .dataError("\(path): \(error.description)")
        }
    }
}
