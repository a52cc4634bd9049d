import Foundation
import NIOCore
import NIOPosix
import VoiceEngine
import VoiceSIP

/// Where the service is and how the client talks to it.
public struct VoiceClientConfiguration: Sendable {
    /// The application key the app was given; the secret stays on the app's server.
    public var applicationKey: String
    /// The service host (Kamailio and the registration service), e.g. `127.0.0.1`.
    public var serviceHost: String
    public var sipPort: Int
    public var registrationPort: Int
    /// The lifetime asked for the SIP binding; it is refreshed at 90 %.
    public var registrationExpires: UInt32
    /// Push data (at most 1024 bytes) kept with this device's registration.
    public var pushData: Data?
    /// SIP T1, the first retransmission interval (500 ms); T2 and T4 follow it (8 and 10 × T1, at most 4 s and
    /// 5 s). Tests shorten it so a lost request times out in about a second.
    public var sipT1: Duration
    /// How often due messages are retried (and unanswered calls checked for the no-answer timeout) while the
    /// client runs.
    public var retryCheckInterval: Duration
    /// The devices of calls and the ringtone.
    public var audio: CallAudioDevices
    /// Unanswered calls end with *no answer* after this long (the SDKs' 60 s).
    public var noAnswerTimeout: MediaTime

    public init(
        applicationKey: String, serviceHost: String, sipPort: Int = 5060, registrationPort: Int = 8080,
        registrationExpires: UInt32 = 600, pushData: Data? = nil, sipT1: Duration = .milliseconds(500),
        retryCheckInterval: Duration = .seconds(1), audio: CallAudioDevices = CallAudioDevices(),
        noAnswerTimeout: MediaTime = CallStateMachine.defaultNoAnswerTimeout
    ) {
        self.audio = audio
        self.noAnswerTimeout = noAnswerTimeout
        self.applicationKey = applicationKey
        self.serviceHost = serviceHost
        self.sipPort = sipPort
        self.registrationPort = registrationPort
        self.registrationExpires = registrationExpires
        self.pushData = pushData
        self.sipT1 = sipT1
        self.retryCheckInterval = retryCheckInterval
    }
}

/// The calling client an app embeds, for one user: registers through the service with a signed request, keeps
/// the registration refreshed, sends and receives messages, and owns the engine's audio session.
///
/// ```swift
/// let client = try VoiceClient(userID: "alice", configuration: .init(applicationKey: key, serviceHost: "127.0.0.1")) { userID in
///     try await myServer.signRegistration(for: userID)   // SignedRegistration.sign(...) runs there
/// }
/// Task { for await event in client.events { print(event) } }
/// await client.start()
/// ```
///
/// Calls: ``callUser(_:headers:)``, ``callSIP(_:headers:)``, ``callPhoneNumber(_:headers:)`` and
/// ``callConference(_:headers:)`` return a ``Call`` driven by a SIP INVITE dialog through the service, with its
/// media (Opus over SDES-SRTP) on ``CallAudioDevices``; incoming calls arrive as
/// ``VoiceClientEvent/incomingCall(_:)`` while the client is started (``startListening()``).
public actor VoiceClient {
    /// Everything that happens, in order. Single consumer; finished by ``terminate()``, which also releases the
    /// client's network thread (call it when done with the client).
    public nonisolated let events: AsyncStream<VoiceClientEvent>
    public nonisolated let userID: String
    public nonisolated let configuration: VoiceClientConfiguration
    /// The engine's audio session: its category is set once at `start()`, and a call activates it.
    public nonisolated let audioSession: AudioSession
    /// Plays the ringtone, ringback and busy tone (the playout path mixes it in).
    public nonisolated let audioController: AudioController
    private nonisolated let tones: CallTones
    private var agent: SIPUserAgent?
    private var links: [CallLink] = []
    private var incomingReader: Task<Void, Never>?
    /// A call payload was relayed: the next incoming call came by push.
    private var expectingPushedCall = false
    /// The microphone and speaker of the next calls (``setAudioDevices(_:)``); starts as the configuration's.
    public private(set) lazy var audioDevices: CallAudioDevices = configuration.audio

    /// Chooses the microphone and speaker (and voice processing) for calls placed or received from now on; a
    /// live call keeps its devices. The ringtone and the tone format stay the configuration's.
    public func setAudioDevices(_ devices: CallAudioDevices) { audioDevices = devices }

    /// The local address SIP uses towards the service: RTP binds there too.
    private var mediaHost = "127.0.0.1"

    /// Asked for a signature when the client has no valid credentials (first registration on this device, or
    /// after they expired). The app gets it from its own server.
    public typealias SignRegistration = @Sendable (_ userID: String) async throws -> SignedRegistration

    private let continuation: AsyncStream<VoiceClientEvent>.Continuation
    private let sign: SignRegistration
    private let clock: any MediaClock
    private let unixTime: @Sendable () -> UInt64
    private let group: MultiThreadedEventLoopGroup
    private var grant: RegistrationGrant?
    private var endpoint: SIPEndpoint?
    private var sender: SIPRequestSender?
    private var registration: SIPRegistration?
    private var serverPeer: SIPPeer?
    private var outbox = MessageOutbox()
    private var sending: Set<String> = []
    private var retryTask: Task<Void, Never>?
    private var seenIncoming: [String] = []
    private var terminated = false
    private var cseq: UInt32 = 0
    private var calls: [Call] = []
    /// Incoming MESSAGEs from the event loop, in arrival order, to the actor.
    private nonisolated let inbox: AsyncStream<SIPMessage>.Continuation
    private let incoming: AsyncStream<SIPMessage>
    private var inboxReader: Task<Void, Never>?
    /// What the SIP layer authenticates with: replaced in place when the credentials are renewed.
    private let sipCredentials = RenewableCredentials()
    private var renewalTask: Task<Void, Never>?

    /// Checks the user ID (printable ASCII, at most 40 characters) before anything else.
    /// - Parameters:
    ///   - clock: time for message retries (the 12-hour rule); injectable for tests.
    ///   - unixTime: wall-clock seconds, to tell whether the credentials have expired.
    /// - Throws: ``VoiceClientError/invalidUserID(_:reason:)``; nothing has been sent.
    public init(
        userID: String, configuration: VoiceClientConfiguration, clock: any MediaClock = MonotonicClock(),
        unixTime: @escaping @Sendable () -> UInt64 = { UInt64(Date().timeIntervalSince1970) },
        signRegistration: @escaping SignRegistration
    ) throws(VoiceClientError) {
        do { self.userID = try UserID.validate(userID) } catch { throw VoiceClientError(error) }
        if let data = configuration.pushData, data.count > PushData.maximumBytes {
            throw .invalidPushData("push data is \(data.count) bytes, at most \(PushData.maximumBytes) allowed")
        }
        self.configuration = configuration
        self.clock = clock
        self.unixTime = unixTime
        self.sign = signRegistration
        audioController = AudioController(deviceFormat: AudioFormat(sampleRate: configuration.audio.sampleRate, channels: 1))
        tones = CallTones(controller: audioController, ringtone: configuration.audio.ringtone)
        audioSession = AudioSession(clock: clock, controller: audioController)
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        (events, continuation) = AsyncStream.makeStream(of: VoiceClientEvent.self)
        (incoming, inbox) = AsyncStream.makeStream(of: SIPMessage.self)
    }

    /// The address of record, `sip:<user ID>@<domain>` (known once registered).
    public var addressOfRecord: String? { grant.map { "sip:\(SIPUserPart.escape(userID))@\($0.domain)" } }

    public var isStarted: Bool { registration != nil }

    /// Registers the user: credentials from the registration service (asking the app to sign when needed), then
    /// SIP REGISTER kept refreshed. Reports ``VoiceClientEvent/started`` or ``VoiceClientEvent/failed(_:)``, and
    /// sends messages kept while the client was not started.
    public func start() async {
        guard !terminated else { return emit(.failed(.invalidState("the client was terminated"))) }
        guard registration == nil else { return emit(.started) }
        if inboxReader == nil {
            let incoming = incoming
            inboxReader = Task { [weak self] in
                for await message in incoming { await self?.deliver(message) }
            }
        }
        do {
            try await register()
            await audioSession.startEngine()
            emit(.started)
            startRetrying()
            await retryDueMessages()
        } catch {
            await tearDownSIP(unregister: false)
            emit(.failed(error as? VoiceClientError ?? .network("\(error)")))
        }
    }

    /// Hangs up every call, unregisters, releases the audio session (deactivates it) and stops retrying;
    /// unsent messages are kept for the next `start()`. Reports ``VoiceClientEvent/stopped``.
    public func stop() async {
        retryTask?.cancel()
        retryTask = nil
        for call in calls where await call.state != .ended { _ = try? await call.hangup() }
        // The BYEs and CANCELs go out before the endpoint closes (at most a second per call).
        for link in links {
            for _ in 0..<50 where await !link.isFinished { try? await Task.sleep(for: .milliseconds(20)) }
        }
        calls.removeAll()
        links.removeAll()
        await tearDownSIP(unregister: true)
        await releaseAudioSession()
        emit(.stopped)
    }

    // MARK: Calls

    /// A call object on this client's audio session and clock, not bound to SIP (the `call…` methods bind theirs
    /// to a dialog). The client ticks it for the no-answer timeout while started and hangs it up on `stop()`.
    public func newCall(id: CallID, direction: CallDirection, remote: String, headers: [String: String] = [:], viaPush: Bool = false)
        throws(VoiceClientError) -> Call
    {
        _ = try CustomHeaders.validate(headers)
        let call = Call(
            id: id, direction: direction, remote: remote, headers: headers, audioSession: audioSession, clock: clock,
            noAnswerTimeout: configuration.noAnswerTimeout, viaPush: viaPush)
        calls.append(call)
        return call
    }

    /// Ends unanswered calls whose no-answer timeout has passed and forgets ended ones (the retry task calls
    /// this every `retryCheckInterval`; tests with a manual clock call it directly).
    public func tickCalls() async {
        var live: [Call] = []
        for call in calls {
            await call.tick()
            if await call.state != .ended { live.append(call) }
        }
        calls = live
        var running: [CallLink] = []
        for link in links where await link.call.state != .ended { running.append(link) }
        links = running
    }

    /// Calls another user of the app through the service.
    /// - Throws: ``VoiceClientError/invalidCall(_:)`` (user ID or headers), ``VoiceClientError/invalidState(_:)``
    ///   (not started), ``VoiceClientError/network(_:)``; nothing was sent then.
    public func callUser(_ userID: String, headers: [String: String] = [:]) async throws(VoiceClientError) -> Call {
        try await place(try CallTarget.user(checking: userID), headers: headers)
    }

    /// Calls any SIP address (`user@domain[:port]`), relayed by the service; custom headers (names starting with
    /// `x-`, at most 1024 bytes in all) reach the far side.
    public func callSIP(_ address: String, headers: [String: String] = [:]) async throws(VoiceClientError) -> Call {
        try await place(try CallTarget.sip(checking: address), headers: headers)
    }

    /// Calls an E.164 phone number (`+46…`); the service routes it to its gateway.
    public func callPhoneNumber(_ number: String, headers: [String: String] = [:]) async throws(VoiceClientError) -> Call {
        try await place(try CallTarget.phoneNumber(checking: number), headers: headers)
    }

    /// Joins the conference room `id` (at most 64 characters); the service routes it to its conference server.
    public func callConference(_ id: String, headers: [String: String] = [:]) async throws(VoiceClientError) -> Call {
        try await place(try CallTarget.conference(checking: id), headers: headers)
    }

    /// Incoming calls arrive while the client is started: `start()` registers a binding that the service sends
    /// INVITEs to and keeps it refreshed, and the client's socket stays open. Starts the client if needed.
    public func startListening() async {
        if registration == nil { await start() }
    }

    private func place(_ target: CallTarget, headers: [String: String]) async throws(VoiceClientError) -> Call {
        let checked: [(name: String, value: String)]
        do { checked = try CustomHeaders.validate(headers) } catch { throw .invalidCall(Self.reason(error)) }
        guard let agent, let grant else { throw .invalidState("the client is not started") }
        let transport: UDPMediaTransport
        let capabilities: AudioCapabilities
        do { (transport, capabilities) = try await CallLink.bindMedia(host: mediaHost) } catch {
            throw .network("cannot bind the RTP socket: \(error)")
        }
        let sip: SIPCall
        do {
            sip = try await agent.call(target.requestURI(domain: grant.domain), offering: capabilities, headers: checked.map { ($0.name, $0.value) })
        } catch {
            await transport.close()
            throw .network("INVITE: \(error)")
        }
        let call = Call(
            id: CallID(sip.callID), direction: .outgoing, remote: target.description, headers: headers, audioSession: audioSession,
            clock: clock, noAnswerTimeout: configuration.noAnswerTimeout)
        let link = CallLink(call: call, sip: sip, transport: transport, capabilities: capabilities, devices: audioDevices, tones: tones)
        if case .user(let callee) = target {
            let payload = PushPayload(kind: .call, sender: userID, id: sip.callID, sentAt: unixTime(), headers: headers)
            await link.whenPushPending { [weak self] in await self?.askForPush(recipient: callee, payload: payload) }
        }
        adopt(link)
        return call
    }

    private func adopt(_ link: CallLink) {
        calls.append(link.call)
        links.append(link)
        link.run()
    }

    private static func reason(_ error: VoiceClientError) -> String {
        if case .invalidMessage(let reason) = error { return reason }
        return error.description
    }

    /// An INVITE from the service: RTP socket, 180 Ringing, a ringing ``Call`` for the app.
    private func ring(_ sip: SIPCall, mediaHost: String) async {
        let transport: UDPMediaTransport
        let capabilities: AudioCapabilities
        do { (transport, capabilities) = try await CallLink.bindMedia(host: mediaHost) } catch {
            await sip.reject(status: 500, reason: "Cannot Bind Media")
            return
        }
        var headers: [String: String] = [:]
        for field in sip.requestHeaders { headers[field.name] = field.value }
        let caller = sip.remote.uri.user.map(SIPUserPart.unescape) ?? sip.remote.uri.description
        let viaPush = expectingPushedCall
        expectingPushedCall = false
        let call = Call(
            id: CallID(sip.callID), direction: .incoming, remote: caller, headers: headers, audioSession: audioSession, clock: clock,
            noAnswerTimeout: configuration.noAnswerTimeout, viaPush: viaPush)
        _ = try? await sip.ring()
        adopt(CallLink(call: call, sip: sip, transport: transport, capabilities: capabilities, devices: audioDevices, tones: tones))
        emit(.incomingCall(IncomingCall(call: call, caller: caller, headers: headers, viaPush: viaPush)))
    }

    /// `stop()`, then the client is finished: its event loop is shut down and ``events`` ends.
    public func terminate() async {
        guard !terminated else { return }
        await stop()
        terminated = true
        try? await group.shutdownGracefully()
        inbox.finish()
        continuation.finish()
    }

    // MARK: Messages

    /// Sends `text` to each recipient (user IDs) as SIP MESSAGE, with custom `x-` headers; reports per recipient
    /// ``VoiceClientEvent/messageDelivered(id:recipient:)``, `…StoredForLaterDelivery` or `…Failed`. A message
    /// that cannot be sent now is kept and retried for 12 hours.
    /// - Returns: the message ID.
    /// - Throws: bad recipients or headers, before anything is sent.
    @discardableResult
    public func send(message text: String, to recipients: [String], headers: [String: String] = [:]) async throws(VoiceClientError) -> String {
        guard !recipients.isEmpty else { throw .invalidMessage("no recipients") }
        for recipient in recipients {
            do { _ = try UserID.validate(recipient) } catch { throw VoiceClientError(error) }
        }
        let checked = try CustomHeaders.validate(headers)
        let id = UUID().uuidString.lowercased()
        let now = clock.now
        for recipient in Set(recipients).sorted() {
            outbox.add(OutgoingMessage(id: id, recipient: recipient, text: text, headers: checked, firstAttempt: now, nextAttempt: now, attempts: 0))
        }
        if registration != nil { await retryDueMessages() }
        return id
    }

    /// Messages not yet delivered, stored or failed.
    public var pendingMessages: [OutgoingMessage] { outbox.pending }

    /// Sends every message whose attempt is due on the client's clock (the retry task calls this; a test with a
    /// manual clock calls it after advancing the clock).
    public func retryDueMessages() async {
        for message in outbox.due(at: clock.now) where !sending.contains(message.id + "\u{0}" + message.recipient) {
            let key = message.id + "\u{0}" + message.recipient
            sending.insert(key)
            let outcome = await attempt(message)
            sending.remove(key)
            switch outbox.record(outcome, for: message.id, recipient: message.recipient, at: clock.now) {
            case .delivered: emit(.messageDelivered(id: message.id, recipient: message.recipient))
            case .storedForLaterDelivery:
                emit(.messageStoredForLaterDelivery(id: message.id, recipient: message.recipient))
                await askForPush(message)
            case .failed(let reason, let status): emit(.messageFailed(id: message.id, recipient: message.recipient, reason: reason, sipStatus: status))
            case nil: break
            }
        }
    }

    /// The recipient is offline: when their device attached push data, the app is asked to push the payload.
    private func askForPush(_ message: OutgoingMessage) async {
        let headers = Dictionary(message.headers.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
        await askForPush(recipient: message.recipient, payload: PushPayload(kind: .message, sender: userID, id: message.id, sentAt: unixTime(), headers: headers))
    }

    /// App-sent push for a message or a call the service keeps: the recipient's push data (when their devices
    /// attached any) and the payload, in a ``VoiceClientEvent/shouldSendPushNotifications(recipient:payload:pushData:)``.
    private func askForPush(recipient: String, payload: PushPayload) async {
        guard let grant else { return }
        let service = RegistrationServiceConnection(host: configuration.serviceHost, port: configuration.registrationPort)
        guard let pushData = try? await service.pushData(of: recipient, applicationKey: configuration.applicationKey, as: grant, on: group.next()),
            !pushData.isEmpty, let encoded = try? payload.encoded()
        else { return }
        emit(.shouldSendPushNotifications(recipient: recipient, payload: encoded, pushData: pushData))
    }

    /// The recipient's side of a push: parses the payload the app received, then connects and registers so that
    /// the held message (or, with the dialog layer, the call) arrives.
    /// - Returns: what the push was about (also readable without a client with ``PushPayload/parse(_:)``).
    /// - Throws: ``VoiceClientError/invalidPushData(_:)`` for a payload that is not one.
    @discardableResult
    public func relayPushPayload(_ payload: Data) async throws(VoiceClientError) -> PushPayload {
        let parsed = try PushPayload.parse(payload)
        if parsed.kind == .call, !parsed.canceled { expectingPushedCall = true }
        if registration == nil { await start() }
        return parsed
    }

    private func attempt(_ message: OutgoingMessage) async -> MessageAttemptOutcome {
        guard let sender, let serverPeer, let grant else { return .unsent(reason: "the client is not started") }
        cseq &+= 1
        var headers = SIPHeaders()
        headers.add("From", "<sip:\(SIPUserPart.escape(userID))@\(grant.domain)>;tag=\(UUID().uuidString.prefix(8).lowercased())")
        headers.add("To", "<sip:\(SIPUserPart.escape(message.recipient))@\(grant.domain)>")
        // One Call-ID per message and recipient on every attempt, so the recipient drops a repeated delivery.
        headers.add("Call-ID", "\(message.id)-\(SIPUserPart.escape(message.recipient))")
        headers.add("CSeq", SIPCSeq(cseq, .message).description)
        headers.add("Content-Type", "text/plain;charset=utf-8")
        for (name, value) in message.headers { headers.add(name, value) }
        let uri = SIPURI(user: SIPUserPart.escape(message.recipient), host: grant.domain)
        do {
            let response = try await sender.send(.request(.message, uri, headers: headers, body: Array(message.text.utf8)), to: serverPeer)
            return .classify(status: response.statusCode ?? 500, reason: response.reasonPhrase ?? "")
        } catch {
            return .unsent(reason: "\(error)")
        }
    }

    private func startRetrying() {
        retryTask?.cancel()
        let interval = configuration.retryCheckInterval
        retryTask = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                guard !Task.isCancelled, let self else { return }
                await self.retryDueMessages()
                await self.tickCalls()
            }
        }
    }

    // MARK: Incoming requests

    private nonisolated func receive(_ request: SIPIncomingRequest, on endpoint: SIPEndpoint) {
        guard request.transaction != nil, let method = request.message.requestMethod else { return }
        switch method {
        case .message:
            endpoint.respond(.response(to: request.message, status: 200, toTag: "m"), to: request)
            inbox.yield(request.message)
        default:
            endpoint.respond(.response(to: request.message, status: 405, toTag: "x"), to: request)
        }
    }

    private func deliver(_ message: SIPMessage) {
        let callID = message.callID ?? UUID().uuidString
        // A retried message whose 200 was lost arrives again with the same Call-ID: reported once.
        guard !seenIncoming.contains(callID) else { return }
        seenIncoming.append(callID)
        if seenIncoming.count > 1000 { seenIncoming.removeFirst(seenIncoming.count - 1000) }
        var custom: [String: String] = [:]
        for field in message.headers where field.name.lowercased().hasPrefix("x-") { custom[field.name] = field.value }
        let sender = message.from.flatMap { $0.uri.user }.map(SIPUserPart.unescape) ?? ""
        let id = callID.split(separator: "-").prefix(5).joined(separator: "-")
        emit(.messageReceived(IncomingMessage(id: id, sender: sender, text: String(decoding: message.body, as: UTF8.self), headers: custom)))
    }

    // MARK: Registration

    private func register() async throws {
        let grant = try await credentials()
        let loop = group.next()
        let server: SocketAddress
        do { server = try SocketAddress.makeAddressResolvingHost(configuration.serviceHost, port: configuration.sipPort) } catch {
            throw VoiceClientError.network("cannot resolve \(configuration.serviceHost): \(error)")
        }
        let local = try LocalAddress.towards(server)
        let t1 = configuration.sipT1
        let timers = SIPTimerConfiguration(t1: t1, t2: min(.seconds(4), t1 * 8), t4: min(.seconds(5), t1 * 10))
        let endpoint = try await SIPEndpoint.start(
            on: loop, udp: local, configuration: SIPEndpointConfiguration(timers: timers, userAgent: "VoiceClient"))
        sipCredentials.set(grant)
        let peer = SIPPeer(.udp, server)
        let agent = SIPUserAgent(
            endpoint: endpoint, credentials: sipCredentials,
            configuration: SIPUserAgentConfiguration(
                addressOfRecord: SIPURI(user: SIPUserPart.escape(userID), host: grant.domain), outboundProxy: peer))
        try await agent.onOtherRequest { [weak self, endpoint] request in self?.receive(request, on: endpoint) }
        let sender = agent.sender
        self.agent = agent
        let mediaHost = local.ipAddress ?? "127.0.0.1"
        self.mediaHost = mediaHost
        let incomingCalls = agent.incomingCalls
        incomingReader?.cancel()
        incomingReader = Task { [weak self] in
            for await call in incomingCalls { await self?.ring(call, mediaHost: mediaHost) }
        }
        let registration = SIPRegistration(
            configuration: SIPRegistrationConfiguration(
                addressOfRecord: SIPURI(user: SIPUserPart.escape(userID), host: grant.domain), server: peer,
                expires: configuration.registrationExpires),
            sender: sender)
        (self.endpoint, self.sender, self.serverPeer) = (endpoint, sender, peer)
        let result: SIPRegistrationResult
        do { result = try await registration.startRefreshing() } catch { throw VoiceClientError.network("REGISTER: \(error)") }
        guard result.succeeded else {
            // Refused credentials are not kept: the next start() asks the app to sign again.
            if result.statusCode == 401 || result.statusCode == 403 { self.grant = nil }
            throw VoiceClientError.sipRegistrationFailed(status: result.statusCode, reason: result.reasonPhrase)
        }
        self.registration = registration
        await registration.observeRefreshes { [weak self] outcome in
            Task { await self?.refreshed(outcome) }
        }
        scheduleRenewal(of: grant)
    }

    /// Reports a refresh that failed after `start()` (once per loss; a later success re-arms it).
    private var registrationHealthy = true

    private func refreshed(_ outcome: Result<SIPRegistrationResult, any Error>) {
        guard registration != nil else { return }
        switch outcome {
        case .success(let result) where result.succeeded:
            registrationHealthy = true
        case .success(let result):
            if registrationHealthy {
                emit(.registrationLost(.registrationLost("refresh refused: \(result.statusCode) \(result.reasonPhrase)")))
                // The service refused credentials the client still holds valid (its clock is behind, the service's
                // secret changed): ask the app to sign again now, once per loss, rather than sending the dead
                // credentials until the scheduled renewal; the registration's next refresh uses the new ones.
                if result.statusCode == 401 || result.statusCode == 403 {
                    Task { [weak self] in await self?.renewCredentials() }
                }
            }
            registrationHealthy = false
        case .failure(let error):
            if registrationHealthy { emit(.registrationLost(.registrationLost("refresh not answered: \(error)"))) }
            registrationHealthy = false
        }
    }

    /// Renews the credentials when four fifths of their remaining lifetime have passed, asking the app to sign
    /// again, so a registration outlives them (refreshes and messages pick the new ones up). A failed renewal
    /// is tried again after a tenth of the time left, at least 1 s.
    private func scheduleRenewal(of grant: RegistrationGrant) {
        renewalTask?.cancel()
        let remaining = grant.expires > unixTime() ? grant.expires - unixTime() : 0
        let delay = Duration.milliseconds(Int64(max(1, remaining) * 800))
        renewalTask = Task { [weak self] in
            try? await Task.sleep(for: delay)
            guard !Task.isCancelled, let self else { return }
            await self.renewCredentials()
        }
    }

    private func renewCredentials() async {
        guard registration != nil else { return }
        do {
            let grant = try await requestGrant()
            sipCredentials.set(grant)
            scheduleRenewal(of: grant)
        } catch {
            guard let grant else { return }
            let remaining = grant.expires > unixTime() ? grant.expires - unixTime() : 0
            let retry = Duration.milliseconds(Int64(max(1, remaining / 10) * 1000))
            renewalTask = Task { [weak self] in
                try? await Task.sleep(for: retry)
                guard !Task.isCancelled, let self else { return }
                await self.renewCredentials()
            }
        }
    }

    /// The kept credentials while valid; otherwise a new signed request through the registration service.
    private func credentials() async throws -> RegistrationGrant {
        if let grant, grant.isValid(at: unixTime(), margin: 10) { return grant }
        return try await requestGrant()
    }

    /// Asks the app to sign and the registration service for new credentials.
    private func requestGrant() async throws -> RegistrationGrant {
        let signed: SignedRegistration
        do { signed = try await sign(userID) } catch { throw VoiceClientError.signingFailed("\(error)") }
        let service = RegistrationServiceConnection(host: configuration.serviceHost, port: configuration.registrationPort)
        let request = RegistrationRequest(applicationKey: configuration.applicationKey, userID: userID, signed: signed, pushData: configuration.pushData)
        let grant = try await service.register(request, on: group.next())
        self.grant = grant
        return grant
    }

    private func tearDownSIP(unregister: Bool) async {
        renewalTask?.cancel()
        renewalTask = nil
        if let registration {
            if unregister { _ = try? await registration.unregister() } else { await registration.stopRefreshing() }
        }
        incomingReader?.cancel()
        incomingReader = nil
        try? await endpoint?.close()
        (registration, endpoint, sender, serverPeer, agent) = (nil, nil, nil, nil, nil)
        registrationHealthy = true
    }

    private func releaseAudioSession() async {
        let state = await audioSession.state
        if let call = state.phase.call { _ = try? await audioSession.callEnded(call.id, cause: .localHangup) }
        if await audioSession.state.applicationActivated { _ = try? await audioSession.send(.applicationDeactivate) }
    }

    private func emit(_ event: VoiceClientEvent) { continuation.yield(event) }
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
        guard server.protocol == .inet || server.protocol == .inet6 else { throw VoiceClientError.network("unsupported address \(server)") }
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
                ? SocketAddress(raw.load(as: sockaddr_in.self), host: "") : SocketAddress(raw.load(as: sockaddr_in6.self), host: "")
        }
        guard let ip = bound.ipAddress else { throw VoiceClientError.network("getsockname gave no IP address") }
        return try SocketAddress(ipAddress: ip, port: 0)
    }
}
