import Foundation
import VoiceSRTP

#if canImport(Glibc)
import Glibc
#endif

// Support for the GStreamer interoperability tests: finding GStreamer, running gst-launch-1.0 as a bounded child
// process, loopback UDP sockets, and measuring a decoded tone. Everything here is test-only.

/// What the interop tests know about the installed GStreamer.
enum GStreamer {
    /// Elements the interop pipelines use (Debian: gstreamer1.0-plugins-bad for srtpenc/srtpdec,
    /// -plugins-good for rtpopuspay/rtpopusdepay/udpsrc/udpsink, -plugins-base for opusenc/opusdec/audioconvert/
    /// audiotestsrc, -tools for gst-launch-1.0 and gst-inspect-1.0).
    static let requiredElements = [
        "udpsrc", "udpsink", "srtpenc", "srtpdec", "rtpopuspay", "rtpopusdepay", "opusenc", "opusdec",
        "audioconvert", "audiotestsrc", "filesink"
    ]

    /// Hard limit on any one GStreamer process; past it the process is killed and the test fails. Generous: on a
    /// 2-core machine running the whole parallel suite, a pipeline once took over 30 s to be seen listening.
    static let processTimeout: Duration = .seconds(90)

    /// Absolute path of an executable found on PATH.
    static func executable(named name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    static let launchPath: String? = executable(named: "gst-launch-1.0")
    /// coreutils `timeout`, the second line of defence: it kills the child even if this test process dies first.
    static let timeoutPath: String? = executable(named: "timeout")
    static let inspectPath: String? = executable(named: "gst-inspect-1.0")

    /// Why the interop tests cannot run here, or nil when they can. Computed once (each element is checked with
    /// `gst-inspect-1.0 --exists`, itself bounded by the process timeout).
    static let missingRequirement: String? = {
        guard launchPath != nil, let inspect = inspectPath else {
            return "gst-launch-1.0/gst-inspect-1.0 not on PATH (apt: gstreamer1.0-tools)"
        }
        let missing = requiredElements.filter { element in
            guard let process = try? BoundedProcess(executable: inspect, arguments: ["--exists", element]) else {
                return true
            }
            return process.waitBlocking(timeout: processTimeout) != 0
        }
        if !missing.isEmpty {
            return "GStreamer elements missing: \(missing.joined(separator: ", ")) (apt: gstreamer1.0-plugins-base "
                + "gstreamer1.0-plugins-good gstreamer1.0-plugins-bad)"
        }
        return nil
    }()

    static var isAvailable: Bool { missingRequirement == nil }

    /// The srtpenc properties / srtpdec caps fields naming `suite` (GStreamer's GstSrtpCipherType and
    /// GstSrtpAuthType nicks). GCM suites authenticate with the cipher itself, so their auth is "null".
    static func srtpParameters(_ suite: SRTPCryptoSuite) -> (cipher: String, rtpAuth: String, rtcpAuth: String) {
        switch suite {
        case .aesCM128HmacSHA1_80: ("aes-128-icm", "hmac-sha1-80", "hmac-sha1-80")
        case .aesCM128HmacSHA1_32: ("aes-128-icm", "hmac-sha1-32", "hmac-sha1-80")  // SRTCP keeps 80 bits
        case .aes256CMHmacSHA1_80: ("aes-256-icm", "hmac-sha1-80", "hmac-sha1-80")
        case .aeadAES128GCM: ("aes-128-gcm", "null", "null")
        case .aeadAES256GCM: ("aes-256-gcm", "null", "null")
        }
    }

    /// Lowercase hex of key material, the form gst-launch deserializes into a GstBuffer.
    static func hexString(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }
}

/// A child process with stdout/stderr captured to temporary files (never pipes, which can fill and block the
/// child) that never outlives its owner.
///
/// Why not Foundation's `Process`: its children inherit the signal mask of the spawning thread, and the test
/// runner's threads block SIGINT, SIGTERM and SIGALRM, so such a gst-launch-1.0 ignores every signal but SIGKILL
/// (the cause of pipelines that "spun forever" and outlived earlier test runs). Here the child is spawned with
/// an empty signal mask and default handlers, in its own process group, under coreutils
/// `timeout --kill-after=5 <processTimeout + 15 s>` — the second line of defence, which kills the pipeline even
/// when the test process itself dies before it can. `kill()` SIGKILLs the whole group.
final class BoundedProcess {
    let commandLine: String
    private(set) var pid: pid_t = 0
    private var exitStatus: Int32?
    private let directory: URL
    private let stdoutURL: URL
    private let stderrURL: URL

    init(executable: String, arguments: [String]) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "voice-gst-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        stdoutURL = directory.appendingPathComponent("stdout.txt")
        stderrURL = directory.appendingPathComponent("stderr.txt")
        commandLine = ([executable] + arguments).joined(separator: " ")

        var argv = [executable] + arguments
        if let timeout = GStreamer.timeoutPath {
            let limit = GStreamer.processTimeout.components.seconds + 15
            argv = [timeout, "--kill-after=5", "\(limit)s"] + argv
        }
        var environment = ProcessInfo.processInfo.environment
        environment["GST_DEBUG_NO_COLOR"] = "1"
        let envp = environment.map { "\($0.key)=\($0.value)" }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdoutURL.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, stderrURL.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGALRM, SIGPIPE, SIGCHLD, SIGUSR1, SIGUSR2] {
            sigaddset(&defaults, signal)
        }
        posix_spawnattr_setsigmask(&attributes, &emptyMask)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))

        let cArguments = argv.map { strdup($0) } + [nil]
        let cEnvironment = envp.map { strdup($0) } + [nil]
        defer {
            cArguments.forEach { free($0) }
            cEnvironment.forEach { free($0) }
        }
        var child: pid_t = 0
        let status = posix_spawn(&child, argv[0], &actions, &attributes, cArguments, cEnvironment)
        guard status == 0 else { throw LoopbackSocketError(call: "posix_spawn \(argv[0])", code: status) }
        pid = child
    }

    deinit {
        kill()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Whether the child still runs (reaps it when it has exited).
    var isRunning: Bool {
        if exitStatus != nil { return false }
        var status: Int32 = 0
        let result = waitpid(pid, &status, WNOHANG)
        if result == 0 { return true }
        if result == pid {
            // Exit code, or 128 + signal number like a shell.
            exitStatus = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        } else {
            exitStatus = -1  // ECHILD: reaped elsewhere; status unknown
        }
        return false
    }

    /// The exit status once the child has exited (128 + n when killed by signal n; 124 when `timeout` expired).
    var terminationStatus: Int32? { isRunning ? nil : exitStatus }

    /// Waits for exit for at most `timeout`; returns the exit status, or nil if the process was still running
    /// (in which case it has been killed).
    func wait(timeout: Duration) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while isRunning {
            if ContinuousClock.now >= deadline {
                kill()
                return nil
            }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return exitStatus
    }

    /// `wait(timeout:)` for synchronous contexts (trait evaluation).
    func waitBlocking(timeout: Duration) -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while isRunning {
            if ContinuousClock.now >= deadline {
                kill()
                return nil
            }
            usleep(10_000)
        }
        return exitStatus
    }

    /// SIGKILL to the child's whole process group (the `timeout` wrapper and gst-launch-1.0), then reap, then
    /// wait (bounded) until no member of the group is left.
    func kill() {
        guard isRunning else { return }
        _ = Glibc.kill(-pid, SIGKILL)
        _ = Glibc.kill(pid, SIGKILL)
        let deadline = ContinuousClock.now + .seconds(5)
        while isRunning && ContinuousClock.now < deadline { usleep(1_000) }
        while Glibc.kill(-pid, 0) == 0 && ContinuousClock.now < deadline {
            _ = Glibc.kill(-pid, SIGKILL)
            usleep(1_000)
        }
    }

    var standardError: String { (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? "" }
    var standardOutput: String { (try? String(contentsOf: stdoutURL, encoding: .utf8)) ?? "" }

    /// A failure description: the command, and the tail of its output.
    func diagnostics(_ what: String) -> String {
        let tail = { (text: String) in String(text.suffix(3000)) }
        return "\(what)\ncommand: \(commandLine)\nstderr: \(tail(standardError))\nstdout: \(tail(standardOutput))"
    }
}

/// Errors of the loopback socket helpers.
struct LoopbackSocketError: Error, CustomStringConvertible {
    let call: String
    let code: Int32
    var description: String { "\(call) failed: \(String(cString: strerror(code)))" }
}

/// A UDP socket bound to 127.0.0.1 (never any other interface), closed in deinit.
final class LoopbackUDPSocket {
    let descriptor: Int32
    /// The local port (chosen by the kernel when bound to 0).
    let port: UInt16

    init(port requested: UInt16 = 0) throws {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw LoopbackSocketError(call: "socket", code: errno) }
        descriptor = fd
        var bufferSize: Int32 = 1 << 20
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufferSize, socklen_t(MemoryLayout<Int32>.size))
        var address = Self.loopback(port: requested)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            let code = errno
            close(fd)
            throw LoopbackSocketError(call: "bind", code: code)
        }
        var local = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else {
            let code = errno
            close(fd)
            throw LoopbackSocketError(call: "getsockname", code: code)
        }
        port = UInt16(bigEndian: local.sin_port)
    }

    deinit { close(descriptor) }

    static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }

    /// A UDP port that was free a moment ago (bind to 0, read the port, close). A child process binds it next.
    static func freePort() throws -> UInt16 { try LoopbackUDPSocket().port }

    /// Sends one datagram to 127.0.0.1:`port`.
    func send(_ bytes: [UInt8], toPort port: UInt16) throws {
        var address = Self.loopback(port: port)
        let sent = bytes.withUnsafeBytes { buffer in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(
                        descriptor, buffer.baseAddress, buffer.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        guard sent == bytes.count else { throw LoopbackSocketError(call: "sendto", code: errno) }
    }

    /// The next datagram if one is already queued (non-blocking), else nil.
    func receiveIfAvailable() throws -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let received = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if received < 0 {
            if errno == EAGAIN || errno == EWOULDBLOCK { return nil }
            throw LoopbackSocketError(call: "recv", code: errno)
        }
        return Array(buffer[0..<received])
    }
}

/// Whether some process has a UDP socket bound to local `port` on IPv4 (read from /proc/net/udp): used to wait
/// until gst-launch's udpsrc is listening, so the first packets are not sent into a closed port.
func udpPortIsBound(_ port: UInt16) -> Bool {
    guard let table = try? String(contentsOfFile: "/proc/net/udp", encoding: .utf8) else { return false }
    let suffix = String(format: ":%04X", port)
    for line in table.split(separator: "\n").dropFirst() {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        if fields.count > 1, fields[1].hasSuffix(suffix) { return true }
    }
    return false
}

/// Process ids of running processes whose command line contains `marker` (read from /proc).
func processIDs(withCommandLineContaining marker: String) -> [Int32] {
    guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
    return entries.compactMap { entry -> Int32? in
        guard let pid = Int32(entry), pid != getpid(),
            let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline")
        else { return nil }
        let commandLine = String(decoding: data.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self)
        return commandLine.contains(marker) ? pid : nil
    }
}

/// A pure tone as 16-bit PCM: `amplitude * sin(2π f n / rate)`, rounded.
func gstTestTone(frequency: Double, amplitude: Double, sampleRate: Double = 48_000, count: Int) -> [Int16] {
    (0..<count).map { n in
        Int16((amplitude * sin(2 * Double.pi * frequency * Double(n) / sampleRate)).rounded())
    }
}

/// How well `samples` is a tone of `frequency`: a least-squares fit of `a·sin + b·cos` at that frequency;
/// `snrDB` is fitted power over residual power (everything that is not the tone: noise, distortion, other
/// frequencies), `amplitude` the fitted tone's peak amplitude.
struct ToneFit {
    let amplitude: Double
    let snrDB: Double

    init(_ samples: ArraySlice<Int16>, frequency: Double, sampleRate: Double = 48_000) {
        let omega = 2 * Double.pi * frequency / sampleRate
        var ss = 0.0
        var cc = 0.0
        var sc = 0.0
        var sy = 0.0
        var cy = 0.0
        for (i, sample) in samples.enumerated() {
            let s = sin(omega * Double(i))
            let c = cos(omega * Double(i))
            let y = Double(sample)
            ss += s * s
            cc += c * c
            sc += s * c
            sy += s * y
            cy += c * y
        }
        let determinant = ss * cc - sc * sc
        let a = determinant == 0 ? 0 : (sy * cc - cy * sc) / determinant
        let b = determinant == 0 ? 0 : (cy * ss - sy * sc) / determinant
        var signal = 0.0
        var residual = 0.0
        for (i, sample) in samples.enumerated() {
            let fitted = a * sin(omega * Double(i)) + b * cos(omega * Double(i))
            signal += fitted * fitted
            residual += (Double(sample) - fitted) * (Double(sample) - fitted)
        }
        amplitude = (a * a + b * b).squareRoot()
        snrDB = 10 * log10(max(signal, 1e-9) / max(residual, 1e-9))
    }
}

/// Signal-to-difference ratio of `test` against `reference` in dB (∞ when identical).
func gstSignalToDifferenceDB(_ reference: [Int16], _ test: [Int16]) -> Double {
    precondition(reference.count == test.count, "length mismatch")
    var signal = 0.0
    var difference = 0.0
    for (r, t) in zip(reference, test) {
        signal += Double(r) * Double(r)
        difference += (Double(r) - Double(t)) * (Double(r) - Double(t))
    }
    return difference == 0 ? .infinity : 10 * log10(max(signal, 1e-9) / difference)
}

/// 16-bit little-endian PCM bytes as samples.
func gstSamplesFromS16LE(_ data: Data) -> [Int16] {
    let bytes = [UInt8](data)
    return stride(from: 0, to: bytes.count - 1, by: 2).map {
        Int16(bitPattern: UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8)
    }
}
