import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
import VoiceClient
import VoiceService
import VoiceTestSupport

/// The client talks to the service in TLS unless the app names the insecure transport: a certificate from another
/// CA, one that does not name the server, or a server that does not speak TLS is a typed refusal, and nothing of
/// the request (HTTP or SIP) was sent in clear text. Ports 26120–26129 (TLS 5000 above).
@Suite(
    "VoiceClient over TLS", .tags(.interop, .live), .scheduledByTags, .serialized, .timeLimit(.minutes(2)),
    .enabled(if: serviceUnavailableReason == nil, "\(serviceUnavailableReason ?? "")"))
struct ClientTLSTests {
    @Test func configurationIsTLSWithTheSystemTrustStoreUnlessTheInsecureTransportIsNamed() {
        let secure = VoiceClientConfiguration(applicationKey: "k", serviceHost: "voice.example.com")
        #expect(secure.transport == .tls(trustRoots: .system, serverName: nil))
        #expect(secure.sipPort == 5061 && secure.registrationPort == 8443)
        let insecure = VoiceClientConfiguration(
            applicationKey: "k", serviceHost: "127.0.0.1", transport: .insecurePlaintextUDPAndHTTP)
        #expect(insecure.sipPort == 5060 && insecure.registrationPort == 8080)
    }

    @Test func registrationServiceCertificateFromAnotherCAIsRefusedBeforeAnyRequest() async throws {
        try await withService(sipPort: 26120, prepare: { $0.httpsCertificate = $0.pki.otherCAServerCertificateFile }) {
            service in
            let refusal = try await Self.refusal(starting: try service.client("alice"))
            #expect(refusal.kind == .untrustedCertificate && refusal.server == .registrationService, "\(refusal)")
            #expect(refusal.detail.contains("CERTIFICATE_VERIFY_FAILED"), "\(refusal)")
            // The service never saw a request: the signed registration was not sent.
            #expect(await service.registrationService.accepted == 0)
            #expect(await service.registrationService.refused == 0)
        }
    }

    @Test func kamailioCertificateFromAnotherCAIsRefusedAfterTheGrant() async throws {
        try await withService(sipPort: 26122, prepare: { $0.sipCertificate = $0.pki.otherCAServerCertificateFile }) {
            service in
            let refusal = try await Self.refusal(starting: try service.client("alice"))
            #expect(refusal.kind == .untrustedCertificate && refusal.server == .sip, "\(refusal)")
            #expect(await service.registrationService.accepted == 1)
        }
    }

    /// A certificate for the name voiceengine.test only: Kamailio presenting it is refused by a client that knows
    /// the service by its address or by another name, and accepted by one that expects that name; the
    /// registration service presenting it is refused by a client that knows it by its address.
    @Test func certificateThatDoesNotNameTheServerIsRefused() async throws {
        try await withService(sipPort: 26124, prepare: { $0.sipCertificate = $0.pki.namedOnlyCertificateFile }) {
            service in
            let byAddress = try await Self.refusal(starting: try service.client("bob"))
            #expect(byAddress.kind == .nameMismatch && byAddress.server == .sip, "\(byAddress)")
            let otherName = try await Self.refusal(
                starting: try service.client(
                    "dave", configuration: service.configuration(serverName: "other.voiceengine.test")))
            #expect(otherName.kind == .nameMismatch && otherName.server == .sip, "\(otherName)")
            let byName = try service.client(
                "carol", configuration: service.configuration(serverName: "voiceengine.test"))
            let events = EventLog(byName)
            await byName.start()
            #expect(await events.first { $0 == .started } != nil, "\(events.events)")
            await byName.terminate()
            try await service.http?.close()
            service.httpsCertificate = service.pki.namedOnlyCertificateFile
            try await service.startRegistrationService()
            let registration = try await Self.refusal(starting: try service.client("erin"))
            #expect(
                registration.kind == .nameMismatch && registration.server == .registrationService, "\(registration)")
        }
    }

    @Test func trustRootGivenAsPEMTextWorksAndAnEmptyOneIsATypedError() async throws {
        try await withService(sipPort: 26126) { service in
            let pem = try String(contentsOfFile: service.pki.caFile, encoding: .utf8)
            let client = try service.client("alice", configuration: service.configuration(trustRoots: .pem(pem)))
            let events = EventLog(client)
            await client.start()
            #expect(await events.first { $0 == .started } != nil, "\(events.events)")
            await client.terminate()
            let broken = try service.client("bob", configuration: service.configuration(trustRoots: .pem("not PEM")))
            let refusal = try await Self.refusal(starting: broken)
            #expect(refusal.kind == .badTrustRoot, "\(refusal)")
        }
    }

    /// Servers that answer in clear text: the registration service's port, then (with the real registration
    /// service) Kamailio's. Each gets a TLS ClientHello and nothing else: no HTTP request, no REGISTER, no user
    /// name.
    @Test func plaintextServersGetOnlyATLSHandshake() async throws {
        let harness = try ServiceHarness(sipPort: 26128)
        defer { Task { await harness.shutdown() } }
        let httpListener = try await PlaintextListener.start(
            on: harness.group, answering: "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        var configuration = harness.configuration()
        configuration.registrationPort = httpListener.port
        let refusal = try await Self.refusal(starting: try harness.client("alice", configuration: configuration))
        #expect(refusal.kind == .handshakeFailed && refusal.server == .registrationService, "\(refusal)")
        let sentToHTTP = httpListener.received
        #expect(sentToHTTP.first == 0x16, "not a TLS handshake record: \(sentToHTTP.prefix(8))")
        for secret in ["POST", "/v1/registrations", "alice", ServiceHarness.applicationKey, "signature"] {
            #expect(!sentToHTTP.contains(Array(secret.utf8)), "'\(secret)' sent in clear text")
        }
        try await harness.startRegistrationService()
        let sipListener = try await PlaintextListener.start(
            on: harness.group, answering: "SIP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n")
        configuration = harness.configuration()
        configuration.sipPort = sipListener.port
        let sipRefusal = try await Self.refusal(starting: try harness.client("bob", configuration: configuration))
        #expect(sipRefusal.kind == .handshakeFailed && sipRefusal.server == .sip, "\(sipRefusal)")
        #expect(await harness.registrationService.accepted == 1)
        let sentToSIP = sipListener.received
        #expect(sentToSIP.first == 0x16, "not a TLS handshake record: \(sentToSIP.prefix(8))")
        for secret in ["REGISTER", "SIP/2.0", "bob", "voiceengine.test"] {
            #expect(!sentToSIP.contains(Array(secret.utf8)), "'\(secret)' sent in clear text")
        }
        try await httpListener.close()
        try await sipListener.close()
    }

    @Test func insecureTransportWorksWhenNamed() async throws {
        try await withService(sipPort: 26129, insecure: true) { service in
            #expect(service.configuration().transport == .insecurePlaintextUDPAndHTTP)
            let alice = try service.client("alice"), bob = try service.client("bob")
            let aliceEvents = EventLog(alice), bobEvents = EventLog(bob)
            await bob.start()
            await alice.start()
            #expect(await aliceEvents.first { $0 == .started } != nil && bobEvents.events.contains(.started))
            let id = try await alice.send(message: "in clear text, as asked", to: ["bob"])
            #expect(await aliceEvents.first { $0.isDelivery(of: id, to: "bob") } != nil)
            #expect(await bobEvents.firstMessage()?.text == "in clear text, as asked")
            await alice.terminate()
            await bob.terminate()
        }
    }

    /// A started client pings the service at its keepalive interval: with the insecure transport the CRLF CRLF
    /// datagrams (4 bytes) to Kamailio's UDP port can be counted on the wire (tshark on `lo`); over TLS the same
    /// pings travel inside the connection.
    @Test(
        .enabled(if: getuid() == 0, "capturing on lo needs root"),
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/tshark"), "tshark is not installed"))
    func clientSendsKeepalivesAtTheConfiguredInterval() async throws {
        try await withService(sipPort: 26127, insecure: true) { service in
            let log = service.directory.appendingPathComponent("tshark.log")
            let tshark = try ChildProcessGroup(
                "/usr/bin/tshark",
                [
                    "-i", "lo", "-l", "-f", "udp and dst port \(service.sipPort) and udp[4:2] = 12", "-a",
                    "duration:8", "-T", "fields", "-e", "frame.time_epoch", "-e", "udp.payload"
                ], log: log)
            defer { tshark.stop() }
            try await Self.waitUntilCapturing(tshark)
            var configuration = service.configuration()
            configuration.keepaliveInterval = .milliseconds(400)
            let alice = try service.client("alice", configuration: configuration)
            let events = EventLog(alice)
            await alice.start()
            #expect(await events.first { $0 == .started } != nil, "\(events.events)")
            try await Task.sleep(for: .seconds(2.5))
            await alice.terminate()
            _ = await tshark.wait(timeout: .seconds(10))
            let times = (try String(contentsOf: log, encoding: .utf8)).split(separator: "\n").compactMap { line in
                let fields = line.split(separator: "\t")
                return fields.count == 2 && fields[1].replacingOccurrences(of: ":", with: "") == "0d0a0d0a"
                    ? Double(fields[0]) : nil
            }
            // 2.5 s of registration at 320–400 ms: about 7 pings, none closer than 80 % of the interval.
            #expect(times.count >= 4, "\(times.count) keepalives:\n\(tshark.logTail)")
            let gaps = zip(times.dropFirst(), times).map { $0 - $1 }
            #expect(gaps.allSatisfy { $0 >= 0.3 }, "gaps \(gaps)")
            #expect(gaps.allSatisfy { $0 <= 0.8 }, "gaps \(gaps) (the machine may be loaded)")
        }
    }

    /// Two clients register (HTTPS, then SIP over TLS) and exchange a message: a capture of every TCP byte to and
    /// from the service's TLS and HTTPS ports holds TLS records only — no SIP, no HTTP, no password.
    @Test(
        .enabled(if: getuid() == 0, "capturing on lo needs root"),
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/tshark"), "tshark is not installed"))
    func registrationAndMessagesCrossTheWireEncrypted() async throws {
        try await withService(sipPort: 26121) { service in
            let log = service.directory.appendingPathComponent("tshark.log")
            let tshark = try ChildProcessGroup(
                "/usr/bin/tshark",
                [
                    "-i", "lo", "-l", "-f", "tcp port \(service.tlsPort) or tcp port \(service.registrationPort)",
                    "-a", "duration:8", "-T", "fields", "-e", "tcp.payload"
                ], log: log)
            defer { tshark.stop() }
            try await Self.waitUntilCapturing(tshark)
            let alice = try service.client("alice"), bob = try service.client("bob")
            let aliceEvents = EventLog(alice), bobEvents = EventLog(bob)
            await bob.start()
            await alice.start()
            #expect(await aliceEvents.first { $0 == .started } != nil)
            let id = try await alice.send(message: "secret words", to: ["bob"])
            #expect(await aliceEvents.first { $0.isDelivery(of: id, to: "bob") } != nil)
            #expect(await bobEvents.firstMessage()?.text == "secret words")
            await alice.terminate()
            await bob.terminate()
            _ = await tshark.wait(timeout: .seconds(10))
            let payloads = (try String(contentsOf: log, encoding: .utf8)).split(separator: "\n").compactMap {
                line -> [UInt8]? in
                let hex = line.replacingOccurrences(of: ":", with: "")
                guard !hex.isEmpty, hex.count.isMultiple(of: 2), hex.allSatisfy(\.isHexDigit) else { return nil }
                var bytes: [UInt8] = []
                var index = hex.startIndex
                while index < hex.endIndex {
                    let next = hex.index(index, offsetBy: 2)
                    bytes.append(UInt8(hex[index..<next], radix: 16)!)
                    index = next
                }
                return bytes
            }
            #expect(payloads.count >= 10, "too few packets captured:\n\(tshark.logTail)")
            let wire = payloads.flatMap { $0 }
            for clear in ["SIP/2.0", "REGISTER", "MESSAGE", "POST ", "HTTP/1.1", "secret words", "alice"] {
                #expect(!wire.contains(Array(clear.utf8)), "'\(clear)' crossed the wire in clear text")
            }
        }
    }

    /// Waits until tshark says it captures (loading its dissectors takes a few seconds on a loaded machine).
    static func waitUntilCapturing(_ tshark: ChildProcessGroup) async throws {
        let deadline = ContinuousClock.now + .seconds(15)
        while ContinuousClock.now < deadline {
            if let text = try? String(contentsOf: tshark.log, encoding: .utf8), text.contains("Capture started") {
                return
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("tshark did not start capturing:\n\(tshark.logTail)")
    }

    /// Starts `client` (which must fail) and returns its TLS refusal.
    static func refusal(starting client: VoiceClient) async throws -> TLSRefusal {
        let events = EventLog(client)
        await client.start()
        let failed = await events.first { if case .failed = $0 { true } else { false } }
        await client.terminate()
        guard case .failed(.tlsRefused(let refusal)) = failed else {
            Issue.record("expected a TLS refusal, got \(events.events)")
            throw CancellationError()
        }
        return refusal
    }
}

/// A TCP listener on loopback that records what clients send and answers the first bytes with a clear-text
/// response, then closes: a server that does not speak TLS.
final class PlaintextListener: Sendable {
    private let channel: any Channel
    private let bytes: NIOLockedValueBox<[UInt8]>
    let port: Int

    private init(channel: any Channel, bytes: NIOLockedValueBox<[UInt8]>) {
        self.channel = channel
        self.bytes = bytes
        port = channel.localAddress?.port ?? 0
    }

    var received: [UInt8] { bytes.withLockedValue { $0 } }

    static func start(on group: any EventLoopGroup, answering answer: String) async throws -> PlaintextListener {
        let bytes = NIOLockedValueBox<[UInt8]>([])
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Recorder(bytes: bytes, answer: answer))
                }
            }
            .bind(to: try SocketAddress(ipAddress: "127.0.0.1", port: 0)).get()
        return PlaintextListener(channel: channel, bytes: bytes)
    }

    func close() async throws { try await channel.close() }

    private final class Recorder: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let bytes: NIOLockedValueBox<[UInt8]>
        let answer: String

        init(bytes: NIOLockedValueBox<[UInt8]>, answer: String) {
            self.bytes = bytes
            self.answer = answer
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var buffer = unwrapInboundIn(data)
            let read = buffer.readBytes(length: buffer.readableBytes) ?? []
            bytes.withLockedValue { $0 += read }
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: answer))).whenComplete { _ in
                channel.close(promise: nil)
            }
        }
    }
}

extension [UInt8] {
    fileprivate func contains(_ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, count >= needle.count else { return false }
        return (0...(count - needle.count)).contains { Array(self[$0..<$0 + needle.count]) == needle }
    }
}

/// The keepalive schedule of RFC 5626 §4.4.1: the registrar's Flow-Timer, else the configured interval, each wait
/// a random 80–100 % of it.
@Suite("Keepalive schedule")
struct KeepaliveScheduleTests {
    @Test func flowTimerWinsOverTheConfiguredIntervalAndEachWaitIsEightyToAHundredPercent() {
        let asked = KeepaliveSchedule(flowTimer: 25, configured: .seconds(90))
        #expect(asked.interval == .seconds(25))
        #expect(asked.delay(fraction: 0) == .seconds(20))
        #expect(asked.delay(fraction: 0.5) == .seconds(22.5))
        #expect(asked.delay(fraction: 1) == .seconds(25))
        let configured = KeepaliveSchedule(flowTimer: nil, configured: .seconds(90))
        #expect(configured.interval == .seconds(90))
        // Out-of-range fractions stay inside the window.
        #expect(configured.delay(fraction: -3) == .seconds(72) && configured.delay(fraction: 7) == .seconds(90))
        var random = SplitMix64(seed: 11)
        for _ in 0..<1000 {
            let delay = configured.delay(fraction: Double(random.next() % 1_000_000) / 1_000_000)
            #expect(delay >= .seconds(72) && delay <= .seconds(90))
        }
    }
}
