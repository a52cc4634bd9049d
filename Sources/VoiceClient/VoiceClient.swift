import Foundation
import NIOPosix
import VoiceEngine
import VoiceSIP

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
/// media (Opus over DTLS-SRTP, with ICE on the media port) on ``CallAudioDevices``; incoming calls arrive as
/// ``VoiceClientEvent/incomingCall(_:)`` while the client is started (``startListening()``).
///
/// The actor composes one part per concern, each isolated to it: `ClientRegistration` (credentials and the SIP
/// binding), `ClientCalls`, `ClientMessages` and `ClientPush`. The client keeps the public API, the order
/// of starting and stopping, and the tasks that drive the parts (the message retries and no-answer checks, the
/// credentials' renewal, the readers of incoming messages and calls), each holding the client weakly.
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

    /// Asked for a signature when the client has no valid credentials (first registration on this device, or
    /// after they expired). The app gets it from its own server.
    public typealias SignRegistration = @Sendable (_ userID: String) async throws -> SignedRegistration

    private let continuation: AsyncStream<VoiceClientEvent>.Continuation
    private let group: MultiThreadedEventLoopGroup
    private let registration: ClientRegistration
    private let calls: ClientCalls
    private let messages: ClientMessages
    private let push: ClientPush
    private let statistics: CallStatisticsUploader?
    private var terminated = false
    private var retryTask: Task<Void, Never>?
    private var renewalTask: Task<Void, Never>?
    private var incomingReader: Task<Void, Never>?
    private var inboxReader: Task<Void, Never>?
    /// Decides when and where to register again after the flow to the service failed; the client does its I/O.
    private var recovery: RegistrationRecovery
    private var recoveryWakeUp: Task<Void, Never>?
    private let recoveryOrigin = ContinuousClock.now
    /// Polls the interfaces while started (``VoiceClientConfiguration/networkCheckInterval``).
    private var networkTask: Task<Void, Never>?
    private var networkWatch = NetworkWatch(inUse: nil)
    private var callNetworkLoss: CallNetworkLoss

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
        let checkedID: String
        do { checkedID = try UserID.validate(userID) } catch { throw VoiceClientError(error) }
        if let data = configuration.pushData, data.count > PushData.maximumBytes {
            throw .invalidPushData("push data is \(data.count) bytes, at most \(PushData.maximumBytes) allowed")
        }
        if let name = configuration.pushDisplayName, name.utf8.count > PushData.maximumDisplayNameBytes {
            throw .invalidPushData("the display name has more than \(PushData.maximumDisplayNameBytes) bytes")
        }
        if let id = configuration.deviceID, id.isEmpty || id.utf8.count > 128 {
            throw .invalidPushData("the device ID must have 1 to 128 bytes")
        }
        self.userID = checkedID
        self.configuration = configuration
        audioController = AudioController(
            deviceFormat: AudioFormat(sampleRate: configuration.audio.sampleRate, channels: 1))
        let tones = CallTones(controller: audioController, ringtone: configuration.audio.ringtone)
        audioSession = AudioSession(
            clock: clock,
            configuration: AudioSessionConfiguration(interruptionTimeout: configuration.interruptionTimeout),
            controller: audioController)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        self.group = group
        let (events, continuation) = AsyncStream.makeStream(of: VoiceClientEvent.self)
        (self.events, self.continuation) = (events, continuation)
        let state = ClientState(store: configuration.stateStore, userID: checkedID) { error in
            continuation.yield(.stateStoreFailed(.stateStore(error.description)))
        }
        let registration = ClientRegistration(
            userID: checkedID, configuration: configuration, sign: signRegistration, unixTime: unixTime, group: group,
            events: continuation, state: state)
        let push = ClientPush(
            userID: checkedID, configuration: configuration, unixTime: unixTime, group: group, events: continuation,
            registration: registration)
        self.registration = registration
        recovery = RegistrationRecovery(
            hostCount: registration.serviceHosts.count,
            backoff: .init(base: configuration.reconnectBackoffBase, cap: configuration.reconnectBackoffCap))
        self.push = push
        callNetworkLoss = CallNetworkLoss(timeout: configuration.networkLossTimeout)
        messages = ClientMessages(
            userID: checkedID, clock: clock, unixTime: unixTime, events: continuation, registration: registration,
            push: push, state: state)
        let statistics =
            configuration.uploadsCallStatistics
            ? CallStatisticsUploader(
                applicationKey: configuration.applicationKey,
                connection: RegistrationServiceConnection(
                    host: configuration.serviceHost, port: configuration.registrationPort,
                    transport: configuration.transport),
                state: state) : nil
        self.statistics = statistics
        calls = ClientCalls(
            configuration: configuration, clock: clock, audioSession: audioSession, tones: tones, events: continuation,
            registration: registration, push: push, statistics: statistics)
    }

    /// The address of record, `sip:<user ID>@<domain>` (known once registered).
    public var addressOfRecord: String? { registration.addressOfRecord }

    /// Whether the user is registered: incoming calls and messages reach this client (``startListening()``).
    public var isStarted: Bool { registration.isRegistered }

    /// Whether calls and messages can go out: started, or stopped listening (``stopListening()``) but not stopped.
    public var isConnected: Bool { registration.isConnected }

    /// The microphone and speaker of the next calls (``setAudioDevices(_:)``); starts as the configuration's.
    public var audioDevices: CallAudioDevices { calls.devices }

    /// Chooses the microphone and speaker (and voice processing) for calls placed or received from now on; a
    /// live call keeps its devices. The ringtone and the tone format stay the configuration's.
    public func setAudioDevices(_ devices: CallAudioDevices) { calls.devices = devices }

    /// Registers the user: credentials from the registration service (asking the app to sign when needed), then
    /// SIP REGISTER kept refreshed. Reports ``VoiceClientEvent/started`` or ``VoiceClientEvent/failed(_:)``, and
    /// sends messages kept while the client was not started.
    public func start() async {
        guard !terminated else { return emit(.failed(.invalidState("the client was terminated"))) }
        guard !registration.isRegistered else { return emit(.started) }
        if registration.isConnected {
            // Stopped listening: register the kept endpoint again.
            do {
                try await registration.register { [weak self] outcome in Task { await self?.refreshed(outcome) } }
                recover(.registered(host: registration.hostIndex))
                emit(.started)
            } catch {
                emit(.failed(error as? VoiceClientError ?? .network("\(error)")))
            }
            return
        }
        if inboxReader == nil {
            let incoming = messages.incoming
            inboxReader = Task { [weak self] in
                for await message in incoming { await self?.deliver(message) }
            }
        }
        do {
            try await connectAndRegister(failingOver: true)
            scheduleRenewal(after: registration.renewalDelay)
            watchNetwork()
            await audioSession.startEngine()
            await statistics?.use(registration.grant)
            emit(.started)
            startRetrying()
            await retryDueMessages()
        } catch {
            await tearDownSIP(unregister: false)
            emit(.failed(error as? VoiceClientError ?? .network("\(error)")))
        }
    }

    /// Connects to a service host and registers there: the first host, then (when `failingOver`) each further one
    /// in order while a host does not answer (a refusal is final); from the host the registration is on when not.
    private func connectAndRegister(failingOver: Bool, host first: Int = 0) async throws {
        let hosts = failingOver ? Array(first..<registration.serviceHosts.count) : [first]
        for (position, host) in hosts.enumerated() {
            do {
                let inbox = messages.inbox
                let agent = try await registration.connect(
                    host: host,
                    onRequest: { request, endpoint in ClientMessages.receive(request, on: endpoint, into: inbox) },
                    onFlowFailed: { [weak self] reason in Task { await self?.recover(.flowFailed(reason)) } })
                let incomingCalls = agent.incomingCalls
                let mediaHost = registration.mediaHost
                incomingReader?.cancel()
                incomingReader = Task { [weak self] in
                    for await call in incomingCalls { await self?.ring(call, mediaHost: mediaHost) }
                }
                try await registration.register { [weak self] outcome in
                    Task { await self?.refreshed(outcome) }
                }
                // While recovering, the attempt's success is reported by `registerAgain(on:sameHost:)`.
                if !recovery.isRecovering { recover(.registered(host: host)) }
                return
            } catch {
                let unanswered = Self.isUnanswered(error)
                guard unanswered, position + 1 < hosts.count else { throw error }
                await tearDownSIP(unregister: false)
            }
        }
    }

    /// Whether `error` says the host did not answer (worth trying another), rather than refused.
    private static func isUnanswered(_ error: any Error) -> Bool {
        switch error as? VoiceClientError {
        case .network, .registrationServiceUnavailable: true
        case .sipRegistrationFailed(let status, _): status == 408 || status == 503 || status == 504
        default: false
        }
    }

    /// Hangs up every call, unregisters, releases the audio session (deactivates it) and stops retrying;
    /// unsent messages are kept for the next `start()`. Reports ``VoiceClientEvent/stopped``.
    public func stop() async {
        retryTask?.cancel()
        retryTask = nil
        networkTask?.cancel()
        networkTask = nil
        recover(.stopped)
        await calls.hangUpAll()
        await statistics?.stop()
        await tearDownSIP(unregister: true)
        await calls.releaseAudioSession()
        emit(.stopped)
    }

    /// `stop()`, then the client is finished: its event loop is shut down and ``events`` ends.
    public func terminate() async {
        guard !terminated else { return }
        await stop()
        terminated = true
        try? await group.shutdownGracefully()
        messages.inbox.finish()
        continuation.finish()
    }

    // MARK: Calls

    /// A call object on this client's audio session and clock, not bound to SIP (the `call…` methods bind theirs
    /// to a dialog). The client ticks it for the no-answer timeout while started and hangs it up on `stop()`.
    public func newCall(
        id: CallID, direction: CallDirection, remote: String, headers: [String: String] = [:], viaPush: Bool = false
    )
        throws(VoiceClientError) -> Call
    {
        try calls.newCall(id: id, direction: direction, remote: remote, headers: headers, viaPush: viaPush)
    }

    /// Ends unanswered calls whose no-answer timeout has passed and forgets ended ones (the retry task calls
    /// this every `retryCheckInterval`; tests with a manual clock call it directly).
    public func tickCalls() async { await calls.tick() }

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
    public func callPhoneNumber(_ number: String, headers: [String: String] = [:]) async throws(VoiceClientError)
        -> Call
    {
        try await place(try CallTarget.phoneNumber(checking: number), headers: headers)
    }

    /// Joins the conference room `id` (at most 64 characters); the service routes it to its conference server.
    public func callConference(_ id: String, headers: [String: String] = [:]) async throws(VoiceClientError) -> Call {
        try await place(try CallTarget.conference(checking: id), headers: headers)
    }

    /// Incoming calls arrive while the client is started: `start()` registers a binding that the service sends
    /// INVITEs to and keeps it refreshed, and the client's socket stays open. Starts the client if needed, and
    /// registers it again after ``stopListening()`` (messages the service kept meanwhile arrive then).
    public func startListening() async {
        if !registration.isRegistered { await start() }
    }

    /// An outgoing-only client: unregisters, so the service sends no calls here (a caller gets *no answer* or a
    /// push) and keeps messages for later, while this client still places calls and sends messages on its
    /// credentials (renewed as before). Live calls go on. ``startListening()`` registers again.
    public func stopListening() async {
        recover(.stopped)
        await registration.unbind()
    }

    private func place(_ target: CallTarget, headers: [String: String]) async throws(VoiceClientError) -> Call {
        try await calls.place(target, headers: headers) { [weak self] recipient, payload in
            await self?.askToPush(recipient: recipient, payload: payload)
        }
    }

    private func ring(_ sip: SIPCall, mediaHost: String) async { await calls.ring(sip, mediaHost: mediaHost) }

    // MARK: Messages

    /// Sends `text` to each recipient (user IDs) as SIP MESSAGE, with custom `x-` headers; reports per recipient
    /// ``VoiceClientEvent/messageDelivered(id:recipient:timestamp:)``, `…StoredForLaterDelivery` or `…Failed`, and
    /// ``VoiceClientEvent/messageSent(_:)`` (here and on the user's other devices) once the service accepted it.
    /// A message that cannot be sent now is kept and retried for 12 hours.
    /// - Returns: the message ID.
    /// - Throws: bad recipients or headers, before anything is sent.
    @discardableResult
    public func send(message text: String, to recipients: [String], headers: [String: String] = [:])
        async throws(VoiceClientError) -> String
    {
        let id = try messages.add(text, to: recipients, headers: headers)
        if registration.isRegistered { await retryDueMessages() }
        return id
    }

    /// Messages not yet delivered, stored or failed.
    public var pendingMessages: [OutgoingMessage] { messages.pending }

    /// Sends every message whose attempt is due on the client's clock (the retry task calls this; a test with a
    /// manual clock calls it after advancing the clock).
    public func retryDueMessages() async { await messages.retryDue() }

    private func deliver(_ message: SIPMessage) { messages.deliver(message) }

    // MARK: Push

    /// The recipient's side of a push: parses the payload the app received, then connects and registers so that
    /// the held message or call arrives.
    /// - Returns: what the push was about (also readable without a client with ``PushPayload/parse(_:)``).
    /// - Throws: ``VoiceClientError/invalidPushData(_:)`` for a payload that is not one.
    @discardableResult
    public func relayPushPayload(_ payload: Data) async throws(VoiceClientError) -> PushPayload {
        let parsed = try push.relay(payload)
        if !registration.isRegistered { await start() }
        return parsed
    }

    /// Replaces this device's push data at the service (a new token): callers' clients and the service's managed
    /// push reach the device through it from now on; kept for the next starts.
    /// - Throws: ``VoiceClientError/invalidPushData(_:)`` above 1024 bytes; the service's refusal or
    ///   unavailability (nothing changed then).
    public func registerPushNotificationData(_ data: Data) async throws(VoiceClientError) {
        guard data.count <= PushData.maximumBytes else {
            throw .invalidPushData("push data is \(data.count) bytes, at most \(PushData.maximumBytes) allowed")
        }
        do { try await registration.updatePushData(data) } catch {
            throw error as? VoiceClientError ?? .network("\(error)")
        }
    }

    /// Removes this device's push data at the service: nobody pushes to it any more (the user's other devices
    /// keep theirs).
    public func unregisterPushNotificationData() async throws(VoiceClientError) {
        do { try await registration.updatePushData(nil) } catch {
            throw error as? VoiceClientError ?? .network("\(error)")
        }
    }

    /// The app learnt that the device's push token is no longer valid (PushKit's `didInvalidatePushTokenFor`, FCM's
    /// token deletion): the push data is removed at the service, so no caller pushes to a dead token.
    public func pushTokenWasInvalidated() async throws(VoiceClientError) { try await unregisterPushNotificationData() }

    private func askToPush(recipient: String, payload: PushPayload) async {
        await push.askToPush(recipient: recipient, payload: payload)
    }

    // MARK: Driving the parts

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

    private func refreshed(_ outcome: Result<SIPRegistrationResult, any Error>) {
        switch registration.refreshed(outcome) {
        case .nothing: break
        case .renewCredentials: Task { [weak self] in await self?.renewCredentials() }
        case .flowFailed(let reason): recover(.flowFailed(reason))
        }
    }

    // MARK: Registering again

    /// Feeds `input` to the recovery and carries out what it decides.
    private func recover(_ input: RegistrationRecovery.Input) {
        let actions = recovery.handle(
            input, now: ContinuousClock.now - recoveryOrigin, fraction: Double.random(in: 0..<1))
        for action in actions {
            switch action {
            case .reportLost(let reason):
                emit(.registrationLost(.registrationLost(reason)))
            case .wakeUp(let delay):
                recoveryWakeUp?.cancel()
                recoveryWakeUp = Task { [weak self] in
                    try? await Task.sleep(for: delay)
                    guard !Task.isCancelled else { return }
                    await self?.recover(.tick)
                }
            case .register(let host, let sameHost):
                Task { [weak self] in await self?.registerAgain(on: host, sameHost: sameHost) }
            case .reportRegistered(let host):
                networkWatch = NetworkWatch(inUse: registration.currentRoute() ?? registration.mediaHost)
                emit(.reregistered(serviceHost: registration.serviceHosts[host]))
                Task { [weak self] in await self?.retryDueMessages() }
            }
        }
    }

    // MARK: Network changes

    /// Looks at the route to the service every `networkCheckInterval` while started.
    private func watchNetwork() {
        networkTask?.cancel()
        guard let interval = configuration.networkCheckInterval else { return }
        networkWatch = NetworkWatch(inUse: registration.mediaHost)
        networkTask = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                guard !Task.isCancelled, let self else { return }
                await self.checkNetwork()
            }
        }
    }

    private func checkNetwork() async {
        guard registration.isConnected else { return }
        let addresses = InterfaceAddresses.current()
        // The established calls' media is bound to the address in use before any change seen now.
        let established = await calls.established()
        let lossActions = callNetworkLoss.observe(
            addresses: addresses, callAddress: established.isEmpty ? nil : networkWatch.inUse ?? registration.mediaHost,
            now: ContinuousClock.now - recoveryOrigin)
        for action in lossActions {
            for call in established {
                switch action {
                case .reconnecting: await call.yield(.reconnecting, toApp: true, toDriver: false)
                case .reconnected: await call.yield(.reconnected, toApp: true, toDriver: false)
                case .endCalls(let reason): _ = try? await call.dialog(.failed(.network(reason)))
                }
            }
        }
        switch networkWatch.observe(route: registration.currentRoute(), addresses: addresses) {
        case .unchanged:
            break
        case .lost(let old):
            emit(.networkChanged(localAddress: nil))
            registration.moveTo(nil)
            recover(.flowFailed("\(old) is gone and there is no route to the service"))
        case .changed(let old, let new):
            emit(.networkChanged(localAddress: new))
            registration.moveTo(new)
            recover(.networkChanged("the route to the service now leaves from \(new), not \(old ?? "nowhere")"))
        }
    }

    /// One attempt to register again: on a new connection to the same host, or on a new endpoint towards
    /// another host (calls on the old one end: their dialogs went through the node that failed).
    private func registerAgain(on host: Int, sameHost: Bool) async {
        guard !terminated, recovery.isRecovering else { return }
        // Over TLS a new connection from the same endpoint is enough; a UDP endpoint is bound to its old address.
        if sameHost, registration.isRegistered, registration.serverPeer?.transport == .tls {
            recover(await registration.registerAgainOnNewConnection() ? .attemptSucceeded : .attemptFailed("refused"))
            return
        }
        await tearDownSIP(unregister: false)
        do {
            try await connectAndRegister(failingOver: false, host: host)
            // `stop()` ran meanwhile: leave nothing registered behind it.
            guard recovery.isRecovering, !terminated else { return await tearDownSIP(unregister: true) }
            scheduleRenewal(after: registration.renewalDelay)
            recover(.attemptSucceeded)
        } catch {
            recover(.attemptFailed("\(error)"))
        }
    }

    /// Renews the credentials after `delay` (nil: no renewal), asking the app to sign again, so a registration
    /// outlives them.
    private func scheduleRenewal(after delay: Duration?) {
        renewalTask?.cancel()
        guard let delay else { return }
        renewalTask = Task { [weak self] in
            try? await Task.sleep(for: delay)
            guard !Task.isCancelled, let self else { return }
            await self.renewCredentials()
        }
    }

    private func renewCredentials() async {
        guard registration.isConnected else { return }
        scheduleRenewal(after: await registration.renewCredentials())
        await statistics?.use(registration.grant)
    }

    private func tearDownSIP(unregister: Bool) async {
        renewalTask?.cancel()
        renewalTask = nil
        await registration.tearDown(unregister: unregister)
        incomingReader?.cancel()
        incomingReader = nil
    }

    private func emit(_ event: VoiceClientEvent) { continuation.yield(event) }
}
