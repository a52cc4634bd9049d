import VoiceSDP
import VoiceRTP

/// One INVITE dialog's signalling (RFC 3261 §13–15, RFC 3264 offer/answer, RFC 6026's 2xx handling) as a state
/// machine: `handle(_:at:)` takes what happened — a message received, the outcome of a request sent, a timer
/// firing, a user's command — with the current time, and returns what to do, in order (`SIPInviteAction`).
///
/// Pure: it reads no clock, opens no socket, awaits nothing and draws its random numbers (tags, CSeq, SDP session
/// ids, the 491 back-off, Retry-After) from the generator it is given; only SRTP keys come from the system's secure
/// source. `SIPCall` runs it on an endpoint's event loop; the tests run it with a table of inputs and times.
///
/// The files beside this one hold its parts: `+Outgoing` (the caller's INVITE, CANCEL, forked 2xx), `+Incoming`
/// (ring, answer, reject, CANCEL, the 2xx retransmitted until its ACK, held BYE) and `+Reinvite` (our re-offers with
/// their 491 back-off, and the peer's re-INVITEs).
struct SIPInviteSession: Sendable {
    enum Phase: Equatable, Sendable {
        /// Outgoing: INVITE sent, no final response. Incoming: INVITE received, no final response sent.
        case early
        /// Incoming: 2xx sent, waiting for the ACK.
        case answered
        case confirmed
        /// BYE or CANCEL sent (or a BYE held for the ACK of our 2xx), waiting for the end.
        case ending
        case ended
    }

    /// Names a user's command until its `.complete` action; the owner picks them, unique per session.
    struct CommandID: Hashable, Sendable, CustomStringConvertible {
        var value: Int
        init(_ value: Int) { self.value = value }
        var description: String { "#\(value)" }
    }

    /// What the user of a call asks for.
    enum Command: Sendable {
        /// Incoming: 180, or 183 with our SDP answer for early media.
        case ring(earlyMedia: AudioCapabilities?, headers: [(String, String)])
        /// Incoming, before ringing: 488 with a Warning when these capabilities cannot meet the offer.
        case refuseUnacceptableOffer(AudioCapabilities)
        /// Incoming: 200 with our SDP answer, retransmitted until the ACK.
        case answer(AudioCapabilities, headers: [(String, String)])
        /// Incoming: a final 3xx–6xx.
        case reject(status: Int, reason: String?, headers: [(String, String)])
        /// A re-INVITE with a new offer: a direction (hold, resume), fresh keys, or other capabilities.
        case reoffer(direction: MediaDirection?, freshKeys: Bool, offering: AudioCapabilities?)
        /// CANCEL, 603 or BYE, whichever the phase calls for; completes when the call has ended.
        case hangUp(headers: [(String, String)])
        /// One DTMF key as a SIP INFO (`application/dtmf-relay`); completes with its final response.
        case sendDTMF(DTMFDigit, durationMilliseconds: Int)
        /// What the answer to the peer's next ICE restart carries; completes at once.
        case prepareICERestart(SDPICEParameters)
    }

    /// Everything that moves the session.
    enum Input: Sendable {
        /// Outgoing: send the INVITE.
        case start
        /// A provisional response to the INVITE we sent.
        case provisional(SIPMessage)
        /// The final response to a request we sent for `purpose`.
        case response(SIPMessage, to: SIPInviteRequestPurpose)
        /// A request we sent for `purpose` got no final response: Timer B/F, a transport failure, an unresolvable
        /// next hop.
        case requestFailed(SIPInviteRequestPurpose, any Error)
        /// A response no transaction claimed: a 2xx to our INVITE retransmitted, or another fork's 2xx.
        case strayResponse(SIPMessage)
        /// A request of the peer's for this call: in the dialog, a CANCEL of the INVITE, an ACK.
        case request(SIPIncomingRequest)
        case timer(SIPInviteTimer)
        case command(Command, CommandID)
        /// The endpoint is closing: nothing can be sent or received any more.
        case endpointClosed
    }

    /// What does not change during a call.
    struct Configuration: Sendable {
        /// Our Contact, on dialog-creating responses and target-refresh requests.
        var contact: SIPURI
        var timers: SIPTimerConfiguration
        /// How long to wait, in seconds, before retrying a re-INVITE refused with 491 (RFC 3261 §14.1).
        var glareBackoff: ClosedRange<Double>
    }

    let direction: SIPCall.Direction
    let configuration: Configuration
    var random: any RandomNumberGenerator & Sendable
    let localTag: String

    var phase = Phase.early
    var dialog: SIPDialog?
    var capabilities: AudioCapabilities?
    /// Our ICE credentials and candidates for the answer to a re-offer that restarts ICE (``Command/prepareICERestart(_:)``).
    var iceRestartAnswer: SDPICEParameters?
    var localDescription: SessionDescription?
    var negotiated: NegotiatedAudio?
    /// The INVITE: as we built it (without Via) when outgoing, as received when incoming.
    let invite: SIPMessage
    /// Incoming: the INVITE's offer (nil without a body) and its server transaction.
    let remoteOffer: SessionDescription?
    let incomingInvite: SIPIncomingRequest?

    /// Outgoing: the last provisional response (its Via names the INVITE transaction a CANCEL must match), whether
    /// hang-up was asked before one came, the ACK of the 2xx that made the dialog.
    var lastProvisional: SIPMessage?
    var cancelWanted = false
    var ackOfInvite: SIPMessage?
    /// Outgoing: the ACK and dialog of each other fork's 2xx, by its To tag (ended with BYE, ACKed again on
    /// retransmission), and 2xx that came before the first one was handled.
    var forkAcknowledgements: [String: (ack: SIPMessage, dialog: SIPDialog)] = [:]
    var overtakingResponses: [SIPMessage] = []

    /// A 2xx we retransmit until its ACK (§13.3.1.4), the INVITE (first or re-INVITE) it answers, the interval to
    /// the next retransmission and when it was first sent.
    struct Unacknowledged: Sendable {
        var response: SIPMessage
        var request: SIPIncomingRequest
        var interval: Duration
        var since: SIPInstant
    }
    var unacknowledged: Unacknowledged?
    /// A hang-up asked for before the ACK of our 2xx came. RFC 3261 §15 forbids the BYE until that ACK (or the end
    /// of the 2xx's retransmissions, 64·T1 after it was first sent): the BYE waits here, and the 2xx is still
    /// retransmitted meanwhile.
    var heldBye: (headers: [(String, String)], cause: SIPCallEnd)?
    /// The media of the peer's re-INVITE we answered, reported when its ACK comes.
    var pendingUpdateNegotiated: NegotiatedAudio?

    /// Our re-offers: the one whose re-INVITE is in progress (a crossing one from the peer gets 491), those waiting
    /// for another INVITE of the dialog to finish, those backing off after a 491.
    var reofferInProgress: Reoffer?
    var waitingReoffers: [Reoffer] = []
    var backingOffReoffers: [CommandID: Reoffer] = [:]

    /// How the call ends once the BYE we sent is answered, and the hang-ups waiting for the end.
    var byeCause: SIPCallEnd?
    var endWaiters: [CommandID] = []

    var runningTimers: Set<SIPInviteTimer> = []
    /// While `handle` runs: its time, and the actions it has decided so far.
    var now = SIPInstant.origin
    var actions: [SIPInviteAction] = []

    /// An outgoing call: `invite` as built (From with our tag, no Via), `offer` made from `capabilities`.
    init(
        outgoing invite: SIPMessage, offer: SessionDescription, capabilities: AudioCapabilities,
        configuration: Configuration, random: any RandomNumberGenerator & Sendable
    ) {
        direction = .outgoing
        self.configuration = configuration
        self.random = random
        localTag = invite.from?.tag ?? ""
        self.invite = invite
        remoteOffer = nil
        incomingInvite = nil
        localDescription = offer
        self.capabilities = capabilities
    }

    /// An incoming call: the INVITE outside a dialog and its offer, if it had one.
    init(
        incoming request: SIPIncomingRequest, offer: SessionDescription?, configuration: Configuration,
        random: any RandomNumberGenerator & Sendable
    ) {
        direction = .incoming
        self.configuration = configuration
        self.random = random
        localTag = String(self.random.next() as UInt64, radix: 36)
        invite = request.message
        remoteOffer = offer
        incomingInvite = request
    }

    /// Takes one input at `now` and returns what to do about it, in order.
    mutating func handle(_ input: Input, at now: SIPInstant) -> [SIPInviteAction] {
        self.now = now
        switch input {
        case .start:
            actions.append(.send(invite, to: .inviteTarget, purpose: .invite))
        case .provisional(let response):
            receivedProvisional(response)
        case .response(let response, let purpose):
            receivedResponse(response, to: purpose)
        case .requestFailed(let purpose, let error):
            requestFailed(purpose, error)
        case .strayResponse(let response):
            receivedStray(response)
        case .request(let request):
            received(request)
        case .timer(let timer):
            fired(timer)
        case .command(let command, let id):
            perform(command, id)
        case .endpointClosed:
            end(byeCause ?? heldBye?.cause ?? SIPCallEnd(.failed, reasonPhrase: "the SIP endpoint closed"))
            if let reoffer = reofferInProgress {
                reofferInProgress = nil
                complete(reoffer.id, .failure(SIPCallError("re-INVITE: \(SIPError(.transport, "endpoint closed"))")))
            }
        }
        startWaitingReoffers()
        let decided = actions
        actions = []
        return decided
    }

    private mutating func receivedResponse(_ response: SIPMessage, to purpose: SIPInviteRequestPurpose) {
        switch purpose {
        case .invite: receivedFinalResponse(response)
        case .bye: byeAnswered(response)
        case .reinvite(let id): reinviteAnswered(response, id)
        case .info(let id): infoAnswered(response, id)
        case .cancel, .byeOfFork: break
        }
    }

    private mutating func requestFailed(_ purpose: SIPInviteRequestPurpose, _ error: any Error) {
        switch purpose {
        case .invite:
            let timeout = (error as? SIPError)?.kind == .timeout
            end(
                SIPCallEnd(
                    .failed, statusCode: timeout ? 408 : nil,
                    reasonPhrase: timeout ? "Request Timeout (no final response)" : "\(error)"))
        case .bye: byeAnswered(nil)
        case .reinvite(let id): reinviteFailed(id, error)
        case .info(let id): infoAnswered(nil, id, error: error)
        case .cancel, .byeOfFork: break
        }
    }

    private mutating func fired(_ timer: SIPInviteTimer) {
        guard runningTimers.remove(timer) != nil else { return }
        switch timer {
        case .retransmission: retransmissionDue()
        case .heldByeDeadline: heldByeDeadlinePassed()
        case .glareRetry(let id): glareBackoffOver(id)
        case .reofferWaitLimit(let id): reofferWaitLimitPassed(id)
        }
    }

    private mutating func perform(_ command: Command, _ id: CommandID) {
        switch command {
        case .ring(let earlyMedia, let headers): ring(earlyMedia: earlyMedia, headers: headers, id)
        case .refuseUnacceptableOffer(let capabilities): refuseUnacceptableOffer(capabilities, id)
        case .answer(let capabilities, let headers): answer(with: capabilities, headers: headers, id)
        case .reject(let status, let reason, let headers): reject(status: status, reason: reason, headers: headers, id)
        case .reoffer(let direction, let freshKeys, let offering):
            reoffer(
                Reoffer(
                    id: id, direction: direction, freshKeys: freshKeys, offering: offering,
                    waitLimit: now + configuration.timers.transactionTimeout))
        case .hangUp(let headers): hangUp(headers: headers, id)
        case .sendDTMF(let digit, let duration): sendDTMFInfo(digit, durationMilliseconds: duration, id)
        case .prepareICERestart(let parameters):
            iceRestartAnswer = parameters
            complete(id, .success(nil))
        }
    }

    // MARK: Hang-up and the end

    private mutating func hangUp(headers: [(String, String)], _ id: CommandID) {
        switch (phase, direction) {
        case (.ended, _):
            break
        case (.early, .outgoing):
            phase = .ending
            cancelWanted = true
            if lastProvisional != nil { sendCancel() }
        case (.early, .incoming):
            if let request = incomingInvite {
                respond(makeResponse(to: request.message, status: 603, headers: headers), to: request)
            }
            end(SIPCallEnd(.rejected, statusCode: 603, reasonPhrase: "Decline"))
        case (.answered, .incoming) where unacknowledged != nil:
            holdByeUntilAcknowledged(headers: headers)
        case (.answered, _), (.confirmed, _):
            cancelRetransmission()
            sendBye(headers: headers, cause: SIPCallEnd(.localHangup, reasonPhrase: "BYE"))
        case (.ending, _):
            break
        }
        if phase == .ended {
            complete(id, .success(nil))
        } else {
            endWaiters.append(id)
        }
    }

    /// Sends BYE along the dialog; the call ends when it is answered (or cannot be sent).
    mutating func sendBye(headers: [(String, String)], cause: SIPCallEnd) {
        byeCause = cause
        guard var dialog else {
            end(cause)
            return
        }
        phase = .ending
        let bye = dialog.makeRequest(.bye, contact: configuration.contact, headers: headers)
        self.dialog = dialog
        actions.append(.send(bye, to: .nextHop(dialog.nextHop), purpose: .bye))
    }

    /// Our BYE's final response (nil: none came): the call ends as it was hung up, with the status of a failure.
    private mutating func byeAnswered(_ response: SIPMessage?) {
        guard var cause = byeCause else { return }
        if let code = response?.statusCode, !(200...299).contains(code) { cause.statusCode = code }
        end(cause)
    }

    mutating func end(_ reason: SIPCallEnd) {
        guard phase != .ended else { return }
        phase = .ended
        cancelRetransmission()
        cancelTimer(.heldByeDeadline)
        heldBye = nil
        emit(.ended(reason))
        for waiter in endWaiters { complete(waiter, .success(nil)) }
        endWaiters.removeAll()
        for (_, reoffer) in backingOffReoffers.sorted(by: { $0.key.value < $1.key.value }) {
            fail(reoffer, SIPCallError("re-INVITE: the call is not established"))
        }
        backingOffReoffers.removeAll()
    }

    // MARK: Actions

    mutating func emit(_ event: SIPCallEvent) { actions.append(.emit(event)) }

    mutating func complete(_ id: CommandID, _ result: Result<NegotiatedAudio?, any Error>) {
        actions.append(.complete(id, result))
    }

    mutating func respond(_ response: SIPMessage, to request: SIPIncomingRequest) {
        actions.append(.respond(response, to: request))
    }

    /// Sends an ACK (or another request without a transaction) along `dialog`, ours by default.
    mutating func sendStateless(_ request: SIPMessage, along dialog: SIPDialog? = nil) {
        guard let dialog = dialog ?? self.dialog else { return }
        actions.append(.sendAck(request, toward: dialog.nextHop))
    }

    mutating func startTimer(_ timer: SIPInviteTimer, at deadline: SIPInstant) {
        runningTimers.insert(timer)
        actions.append(.startTimer(timer, at: deadline))
    }

    mutating func cancelTimer(_ timer: SIPInviteTimer) {
        guard runningTimers.remove(timer) != nil else { return }
        actions.append(.cancelTimer(timer))
    }

    // MARK: Messages

    /// A response of ours to `request`: our tag, and on 101–299 the Record-Route, Contact and Allow a dialog needs.
    func makeResponse(to request: SIPMessage, status: Int, reason: String? = nil, headers: [(String, String)] = [])
        -> SIPMessage
    {
        var response = SIPMessage.response(to: request, status: status, reasonPhrase: reason, toTag: localTag)
        if (101...299).contains(status) {
            // The UAS copies Record-Route into responses that create the dialog (§12.1.1).
            for route in request.headers["Record-Route"] { response.headers.add("Record-Route", route) }
            response.headers.add("Contact", SIPAddress(uri: configuration.contact).description)
            if request.requestMethod == .invite { response.headers.add("Allow", SIPUserAgent.allow) }
        }
        for (name, value) in headers { response.headers.add(name, value) }
        return response
    }

    func parseSDP(_ body: [UInt8]) -> SessionDescription? {
        body.isEmpty ? nil : try? SessionDescription(parsing: String(decoding: body, as: UTF8.self))
    }

    func setSDP(_ description: SessionDescription, on message: inout SIPMessage) {
        message.body = Array(description.serialize().utf8)
        message.headers.replace("Content-Type", with: "application/sdp")
    }

    /// An SDP session id (o= line) from the session's generator.
    mutating func makeSessionID() -> UInt64 { UInt64.random(in: 1...(1 << 62), using: &random) }
}

/// What a `SIPInviteSession` asks its owner to do.
enum SIPInviteAction: Sendable {
    /// Send `request` in a client transaction; its provisional responses (`.invite`), final response or failure
    /// come back as inputs naming `purpose`.
    case send(SIPMessage, to: SIPInviteDestination, purpose: SIPInviteRequestPurpose)
    /// Send the ACK of a 2xx outside any transaction (RFC 3261 §13.2.2.4) toward a dialog's next hop.
    case sendAck(SIPMessage, toward: SIPURI)
    /// Answer a request of the peer's through its server transaction.
    case respond(SIPMessage, to: SIPIncomingRequest)
    /// Fire `timer` at `deadline` (replacing the same timer if it runs).
    case startTimer(SIPInviteTimer, at: SIPInstant)
    case cancelTimer(SIPInviteTimer)
    /// Tell the call's user (`SIPCall.events`); `.ended` is the last event.
    case emit(SIPCallEvent)
    /// A command is over: the media it negotiated (ring with early media, answer, re-offer), nil, or its error.
    case complete(SIPInviteSession.CommandID, Result<NegotiatedAudio?, any Error>)
}

/// Where a request goes: the INVITE and its CANCEL to the peer the call was placed through, everything else
/// toward the dialog's next hop (resolved with the user agent's transport).
enum SIPInviteDestination: Hashable, Sendable {
    case inviteTarget
    case nextHop(SIPURI)
}

/// Why a request was sent, and so where its outcome goes.
enum SIPInviteRequestPurpose: Hashable, Sendable {
    /// The INVITE of an outgoing call.
    case invite
    case cancel
    /// The BYE that ends the call.
    case bye
    /// The BYE that ends another fork's dialog (its outcome does not matter).
    case byeOfFork
    /// The re-INVITE of a re-offer.
    case reinvite(SIPInviteSession.CommandID)
    /// A DTMF INFO.
    case info(SIPInviteSession.CommandID)
}

/// The timers of one INVITE session.
enum SIPInviteTimer: Hashable, Sendable {
    /// Our 2xx again, until its ACK (RFC 3261 §13.3.1.4).
    case retransmission
    /// The held BYE goes out without the ACK: 64·T1 after the 2xx was first sent.
    case heldByeDeadline
    /// A re-offer refused with 491 is sent again (RFC 3261 §14.1).
    case glareRetry(SIPInviteSession.CommandID)
    /// A re-offer waiting for another INVITE of the dialog gives up.
    case reofferWaitLimit(SIPInviteSession.CommandID)
}

extension SDPOrigin {
    /// The same session, next version: what a new offer or answer in the same session carries (RFC 3264 §8).
    var next: SDPOrigin {
        var copy = self
        copy.sessionVersion = String((UInt64(sessionVersion) ?? 0) &+ 1)
        return copy
    }
}
