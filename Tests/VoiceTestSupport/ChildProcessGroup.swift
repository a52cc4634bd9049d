import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A peer program the tests start (Kamailio, sqlite3, the `voice-engine` tool) in a process group of its own
/// (posix_spawn, not Foundation's `Process`, whose exit notification did not arrive while another `Process` ran),
/// so that `stop()` ends it and every worker it forked with one signal to the group. Output goes to a log file for
/// failure messages.
public final class ChildProcessGroup: @unchecked Sendable {
    // @unchecked Sendable: `reaped` is set by whichever wait saw the exit; the tests wait and stop from one task.
    public let pid: pid_t
    public let log: URL
    private var reaped = false
    /// The exit status once an exit was seen (by `wait`, `waitForExit`, `isRunning` or `stop`).
    public private(set) var exitStatus: Int32?

    public struct SpawnError: Error, CustomStringConvertible {
        public let description: String
    }

    /// Starts `executable` with stdout and stderr appended to `log` and, when given, stdin from a file. With
    /// `stdinDescriptor` / `stdoutDescriptor` (a pipe's ends) the child reads and writes those instead, stderr
    /// still going to `log`; the caller closes its copies of the child's ends after the start.
    public init(
        _ executable: String, _ arguments: [String], log: URL, stdin: URL? = nil, stdinDescriptor: CInt? = nil,
        stdoutDescriptor: CInt? = nil
    ) throws {
        self.log = log
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let stdin { posix_spawn_file_actions_addopen(&actions, 0, stdin.path, O_RDONLY, 0) }
        if let stdinDescriptor { posix_spawn_file_actions_adddup2(&actions, stdinDescriptor, 0) }
        posix_spawn_file_actions_addopen(&actions, 2, log.path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        if let stdoutDescriptor {
            posix_spawn_file_actions_adddup2(&actions, stdoutDescriptor, 1)
        } else {
            posix_spawn_file_actions_adddup2(&actions, 2, 1)
        }
        // Nothing else of the test process goes to the child: a Kamailio that inherited the registration service's
        // listening socket kept its port taken after the service closed it, so a restart could not bind again.
        Self.closeFrom3(&actions)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // A group of its own, no blocked signals and default dispositions: the test runner's signal state
        // (threads that block SIGTERM) must not make the child deaf to stop().
        var empty = sigset_t()
        sigemptyset(&empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGCHLD, SIGPIPE] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        posix_spawnattr_setpgroup(&attributes, 0)
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        guard result == 0 else { throw SpawnError(description: "cannot run \(executable): error \(result)") }
        self.pid = pid
    }

    /// Waits for the process to exit by itself; its exit status, or nil if it still runs after `timeout`.
    public func wait(timeout: Duration) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let exitStatus { return exitStatus }
            if let status = reap(WNOHANG) { return status }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }

    /// Whether the process still runs (reaping it, and keeping its status, when it has exited).
    public var isRunning: Bool { !reaped && reap(WNOHANG) == nil }

    /// Blocks until the process exits; its exit status.
    public func waitForExit() -> Int32 {
        while true {
            if let exitStatus { return exitStatus }
            if let status = reap(0) { return status }
            if errno != EINTR { return -1 }
        }
    }

    /// SIGTERM to the group, SIGKILL after 3 s, then reaps the leader. Nothing is signalled once the leader was
    /// reaped (its pid and group may belong to someone else by then).
    public func stop() {
        guard !reaped else { return }
        kill(-pid, SIGTERM)
        let deadline = Date().addingTimeInterval(3)
        while reap(WNOHANG) == nil, Date() < deadline { usleep(10_000) }
        guard !reaped else { return }
        kill(-pid, SIGKILL)
        _ = reap(0)
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's Glibc module does not
    /// import: looked up once at run time.
    private static let addCloseFrom:
        (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
            guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else { return nil }
            return unsafeBitCast(
                symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
        }()

    /// Adds "close every descriptor from 3 up" to `actions`, where the C library can.
    private static func closeFrom3(_ actions: inout posix_spawn_file_actions_t) {
        _ = addCloseFrom?(&actions, 3)
    }

    /// Runs a shell script to its end (posix_spawn and waitpid, so it works while other children run: Foundation's
    /// `Process` misses a child's exit while another `Process` runs); its exit status and output.
    @discardableResult
    public static func shell(_ script: String) -> (status: Int32, output: String) {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent(
            "voiceengine-sh-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: log) }
        guard let child = try? ChildProcessGroup("/bin/sh", ["-c", script], log: log) else {
            return (-1, "cannot run /bin/sh")
        }
        let status = child.waitForExit()
        return (status, (try? String(contentsOf: log, encoding: .utf8)) ?? "")
    }

    /// The last lines of the log, for failure messages.
    public var logTail: String {
        ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n").suffix(20).joined(
            separator: "\n")
    }

    /// One `waitpid`: the exit status when the leader has exited (and is now reaped), else nil.
    private func reap(_ options: Int32) -> Int32? {
        var status: Int32 = 0
        guard waitpid(pid, &status, options) == pid else { return nil }
        reaped = true
        // Killed by a signal: 128 + its number, as a shell reports it (never 0).
        let signal = status & 0x7F
        exitStatus = signal == 0 ? (status >> 8) & 0xFF : 128 + signal
        return exitStatus
    }
}
