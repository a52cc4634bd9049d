import Foundation
import Testing

/// A peer program (Kamailio, SIPp) started by a test: its output goes to a log file, and `stop()` (called from a
/// `defer`, so also when the test fails) terminates it and waits for it.
final class PeerProcess: @unchecked Sendable {
    let name: String
    let process = Process()
    let logURL: URL

    init(name: String, executable: String, arguments: [String], directory: URL) throws {
        self.name = name
        logURL = directory.appendingPathComponent("\(name).log")
        _ = FileManager.default.createFile(atPath: logURL.path, contents: nil)
        let log = try FileHandle(forWritingTo: logURL)
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = directory
        process.standardOutput = log
        process.standardError = log
        try process.run()
    }

    var isRunning: Bool { process.isRunning }

    /// The last lines of the peer's output, for failure messages.
    var logTail: String {
        let text = (try? String(contentsOf: logURL, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").suffix(15).joined(separator: "\n")
    }

    /// Waits for the peer to exit by itself (SIPp at the end of its scenario); nil if it is still running.
    func waitForExit(timeout: Duration) async -> Int32? {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while process.isRunning, clock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        return process.isRunning ? nil : process.terminationStatus
    }

    /// SIGTERM, then SIGKILL if it has not exited within 3 s; the processes it forked (Kamailio's workers) are
    /// killed too, so none outlives the test.
    func stop() {
        let pid = process.processIdentifier
        guard process.isRunning else { return }
        let children = descendants(of: pid)
        kill(pid, SIGTERM)
        // Polled, not waitUntilExit(): that waits on a run loop, which can hang inside an async test.
        let deadline = Date().addingTimeInterval(3)
        while process.isRunning, Date() < deadline { usleep(10_000) }
        for child in [pid] + children + descendants(of: pid) { kill(child, SIGKILL) }
        let reaped = Date().addingTimeInterval(2)
        while process.isRunning, Date() < reaped { usleep(10_000) }
    }
}

/// Waits until something has bound UDP `port` on loopback (from /proc/net/udp), so that a peer is ready before
/// the first datagram goes to it; false after `timeout`.
func waitUntilUDPPortBound(_ port: Int, timeout: Duration = .seconds(5)) async -> Bool {
    let needle = String(format: ":%04X ", port)
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while clock.now < deadline {
        let table = (try? String(contentsOfFile: "/proc/net/udp", encoding: .utf8)) ?? ""
        // Column 2 is local_address as HEXIP:HEXPORT.
        if table.split(separator: "\n").dropFirst().contains(where: { line in
            line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.map {
                ($0 + " ").hasSuffix(needle)
            } ?? false
        }) {
            return true
        }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return false
}

/// Every process whose parent chain leads to `root` (from /proc/<pid>/stat).
func descendants(of root: pid_t) -> [pid_t] {
    var parents: [pid_t: pid_t] = [:]
    for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
        guard let pid = pid_t(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { continue }
        // "pid (comm) state ppid ...": the command may hold spaces, so fields are counted after its ')'.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        if fields.count > 1, let parent = pid_t(fields[1]) { parents[pid] = parent }
    }
    var result: [pid_t] = []
    var frontier = [root]
    while let next = frontier.popLast() {
        let children = parents.filter { $0.value == next }.map(\.key)
        result += children
        frontier += children
    }
    return result
}

/// A fresh temporary directory for one test's peer files.
func makeTemporaryDirectory(_ prefix: String) throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

let peersDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Peers")
