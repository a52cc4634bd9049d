import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
import VoiceSIP
import VoiceTestSupport

/// Runs `body` with a one-thread event loop group, shut down afterwards (also on failure). Endpoints started in
/// `body` with `SIPEndpoint.startClosedWithLoop` are closed first: a test that fails or times out before closing
/// them would otherwise leave their calls and timers to schedule work on a loop already shut down.
func withEventLoop<T>(_ body: (any EventLoop) async throws -> T) async throws -> T {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let endpoints = EndpointsOfTheLoop()
    do {
        let result = try await EndpointsOfTheLoop.$current.withValue(endpoints) { try await body(group.next()) }
        await endpoints.closeAll()
        try await group.shutdownGracefully()
        return result
    } catch {
        await endpoints.closeAll()
        try? await group.shutdownGracefully()
        throw error
    }
}

/// The endpoints `withEventLoop` closes before it shuts its loop down (closing twice is harmless).
final class EndpointsOfTheLoop: @unchecked Sendable {
    @TaskLocal static var current: EndpointsOfTheLoop?
    private let lock = NIOLock()
    private var endpoints: [SIPEndpoint] = []

    func add(_ endpoint: SIPEndpoint) { lock.withLock { endpoints.append(endpoint) } }

    func closeAll() async {
        for endpoint in lock.withLock({ endpoints }) { try? await endpoint.close() }
    }
}

extension SIPEndpoint {
    /// `start`, and closed by the enclosing `withEventLoop` before its loop shuts down.
    static func startClosedWithLoop(
        on eventLoop: any EventLoop, udp: SocketAddress? = nil, tcp: SocketAddress? = nil, tls: SocketAddress? = nil,
        configuration: SIPEndpointConfiguration = SIPEndpointConfiguration()
    ) async throws -> SIPEndpoint {
        let endpoint = try await start(on: eventLoop, udp: udp, tcp: tcp, tls: tls, configuration: configuration)
        EndpointsOfTheLoop.current?.add(endpoint)
        return endpoint
    }

    /// `start(on:boundUDPSocket:…)`, and closed by the enclosing `withEventLoop` before its loop shuts down.
    static func startClosedWithLoop(
        on eventLoop: any EventLoop, boundUDPSocket descriptor: CInt, tcp: SocketAddress? = nil,
        tls: SocketAddress? = nil,
        configuration: SIPEndpointConfiguration = SIPEndpointConfiguration()
    ) async throws -> SIPEndpoint {
        let endpoint = try await start(
            on: eventLoop, boundUDPSocket: descriptor, tcp: tcp, tls: tls, configuration: configuration)
        EndpointsOfTheLoop.current?.add(endpoint)
        return endpoint
    }
}

/// An OPTIONS or MESSAGE from `from` to `to` with the mandatory headers (the endpoint adds Via and Max-Forwards).
func makeOutgoing(_ method: SIPMethod, to uri: SIPURI, callID: String, body: String = "") -> SIPMessage {
    var headers = SIPHeaders()
    headers.add("From", "<sip:alice@localhost>;tag=\(callID.hashValue & 0xFFFF)")
    headers.add("To", "<\(uri)>")
    headers.add("Call-ID", callID)
    headers.add("CSeq", "1 \(method)")
    if !body.isEmpty { headers.add("Content-Type", "text/plain") }
    return .request(method, uri, headers: headers, body: Array(body.utf8))
}

/// Answers every request with 200 (MESSAGE/OPTIONS) and remembers what it saw.
final class AnsweringServer: @unchecked Sendable {
    private let lock = NIOLock()
    private var _seen: [SIPIncomingRequest] = []
    var seen: [SIPIncomingRequest] { lock.withLock { _seen } }

    init(_ endpoint: SIPEndpoint, status: Int = 200) {
        endpoint.onRequest { [self] request in
            lock.withLock { _seen.append(request) }
            if request.transaction != nil {
                endpoint.respond(.response(to: request.message, status: status, toTag: "srv"), to: request)
            }
        }
    }
}

func loopback(_ family: String) -> String { family == "IPv6" ? "::1" : "127.0.0.1" }

@Suite("SIP transports on loopback", .tags(.live), .scheduledByTags, .serialized)
struct SIPTransportTests {
    @Test("UDP request and response, Via received/rport stamped", arguments: ["IPv4", "IPv6"])
    func udpRoundTrip(family: String) async throws {
        try await withEventLoop { loop in
            let host = loopback(family)
            let server = try await SIPEndpoint.startClosedWithLoop(
                on: loop, udp: try SocketAddress(ipAddress: host, port: 0))
            let client = try await SIPEndpoint.startClosedWithLoop(
                on: loop, udp: try SocketAddress(ipAddress: host, port: 0))
            let answering = AnsweringServer(server)
            let serverAddress = try #require(await server.localAddress(.udp))
            let clientAddress = try #require(await client.localAddress(.udp))
            let uri = SIPURI(user: "bob", host: family == "IPv6" ? "[::1]" : host, port: serverAddress.port)
            let response = try await client.request(
                makeOutgoing(.options, to: uri, callID: "udp-\(family)"), to: SIPPeer(.udp, serverAddress)
            ).get()
            #expect(response.statusCode == 200)
            #expect(response.to?.tag == "srv")
            let seen = try #require(answering.seen.first)
            #expect(seen.peer == SIPPeer(.udp, clientAddress))
            // RFC 3581: the server filled rport with the source port and added received.
            #expect(seen.message.topVia?.rport == clientAddress.port)
            #expect(seen.message.topVia?.received == clientAddress.ipAddress)
            #expect(seen.message.headers.first("User-Agent") == "VoiceEngine")
            try await client.close()
            try await server.close()
        }
    }

    @Test("TCP requests reuse one connection both ways", arguments: ["IPv4", "IPv6"])
    func tcpConnectionReuse(family: String) async throws {
        try await withEventLoop { loop in
            let host = loopback(family)
            let server = try await SIPEndpoint.startClosedWithLoop(
                on: loop, tcp: try SocketAddress(ipAddress: host, port: 0))
            let client = try await SIPEndpoint.startClosedWithLoop(
                on: loop, tcp: try SocketAddress(ipAddress: host, port: 0))
            let answering = AnsweringServer(server)
            let clientSide = AnsweringServer(client)
            let serverAddress = try #require(await server.localAddress(.tcp))
            let uri = SIPURI(
                user: "bob", host: family == "IPv6" ? "[::1]" : host, port: serverAddress.port,
                parameters: [SIPParameter("transport", "tcp")])
            for index in 1...3 {
                let response = try await client.request(
                    makeOutgoing(.message, to: uri, callID: "tcp-\(family)-\(index)", body: "hello \(index)"),
                    to: SIPPeer(.tcp, serverAddress)
                ).get()
                #expect(response.statusCode == 200)
            }
            #expect(
                answering.seen.map { String(decoding: $0.message.body, as: UTF8.self) } == [
                    "hello 1", "hello 2", "hello 3"
                ])
            #expect(await client.statistics().connectionsOpened == 1)
            #expect(await server.statistics().connectionsAccepted == 1)
            // The server reaches the client over the connection the client opened (its ephemeral source address).
            let back = try #require(answering.seen.first?.peer)
            let reverse = try await server.request(
                makeOutgoing(
                    .options, to: SIPURI(user: "alice", host: family == "IPv6" ? "[::1]" : host),
                    callID: "back-\(family)"), to: back
            ).get()
            #expect(reverse.statusCode == 200)
            #expect(clientSide.seen.count == 1)
            #expect(await server.statistics().connectionsOpened == 0)
            try await client.close()
            try await server.close()
        }
    }

    @Test func streamBytesSplitAnywhereAndKeepalivesOverTCP() async throws {
        try await withEventLoop { loop in
            let server = try await SIPEndpoint.startClosedWithLoop(
                on: loop, tcp: try SocketAddress(ipAddress: "127.0.0.1", port: 0))
            _ = AnsweringServer(server)
            let serverAddress = try #require(await server.localAddress(.tcp))
            let raw = try await RawTCPClient.connect(on: loop, to: serverAddress)
            var options = makeOutgoing(.options, to: SIPURI(host: "127.0.0.1"), callID: "raw-1")
            options.headers.prepend("Via", "SIP/2.0/TCP 127.0.0.1:9;branch=z9hG4bKraw1")
            let bytes = Array("\r\n\r\n".utf8) + options.serialized()
            // A ping, then the request in pieces of 7 bytes.
            for start in stride(from: 0, to: bytes.count, by: 7) {
                try await raw.write(Array(bytes[start..<min(start + 7, bytes.count)]))
            }
            let received = try await raw.read(until: {
                String(decoding: $0, as: UTF8.self).contains("\r\n\r\n") && $0.count > 10
            })
            let text = String(decoding: received, as: UTF8.self)
            #expect(text.hasPrefix("\r\nSIP/2.0 200 OK\r\n"), "pong then the response: \(text.debugDescription)")
            // A malformed message on a stream closes the connection and is counted.
            try await raw.write(Array("INVITE sip:x SIP/2.0\r\nVia: SIP/2.0/TCP h;branch=z9hG4bK2\r\n\r\n".utf8))
            try await raw.waitClosed()
            let statistics = await server.statistics()
            #expect(statistics.malformedDropped == 1)
            #expect(statistics.lastDropReason?.contains("Content-Length") == true)
            try await server.close()
        }
    }

    @Test func crlfKeepalivesAreAnsweredWithPongs() async throws {
        try await withEventLoop { loop in
            let server = try await SIPEndpoint.startClosedWithLoop(
                on: loop, tcp: try SocketAddress(ipAddress: "127.0.0.1", port: 0))
            _ = AnsweringServer(server)
            // The client pings every 50 ms on its open connections (RFC 5626 §4.4.1); the server answers each.
            let client = try await SIPEndpoint.startClosedWithLoop(
                on: loop, tcp: try SocketAddress(ipAddress: "127.0.0.1", port: 0),
                configuration: SIPEndpointConfiguration(keepaliveInterval: .milliseconds(50)))
            let serverAddress = try #require(await server.localAddress(.tcp))
            let response = try await client.request(
                makeOutgoing(.options, to: SIPURI(host: "127.0.0.1"), callID: "keepalive"),
                to: SIPPeer(.tcp, serverAddress)
            ).get()
            #expect(response.statusCode == 200)
            try await Task.sleep(for: .milliseconds(300))
            let periodic = await client.statistics().keepalivePongsReceived
            #expect(periodic >= 3, "\(periodic) pongs in 300 ms at one ping per 50 ms")
            client.sendKeepalive(to: SIPPeer(.tcp, serverAddress))
            try await Task.sleep(for: .milliseconds(30))
            #expect(await client.statistics().keepalivePongsReceived > periodic)
            // Pings are not messages: the server saw one request only.
            #expect(await server.statistics().messagesReceived == 1)
            try await client.close()
            try await server.close()
        }
    }

    @Test func malformedDatagramsAreCountedAndDropped() async throws {
        try await withEventLoop { loop in
            let server = try await SIPEndpoint.startClosedWithLoop(
                on: loop, udp: try SocketAddress(ipAddress: "127.0.0.1", port: 0))
            let answering = AnsweringServer(server)
            let serverAddress = try #require(await server.localAddress(.udp))
            let sender = try await DatagramBootstrap(group: loop).bind(host: "127.0.0.1", port: 0).get()
            for garbage in ["garbage", "INVITE sip:a@b SIP/2.0\r\n\r\n", "SIP/2.0 999 X\r\n\r\n"] {
                try await sender.writeAndFlush(
                    AddressedEnvelope(remoteAddress: serverAddress, data: ByteBuffer(string: garbage)))
            }
            try await sender.close()
            // Still serving after the garbage.
            let client = try await SIPEndpoint.startClosedWithLoop(
                on: loop, udp: try SocketAddress(ipAddress: "127.0.0.1", port: 0))
            let response = try await client.request(
                makeOutgoing(.options, to: SIPURI(host: "127.0.0.1"), callID: "after-garbage"),
                to: SIPPeer(.udp, serverAddress)
            ).get()
            #expect(response.statusCode == 200)
            #expect(await server.statistics().malformedDropped == 3)
            #expect(answering.seen.count == 1)
            try await client.close()
            try await server.close()
        }
    }

    @Test func silentPeerTimesOutWithTimerBAndRetransmissions() async throws {
        try await withEventLoop { loop in
            // T1 = 5 ms: Timer B after 320 ms of real time, with Timer A retransmissions counted by the silent peer.
            let configuration = SIPEndpointConfiguration(
                timers: SIPTimerConfiguration(t1: .milliseconds(5), t2: .milliseconds(40), t4: .milliseconds(50)))
            let client = try await SIPEndpoint.startClosedWithLoop(
                on: loop, udp: try SocketAddress(ipAddress: "127.0.0.1", port: 0), configuration: configuration)
            let counter = DatagramCounter()
            let silent = try await DatagramBootstrap(group: loop)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(counter) }
                }
                .bind(host: "127.0.0.1", port: 0).get()
            var invite = makeOutgoing(.invite, to: SIPURI(host: "127.0.0.1"), callID: "timer-b")
            invite.headers.replace("CSeq", with: "1 INVITE")
            await #expect(throws: SIPError.self) {
                _ = try await client.request(invite, to: SIPPeer(.udp, try #require(silent.localAddress))).get()
            }
            // The INVITE and its retransmissions at 5, 15, 35, 75, 155, 315 ms (the last may still be in flight).
            var received = 0
            for _ in 0..<100 {
                received = try await loop.submit { counter.count }.get()
                if received >= 7 { break }
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(received == 7)
            try await silent.close()
            try await client.close()
        }
    }

    /// A client without a TCP listener names, in its Via, the address and port of the connection the request goes
    /// out on (RFC 3261 §18.1.1: the sent-by a response can come back to; RFC 5626: the flow), not a bare
    /// 127.0.0.1 without a port. Requests after the first reuse the connection and name it too.
    @Test(arguments: ["IPv4", "IPv6"])
    func viaOfAClientWithoutListenerNamesItsConnection(family: String) async throws {
        try await withEventLoop { loop in
            let host = loopback(family)
            let server = try await SIPEndpoint.startClosedWithLoop(
                on: loop, tcp: try SocketAddress(ipAddress: host, port: 0))
            let answering = AnsweringServer(server)
            let client = try await SIPEndpoint.startClosedWithLoop(on: loop)
            let serverAddress = try #require(await server.localAddress(.tcp))
            let uri = SIPURI(
                user: "bob", host: family == "IPv6" ? "[::1]" : host, port: serverAddress.port,
                parameters: [SIPParameter("transport", "tcp")])
            for index in 1...2 {
                let response = try await client.request(
                    makeOutgoing(.options, to: uri, callID: "via-\(family)-\(index)"), to: SIPPeer(.tcp, serverAddress)
                ).get()
                #expect(response.statusCode == 200)
            }
            #expect(answering.seen.count == 2)
            for seen in answering.seen {
                let via = try #require(seen.message.topVia)
                #expect(
                    via.host == (family == "IPv6" ? "[::1]" : host) && via.port == seen.peer.address.port,
                    "\(via) over \(seen.peer)")
            }
            #expect(await client.statistics().connectionsOpened == 1)
            try await client.close()
            try await server.close()
        }
    }

    /// The test helper closes the endpoints of a body that failed (or timed out) before closing them, before it
    /// shuts the loop down: left open, their timers and calls scheduled work on the dead loop, and NIO printed
    /// "Cannot schedule tasks on an EventLoop that has already shut down".
    @Test func withEventLoopClosesTheEndpointsOfAFailedBodyFirst() async throws {
        struct BodyFailed: Error {}
        let closedOnTheLoop = NIOLockedValueBox(false)
        await #expect(throws: BodyFailed.self) {
            try await withEventLoop { loop in
                let endpoint = try await SIPEndpoint.startClosedWithLoop(
                    on: loop, udp: try SocketAddress(ipAddress: "127.0.0.1", port: 0))
                endpoint.onClosing { closedOnTheLoop.withLockedValue { $0 = true } }
                throw BodyFailed()
            }
        }
        #expect(closedOnTheLoop.withLockedValue { $0 })
    }

    @Test func refusedTCPConnectionReachesTheTUAs503() async throws {
        try await withEventLoop { loop in
            let client = try await SIPEndpoint.startClosedWithLoop(
                on: loop, tcp: try SocketAddress(ipAddress: "127.0.0.1", port: 0))
            // A port nobody listens on: bind a listener, note its port, close it.
            let probe = try await ServerBootstrap(group: loop).bind(host: "127.0.0.1", port: 0).get()
            let closedAddress = try #require(probe.localAddress)
            try await probe.close()
            let response = try await client.request(
                makeOutgoing(.options, to: SIPURI(host: "127.0.0.1"), callID: "refused"),
                to: SIPPeer(.tcp, closedAddress)
            ).get()
            #expect(response.statusCode == 503)
            try await client.close()
        }
    }
}

final class DatagramCounter: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    var count = 0
    func channelRead(context: ChannelHandlerContext, data: NIOAny) { count += 1 }
}

/// A bare TCP client: writes bytes as given, collects what comes back.
final class RawTCPClient: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    private let lock = NIOLock()
    private var received: [UInt8] = []
    private var closed = false
    private var channel: (any Channel)?

    static func connect(on loop: any EventLoop, to address: SocketAddress) async throws -> RawTCPClient {
        let client = RawTCPClient()
        client.channel = try await ClientBootstrap(group: loop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(client) }
            }
            .connect(to: address).get()
        return client
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = Self.unwrapInboundIn(data)
        lock.withLock { received += buffer.readableBytesView }
    }

    func channelInactive(context: ChannelHandlerContext) { lock.withLock { closed = true } }

    func write(_ bytes: [UInt8]) async throws {
        try await channel!.writeAndFlush(ByteBuffer(bytes: bytes)).get()
        try await Task.sleep(for: .milliseconds(2))
    }

    func read(until done: ([UInt8]) -> Bool) async throws -> [UInt8] {
        for _ in 0..<500 {
            let now = lock.withLock { received }
            if done(now) { return now }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw SIPError(.timeout, "raw TCP client: nothing complete within 5 s")
    }

    func waitClosed() async throws {
        for _ in 0..<500 {
            if lock.withLock({ closed }) { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw SIPError(.timeout, "connection not closed within 5 s")
    }
}
