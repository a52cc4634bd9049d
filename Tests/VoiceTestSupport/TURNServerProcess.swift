import Foundation

/// coturn (Debian's `turnserver`) started by a test with the TURN REST API's shared secret (`use-auth-secret`, the
/// scheme of the registration grants), on `address:port` with relay ports `relayPorts`, optionally inside a network
/// namespace the test made (`ip netns exec`). Stopped with ``stop()``; its log is kept for failure messages.
public final class TURNServerProcess: @unchecked Sendable {
    public static let path = "/usr/bin/turnserver"
    public static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: path) }

    public let address: String
    public let port: UInt16
    public let secret: String
    public let namespace: String?
    private let process: ChildProcessGroup

    /// - Parameters:
    ///   - loopbackPeers: whether peers on 127.0.0.0/8 and ::1 may be relayed to (every client on this machine).
    public init(
        address: String = "127.0.0.1", port: UInt16, relayPorts: ClosedRange<Int>, secret: String,
        namespace: String? = nil, loopbackPeers: Bool = true
    ) throws {
        self.address = address
        self.port = port
        self.secret = secret
        self.namespace = namespace
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("turnserver-\(UUID().uuidString).log")
        var arguments = [
            "-n", "--listening-ip=\(address)", "--listening-port=\(port)", "--relay-ip=\(address)",
            "--min-port=\(relayPorts.lowerBound)", "--max-port=\(relayPorts.upperBound)", "--use-auth-secret",
            "--static-auth-secret=\(secret)", "--realm=voiceengine.test", "--no-tls", "--no-dtls", "--no-cli",
            "--no-tcp-relay", "--fingerprint", "--log-file=stdout", "--simple-log",
            "--pidfile=\(log.path).pid"
        ]
        if loopbackPeers { arguments.append("--allow-loopback-peers") }
        process =
            if let namespace {
                try ChildProcessGroup("/usr/sbin/ip", ["netns", "exec", namespace, Self.path] + arguments, log: log)
            } else {
                try ChildProcessGroup(Self.path, arguments, log: log)
            }
    }

    /// The `turn:` URL a registration grant names.
    public var url: String { address.contains(":") ? "turn:[\(address)]:\(port)" : "turn:\(address):\(port)" }

    /// Waits until coturn's UDP port is bound (`ss`, in its namespace), at most `timeout`.
    public func waitUntilListening(timeout: Duration = .seconds(5)) async -> Bool {
        let inside = namespace.map { "ip netns exec \($0) " } ?? ""
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let (status, output) = ChildProcessGroup.shell("\(inside)ss -Hlun 'sport = :\(port)'")
            if status == 0, output.contains(":\(port)") { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    public var logTail: String { process.logTail }

    public func stop() {
        process.stop()
        try? FileManager.default.removeItem(at: process.log)
        try? FileManager.default.removeItem(atPath: process.log.path + ".pid")
    }
}
