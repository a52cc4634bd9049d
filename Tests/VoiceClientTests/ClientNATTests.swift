import Foundation
import Testing
import VoiceClient
import VoiceTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Network namespaces made by the test: a "public" one running the service (`Services/run-service.sh`: PostgreSQL on
/// its own loopback, Kamailio, the registration service and coturn on 10.41.1.1), and for each client a NAT
/// (masquerading router) and a private host behind it. Addresses are private ranges that exist only inside these
/// namespaces.
///
///     vihostA 192.168.41.2 ─ vinatA (MASQUERADE) 10.41.1.2 ─┐
///                                                            vipub 10.41.1.1 / 10.41.2.1: the service
///     vihostB 192.168.42.2 ─ vinatB (MASQUERADE) 10.41.2.2 ─┘
///
/// Each NAT drops unsolicited datagrams, as home routers do: one that reached the router's own address would
/// otherwise leave a conntrack entry that takes the mapping its host's next datagram to that peer needs, and the
/// kernel would map that one to another port (hole punching would fail on Linux's bookkeeping, not on the NAT type).
///
/// The public namespace counts what it forwards straight between the two NATs (media on a host or srflx pair) and
/// what reaches coturn on its port and its relay ports (TURN signalling, and media on a relayed pair: ChannelData
/// from the side whose relay it is, plain datagrams to the relayed address from the other side).
final class ClientNATNetwork: @unchecked Sendable {
    static let prefix = "vi"
    static let service = "10.41.1.1"
    /// coturn's relay ports (run-service.sh's default range).
    static let relayPorts = 49160...49259

    @discardableResult
    static func sh(_ script: String) -> (status: Int32, output: String) { ChildProcessGroup.shell(script) }

    /// Whether this machine lets us make namespaces and NAT rules (root, `ip`, `iptables`).
    static let available = TwoNATNamespaces.available(prefix: prefix)

    init() throws {
        Self.teardown()
        let p = Self.prefix
        let script =
            TwoNATNamespaces.script(
                prefix: p, public1: "10.41.1", public2: "10.41.2", privateA: "192.168.41", privateB: "192.168.42")
                + """
                ip netns exec \(p)pub sysctl -qw net.ipv4.ip_forward=1
                ip netns exec \(p)natA iptables -A INPUT -i \(p)ap -p udp -m conntrack --ctstate NEW -j DROP
                ip netns exec \(p)natB iptables -A INPUT -i \(p)bp -p udp -m conntrack --ctstate NEW -j DROP
                ip netns exec \(p)pub iptables -A FORWARD -p udp -s 10.41.1.2 -d 10.41.2.2
                ip netns exec \(p)pub iptables -A FORWARD -p udp -s 10.41.2.2 -d 10.41.1.2
                ip netns exec \(p)pub iptables -A INPUT -p udp -d 10.41.1.1 --dport \(Self.relayPorts.lowerBound):\(Self.relayPorts.upperBound)
                ip netns exec \(p)pub iptables -A INPUT -p udp -d 10.41.1.1 --dport 3478
                """
        let (status, output) = Self.sh(script)
        guard status == 0 else {
            Self.teardown()
            throw NATSetupFailure(description: "cannot make the namespaces: \(output)")
        }
    }

    static func teardown() { TwoNATNamespaces.teardown(prefix: prefix) }

    deinit { Self.teardown() }

    /// Both NATs map each new flow to a random port (`MASQUERADE --random`): the mapping depends on the
    /// destination, so the port coturn saw (the srflx candidate) is not the one the peer sees. Only a relayed
    /// pair connects then. Without, the kernel keeps the source port (endpoint-independent mapping) and the srflx
    /// pairs connect by hole punching.
    func setPortPerDestination(_ on: Bool) throws {
        let p = Self.prefix
        for (nat, out) in [("natA", "ap"), ("natB", "bp")] {
            let (status, output) = Self.sh(
                "ip netns exec \(p)\(nat) iptables -t nat -R POSTROUTING 1 -o \(p)\(out) -j MASQUERADE"
                    + (on ? " --random" : ""))
            guard status == 0 else { throw NATSetupFailure(description: "iptables: \(output)") }
        }
    }

    /// UDP datagrams vipub forwarded straight between the two NATs, and those it took in on coturn's port and
    /// relay ports, since the last ``resetCounters()``.
    var counters: (direct: Int, toRelay: Int) {
        func sum(_ chain: String) -> Int {
            let (_, output) = Self.sh("ip netns exec \(Self.prefix)pub iptables -L \(chain) -v -x -n")
            // The rules' lines: those naming our addresses (the protocol column may be numeric).
            return output.split(separator: "\n").filter { $0.contains("10.41.") }
                .compactMap { Int($0.split(separator: " ", omittingEmptySubsequences: true).first ?? "") }
                .reduce(0, +)
        }
        return (sum("FORWARD"), sum("INPUT"))
    }

    func resetCounters() { Self.sh("ip netns exec \(Self.prefix)pub iptables -Z") }
}

struct NATSetupFailure: Error, CustomStringConvertible {
    let description: String
}

/// `voice-engine phone` inside a namespace, its commands written to its stdin as the test goes, its output in a
/// log the test reads.
final class NamespacedPhone: @unchecked Sendable {
    let process: ChildProcessGroup
    private let commands: Int32

    init(
        _ user: String, in namespace: String, binary: URL, state: URL, secretFile: URL, mic: String, heard: URL,
        prefix: String = ClientNATNetwork.prefix, server: String = ClientNATNetwork.service
    ) throws {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw NATSetupFailure(description: "pipe: errno \(errno)") }
        // Neither end leaks into other children; the phone gets the read end as its stdin (dup2 clears the flag).
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        defer { close(ends[0]) }
        let log = state.deletingLastPathComponent().appendingPathComponent("\(user)-\(UUID().uuidString).log")
        do {
            process = try ChildProcessGroup(
                "/usr/sbin/ip",
                [
                    "netns", "exec", prefix + namespace, binary.path, "phone", "--user", user,
                    "--server", server, "--sip-port", "5061", "--registration-port", "8443",
                    "--ca-file", state.appendingPathComponent("ca.pem").path, "--secret-file", secretFile.path,
                    "--mic", "file:" + mic, "--speaker", "file:" + heard.path, "--rate", "16000",
                    "--auto-answer", "0.2"
                ], log: log, stdinDescriptor: ends[0])
        } catch {
            close(ends[1])
            throw error
        }
        commands = ends[1]
    }

    deinit {
        close(commands)
        process.stop()
    }

    func say(_ line: String) { _ = (line + "\n").withCString { write(commands, $0, strlen($0)) } }

    var output: String { (try? String(contentsOf: process.log, encoding: .utf8)) ?? "" }

    /// Waits until the output contains `text`; false after `timeout`.
    func waitFor(_ text: String, timeout: Duration = .seconds(20)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if output.contains(text) { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return output.contains(text)
    }

    /// The output after the phone's `status` (a line per call with its state, `call 1: alice established`), for a
    /// failure's message: it tells a call that never ended from an end that was never printed, and a phone that
    /// no longer answers from both.
    func outputWithStatus(of remote: String) async -> String {
        say("status")
        _ = await waitFor("call 1: \(remote) ", timeout: .seconds(3))
        return output
    }

    /// Quits and waits for the process (the speaker file is complete then).
    func quit() async -> Int32? {
        say("quit")
        return await process.wait(timeout: .seconds(15))
    }
}

/// Two `voice-engine phone`s, each behind its own masquerading NAT, call each other through the service
/// (`Services/run-service.sh` in the public namespace: Kamailio over TLS, the registration service, coturn named
/// in the grants). Speech is verified both ways. With NATs that keep the source port the media goes straight
/// between the NATs (a server-reflexive pair); with NATs that map each destination to another port it goes through
/// coturn's relay ports. The time from dialling to the call's `established` (ICE connected, DTLS-SRTP keyed, media
/// started) is printed for both.
@Suite(
    "VoiceClient calls between two NATs", .tags(.interop, .live, .slow, .root, .cli), .scheduledByTags, .serialized,
    .timeLimit(.minutes(6)),
    .enabled(if: serviceUnavailableReason == nil, "\(serviceUnavailableReason ?? "")"),
    .enabled(if: TURNServerProcess.isInstalled, "coturn is not installed (make test-deps installs it)"),
    .enabled(if: SharedTestData.isPresent, "the shared speech recordings (../shared/testdata/speech) are absent"),
    .enabled(if: ClientNATNetwork.available, "needs root, ip and iptables to create network namespaces with NAT"))
struct ClientNATTests {
    static let aliceSpeech = SharedTestData.speech + "/jfk_16k_mono.wav"
    static let bobSpeech = SharedTestData.speech + "/pjsip_input_16k.wav"

    struct Outcome {
        var setup: Duration
        var direct: Int
        var relayed: Int
    }

    /// One call from `caller` to `callee` (fresh phones in their namespaces): dial, wait for `established` on
    /// both, 8 s of speech, hang up; checks each heard the other and returns the setup time and the counters.
    func call(
        from caller: (user: String, host: String), to callee: (user: String, host: String), network: ClientNATNetwork,
        binary: URL, state: URL, secretFile: URL
    ) async throws -> Outcome {
        let directory = state.deletingLastPathComponent()
        let speech = ["alice": Self.aliceSpeech, "bob": Self.bobSpeech]
        let heard = [caller.user, callee.user].map {
            directory.appendingPathComponent("\($0)-heard-\(UUID().uuidString).wav")
        }
        func startedPhone(_ user: String, in host: String, heard: URL) async throws -> NamespacedPhone {
            func start() throws -> NamespacedPhone {
                try NamespacedPhone(
                    user, in: host, binary: binary, state: state, secretFile: secretFile, mic: speech[user]!,
                    heard: heard)
            }
            let phone = try start()
            if await phone.waitFor("event: started") { return phone }
            // The namespaced Kamailio's TLS can close a phone's first handshake ("EOF during handshake"), for a
            // cause not known: such a start is reported and made once more; any other failure fails the test.
            guard phone.output.contains("TLS refused") else {
                throw NATSetupFailure(description: "the phone did not start:\n\(phone.output)")
            }
            print("client calls between two NATs: \(user)'s phone did not start, again:\n\(phone.output)")
            phone.process.stop()
            try await Task.sleep(for: .seconds(1))
            let again = try start()
            try #require(await again.waitFor("event: started"), "the phone did not start:\n\(again.output)")
            return again
        }
        let callerPhone = try await startedPhone(caller.user, in: caller.host, heard: heard[0])
        let calleePhone = try await startedPhone(callee.user, in: callee.host, heard: heard[1])
        network.resetCounters()
        let dialled = ContinuousClock.now
        callerPhone.say("call \(callee.user)")
        try #require(await callerPhone.waitFor("call 1: established"), "no call:\n\(callerPhone.output)")
        let setup = ContinuousClock.now - dialled
        #expect(await calleePhone.waitFor("call 1: established"), "\(calleePhone.output)")
        try await Task.sleep(for: .seconds(8))
        callerPhone.say("hangup")
        // Both outputs, with each phone's own view of the call: whether the caller's hang-up took effect tells a BYE
        // that was lost from one never sent.
        if !(await calleePhone.waitFor("call 1: ended (remoteHangup")) {
            let calleeView = await calleePhone.outputWithStatus(of: caller.user)
            let callerView = await callerPhone.outputWithStatus(of: callee.user)
            Issue.record(
                "the caller's hang-up did not end the callee's call:\ncallee:\n\(calleeView)\ncaller:\n\(callerView)")
        }
        let counters = network.counters
        #expect(await callerPhone.quit() == 0, "\(callerPhone.output)")
        #expect(await calleePhone.quit() == 0, "\(calleePhone.output)")
        let outputs = "caller:\n\(callerPhone.output)\ncallee:\n\(calleePhone.output)"
        for (index, listener) in [caller, callee].enumerated() {
            let talker = index == 0 ? callee.user : caller.user
            let match = SpeechMatch.median(
                sent: try WAVFile.read(path: speech[talker]!).int16Samples,
                heard: try WAVFile.read(path: heard[index].path).int16Samples)
            #expect(match > 0.5, "\(listener.user) did not hear \(talker) (\(match)); \(outputs)")
        }
        return Outcome(setup: setup, direct: counters.direct, relayed: counters.toRelay)
    }

    @Test func callsBothWaysThroughTwoNATsDirectThenThroughTheRelay() async throws {
        let binary = try #require(BuiltExecutables.url("voice-engine"))
        let network = try ClientNATNetwork()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("vi-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let state = directory.appendingPathComponent("state")
        let service = try await NamespacedService.start(
            prefix: ClientNATNetwork.prefix, address: ClientNATNetwork.service, state: state, binary: binary)
        defer { service.stop() }
        let secretFile = directory.appendingPathComponent("app-secret")
        try "demo-application-secret".write(to: secretFile, atomically: true, encoding: .utf8)
        let alice = (user: "alice", host: "hostA"), bob = (user: "bob", host: "hostB")

        var report: [String] = []
        for portPerDestination in [false, true] {
            try network.setPortPerDestination(portPerDestination)
            for (caller, callee) in [(alice, bob), (bob, alice)] {
                // A srflx pair that answers only after a relayed one was nominated (the peer's NAT dropped the first
                // check to its mapping) is renominated, and the media moves to it before RTP starts.
                var result: Outcome?
                if portPerDestination {
                    // Open defect: now and then a relayed call through these NATs loses one way's media and the
                    // callee never sees the BYE. Its ~2880 datagrams to coturn (against ~860) match both sides' media
                    // at the usual rate over the call and the 20 s wait for the BYE, as if neither side's media
                    // stopped at the hang-up. The cause is not found; it is reported as a known issue, not hidden by
                    // a retry.
                    await withKnownIssue(
                        "a relayed call through port-per-destination NATs can lose one way's media",
                        isIntermittent: true
                    ) {
                        result = try await call(
                            from: caller, to: callee, network: network, binary: binary, state: state,
                            secretFile: secretFile)
                    }
                } else {
                    result = try await call(
                        from: caller, to: callee, network: network, binary: binary, state: state, secretFile: secretFile
                    )
                }
                guard let outcome = result else { continue }
                let path = portPerDestination ? "relay" : "srflx"
                report.append(
                    "\(path) \(caller.user) → \(callee.user): dial → established \(outcome.setup); "
                        + "\(outcome.direct) datagrams straight between the NATs, \(outcome.relayed) to coturn")
                // 8 s of media both ways is ~800 datagrams; the checks of the pairs that fail are a few dozen.
                if portPerDestination {
                    #expect(outcome.relayed > 600, "the media did not go through the relay: \(outcome)")
                    #expect(outcome.direct < 100, "media went straight between the NATs: \(outcome)")
                } else {
                    #expect(outcome.direct > 600, "the media did not go straight between the NATs: \(outcome)")
                    #expect(outcome.relayed < 100, "the media went through the relay: \(outcome)")
                }
            }
        }
        print("client calls between two NATs (voice-engine phone, service in the public namespace):")
        for line in report { print("  " + line) }
    }
}
