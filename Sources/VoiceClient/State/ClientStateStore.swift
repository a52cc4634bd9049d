import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Where a ``VoiceClient`` keeps what must survive a restart of the app: the message outbox, the last
/// registration grant (so a restarted client registers without asking the app to sign while it is valid) and
/// the push data. Records are small (kilobytes), written whole and read once at start.
///
/// ``DirectoryStateStore`` keeps them as files; an app with a store of its own (a keychain, its database)
/// implements this protocol. A write must replace the record atomically: a reader sees the old record or the
/// new one, never a mix, also after a crash.
public protocol ClientStateStore: Sendable {
    /// The record `name`, or nil when there is none.
    /// - Throws: ``ClientStateError`` when it exists but cannot be read.
    func read(_ name: String) throws(ClientStateError) -> Data?
    /// Replaces the record `name` atomically; a `secret` one (it holds a password) is readable by the owner only.
    func write(_ data: Data, to name: String, secret: Bool) throws(ClientStateError)
    /// Removes the record `name` (nothing happens when there is none).
    func remove(_ name: String) throws(ClientStateError)
    /// Sets a record that could not be decoded aside, so the next start does not trip on it again and a person
    /// can look at it.
    func setAside(_ name: String) throws(ClientStateError)
}

/// Why the state store failed.
public enum ClientStateError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file system refused (path and errno text).
    case io(path: String, reason: String)
    /// A record exists but is not one this client wrote (truncated, edited, another version).
    case corrupt(record: String, reason: String)

    public var description: String {
        switch self {
        case .io(let path, let reason): "state store: \(path): \(reason)"
        case .corrupt(let record, let reason): "state record \(record) rejected: \(reason)"
        }
    }
}

/// A ``ClientStateStore`` of files in one directory (created with mode 0700 when missing): one file per
/// record, written to a temporary file in the same directory, flushed to disk and renamed over the old one;
/// secret records get mode 0600, the others 0644.
public struct DirectoryStateStore: ClientStateStore {
    public let directory: URL

    public init(directory: URL) { self.directory = directory }

    private func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    public func read(_ name: String) throws(ClientStateError) -> Data? {
        let path = path(name)
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        do { return try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw .io(path: path, reason: "\(error.localizedDescription)")
        }
    }

    public func write(_ data: Data, to name: String, secret: Bool) throws(ClientStateError) {
        try createDirectory()
        let final = path(name)
        let temporary = path(".\(name).\(UUID().uuidString.prefix(8)).tmp")
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, secret ? 0o600 : 0o644)
        guard fd >= 0 else { throw .io(path: temporary, reason: String(cString: strerror(errno))) }
        var failure: String?
        data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
            var offset = 0
            while offset < raw.count {
                let written = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failure = String(cString: strerror(errno))
                    return
                }
                offset += written
            }
        }
        if failure == nil, fsync(fd) != 0 { failure = String(cString: strerror(errno)) }
        close(fd)
        if failure == nil, rename(temporary, final) != 0 { failure = String(cString: strerror(errno)) }
        if let failure {
            unlink(temporary)
            throw .io(path: final, reason: failure)
        }
    }

    public func remove(_ name: String) throws(ClientStateError) {
        let path = path(name)
        guard unlink(path) == 0 || errno == ENOENT else {
            throw .io(path: path, reason: String(cString: strerror(errno)))
        }
    }

    public func setAside(_ name: String) throws(ClientStateError) {
        let path = path(name)
        guard rename(path, path + ".rejected") == 0 || errno == ENOENT else {
            throw .io(path: path, reason: String(cString: strerror(errno)))
        }
    }

    private func createDirectory() throws(ClientStateError) {
        do {
            try FileManager.default.createDirectory(
                at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw .io(path: directory.path, reason: "\(error.localizedDescription)")
        }
    }
}
