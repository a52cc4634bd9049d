import Foundation
import NIOCore
import Testing
import VoiceEngine
import VoiceSIP
import VoiceTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Network namespaces made by the test: Kamailio and a caller in a "public" one, a callee behind a masquerading
/// NAT whose UDP mappings expire after 2 s (conntrack's UDP timeouts shortened in the NAT's namespace).
///
///     host 192.168.28.2 (bob, dave) ─ nat (MASQUERADE) 10.18.1.2 ─ pub 10.18.1.1 (Kamailio :25170, alice)
///
/// The addresses exist only inside these namespaces.
enum SIPNATNetwork {
    static let prefix = "ve18"
    static let names = ["pub", "nat", "host"].map { prefix + $0 }
    static let udpTimeoutSeconds = 2

    /// Runs a shell script to its end (``ChildProcessGroup/shell(_:)``); its status and output.
    @discardableResult
    static func sh(_ script: String) -> (Int32, String) { ChildProcessGroup.shell(script) }

    /// Root, `ip` and `iptables` with NAT in a namespace.
    static let available: Bool = {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip"),
            FileManager.default.isExecutableFile(atPath: "/usr/sbin/iptables")
        else { return false }
        let probe = "\(prefix)probe"
        return sh(
            "ip netns add \(probe) && ip netns exec \(probe) iptables -t nat -L >/dev/null; s=$?; ip netns del \(probe); exit $s"
        ).0 == 0
    }()

    static func create() throws {
        teardown()
        let p = prefix
        let (status, output) = sh(
            """
            set -e
            for n in pub nat host; do ip netns add \(p)$n; ip -n \(p)$n link set lo up; done
            ip link add \(p)pn netns \(p)pub type veth peer name \(p)np netns \(p)nat
            ip link add \(p)nh netns \(p)nat type veth peer name \(p)hn netns \(p)host
            ip -n \(p)pub addr add 10.18.1.1/24 dev \(p)pn; ip -n \(p)pub link set \(p)pn up
            ip -n \(p)nat addr add 10.18.1.2/24 dev \(p)np; ip -n \(p)nat link set \(p)np up
            ip -n \(p)nat addr add 192.168.28.1/24 dev \(p)nh; ip -n \(p)nat link set \(p)nh up
            ip -n \(p)host addr add 192.168.28.2/24 dev \(p)hn; ip -n \(p)host link set \(p)hn up
            ip -n \(p)nat route add default via 10.18.1.1
            ip -n \(p)host route add default via 192.168.28.1
            ip netns exec \(p)nat sysctl -qw net.ipv4.ip_forward=1
            ip netns exec \(p)nat iptables -t nat -A POSTROUTING -o \(p)np -j MASQUERADE
            ip netns exec \(p)nat sysctl -qw net.netfilter.nf_conntrack_udp_timeout=\(udpTimeoutSeconds)
            ip netns exec \(p)nat sysctl -qw net.netfilter.nf_conntrack_udp_timeout_stream=\(udpTimeoutSeconds)
            """)
        guard status == 0 else {
            teardown()
            throw SIPError(.transport, "cannot make the NAT namespaces: \(output)")
        }
    }

    static func teardown() {
        for n in names { sh("ip netns del \(n) 2>/dev/null") }
    }

    /// A non-blocking UDP socket bound to `host`:0 inside namespace `name` (made on a thread that entered it:
    /// setns affects only the calling thread; the socket stays in that namespace).
    static func udpSocket(in name: String, host: String) throws -> CInt {
        final class Box: @unchecked Sendable { var result: Result<CInt, SIPError>? }
        let box = Box()
        let thread = Thread {
            let namespace = open("/var/run/netns/\(name)", O_RDONLY)
            // setns is not in Swift's Glibc module: looked up by name.
            typealias SetNS = @convention(c) (Int32, Int32) -> Int32
            guard namespace >= 0, let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "setns"),
                unsafeBitCast(symbol, to: SetNS.self)(namespace, 0x4000_0000 /* CLONE_NEWNET */) == 0
            else {
                box.result = .failure(SIPError(.transport, "setns \(name): errno \(errno)"))
                return
            }
            close(namespace)
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = 0
            inet_pton(AF_INET, host, &address.sin_addr)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard fd >= 0, bound == 0, fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0 else {
                box.result = .failure(SIPError(.transport, "UDP socket on \(host) in \(name): errno \(errno)"))
                return
            }
            box.result = .success(fd)
        }
        thread.start()
        while box.result == nil { Thread.sleep(forTimeInterval: 0.005) }
        return try box.result!.get()
    }
}

/// RFC 5626 keepalives through a real NAT: bob registers from behind it and pings the registrar with CRLF CRLF; after
/// twice the NAT's UDP timeout, alice's INVITE still reaches him through the mapping the pings kept. dave, behind
/// the same NAT without keepalives, is unreachable by then (the control that shows the timeout is real).
@Suite(
    "SIP client behind a NAT", .tags(.interop, .live, .root), .scheduledByTags, .serialized, .timeLimit(.minutes(1)),
    .enabled(
        if: FileManager.default.isExecutableFile(atPath: kamailioPath),
        "kamailio is not installed (make test-deps installs it)"),
    .enabled(if: SIPNATNetwork.available, "needs root, ip and iptables to create network namespaces with NAT"))
struct SIPNATTests {
    static let domain = KamailioTests.domain

    @Test func keepalivesKeepAClientBehindANATReachable() async throws {
        try SIPNATNetwork.create()
        defer { SIPNATNetwork.teardown() }
        let pub = "\(SIPNATNetwork.prefix)pub", host = "\(SIPNATNetwork.prefix)host"
        let timers = SIPTimerConfiguration(t1: .milliseconds(100), t2: .milliseconds(800), t4: .milliseconds(800))
        try await KamailioTests().withKamailio(
            port: 25170, namespace: pub, host: "10.18.1.1",
            probeSocket: { try SIPNATNetwork.udpSocket(in: pub, host: "10.18.1.1") }
        ) { loop, server in
            let proxy = SIPPeer(.udp, server)
            func agent(_ user: String, in namespace: String, address: String, keepalive: TimeAmount?) async throws -> (
                SIPUserAgent, SIPRegistration
            ) {
                let endpoint = try await SIPEndpoint.startClosedWithLoop(
                    on: loop, boundUDPSocket: try SIPNATNetwork.udpSocket(in: namespace, host: address),
                    configuration: SIPEndpointConfiguration(timers: timers, keepaliveInterval: keepalive))
                let agent = SIPUserAgent(
                    endpoint: endpoint, credentials: SIPStaticCredentials(username: user, password: "\(user)-secret"),
                    configuration: SIPUserAgentConfiguration(
                        addressOfRecord: SIPURI(user: user, host: Self.domain), outboundProxy: proxy))
                let registration = SIPRegistration(
                    configuration: SIPRegistrationConfiguration(
                        addressOfRecord: SIPURI(user: user, host: Self.domain), server: proxy, expires: 60),
                    sender: agent.sender)
                return (agent, registration)
            }
            let (alice, _) = try await agent("alice", in: pub, address: "10.18.1.1", keepalive: nil)
            let (bob, bobRegistration) = try await agent(
                "bob", in: host, address: "192.168.28.2", keepalive: .milliseconds(500))
            let (dave, daveRegistration) = try await agent("dave", in: host, address: "192.168.28.2", keepalive: nil)
            let bobTrace = TraceRecorder(bob.endpoint)
            #expect(try await bobRegistration.register().statusCode == 200)
            #expect(try await daveRegistration.register().statusCode == 200)
            // Kamailio saw bob at the NAT's public address, not his own.
            #expect(bobTrace.count("recv", containing: "received=10.18.1.2") >= 1, "\(bobTrace.all)")

            // Twice the NAT's UDP timeout: only bob's mapping survives, kept by his pings.
            try await Task.sleep(for: .seconds(2 * SIPNATNetwork.udpTimeoutSeconds))
            #expect(await bob.endpoint.statistics().keepalivesSent >= 6)
            #expect(await dave.endpoint.statistics().keepalivesSent == 0)

            let toBob = try await alice.call(
                SIPURI(user: "bob", host: Self.domain), offering: testCapabilities(port: 40050))
            let aliceLog = CallEventLog(toBob)
            let incoming = await nextCall(of: bob, within: .seconds(5))
            let call = try #require(incoming, "alice's INVITE did not reach bob: \(aliceLog.events)")
            let bobLog = CallEventLog(call)
            try await call.answer(with: testCapabilities(port: 40052))
            _ = try await aliceLog.established()
            _ = try await bobLog.established()
            await toBob.hangUp()
            // The BYE, too, reached bob through the NAT.
            #expect(try await bobLog.ended().cause == .remoteHangup)

            // dave's mapping has expired: Kamailio's INVITE dies at the NAT and dave never hears of the call.
            // dave's mapping has expired: Kamailio's INVITE (and its retransmissions) die at the NAT, and dave never
            // hears of the call.
            let daveBefore = await dave.endpoint.statistics().messagesReceived
            let toDave = CallEventLog(
                try await alice.call(SIPURI(user: "dave", host: Self.domain), offering: testCapabilities(port: 40054)))
            try await Task.sleep(for: .seconds(4))
            #expect(
                await dave.endpoint.statistics().messagesReceived == daveBefore, "dave was reached without keepalives")
            #expect(!toDave.events.contains { if case .established = $0 { true } else { false } })
            for endpoint in [alice.endpoint, bob.endpoint, dave.endpoint] { try await endpoint.close() }
        }
    }
}

/// The next incoming call of `agent`, or nil when none comes within `timeout`.
func nextCall(of agent: SIPUserAgent, within timeout: Duration) async -> SIPCall? {
    await withTaskGroup(of: SIPCall?.self) { group in
        group.addTask {
            var calls = agent.incomingCalls.makeAsyncIterator()
            return await calls.next()
        }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}
