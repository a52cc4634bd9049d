import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

/// A SIP user agent's transport and transaction layers on one NIO event loop: UDP, TCP and TLS listeners (IPv4 or IPv6),
/// connections reused per remote address in both directions, Via `received`/`rport` stamping (RFC 3261 §18.2.1,
/// RFC 3581), transaction timers scheduled on the loop, CRLF keepalives.
///
/// All state lives on `eventLoop`; the public methods may be called from anywhere.
public final class SIPEndpoint: @unchecked Sendable {
    public let eventLoop: any EventLoop
    public let configuration: SIPEndpointConfiguration
    private var layer: SIPTransactionLayer<SIPPeer>
    private let origin = NIODeadline.now()
    private var udpChannel: (any Channel)?
    private var tcpListener: (any Channel)?
    private var tlsListener: (any Channel)?
    private let tlsContexts: SIPTLSContexts?
    /// Open stream connections, one per transport and remote address, whichever side opened them. A TLS one is
    /// listed from the connect on but its future completes only after the handshake.
    private var connections: [ConnectionKey: EventLoopFuture<any Channel>] = [:]
    private var pending:
        [SIPTransactionID: (promise: EventLoopPromise<SIPMessage>, provisional: (@Sendable (SIPMessage) -> Void)?)] =
            [:]
    private var requestHandler: (@Sendable (SIPIncomingRequest) -> Void)?
    private var strayResponseHandler: (@Sendable (SIPMessage) -> Void)?
    private var connectionClosedHandler: (@Sendable (SIPPeer) -> Void)?
    private var traceHandler: (@Sendable (String) -> Void)?
    private var timerTask: Scheduled<Void>?
    private var scheduledDeadline: SIPInstant?
    private var keepaliveTask: RepeatedTask?
    /// False from the start of `close()` on: work coming back from other threads (`executeIfOpen`) is dropped
    /// then, since the owner may shut the event loop down as soon as `close()` returns.
    private let open = NIOLockedValueBox(true)
    /// Told on the event loop when `close()` begins, before pending requests fail (the user agent ends its calls).
    private var closingHandlers: [@Sendable () -> Void] = []
    /// UDP peers whose NAT binding we keep open (our registrars).
    private var keepaliveTargets: Set<SIPPeer> = []
    private var _statistics = SIPTransportStatistics()
    private var branchCounter: UInt64 = 0
    private let branchPrefix: String

    private struct ConnectionKey: Hashable {
        var transport: SIPTransportKind
        var address: SocketAddress
    }

    private init(eventLoop: any EventLoop, configuration: SIPEndpointConfiguration, tlsContexts: SIPTLSContexts?) {
        self.eventLoop = eventLoop
        self.configuration = configuration
        self.tlsContexts = tlsContexts
        self.layer = SIPTransactionLayer(configuration: configuration.timers)
        self.branchPrefix = SIPRandomToken.make()
    }

    /// Binds the listeners asked for (port 0: any free port) and starts the endpoint. A TLS listener needs
    /// `configuration.tls` with a certificate; a bad TLS configuration throws `SIPError.Kind.tls`.
    public static func start(
        on eventLoop: any EventLoop, udp: SocketAddress? = nil, tcp: SocketAddress? = nil, tls: SocketAddress? = nil,
        configuration: SIPEndpointConfiguration = SIPEndpointConfiguration()
    ) async throws -> SIPEndpoint {
        try await start(
            on: eventLoop, udp: udp.map(UDPSocket.address), tcp: tcp, tls: tls, configuration: configuration)
    }

    /// As `start(on:udp:tcp:tls:configuration:)` with a UDP socket made and bound by the caller (one from a
    /// socket-activation manager, or made inside another network namespace). The endpoint owns and closes it.
    public static func start(
        on eventLoop: any EventLoop, boundUDPSocket descriptor: CInt, tcp: SocketAddress? = nil,
        tls: SocketAddress? = nil,
        configuration: SIPEndpointConfiguration = SIPEndpointConfiguration()
    ) async throws -> SIPEndpoint {
        try await start(on: eventLoop, udp: .descriptor(descriptor), tcp: tcp, tls: tls, configuration: configuration)
    }

    private enum UDPSocket {
        case address(SocketAddress)
        case descriptor(CInt)
    }

    private static func start(
        on eventLoop: any EventLoop, udp: UDPSocket?, tcp: SocketAddress?, tls: SocketAddress?,
        configuration: SIPEndpointConfiguration
    ) async throws -> SIPEndpoint {
        let contexts = try configuration.tls.map(SIPTLSContexts.init)
        if tls != nil && contexts?.server == nil {
            throw SIPError(.tls, "a TLS listener needs SIPTLSConfiguration.certificateChainFile and privateKeyFile")
        }
        let endpoint = SIPEndpoint(eventLoop: eventLoop, configuration: configuration, tlsContexts: contexts)
        do {
            if let udp {
                let bootstrap = DatagramBootstrap(group: eventLoop)
                    .channelOption(.socketOption(.so_reuseaddr), value: 1)
                    .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 65_536))
                    .channelInitializer { channel in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHandler(SIPDatagramHandler(sink: endpoint))
                        }
                    }
                let channel: any Channel
                switch udp {
                case .address(let address): channel = try await bootstrap.bind(to: address).get()
                case .descriptor(let descriptor): channel = try await bootstrap.withBoundSocket(descriptor).get()
                }
                try await eventLoop.submit { endpoint.udpChannel = channel }.get()
            }
            if let tcp {
                let maximum = configuration.maximumMessageBytes
                let listener = try await ServerBootstrap(group: eventLoop)
                    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                    .childChannelInitializer { channel in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHandler(
                                SIPStreamHandler(sink: endpoint, maximumMessageBytes: maximum, accepted: true))
                            endpoint.accepted(channel, transport: .tcp)
                        }
                    }
                    .bind(to: tcp).get()
                try await eventLoop.submit { endpoint.tcpListener = listener }.get()
            }
            if let tls, let serverContext = contexts?.server {
                let maximum = configuration.maximumMessageBytes
                let listener = try await ServerBootstrap(group: eventLoop)
                    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                    .childChannelInitializer { channel in
                        channel.eventLoop.makeCompletedFuture {
                            let pipeline = channel.pipeline.syncOperations
                            try pipeline.addHandler(NIOSSLServerHandler(context: serverContext))
                            try pipeline.addHandler(
                                SIPStreamHandler(
                                    sink: endpoint, maximumMessageBytes: maximum, accepted: true, transport: .tls))
                            endpoint.accepted(channel, transport: .tls)
                        }
                    }
                    .bind(to: tls).get()
                try await eventLoop.submit { endpoint.tlsListener = listener }.get()
            }
        } catch {
            try? await endpoint.close()
            throw SIPError(.transport, "cannot bind: \(error)")
        }
        if let interval = configuration.keepaliveInterval {
            try await eventLoop.submit {
                endpoint.keepaliveTask = eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in
                    endpoint.pingConnections()
                }
            }.get()
        }
        return endpoint
    }

    /// The bound address of the listener of `transport` (its port when bound to port 0).
    public func localAddress(_ transport: SIPTransportKind) async -> SocketAddress? {
        try? await eventLoop.submit {
            self.listener(transport)?.localAddress
        }.get()
    }

    private func listener(_ transport: SIPTransportKind) -> (any Channel)? {
        switch transport {
        case .udp: udpChannel
        case .tcp: tcpListener
        case .tls: tlsListener
        }
    }

    public func statistics() async -> SIPTransportStatistics {
        (try? await eventLoop.submit { self._statistics }.get()) ?? SIPTransportStatistics()
    }

    /// The local address of our TCP or TLS connection to `peer`, opened now when there is none (a TLS one after
    /// its handshake). A client without a listener for the transport names it in Contact: the server reaches the
    /// client back over that very connection (RFC 5923-style reuse; Kamailio looks its connections up by address).
    public func connectionAddress(toward peer: SIPPeer) async throws -> SocketAddress {
        guard peer.transport != .udp else { throw SIPError(.transport, "UDP has no connection to \(peer)") }
        let channel = try await eventLoop.flatSubmit { self.connection(to: peer) }.get()
        guard let local = channel.localAddress else {
            throw SIPError(.transport, "the connection to \(peer) has no local address")
        }
        return local
    }

    /// The address a Contact names for `transport`: its listener's, or — for TCP and TLS without a listener — the
    /// connection's to `peer` (`connectionAddress(toward:)`); nil when there is neither.
    public func contactAddress(_ transport: SIPTransportKind, toward peer: SIPPeer?) async throws -> SocketAddress? {
        if let listening = await localAddress(transport) { return listening }
        guard transport != .udp, let peer, peer.transport == transport else { return nil }
        return try await connectionAddress(toward: peer)
    }

    /// Open TCP and TLS connections (accepted and initiated), one per transport and remote address.
    public func connectionCount() async -> Int {
        (try? await eventLoop.submit { self.connections.count }.get()) ?? 0
    }

    /// Runs `task` on the event loop unless `close()` has begun. For work that comes back from a task awaiting a
    /// response off the loop: after `close()` the loop may be shut down, and scheduling on it then is an error.
    public func executeIfOpen(_ task: @escaping @Sendable () -> Void) {
        open.withLockedValue { isOpen in if isOpen { eventLoop.execute(task) } }
    }

    /// `handler` runs on the event loop when `close()` begins, before pending requests fail.
    public func onClosing(_ handler: @escaping @Sendable () -> Void) {
        executeIfOpen { self.closingHandlers.append(handler) }
    }

    /// Receives every new request (and every ACK of a 2xx). Set before peers start sending.
    public func onRequest(_ handler: @escaping @Sendable (SIPIncomingRequest) -> Void) {
        executeIfOpen { self.requestHandler = handler }
    }

    /// Receives responses no transaction claims (a 2xx retransmitted after the INVITE transaction ended).
    public func onStrayResponse(_ handler: @escaping @Sendable (SIPMessage) -> Void) {
        executeIfOpen { self.strayResponseHandler = handler }
    }

    /// Told on the event loop when a TCP or TLS connection closes (the peer closed or reset it, or it failed), with
    /// the peer it went to: a client registered over it is no longer reachable and registers again.
    public func onConnectionClosed(_ handler: @escaping @Sendable (SIPPeer) -> Void) {
        executeIfOpen { self.connectionClosedHandler = handler }
    }

    /// Closes the TCP or TLS connection to `peer` if there is one (a keepalive went unanswered: the connection is
    /// dead even though the kernel still holds it); the next request to `peer` opens a new one.
    public func closeConnection(to peer: SIPPeer) {
        executeIfOpen {
            let key = ConnectionKey(transport: peer.transport, address: peer.address)
            guard let connection = self.connections.removeValue(forKey: key) else { return }
            connection.whenSuccess { $0.close(promise: nil) }
        }
    }

    /// Receives every message sent and received, as text with a direction line (for `--trace`).
    public func onTrace(_ handler: @escaping @Sendable (String) -> Void) {
        executeIfOpen { self.traceHandler = handler }
    }

    /// Sends `request` in a new client transaction and returns its final response. Provisional responses go to
    /// `onProvisional`. A top Via (this endpoint, a fresh branch, `rport`) and Max-Forwards are added when
    /// missing. Timer B/F fails the future with `SIPError.Kind.timeout`; a transport failure yields a 503.
    public func request(
        _ request: SIPMessage, to peer: SIPPeer, onProvisional: (@Sendable (SIPMessage) -> Void)? = nil
    ) -> EventLoopFuture<SIPMessage> {
        eventLoop.flatSubmit {
            let promise = self.eventLoop.makePromise(of: SIPMessage.self)
            do {
                let prepared = self.prepare(request, for: peer)
                let (id, events) = try self.layer.send(
                    request: prepared, to: peer, reliable: peer.transport.isReliable, now: self.now())
                self.pending[id] = (promise, onProvisional)
                self.perform(events)
            } catch {
                promise.fail(error)
            }
            return promise.futureResult
        }
    }

    /// The TU's response to `request` (through its server transaction).
    @discardableResult
    public func respond(_ response: SIPMessage, to request: SIPIncomingRequest) -> EventLoopFuture<Void> {
        eventLoop.submit {
            guard let id = request.transaction else {
                throw SIPError(.invalidState, "an ACK is not answered")
            }
            self.perform(try self.layer.respond(response, on: id, now: self.now()))
        }
    }

    /// Sends a message outside any transaction: the ACK of a 2xx, which belongs to the dialog (§13.2.2.4). A
    /// request without a Via gets ours (a fresh branch) and Max-Forwards, as in `request(_:to:onProvisional:)`.
    public func sendStateless(_ message: SIPMessage, to peer: SIPPeer) {
        executeIfOpen {
            self.write(
                message.isRequest ? self.prepare(message, for: peer) : self.message(message, preparedFor: peer),
                to: peer)
        }
    }

    /// Keeps the NAT binding towards UDP `peer` open with a CRLF CRLF ping every `keepaliveInterval` (nothing
    /// without one; TCP and TLS connections are pinged anyway). `SIPRegistration` calls it for its registrar.
    public func keepAlive(_ peer: SIPPeer) {
        guard peer.transport == .udp else { return }
        executeIfOpen { self.keepaliveTargets.insert(peer) }
    }

    /// Stops the pings of `keepAlive(_:)` (after an unregister).
    public func stopKeepalive(_ peer: SIPPeer) {
        executeIfOpen { self.keepaliveTargets.remove(peer) }
    }

    /// Sends an RFC 5626 CRLF CRLF ping to `peer` (a NAT binding refresh over UDP, a liveness check over TCP).
    public func sendKeepalive(to peer: SIPPeer) {
        executeIfOpen { self.writeBytes([0x0D, 0x0A, 0x0D, 0x0A], to: peer, failing: nil) }
    }

    /// A top Via for this endpoint on `transport` with a fresh RFC 3261 branch. Over TCP or TLS without a listener
    /// it names 127.0.0.1 until the request is written, when the connection's address replaces it.
    public func makeVia(for transport: SIPTransportKind) -> SIPVia {
        eventLoop.preconditionInEventLoop()
        branchCounter += 1
        let local = listener(transport)?.localAddress
        return SIPVia(
            transport: transport.rawValue, host: local.map(hostText) ?? "127.0.0.1", port: local?.port,
            branch: "\(SIPVia.magicCookie)\(branchPrefix)\(branchCounter)", parameters: [SIPParameter("rport")])
    }

    public func close() async throws {
        let channels: [any Channel] = try await eventLoop.submit {
            self.open.withLockedValue { $0 = false }
            for handler in self.closingHandlers { handler() }
            self.closingHandlers.removeAll()
            self.timerTask?.cancel()
            self.keepaliveTask?.cancel()
            for (_, entry) in self.pending { entry.promise.fail(SIPError(.transport, "endpoint closed")) }
            self.pending.removeAll()
            var open: [any Channel] = [self.udpChannel, self.tcpListener, self.tlsListener].compactMap { $0 }
            for future in self.connections.values {
                future.whenSuccess { $0.close(promise: nil) }
            }
            self.connections.removeAll()
            open = open.filter(\.isActive)
            return open
        }.get()
        for channel in channels { try? await channel.close() }
    }

    // MARK: On the event loop

    private func now() -> SIPInstant {
        SIPInstant(.nanoseconds(Int64(NIODeadline.now().uptimeNanoseconds - origin.uptimeNanoseconds)))
    }

    private func prepare(_ request: SIPMessage, for peer: SIPPeer) -> SIPMessage {
        var request = request
        if request.headers.first("Via") == nil {
            request.headers.prepend("Via", makeVia(for: peer.transport).description)
        }
        if request.headers.first("Max-Forwards") == nil { request.headers.add("Max-Forwards", "70") }
        return message(request, preparedFor: peer)
    }

    private func message(_ message: SIPMessage, preparedFor peer: SIPPeer) -> SIPMessage {
        var message = message
        if message.isRequest, let userAgent = configuration.userAgent, message.headers.first("User-Agent") == nil {
            message.headers.add("User-Agent", userAgent)
        }
        return message
    }

    private func perform(_ events: [SIPTransactionEvent<SIPPeer>]) {
        for event in events {
            switch event {
            case .send(let message, let peer):
                write(message, to: peer)
            case .response(let response, let id):
                if let code = response.statusCode, code < 200 {
                    pending[id]?.provisional?(response)
                } else if let entry = pending.removeValue(forKey: id) {
                    entry.promise.succeed(response)
                } else {
                    strayResponseHandler?(response)
                }
            case .request(let request, let id, let peer):
                deliver(
                    SIPIncomingRequest(
                        message: request, transaction: request.requestMethod == .ack ? nil : id, peer: peer))
            case .timedOut(let id, let timer):
                pending.removeValue(forKey: id)?.promise.fail(
                    SIPError(
                        .timeout,
                        "Timer \(timer.rawValue) fired: no \(timer == .h ? "ACK" : "final response") for \(id.method)"))
            case .strayResponse(let response, _):
                strayResponseHandler?(response)
            case .strayAck(let ack, let peer):
                deliver(SIPIncomingRequest(message: ack, transaction: nil, peer: peer))
            }
        }
        rescheduleTimer()
    }

    private func deliver(_ request: SIPIncomingRequest) {
        if let requestHandler {
            requestHandler(request)
        } else if let id = request.transaction {
            // Nobody to answer: say so rather than let the peer retransmit for 32 s.
            perform(
                (try? layer.respond(
                    .response(to: request.message, status: 501, toTag: SIPRandomToken.make()), on: id, now: now()))
                    ?? [])
        }
    }

    private func rescheduleTimer() {
        let next = layer.nextDeadline
        guard next != scheduledDeadline else { return }
        timerTask?.cancel()
        scheduledDeadline = next
        guard let next else { return }
        timerTask = eventLoop.scheduleTask(deadline: origin + .nanoseconds(next.nanoseconds)) {
            self.scheduledDeadline = nil
            self.perform(self.layer.advance(to: self.now()))
        }
    }

    private func write(_ message: SIPMessage, to peer: SIPPeer) {
        _statistics.messagesSent += 1
        let id = message.isRequest ? SIPTransactionID.client(forRequest: message) : nil
        guard message.isRequest, peer.transport.isReliable, listener(peer.transport) == nil else {
            traceHandler?("send \(peer)\n\(message.wireText)")
            writeBytes(message.serialized(), to: peer, failing: id)
            return
        }
        // No listener: the sent-by of our Via is the connection's own address and port (RFC 3261 §18.1.1; the flow
        // of RFC 5626), known once it is open. A request the transaction layer made from ours (a CANCEL, the ACK of
        // a non-2xx) carries our branch too and gets the same.
        connection(to: peer).whenComplete { result in
            switch result {
            case .success(let channel):
                var message = message
                if let local = channel.localAddress {
                    message.setTopViaSentBy(local, ifBranchStartsWith: "\(SIPVia.magicCookie)\(self.branchPrefix)")
                }
                self.traceHandler?("send \(peer)\n\(message.wireText)")
                self.writeBytes(message.serialized(), to: peer, failing: id)
            case .failure(let error):
                self.traceHandler?("send \(peer)\n\(message.wireText)")
                self.transportFailed(id, error: error)
            }
        }
    }

    private func writeBytes(_ bytes: [UInt8], to peer: SIPPeer, failing id: SIPTransactionID?) {
        let buffer = ByteBuffer(bytes: bytes)
        let written: EventLoopFuture<Void>
        switch peer.transport {
        case .udp:
            guard let udpChannel else {
                transportFailed(id, error: SIPError(.transport, "no UDP listener"))
                return
            }
            written = udpChannel.writeAndFlush(AddressedEnvelope(remoteAddress: peer.address, data: buffer))
        case .tcp, .tls:
            written = connection(to: peer).flatMap { $0.writeAndFlush(buffer) }
        }
        written.whenFailure { error in self.transportFailed(id, error: error) }
    }

    /// A send failed. A request's transaction ends with the 503 of RFC 3261 §8.1.3.1, except when TLS refused the
    /// peer: then its future fails with that `SIPError.Kind.tls`, so that an untrusted server is not mistaken for an
    /// overloaded one.
    private func transportFailed(_ id: SIPTransactionID?, error: any Error) {
        _statistics.lastDropReason = "send failed: \(error)"
        guard let id else { return }
        if let tlsError = error as? SIPError, tlsError.kind == .tls, let entry = pending.removeValue(forKey: id) {
            entry.promise.fail(tlsError)
            _ = layer.transportFailed(client: id)  // ends the transaction; its 503 has nobody left to go to
            rescheduleTimer()
            return
        }
        perform(layer.transportFailed(client: id))
    }

    /// The connection to `peer`: an open one (ours or accepted from it) is reused (RFC 3261 §18.1.1). A TLS
    /// connection is ready once its handshake has checked the server's certificate against our trust roots.
    private func connection(to peer: SIPPeer) -> EventLoopFuture<any Channel> {
        let key = ConnectionKey(transport: peer.transport, address: peer.address)
        if let existing = connections[key] { return existing }
        let tlsContext: SIPTLSContexts?
        if peer.transport == .tls {
            guard let tlsContexts else {
                return eventLoop.makeFailedFuture(
                    SIPError(.tls, "no TLS configuration (SIPEndpointConfiguration.tls) for \(peer)"))
            }
            tlsContext = tlsContexts
        } else {
            tlsContext = nil
        }
        let maximum = configuration.maximumMessageBytes
        let handshake = eventLoop.makePromise(of: Void.self)
        let connected = ClientBootstrap(group: eventLoop)
            .connectTimeout(.seconds(5))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if let tlsContext {
                        do {
                            try pipeline.addHandler(try tlsContext.clientHandler(for: peer))
                        } catch {
                            throw SIPError(.tls, "cannot start TLS to \(peer): \(error)")
                        }
                        try pipeline.addHandler(SIPTLSHandshakeHandler(handshake: handshake, peer: peer.description))
                    }
                    try pipeline.addHandler(
                        SIPStreamHandler(
                            sink: self, maximumMessageBytes: maximum, accepted: false, transport: peer.transport))
                }
            }
            .connect(to: peer.address)
        let future: EventLoopFuture<any Channel>
        if tlsContext != nil {
            connected.whenFailure {
                handshake.fail($0 as? SIPError ?? SIPError(.tls, "TLS connection to \(peer) failed: \($0)"))
            }
            let timeout = configuration.tlsHandshakeTimeout
            connected.whenSuccess { [eventLoop] _ in
                let deadline = eventLoop.scheduleTask(in: timeout) {
                    handshake.fail(
                        SIPError(
                            .tls,
                            "TLS handshake with \(peer) did not complete within \(Double(timeout.nanoseconds) / 1e9) s",
                            failure: .handshakeFailed))
                }
                handshake.futureResult.whenComplete { _ in deadline.cancel() }
            }
            future = connected.and(handshake.futureResult).map { channel, _ in channel }
            // A refused handshake leaves nothing to reuse.
            future.whenFailure { _ in connected.whenSuccess { $0.close(promise: nil) } }
        } else {
            handshake.succeed(())
            future = connected
        }
        connections[key] = future
        _statistics.connectionsOpened += 1
        future.whenFailure { _ in
            if self.connections[key] === future { self.connections[key] = nil }
        }
        return future
    }

    fileprivate func accepted(_ channel: any Channel, transport: SIPTransportKind) {
        _statistics.connectionsAccepted += 1
        if let remote = channel.remoteAddress {
            connections[ConnectionKey(transport: transport, address: remote)] = eventLoop.makeSucceededFuture(channel)
        }
    }

    private func pingConnections() {
        for key in connections.keys {
            writeBytes([0x0D, 0x0A, 0x0D, 0x0A], to: SIPPeer(key.transport, key.address), failing: nil)
        }
        for peer in keepaliveTargets {
            _statistics.keepalivesSent += 1
            writeBytes([0x0D, 0x0A, 0x0D, 0x0A], to: peer, failing: nil)
        }
    }
}

extension SIPEndpoint: SIPTransportSink {
    func transport(received message: SIPMessage, from peer: SIPPeer, channel: any Channel) {
        _statistics.messagesReceived += 1
        var message = message
        if message.isRequest { message.stampTopVia(receivedFrom: peer.address) }
        traceHandler?("recv \(peer)\n\(message.wireText)")
        perform(layer.receive(message, from: peer, reliable: peer.transport.isReliable, now: now()))
    }

    func transport(dropped error: SIPError, from peer: SIPPeer?) {
        _statistics.malformedDropped += 1
        _statistics.lastDropReason = error.description
        traceHandler?("drop \(peer.map(\.description) ?? "?"): \(error)")
    }

    func transport(keepalivePongFrom peer: SIPPeer) {
        _statistics.keepalivePongsReceived += 1
    }

    func transport(closed channel: any Channel, peer: SIPPeer) {
        let key = ConnectionKey(transport: peer.transport, address: peer.address)
        // Only the listed connection is news: one closed on purpose (`closeConnection(to:)`) or replaced by a newer
        // one to the same peer is no longer listed, and a TLS close waits for the peer's close_notify (seconds, when
        // the old address is gone), so reporting it would have the user tear down the connection that replaced it.
        guard let listed = connections[key] else { return }
        listed.whenSuccess { open in
            guard open === channel, self.connections[key] === listed else { return }
            self.connections[key] = nil
            if self.open.withLockedValue({ $0 }) { self.connectionClosedHandler?(peer) }
        }
    }
}
