import VoiceEngine
import VoiceSIP
import VoiceWebRTC

/// The client's calls: placing them (an RTP socket, the INVITE through the service, a ``Call`` bound to its
/// dialog by a ``CallLink``), ringing the incoming ones, the no-answer timeout, and hanging them all up when the
/// client stops. They share the client's audio session, tones and clock.
///
/// Part of ``VoiceClient`` and isolated to it (not `Sendable`; its async methods run on the client's executor).
final class ClientCalls {
    private let configuration: VoiceClientConfiguration
    private let clock: any MediaClock
    private let audioSession: AudioSession
    private let tones: CallTones
    private let events: AsyncStream<VoiceClientEvent>.Continuation
    /// The user agent and the domain calls go through.
    private let registration: ClientRegistration
    private let push: ClientPush
    /// Uploads each bound call's statistics when it has ended (nil: the app switched that off).
    private let statistics: CallStatisticsUploader?
    /// Every call not yet ended, bound to SIP or not (``VoiceClient/newCall(id:direction:remote:headers:viaPush:)``).
    private var calls: [Call] = []
    /// The calls bound to a SIP dialog.
    private var links: [CallLink] = []
    /// The microphone and speaker of the next calls; starts as the configuration's.
    var devices: CallAudioDevices

    init(
        configuration: VoiceClientConfiguration, clock: any MediaClock, audioSession: AudioSession, tones: CallTones,
        events: AsyncStream<VoiceClientEvent>.Continuation, registration: ClientRegistration, push: ClientPush,
        statistics: CallStatisticsUploader? = nil
    ) {
        self.statistics = statistics
        self.configuration = configuration
        self.clock = clock
        self.audioSession = audioSession
        self.tones = tones
        self.events = events
        self.registration = registration
        self.push = push
        devices = configuration.audio
    }

    /// A call object on the client's audio session and clock, not bound to SIP.
    func newCall(id: CallID, direction: CallDirection, remote: String, headers: [String: String], viaPush: Bool)
        throws(VoiceClientError) -> Call
    {
        _ = try CustomHeaders.validate(headers)
        let call = Call(
            id: id, direction: direction, remote: remote, headers: headers, audioSession: audioSession, clock: clock,
            noAnswerTimeout: configuration.noAnswerTimeout, viaPush: viaPush)
        calls.append(call)
        return call
    }

    /// The calls whose media runs (established, not ended).
    nonisolated(nonsending) func established() async -> [Call] {
        var running: [Call] = []
        for call in calls where await call.state == .established { running.append(call) }
        return running
    }

    /// Moves every call whose media runs to `host` (the client's address after a network change) by an ICE
    /// restart (``CallLink/restartICE(host:turnServers:)``), all at once.
    /// - Returns: whether each of them selected a new pair.
    nonisolated(nonsending) func restartICE(host: String, turnServers: [TURNServer]) async -> Bool {
        var running: [CallLink] = []
        for link in links where await link.call.state == .established { running.append(link) }
        return await withTaskGroup(of: Bool.self) { group in
            for link in running { group.addTask { await link.restartICE(host: host, turnServers: turnServers) } }
            return await group.reduce(true) { $0 && $1 }
        }
    }

    /// Ends unanswered calls whose no-answer timeout has passed and forgets ended ones.
    nonisolated(nonsending) func tick() async {
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

    /// Places a call through the service. For another user of the app, a callee the service keeps (no
    /// connection) makes `askToPush` run with the call's payload.
    /// - Throws: ``VoiceClientError/invalidCall(_:)`` (headers), ``VoiceClientError/invalidState(_:)`` (not
    ///   started), ``VoiceClientError/network(_:)``, ``VoiceClientError/turnRefused(_:)`` (the grant's TURN
    ///   credentials were refused); nothing was sent then.
    nonisolated(nonsending) func place(
        _ target: CallTarget, headers: [String: String],
        askToPush: @escaping @Sendable (_ recipient: String, _ payload: PushPayload) async -> Void
    ) async throws(VoiceClientError) -> Call {
        let checked: [(name: String, value: String)]
        do { checked = try CustomHeaders.validate(headers) } catch { throw .invalidCall(Self.reason(error)) }
        guard let agent = registration.agent, let grant = registration.grant else {
            throw .invalidState("the client is not started")
        }
        let media: CallLink.BoundMedia
        do {
            media = try await CallLink.bindMedia(
                host: registration.mediaHost, signallingEncrypted: registration.signallingEncrypted,
                iceRole: .controlling, turnServers: grant.turnServers)
        } catch {
            throw .network("cannot bind the RTP socket: \(error)")
        }
        if let refusal = media.turnRefusal {
            media.ice.stop()
            await media.transport.close()
            throw .turnRefused(refusal)
        }
        let sip: SIPCall
        do {
            sip = try await agent.call(
                target.requestURI(domain: grant.domain), offering: media.capabilities,
                headers: checked.map { ($0.name, $0.value) })
        } catch {
            await media.transport.close()
            throw .network("INVITE: \(error)")
        }
        let call = Call(
            id: CallID(sip.callID), direction: .outgoing, remote: target.description, headers: headers,
            audioSession: audioSession,
            clock: clock, noAnswerTimeout: configuration.noAnswerTimeout)
        let link = CallLink(
            call: call, sip: sip, media: media, devices: devices, tones: tones, clock: clock,
            health: configuration.health)
        if case .user(let callee) = target {
            let payload = push.payload(.call, id: sip.callID, headers: headers)
            await link.whenPushPending { await askToPush(callee, payload) }
            // The caller gave up while the callee's devices were being pushed: they are told the call is off.
            let canceled = push.payload(.call, id: sip.callID, headers: headers, canceled: true)
            await link.whenPushedCallCanceled { await askToPush(callee, canceled) }
        }
        await adopt(link)
        return call
    }

    /// An INVITE from the service: RTP socket, 180 Ringing, a ringing ``Call`` for the app; an offer the client
    /// cannot meet (no common codec or SRTP keying) is refused with 488 before it rings, and no ``Call`` appears.
    nonisolated(nonsending) func ring(_ sip: SIPCall, mediaHost: String) async {
        let media: CallLink.BoundMedia
        do {
            // A refused relay allocation leaves the answer with its host and server-reflexive candidates.
            media = try await CallLink.bindMedia(
                host: mediaHost, signallingEncrypted: registration.signallingEncrypted, iceRole: .controlled,
                turnServers: registration.grant?.turnServers ?? [])
        } catch {
            await sip.reject(status: 500, reason: "Cannot Bind Media")
            return
        }
        do { try await sip.refuseUnacceptableOffer(media.capabilities) } catch {
            await media.transport.close()
            return
        }
        var headers: [String: String] = [:]
        for field in sip.requestHeaders { headers[field.name] = field.value }
        let caller = sip.remote.uri.user.map(SIPUserPart.unescape) ?? sip.remote.uri.description
        let viaPush = push.takePushedCall()
        let call = Call(
            id: CallID(sip.callID), direction: .incoming, remote: caller, headers: headers, audioSession: audioSession,
            clock: clock,
            noAnswerTimeout: configuration.noAnswerTimeout, viaPush: viaPush)
        _ = try? await sip.ring()
        await adopt(
            CallLink(
                call: call, sip: sip, media: media, devices: devices, tones: tones, clock: clock,
                health: configuration.health))
        events.yield(.incomingCall(IncomingCall(call: call, caller: caller, headers: headers, viaPush: viaPush)))
    }

    /// Hangs up every call and waits (at most five seconds in all) until their BYEs and CANCELs are out and their
    /// media stopped, so they leave before the endpoint closes and before a program that stops the client exits;
    /// then forgets them. On a busy machine stopping a call's media can take over a second.
    nonisolated(nonsending) func hangUpAll() async {
        for call in calls where await call.state != .ended { _ = try? await call.hangup() }
        let deadline = ContinuousClock.now + .seconds(5)
        for link in links {
            while await !link.isFinished, ContinuousClock.now < deadline {
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
        calls.removeAll()
        links.removeAll()
    }

    /// Ends a call the audio session still holds and deactivates the session.
    nonisolated(nonsending) func releaseAudioSession() async {
        let state = await audioSession.state
        if let call = state.phase.call { _ = try? await audioSession.callEnded(call.id, cause: .localHangup) }
        if await audioSession.state.applicationActivated { _ = try? await audioSession.send(.applicationDeactivate) }
    }

    nonisolated(nonsending) private func adopt(_ link: CallLink) async {
        calls.append(link.call)
        links.append(link)
        if let statistics { await link.whenFinished { call in await statistics.callEnded(call) } }
        await link.call.bindDeviceSwitch { devices throws(CallDeviceError) in try await link.setDevices(devices) }
        link.run()
    }

    private static func reason(_ error: VoiceClientError) -> String {
        if case .invalidMessage(let reason) = error { return reason }
        return error.description
    }
}
