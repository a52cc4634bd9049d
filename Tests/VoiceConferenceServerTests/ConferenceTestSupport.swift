import Foundation
import NIOCore
import NIOPosix
import Testing
import VoiceConferenceServer
import VoiceEngine
import VoiceSIP
import VoiceTestSupport

let kamailioPath = "/usr/sbin/kamailio"
let kamcmdPath = "/usr/sbin/kamcmd"
let conferenceDomain = "conference.voiceengine.test"
/// The repository's dispatcher configuration (Services/kamailio-conference), the one operators run.
let dispatcherConfiguration = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Services/kamailio-conference/kamailio.cfg")

/// Short SIP timers for loopback (a dead node's transactions give up in 64·T1 = 3.2 s).
let fastTimers = SIPTimerConfiguration(t1: .milliseconds(50), t2: .milliseconds(400), t4: .milliseconds(500))

/// Runs `body` on one loop of NIO's shared group (the participants' and in-process servers' SIP endpoints).
func withEventLoop<T>(_ body: (any EventLoop) async throws -> T) async throws -> T {
    try await body(MultiThreadedEventLoopGroup.singleton.next())
}

/// An in-process conference server on loopback: SIP on an ephemeral port (returned), media on `rtpPorts`.
func startLoopbackServer(rtpPorts: ClosedRange<Int>, on loop: any EventLoop) async throws -> (
    server: ConferenceServer, port: Int
) {
    let server = try await ConferenceServer.start(
        ConferenceServerConfiguration(
            sipAddress: try SocketAddress(ipAddress: "127.0.0.1", port: 0), domain: conferenceDomain,
            rtpPorts: rtpPorts,
            timers: fastTimers),
        on: loop)
    return (server, try #require(await server.sipAddress?.port))
}

/// A participant's user agent on loopback (any port), calling through `proxy` when given.
func makeParticipant(
    _ user: String, on loop: any EventLoop, proxy: SocketAddress? = nil, timers: SIPTimerConfiguration = fastTimers
) async throws
    -> SIPUserAgent
{
    let endpoint = try await SIPEndpoint.start(
        on: loop, udp: try SocketAddress(ipAddress: "127.0.0.1", port: 0),
        configuration: SIPEndpointConfiguration(timers: timers))
    return SIPUserAgent(
        endpoint: endpoint, credentials: nil,
        configuration: SIPUserAgentConfiguration(
            addressOfRecord: SIPURI(user: user, host: "participants.test"),
            outboundProxy: proxy.map { SIPPeer(.udp, $0) }))
}

/// The room URI `conf-<id>` at `host` (and `port`).
func roomURI(_ id: String, host: String = conferenceDomain, port: Int? = nil) -> SIPURI {
    SIPURI(user: "conf-\(id)", host: host, port: port)
}

/// How a participant's call went: established with this media, or ended.
enum CallOutcome: Sendable {
    case success(NegotiatedAudio)
    case failure(SIPCallEnd)
}

/// Waits for the call's first `.established` or `.ended` event (consumes `call.events` up to it).
func outcome(of call: SIPCall, timeout: Duration = .seconds(10)) async -> CallOutcome {
    let events = call.events
    let waiting = Task { () -> CallOutcome in
        for await event in events {
            switch event {
            case .established(let media, _): return .success(media)
            case .ended(let end): return .failure(end)
            default: continue
            }
        }
        return .failure(SIPCallEnd(.failed, reasonPhrase: "events finished"))
    }
    let timer = Task {
        try await Task.sleep(for: timeout)
        waiting.cancel()
    }
    defer { timer.cancel() }
    return await waiting.value
}

/// Polls `condition` every 50 ms until it holds or `timeout` passes; whether it held.
func eventually(_ timeout: Duration = .seconds(10), _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(50))
    }
    return try await condition()
}

/// Kamailio with the repository's dispatcher configuration on `port`, its nodes' SIP ports in `nodes`, probing
/// every second; a control socket for `kamcmd`. Stopped by `stop()`.
final class DispatcherProxy: @unchecked Sendable {
    let process: ChildProcessGroup
    let directory: URL
    let control: String
    let address: SocketAddress

    /// - Parameters:
    ///   - probeInterval: seconds between the dispatcher's OPTIONS probes.
    ///   - listedActive: list the nodes active from the start (flags 8) instead of inactive until their first
    ///     answered probe (flags 9, what Services/kamailio-conference's list example does).
    init(port: Int, nodes: [Int], probeInterval: Int = 1, listedActive: Bool = false) throws {
        directory = try makeTemporaryDirectory("kamailio-conference")
        let list = directory.appendingPathComponent("dispatcher.list")
        let flags = listedActive ? "8" : "9"
        try nodes.map { "1 sip:127.0.0.1:\($0) \(flags)\n" }.joined().write(to: list, atomically: true, encoding: .utf8)
        control = "unix:" + directory.appendingPathComponent("kamailio.ctl").path
        process = try ChildProcessGroup(
            kamailioPath,
            [
                "-f", dispatcherConfiguration.path, "-DD", "-E", "-l", "udp:127.0.0.1:\(port)",
                "-A", "DS_LIST=\"\(list.path)\"", "-A", "CTL_SOCKET=\"\(control)\"", "-A",
                "DS_PING_INTERVAL=\(probeInterval)",
                "-P", directory.appendingPathComponent("kamailio.pid").path, "-Y", directory.path, "-m", "32", "-M", "8"
            ],
            log: directory.appendingPathComponent("kamailio.log"))
        address = try SocketAddress(ipAddress: "127.0.0.1", port: port)
    }

    /// Each node's dispatcher flags (`AP` active and probed, `IP` inactive and probed, …) by SIP port, from
    /// `kamcmd dispatcher.list`; empty when Kamailio does not answer.
    func nodeStates() throws -> [Int: String] {
        let output = directory.appendingPathComponent("kamcmd-\(UUID().uuidString).out")
        defer { try? FileManager.default.removeItem(at: output) }
        guard try ChildProcessGroup(kamcmdPath, ["-s", control, "dispatcher.list"], log: output).waitForExit() == 0
        else { return [:] }
        return Self.parseStates(try String(contentsOf: output, encoding: .utf8))
    }

    /// `URI: sip:127.0.0.1:P` followed by `FLAGS: XY` in kamcmd's listing.
    static func parseStates(_ listing: String) -> [Int: String] {
        var states: [Int: String] = [:]
        var port: Int?
        for line in listing.split(separator: "\n").map({ $0.trimmingCharacters(in: .whitespaces) }) {
            if line.hasPrefix("URI:"), let last = line.split(separator: ":").last { port = Int(last) }
            if line.hasPrefix("FLAGS:"), let p = port {
                states[p] = line.dropFirst("FLAGS:".count).trimmingCharacters(in: .whitespaces)
                port = nil
            }
        }
        return states
    }

    func stop() {
        process.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// A fresh temporary directory for one test's files.
func makeTemporaryDirectory(_ prefix: String) throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// `voice-engine conference-server` as a process of its own (so that a test can kill a node), on `sipPort` with
/// media ports `rtpPorts`, reports into `directory`.
func startConferenceNode(sipPort: Int, rtpPorts: ClosedRange<Int>, directory: URL, name: String) throws
    -> ChildProcessGroup
{
    let binary = try #require(BuiltExecutables.url("voice-engine"))
    return try ChildProcessGroup(
        binary.path,
        [
            "conference-server", "--bind", "127.0.0.1:\(sipPort)", "--rtp-ports",
            "\(rtpPorts.lowerBound)-\(rtpPorts.upperBound)",
            "--stats-dir", directory.appendingPathComponent("\(name)-stats").path, "--t1", "50"
        ],
        log: directory.appendingPathComponent("\(name).log"))
}
