import Foundation
import NIOCore
import NIOPosix
import VoiceSIP

/// The client's registration: credentials from the registration service (asking the app to sign when it has
/// none that are valid), the SIP endpoint and user agent towards the service, and the SIP binding kept refreshed.
/// A refresh refused after `start()` is reported once per loss; a flow that fails (the connection closes, a keepalive
/// or a refresh goes unanswered) is handed to the client, whose ``RegistrationRecovery`` decides when and where to
/// register again; credentials are renewed before they expire.
///
/// Part of ``VoiceClient`` and isolated to it (not `Sendable`; its async methods run on the client's executor):
/// the client runs the renewal timer and the readers, this part decides.
final class ClientRegistration {
    let userID: String
    private let configuration: VoiceClientConfiguration
    private let sign: VoiceClient.SignRegistration
    private let unixTime: @Sendable () -> UInt64
    private let group: MultiThreadedEventLoopGroup
    private let events: AsyncStream<VoiceClientEvent>.Continuation
    /// Where the grant and the push data are kept across restarts.
    private let state: ClientState
    /// The push data registered with the grant: the configuration's, else what an earlier run kept; replaced and
    /// removed by ``updatePushData(_:)``.
    private(set) var pushData: Data?
    /// This device among the user's: the configuration's, else the one kept in the state store.
    let deviceID: String

    /// The current credentials: kept over `stop()` while valid, dropped when the service refused them.
    private(set) var grant: RegistrationGrant?
    private(set) var agent: SIPUserAgent?
    private(set) var sender: SIPRequestSender?
    /// The service's SIP address (the outbound proxy and registrar).
    private(set) var serverPeer: SIPPeer?
    /// Whether SIP to the service runs over TLS: only then may a call's SDP carry SDES keys.
    var signallingEncrypted: Bool { serverPeer?.transport == .tls }
    /// The local address SIP uses towards the service: RTP binds there too.
    private(set) var mediaHost = "127.0.0.1"
    private var endpoint: SIPEndpoint?
    private var binding: SIPRegistration?
    /// What the SIP layer authenticates with: replaced in place when the credentials are renewed.
    private let sipCredentials = RenewableCredentials()
    /// Whether the last refresh succeeded: a loss is reported once, a later success re-arms the report.
    private var healthy = true
    /// Sends the keepalives of ``KeepaliveSchedule`` on the flow to the service while registered.
    private var keepaliveTask: Task<Void, Never>?
    private var keepalive: KeepaliveSchedule?
    /// The service hosts in order of preference: `serviceHost`, then `additionalServiceHosts`.
    let serviceHosts: [String]
    /// The index in ``serviceHosts`` of the host the endpoint talks to.
    private(set) var hostIndex = 0
    /// Told when the flow to the service fails (connection closed, keepalive unanswered), with why.
    private var onFlowFailed: (@Sendable (String) -> Void)?

    init(
        userID: String, configuration: VoiceClientConfiguration, sign: @escaping VoiceClient.SignRegistration,
        unixTime: @escaping @Sendable () -> UInt64, group: MultiThreadedEventLoopGroup,
        events: AsyncStream<VoiceClientEvent>.Continuation, state: ClientState
    ) {
        self.state = state
        if let id = configuration.deviceID ?? state.deviceID {
            deviceID = id
        } else {
            deviceID = UUID().uuidString.lowercased()
            state.saveDeviceID(deviceID)
        }
        let savedPushData = state.pushData
        let pushData = configuration.pushData ?? savedPushData
        self.pushData = pushData
        if let pushData, pushData != savedPushData { state.savePushData(pushData) }
        // A kept grant serves only the application, service and push data it was granted for; its validity is
        // checked when it is used.
        if let saved = state.grant, saved.applicationKey == configuration.applicationKey,
            saved.serviceHost == configuration.serviceHost, saved.registrationPort == configuration.registrationPort,
            saved.pushData == pushData
        {
            grant = saved.grant
        }
        self.userID = userID
        self.configuration = configuration
        serviceHosts = [configuration.serviceHost] + configuration.additionalServiceHosts
        self.sign = sign
        self.unixTime = unixTime
        self.group = group
        self.events = events
    }

    /// Whether the SIP binding is registered (and kept refreshed).
    var isRegistered: Bool { binding != nil }

    /// Whether the endpoint towards the service is up (registered or not): calls and messages can go out.
    var isConnected: Bool { agent != nil }

    /// Removes the SIP binding and stops refreshing it, keeping the endpoint and the credentials: the service
    /// no longer sends calls here (it keeps messages for later), while outgoing calls and messages go on.
    nonisolated(nonsending) func unbind() async {
        guard let binding else { return }
        self.binding = nil
        _ = try? await binding.unregister()
    }

    /// The address of record, `sip:<user ID>@<domain>` (known once credentials were granted).
    var addressOfRecord: String? { grant.map { "sip:\(SIPUserPart.escape(userID))@\($0.domain)" } }

    /// The service host the endpoint talks to.
    var serviceHost: String { serviceHosts[hostIndex] }

    /// Credentials (kept or new), then the SIP endpoint and user agent towards service host `host` (an index in
    /// ``serviceHosts``); `onRequest` gets the requests that are neither calls nor responses, `onFlowFailed` hears
    /// that the connection to the service closed or stopped answering. Nothing is registered yet:
    /// ``register(onRefresh:)`` does.
    /// - Returns: the user agent, whose incoming calls the caller reads.
    nonisolated(nonsending) func connect(
        host: Int = 0, onRequest: @escaping @Sendable (SIPIncomingRequest, SIPEndpoint) -> Void,
        onFlowFailed: @escaping @Sendable (String) -> Void = { _ in }
    ) async throws -> SIPUserAgent {
        hostIndex = min(max(host, 0), serviceHosts.count - 1)
        self.onFlowFailed = onFlowFailed
        let grant = try await credentials()
        let server: SocketAddress
        do {
            server = try SocketAddress.makeAddressResolvingHost(serviceHost, port: configuration.sipPort)
        } catch {
            throw VoiceClientError.network("cannot resolve \(serviceHost): \(error)")
        }
        let local = try LocalAddress.towards(server)
        let t1 = configuration.sipT1
        let timers = SIPTimerConfiguration(t1: t1, t2: min(.seconds(4), t1 * 8), t4: min(.seconds(5), t1 * 10))
        let peer: SIPPeer
        let endpoint: SIPEndpoint
        switch configuration.transport {
        case .tls(let trustRoots, let serverName):
            // A TLS client only: no listener; the service reaches the client over the connection it registered
            // on, and the Contact names that connection.
            let tls = SIPTLSConfiguration(trustRoots: trustRoots)
            do { try tls.check() } catch { throw VoiceClientError.tlsRefused(TLSRefusal(error, server: .sip)) }
            peer = SIPPeer(.tls, server, serverName: serverName ?? serviceHost)
            endpoint = try await SIPEndpoint.start(
                on: group.next(),
                configuration: SIPEndpointConfiguration(timers: timers, userAgent: "VoiceClient", tls: tls))
        case .insecurePlaintextUDPAndHTTP:
            peer = SIPPeer(.udp, server)
            endpoint = try await SIPEndpoint.start(
                on: group.next(), udp: local,
                configuration: SIPEndpointConfiguration(timers: timers, userAgent: "VoiceClient"))
        }
        sipCredentials.set(grant)
        let agent = SIPUserAgent(
            endpoint: endpoint, credentials: sipCredentials,
            configuration: SIPUserAgentConfiguration(
                addressOfRecord: SIPURI(user: SIPUserPart.escape(userID), host: grant.domain), outboundProxy: peer,
                transport: peer.transport))
        try await agent.onOtherRequest { [endpoint] request in onRequest(request, endpoint) }
        endpoint.onConnectionClosed { closed in
            if closed.transport == peer.transport, closed.address == peer.address {
                onFlowFailed("the connection to \(peer) closed")
            }
        }
        self.agent = agent
        mediaHost = local.ipAddress ?? "127.0.0.1"
        (self.endpoint, sender, serverPeer) = (endpoint, agent.sender, peer)
        return agent
    }

    /// REGISTERs the user through the connection ``connect(onRequest:)`` made and keeps the binding refreshed;
    /// `onRefresh` gets every later refresh's outcome (hand it to ``refreshed(_:)`` on the client).
    /// - Throws: ``VoiceClientError/network(_:)``, ``VoiceClientError/sipRegistrationFailed(status:reason:)``
    ///   (refused credentials are dropped then, so the next `start()` asks the app to sign again).
    nonisolated(nonsending) func register(
        onRefresh: @escaping @Sendable (Result<SIPRegistrationResult, any Error>) -> Void
    ) async throws {
        guard let grant, let sender, let serverPeer else { throw VoiceClientError.invalidState("not connected") }
        let binding = SIPRegistration(
            configuration: SIPRegistrationConfiguration(
                addressOfRecord: SIPURI(user: SIPUserPart.escape(userID), host: grant.domain), server: serverPeer,
                expires: configuration.registrationExpires),
            sender: sender)
        let result: SIPRegistrationResult
        do { result = try await binding.startRefreshing() } catch {
            throw Self.clientError(error, doing: "REGISTER")
        }
        guard result.succeeded else {
            if result.statusCode == 401 || result.statusCode == 403 {
                self.grant = nil
                state.removeGrant()
            }
            throw VoiceClientError.sipRegistrationFailed(status: result.statusCode, reason: result.reasonPhrase)
        }
        self.binding = binding
        keepAlive(KeepaliveSchedule(flowTimer: result.flowTimer, configured: configuration.keepaliveInterval))
        await binding.observeRefreshes(onRefresh)
    }

    /// (Re)starts the keepalives when the schedule changed (a refresh may bring another Flow-Timer).
    private func keepAlive(_ schedule: KeepaliveSchedule) {
        guard schedule != keepalive || keepaliveTask == nil, let endpoint, let serverPeer else { return }
        keepaliveTask?.cancel()
        keepalive = schedule
        let onFlowFailed = onFlowFailed
        keepaliveTask = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: schedule.delay(fraction: Double.random(in: 0..<1)))
                guard !Task.isCancelled else { return }
                let pongs = await endpoint.statistics().keepalivePongsReceived
                endpoint.sendKeepalive(to: serverPeer)
                guard serverPeer.transport.isReliable else { continue }
                // RFC 5626 §4.4.1: no pong within 10 s (or the interval, when shorter) means the flow is dead,
                // even if the kernel still holds the connection.
                let deadline = ContinuousClock.now + min(.seconds(10), schedule.interval)
                while !Task.isCancelled, ContinuousClock.now < deadline,
                    await endpoint.statistics().keepalivePongsReceived == pongs
                {
                    try? await Task.sleep(for: .milliseconds(100))
                }
                guard !Task.isCancelled else { return }
                if await endpoint.statistics().keepalivePongsReceived == pongs {
                    endpoint.closeConnection(to: serverPeer)
                    onFlowFailed?("no keepalive pong from \(serverPeer)")
                }
            }
        }
    }

    /// The address the kernel would use towards the service now, nil without a route (or without a connection).
    func currentRoute() -> String? {
        guard let server = serverPeer?.address else { return nil }
        return (try? LocalAddress.towards(server))?.ipAddress
    }

    /// Calls and media bind `address` from now on (the network changed); the flow is closed so that the next
    /// REGISTER opens a new connection from there.
    func moveTo(_ address: String?) {
        if let address { mediaHost = address }
        if let endpoint, let serverPeer, serverPeer.transport.isReliable { endpoint.closeConnection(to: serverPeer) }
    }

    /// What a refresh's outcome asks of the client.
    enum RefreshVerdict: Equatable {
        case nothing
        /// The service refused credentials the client still holds valid (its clock is behind, the service's secret
        /// changed): the app is asked to sign again at once rather than the dead credentials being sent until the
        /// scheduled renewal.
        case renewCredentials
        /// The refresh was not answered: the flow is dead, register again on a new one.
        case flowFailed(String)
    }

    /// Reports a refresh refused after `start()` (once per loss); an unanswered one is a failed flow, which the
    /// client's recovery reports.
    func refreshed(_ outcome: Result<SIPRegistrationResult, any Error>) -> RefreshVerdict {
        guard binding != nil else { return .nothing }
        var renewNow = false
        switch outcome {
        case .success(let result) where result.succeeded:
            healthy = true
            keepAlive(KeepaliveSchedule(flowTimer: result.flowTimer, configured: configuration.keepaliveInterval))
        case .success(let result):
            if healthy {
                events.yield(
                    .registrationLost(.registrationLost("refresh refused: \(result.statusCode) \(result.reasonPhrase)"))
                )
                renewNow = result.statusCode == 401 || result.statusCode == 403
            }
            healthy = false
        case .failure(let error):
            return .flowFailed("refresh not answered: \(error)")
        }
        return renewNow ? .renewCredentials : .nothing
    }

    /// Registers the kept binding again on a new connection to the same host (the old one closed or went
    /// silent): the old connection is closed if still listed, the REGISTER opens a new one, names it in its
    /// Contact and removes the old Contact, and refreshing starts over.
    /// - Returns: whether the registrar accepted it.
    nonisolated(nonsending) func registerAgainOnNewConnection() async -> Bool {
        guard let binding, let endpoint, let serverPeer else { return false }
        endpoint.closeConnection(to: serverPeer)
        await binding.stopRefreshing()
        guard let result = try? await binding.startRefreshing(), result.succeeded else { return false }
        healthy = true
        keepaliveTask?.cancel()
        keepaliveTask = nil
        keepAlive(KeepaliveSchedule(flowTimer: result.flowTimer, configured: configuration.keepaliveInterval))
        return true
    }

    /// When to renew the current credentials: once four fifths of their remaining lifetime have passed.
    var renewalDelay: Duration? {
        guard let grant else { return nil }
        return .milliseconds(Int64(max(1, remainingSeconds(of: grant)) * 800))
    }

    /// Asks the app to sign and the service for new credentials while registered; refreshes and messages pick
    /// them up.
    /// - Returns: when to renew next: ``renewalDelay`` after a renewal, a tenth of the time left (at least 1 s)
    ///   after a failed one; nil when not registered.
    nonisolated(nonsending) func renewCredentials() async -> Duration? {
        guard agent != nil else { return nil }
        do {
            let grant = try await requestGrant()
            sipCredentials.set(grant)
            return renewalDelay
        } catch {
            guard let grant else { return nil }
            return .milliseconds(Int64(max(1, remainingSeconds(of: grant) / 10) * 1000))
        }
    }

    /// Unregisters (or only stops refreshing) and closes the endpoint; the credentials are kept.
    nonisolated(nonsending) func tearDown(unregister: Bool) async {
        keepaliveTask?.cancel()
        (keepaliveTask, keepalive) = (nil, nil)
        if let binding {
            if unregister { _ = try? await binding.unregister() } else { await binding.stopRefreshing() }
        }
        try? await endpoint?.close()
        (binding, endpoint, sender, serverPeer, agent) = (nil, nil, nil, nil, nil)
        healthy = true
    }

    /// A SIP failure as the app sees it: a TLS refusal says why, anything else is a network error.
    static func clientError(_ error: any Error, doing what: String) -> VoiceClientError {
        if let client = error as? VoiceClientError { return client }
        if let sip = error as? SIPError, sip.kind == .tls, sip.tlsFailure != nil {
            return .tlsRefused(TLSRefusal(sip, server: .sip))
        }
        return .network("\(what): \(error)")
    }

    private func remainingSeconds(of grant: RegistrationGrant) -> UInt64 {
        grant.expires > unixTime() ? grant.expires - unixTime() : 0
    }

    /// The kept credentials while valid; otherwise a new signed request through the registration service.
    private nonisolated(nonsending) func credentials() async throws -> RegistrationGrant {
        if let grant, grant.isValid(at: unixTime(), margin: 10) { return grant }
        return try await requestGrant()
    }

    /// Replaces this device's push data at the service (nil removes it), with the current credentials (new ones
    /// when they expired), and keeps it for the next starts.
    nonisolated(nonsending) func updatePushData(_ data: Data?) async throws {
        let grant = try await credentials()
        let service = RegistrationServiceConnection(
            host: configuration.serviceHost, port: configuration.registrationPort, transport: configuration.transport)
        try await service.updatePushData(
            PushDataUpdate(
                applicationKey: configuration.applicationKey, deviceID: deviceID, pushData: data,
                displayName: configuration.pushDisplayName), as: grant)
        pushData = data
        if let data { state.savePushData(data) } else { state.removePushData() }
        if var saved = state.grant {
            saved.pushData = data
            state.saveGrant(saved)
        }
    }

    /// Asks the app to sign and the registration service for new credentials.
    private nonisolated(nonsending) func requestGrant() async throws -> RegistrationGrant {
        let signed: SignedRegistration
        do { signed = try await sign(userID) } catch { throw VoiceClientError.signingFailed("\(error)") }
        let service = RegistrationServiceConnection(
            host: serviceHost, port: configuration.registrationPort, transport: configuration.transport)
        let request = RegistrationRequest(
            applicationKey: configuration.applicationKey, userID: userID, signed: signed,
            pushData: pushData, deviceID: deviceID, displayName: configuration.pushDisplayName)
        let grant = try await service.register(request)
        self.grant = grant
        state.saveGrant(
            ClientState.SavedGrant(
                version: ClientState.version, userID: userID, applicationKey: configuration.applicationKey,
                serviceHost: configuration.serviceHost, registrationPort: configuration.registrationPort,
                pushData: pushData, grant: grant))
        return grant
    }
}

/// The SIP credentials of the current grant, read by the digest authenticator on every request.
final class RenewableCredentials: SIPCredentialsDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var current: SIPCredentials?

    func set(_ grant: RegistrationGrant) {
        lock.withLock { current = SIPCredentials(username: grant.username, password: grant.password) }
    }

    func credentials(forRealm realm: String) -> SIPCredentials? { lock.withLock { current } }
}

/// The local address the kernel would use to reach the service: the client binds there, so its Contact is an
/// address the service can send to (not 0.0.0.0).
enum LocalAddress {
    static func towards(_ server: SocketAddress) throws -> SocketAddress {
        guard server.protocol == .inet || server.protocol == .inet6 else {
            throw VoiceClientError.network("unsupported address \(server)")
        }
        let fd = socket(server.protocol == .inet ? AF_INET : AF_INET6, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw VoiceClientError.network("socket: errno \(errno)") }
        defer { close(fd) }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let connected = server.withSockAddr { address, size in connect(fd, address, socklen_t(size)) }
        guard connected == 0 else { throw VoiceClientError.network("no route to \(server): errno \(errno)") }
        let named = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { throw VoiceClientError.network("getsockname: errno \(errno)") }
        let bound = withUnsafeBytes(of: storage) { raw in
            storage.ss_family == sa_family_t(AF_INET)
                ? SocketAddress(raw.load(as: sockaddr_in.self), host: "")
                : SocketAddress(raw.load(as: sockaddr_in6.self), host: "")
        }
        guard let ip = bound.ipAddress else { throw VoiceClientError.network("getsockname gave no IP address") }
        return try SocketAddress(ipAddress: ip, port: 0)
    }
}
