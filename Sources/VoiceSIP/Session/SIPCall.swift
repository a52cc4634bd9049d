import NIOCore
import VoiceRTP
import VoiceSDP

/// One call: an INVITE dialog with its SDP offer/answer (RFC 3261 §13–15, RFC 3264), driven by a calling client.
///
/// **Outgoing** (from `SIPUserAgent.call`): `events` brings `.progress` (180/183, with early media when the 183
/// carries SDP), then `.established` (the 2xx, ACKed by the call) or `.ended` with the final status and reason.
/// `hangUp()` before the answer sends CANCEL (the call ends `cancelled`, 487); after it, BYE.
///
/// **Incoming** (from `SIPUserAgent.incomingCalls`): read `remoteOffer`, `remote` and `requestHeaders` (the
/// INVITE's `X-` headers), then `ring()` (180, or 183 with early media), `answer(with:)` (200 with our SDP; the call
/// retransmits it until the ACK, then `.established`) or `reject(status:)`. A CANCEL from the caller ends the call
/// `cancelled` (200 to the CANCEL, 487 to the INVITE).
///
/// **In the call**: `hold()` (re-INVITE with `a=sendonly`), `resume()` (`a=sendrecv`), `rekey()` (fresh SDES keys),
/// each returning the new `NegotiatedAudio` and reported as `.mediaUpdated`; `sendDTMF(_:)` sends keys as SIP INFO
/// and the peer's INFO keys are answered 200 and reported as `.dtmfReceived`; the peer's re-INVITEs are answered
/// from the same capabilities and reported as `.mediaUpdated(byPeer: true)`. A re-INVITE crossing ours is answered
/// 491 and ours, refused with 491, is retried after RFC 3261 §14.1's random delay. A request whose CSeq is not
/// above the last one is answered 500 (§12.2.2). The media itself (a `LiveCall` made with
/// `MediaStreamConfiguration(negotiated:)`) is the client's: the call says what was negotiated and when.
///
/// The decisions are `SIPInviteSession`'s, a state machine; the call feeds it what the endpoint receives, what the
/// user asks and what its timers say, and carries out what it answers: it sends, schedules on the event loop and
/// resumes the awaiting methods. All methods may be called from any task; the call's state lives on the endpoint's
/// event loop.
public final class SIPCall: @unchecked Sendable {
    public enum Direction: Sendable { case outgoing, incoming }

    public let direction: Direction
    public let callID: String
    /// The other party: To of an outgoing call, From of an incoming one.
    public let remote: SIPAddress
    /// The Request-URI of the INVITE: whom the caller asked for (a conference server reads the room from it; a
    /// proxy may have changed To's URI's meaning, not this one's). For an outgoing call, the target.
    public let requestURI: SIPURI
    /// The incoming INVITE's SDP offer (nil for an outgoing call, or an INVITE without a body).
    public let remoteOffer: SessionDescription?
    /// The custom `X-` headers of the incoming INVITE (empty for an outgoing call).
    public let requestHeaders: [SIPHeaders.Field]
    public let events: AsyncStream<SIPCallEvent>

    private let continuation: AsyncStream<SIPCallEvent>.Continuation
    // Strong: the agent keeps the call until it ends (then forgets it), the call keeps its agent meanwhile.
    private let agent: SIPUserAgent
    private var endpoint: SIPEndpoint { agent.endpoint }
    private var eventLoop: any EventLoop { agent.endpoint.eventLoop }
    /// Outgoing: where the INVITE (and its CANCEL) goes.
    private let invitePeer: SIPPeer?
    /// The session's clock starts here.
    private let origin = NIODeadline.now()

    // State below: on the event loop only.
    private var session: SIPInviteSession
    private var timers: [SIPInviteTimer: Scheduled<Void>] = [:]
    /// The user's commands awaiting their `.complete`, and the last command id given out.
    private var commands: [SIPInviteSession.CommandID: EventLoopPromise<NegotiatedAudio?>] = [:]
    private var lastCommand = 0

    init(
        outgoing invite: SIPMessage, offer: SessionDescription, capabilities: AudioCapabilities, peer: SIPPeer,
        contact: SIPURI, agent: SIPUserAgent
    ) {
        direction = .outgoing
        callID = invite.callID ?? ""
        remote = invite.to ?? SIPAddress(uri: invite.requestURI ?? SIPURI(host: "invalid"))
        requestURI = invite.requestURI ?? remote.uri
        remoteOffer = nil
        requestHeaders = []
        invitePeer = peer
        self.agent = agent
        session = SIPInviteSession(
            outgoing: invite, offer: offer, capabilities: capabilities,
            configuration: agent.sessionConfiguration(contact: contact, direction: .outgoing),
            random: SystemRandomNumberGenerator())
        (events, continuation) = AsyncStream.makeStream(of: SIPCallEvent.self, bufferingPolicy: .unbounded)
    }

    init(incoming request: SIPIncomingRequest, offer: SessionDescription?, contact: SIPURI, agent: SIPUserAgent) {
        direction = .incoming
        callID = request.message.callID ?? ""
        remote = request.message.from ?? SIPAddress(uri: SIPURI(host: "invalid"))
        requestURI = request.message.requestURI ?? SIPURI(host: "invalid")
        remoteOffer = offer
        requestHeaders = request.message.customHeaders
        invitePeer = nil
        self.agent = agent
        session = SIPInviteSession(
            incoming: request, offer: offer,
            configuration: agent.sessionConfiguration(contact: contact, direction: .incoming),
            random: SystemRandomNumberGenerator())
        (events, continuation) = AsyncStream.makeStream(of: SIPCallEvent.self, bufferingPolicy: .unbounded)
    }

    /// The media as last negotiated (nil before an answer).
    public var media: NegotiatedAudio? {
        get async { try? await eventLoop.submit { self.session.negotiated }.get() }
    }

    /// The dialog (nil until the peer's or our tag made one).
    public var currentDialog: SIPDialog? {
        get async { try? await eventLoop.submit { self.session.dialog }.get() }
    }

    // MARK: The user's commands

    /// Sends 180 Ringing, or with `earlyMedia` 183 Session Progress with our SDP answer (the answer the 200 will
    /// repeat). Returns the early media's negotiation, if any.
    @discardableResult
    public func ring(earlyMedia capabilities: AudioCapabilities? = nil, headers: [(String, String)] = []) async throws
        -> NegotiatedAudio?
    {
        try await perform(.ring(earlyMedia: capabilities, headers: headers))
    }

    /// Before ringing: refuses the call with `488 Not Acceptable Here` and a `Warning` (305 "Incompatible media
    /// format" when no codec is common) when `capabilities` cannot meet its offer; the call then ends `failed` and
    /// the error is thrown. Returns without effect when the offer can be met.
    public func refuseUnacceptableOffer(_ capabilities: AudioCapabilities) async throws {
        _ = try await perform(.refuseUnacceptableOffer(capabilities))
    }

    /// Answers with 200 OK and an SDP answer made from `capabilities`. An offer that cannot be met (no common
    /// codec, no common SRTP suite) is refused with 488 and a Warning and the call ends `failed`; the error is
    /// thrown.
    @discardableResult
    public func answer(with capabilities: AudioCapabilities, headers: [(String, String)] = []) async throws
        -> NegotiatedAudio
    {
        try await performNegotiating(.answer(capabilities, headers: headers))
    }

    /// Refuses the incoming call with `status` (486 Busy Here by default, 603 Decline, …).
    public func reject(status: Int = 486, reason: String? = nil, headers: [(String, String)] = []) async {
        _ = try? await perform(.reject(status: status, reason: reason, headers: headers))
    }

    /// Puts the peer on hold: a re-INVITE offering `a=sendonly` (`inactive` when we are held too), same keys.
    @discardableResult
    public func hold() async throws -> NegotiatedAudio { try await reoffer(direction: .sendonly, freshKeys: false) }

    /// Takes the peer off hold: a re-INVITE offering `a=sendrecv`, same keys.
    @discardableResult
    public func resume() async throws -> NegotiatedAudio { try await reoffer(direction: .sendrecv, freshKeys: false) }

    /// New SRTP keys: a re-INVITE offering fresh SDES keys in the current direction.
    @discardableResult
    public func rekey() async throws -> NegotiatedAudio { try await reoffer(direction: nil, freshKeys: true) }

    /// Sends a re-INVITE with a new offer and returns the negotiated result once the peer's 2xx is ACKed. While
    /// another INVITE of the dialog is in progress it waits (up to 64·T1); 491 is retried after a random back-off
    /// (up to 3 times); any other final failure is thrown with its status.
    /// - Parameter offering: capabilities to offer from now on instead of the call's (e.g. a new DTLS
    ///   certificate's fingerprint); kept only when the peer accepts them.
    public func reoffer(direction: MediaDirection?, freshKeys: Bool, offering: AudioCapabilities? = nil) async throws
        -> NegotiatedAudio
    {
        try await performNegotiating(.reoffer(direction: direction, freshKeys: freshKeys, offering: offering))
    }

    /// Readies the answer to an ICE restart the peer may start (a re-offer with new `a=ice-ufrag/ice-pwd`,
    /// RFC 8445 §9): such a re-INVITE is answered with `parameters`, any other with the call's current ones. The
    /// session answers re-INVITEs on its own as they come, so the new credentials must be ready before.
    public func prepareICERestart(_ parameters: SDPICEParameters) async {
        _ = try? await perform(.prepareICERestart(parameters))
    }

    /// Ends the call: CANCEL before an answer (outgoing), 603 Decline (incoming, unanswered), BYE after. Returns
    /// when the call has ended; `headers` (e.g. `X-Reason`) go on the BYE, CANCEL's INVITE or the rejection.
    public func hangUp(headers: [(String, String)] = []) async {
        _ = try? await perform(.hangUp(headers: headers))
    }

    /// Sends `digits` as SIP INFO requests (`application/dtmf-relay`, one per key, each waiting for the previous
    /// one's 200): the DTMF fallback for a peer that did not negotiate RFC 4733 telephone-events (with them, send
    /// the keys in the media instead). Throws the first refusal or timeout; the keys after it are not sent.
    public func sendDTMF(_ digits: [DTMFDigit], durationMilliseconds: Int = 160) async throws {
        for digit in digits {
            _ = try await perform(.sendDTMF(digit, durationMilliseconds: durationMilliseconds))
        }
    }

    /// Runs `command` in the session on the event loop and returns its result once the session completes it.
    private func perform(_ command: SIPInviteSession.Command) async throws -> NegotiatedAudio? {
        try await eventLoop.flatSubmit { [self] () -> EventLoopFuture<NegotiatedAudio?> in
            lastCommand += 1
            let id = SIPInviteSession.CommandID(lastCommand)
            let promise = eventLoop.makePromise(of: NegotiatedAudio?.self)
            commands[id] = promise
            handle(.command(command, id))
            return promise.futureResult
        }.get()
    }

    /// `perform` for the commands whose success always carries media (answer, re-offer).
    private func performNegotiating(_ command: SIPInviteSession.Command) async throws -> NegotiatedAudio {
        guard let media = try await perform(command) else { throw SIPCallError("no media was negotiated") }
        return media
    }

    // MARK: From the user agent, on the event loop

    func startOutgoing() {
        endpoint.executeIfOpen { self.handle(.start) }
    }

    /// A request of the peer's for this call (in the dialog, a CANCEL, an ACK).
    func received(_ request: SIPIncomingRequest) { handle(.request(request)) }

    /// A 2xx to our INVITE that no transaction claimed (retransmitted, or another fork's).
    func receivedStray(_ response: SIPMessage) { handle(.strayResponse(response)) }

    /// Our endpoint is closing: the call ends now (as the hang-up it was ending with, if any), since no BYE,
    /// retransmission or response can pass any more.
    func endpointClosed() { handle(.endpointClosed) }

    // MARK: Carrying out the session's actions

    private func handle(_ input: SIPInviteSession.Input) {
        let now = SIPInstant(.nanoseconds(Int64(NIODeadline.now().uptimeNanoseconds - origin.uptimeNanoseconds)))
        for action in session.handle(input, at: now) { execute(action) }
    }

    /// Feeds an input back from a task off the loop (dropped once the endpoint closes: the call has ended then).
    private func handleLater(_ input: SIPInviteSession.Input) {
        endpoint.executeIfOpen { self.handle(input) }
    }

    private func execute(_ action: SIPInviteAction) {
        switch action {
        case .send(let request, let destination, let purpose):
            send(request, to: destination, purpose: purpose)
        case .sendAck(let request, let nextHop):
            guard let peer = try? SIPPeer.resolving(nextHop, transport: agent.configuration.transport) else { return }
            endpoint.sendStateless(request, to: peer)
        case .respond(let response, let request):
            endpoint.respond(response, to: request)
        case .startTimer(let timer, let deadline):
            timers[timer]?.cancel()
            timers[timer] = eventLoop.scheduleTask(deadline: origin + .nanoseconds(deadline.nanoseconds)) { [self] in
                timers[timer] = nil
                handle(.timer(timer))
            }
        case .cancelTimer(let timer):
            timers.removeValue(forKey: timer)?.cancel()
        case .emit(let event):
            continuation.yield(event)
            if case .ended = event {
                continuation.finish()
                agent.forget(self)
            }
        case .complete(let id, let result):
            guard let promise = commands.removeValue(forKey: id) else { return }
            promise.completeWith(result)
        }
    }

    /// Sends a request in a client transaction (through the agent's sender, which answers digest challenges; a
    /// CANCEL straight through the endpoint) and feeds its responses or its failure back to the session.
    private func send(_ request: SIPMessage, to destination: SIPInviteDestination, purpose: SIPInviteRequestPurpose) {
        let peer: SIPPeer
        switch destination {
        case .inviteTarget:
            guard let invitePeer else { return }
            peer = invitePeer
        case .nextHop(let uri):
            do { peer = try SIPPeer.resolving(uri, transport: agent.configuration.transport) } catch {
                handleLater(.requestFailed(purpose, error))
                return
            }
        }
        if purpose == .cancel {
            _ = endpoint.request(request, to: peer)
            return
        }
        let sender = agent.sender
        let onProvisional: (@Sendable (SIPMessage) -> Void)? =
            purpose == .invite ? { @Sendable [self] provisional in handleLater(.provisional(provisional)) } : nil
        Task {
            do {
                let response = try await sender.send(request, to: peer, onProvisional: onProvisional)
                handleLater(.response(response, to: purpose))
            } catch {
                handleLater(.requestFailed(purpose, error))
            }
        }
    }
}

extension SIPUserAgent {
    /// What a call's session needs from the agent: our Contact, the endpoint's timers, the 491 back-off of our role.
    func sessionConfiguration(contact: SIPURI, direction: SIPCall.Direction) -> SIPInviteSession.Configuration {
        SIPInviteSession.Configuration(
            contact: contact, timers: endpoint.configuration.timers,
            glareBackoff: direction == .outgoing
                ? configuration.glareBackoffAsCaller : configuration.glareBackoffAsCallee)
    }
}
