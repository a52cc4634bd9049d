import NIOCore
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
/// each returning the new `NegotiatedAudio` and reported as `.mediaUpdated`; the peer's re-INVITEs are answered
/// from the same capabilities and reported as `.mediaUpdated(byPeer: true)`. A re-INVITE crossing ours is answered
/// 491 and ours, refused with 491, is retried after RFC 3261 §14.1's random delay. A request whose CSeq is not
/// above the last one is answered 500 (§12.2.2). The media itself (a `LiveCall` made with
/// `MediaStreamConfiguration(negotiated:)`) is the client's: the call says what was negotiated and when.
///
/// All methods may be called from any task; the call's state lives on the endpoint's event loop.
public final class SIPCall: @unchecked Sendable {
    public enum Direction: Sendable { case outgoing, incoming }

    enum Phase: Equatable {
        /// Outgoing: INVITE sent, no final response. Incoming: INVITE received, no final response sent.
        case early
        /// Incoming: 2xx sent, waiting for the ACK.
        case answered
        case confirmed
        /// BYE or CANCEL sent, waiting for the end.
        case ending
        case ended
    }

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
    private let contact: SIPURI
    private let localTag: String

    // State below: on the event loop only.
    private var phase = Phase.early
    private var dialog: SIPDialog?
    private var capabilities: AudioCapabilities?
    private var localDescription: SessionDescription?
    private var negotiated: NegotiatedAudio?
    /// Outgoing: the INVITE as built (without Via), where it goes, the last provisional response (its Via names
    /// the INVITE transaction a CANCEL must match), whether hang-up was asked before one came.
    private var invite: SIPMessage
    private let invitePeer: SIPPeer?
    private var lastProvisional: SIPMessage?
    private var cancelWanted = false
    private var ackOfInvite: SIPMessage?
    /// Incoming: the INVITE's server transaction.
    private let incomingInvite: SIPIncomingRequest?
    /// A 2xx we retransmit until its ACK (§13.3.1.4), and the peer re-INVITE it answers (nil for the first).
    private var unacknowledged: (response: SIPMessage, request: SIPIncomingRequest, interval: Duration, since: NIODeadline)?
    private var retransmission: Scheduled<Void>?
    /// Incoming: a hang-up asked for before the ACK of our 2xx came. RFC 3261 §15 forbids the BYE until that ACK
    /// (or the end of the 2xx's retransmissions, 64·T1 after it was first sent): the BYE waits here, and the 2xx is
    /// still retransmitted meanwhile.
    private var heldBye: (headers: [(String, String)], cause: SIPCallEnd, deadline: Scheduled<Void>)?
    private var pendingUpdateNegotiated: NegotiatedAudio?
    /// Our re-INVITE is in progress (a crossing one from the peer gets 491).
    private var reinviting = false
    /// Outgoing: the ACK and dialog of each other fork's 2xx, by its To tag (ended with BYE, ACKed again on
    /// retransmission), and 2xx that came before the first one was handled.
    private var forkAcknowledgements: [String: (ack: SIPMessage, dialog: SIPDialog)] = [:]
    private var overtakingResponses: [SIPMessage] = []

    init(outgoing invite: SIPMessage, offer: SessionDescription, capabilities: AudioCapabilities, peer: SIPPeer, contact: SIPURI, agent: SIPUserAgent) {
        direction = .outgoing
        callID = invite.callID ?? ""
        remote = invite.to ?? SIPAddress(uri: invite.requestURI ?? SIPURI(host: "invalid"))
        requestURI = invite.requestURI ?? remote.uri
        remoteOffer = nil
        requestHeaders = []
        self.invite = invite
        invitePeer = peer
        incomingInvite = nil
        localDescription = offer
        self.capabilities = capabilities
        self.contact = contact
        self.agent = agent
        localTag = invite.from?.tag ?? ""
        (events, continuation) = AsyncStream.makeStream(of: SIPCallEvent.self, bufferingPolicy: .unbounded)
    }

    init(incoming request: SIPIncomingRequest, offer: SessionDescription?, contact: SIPURI, agent: SIPUserAgent) {
        direction = .incoming
        callID = request.message.callID ?? ""
        remote = request.message.from ?? SIPAddress(uri: SIPURI(host: "invalid"))
        requestURI = request.message.requestURI ?? SIPURI(host: "invalid")
        remoteOffer = offer
        requestHeaders = request.message.customHeaders
        invite = request.message
        invitePeer = nil
        incomingInvite = request
        self.contact = contact
        self.agent = agent
        localTag = SIPRandomToken.make()
        (events, continuation) = AsyncStream.makeStream(of: SIPCallEvent.self, bufferingPolicy: .unbounded)
    }

    /// The media as last negotiated (nil before an answer).
    public var media: NegotiatedAudio? {
        get async { try? await eventLoop.submit { self.negotiated }.get() }
    }

    /// The dialog (nil until the peer's or our tag made one).
    public var currentDialog: SIPDialog? {
        get async { try? await eventLoop.submit { self.dialog }.get() }
    }

    // MARK: Outgoing

    func startOutgoing() {
        let invite = self.invite
        Task {
            do {
                let response = try await agent.sender.send(invite, to: invitePeer!) { [self] provisional in
                    endpoint.executeIfOpen { self.provisional(provisional) }
                }
                endpoint.executeIfOpen { self.finalResponse(response) }
            } catch {
                endpoint.executeIfOpen {
                    let timeout = (error as? SIPError)?.kind == .timeout
                    self.end(SIPCallEnd(.failed, statusCode: timeout ? 408 : nil, reasonPhrase: timeout ? "Request Timeout (no final response)" : "\(error)"))
                }
            }
        }
    }

    private func provisional(_ response: SIPMessage) {
        guard phase == .early || phase == .ending, let code = response.statusCode else { return }
        lastProvisional = response
        if cancelWanted { sendCancel() }
        guard code > 100 else { return }
        var early: NegotiatedAudio?
        if response.to?.tag != nil, dialog == nil { dialog = try? SIPDialog.uac(invite: inviteAsSent(response), response: response) }
        if !response.body.isEmpty, let answer = parseSDP(response.body), let offer = localDescription, let capabilities {
            early = try? offer.negotiate(answer: answer, localCapabilities: capabilities)
            if let early { negotiated = early }
        }
        yield(.progress(statusCode: code, reasonPhrase: response.reasonPhrase ?? "", earlyMedia: early))
    }

    /// The INVITE with the CSeq it was last sent with (a digest retry raised it).
    private func inviteAsSent(_ response: SIPMessage) -> SIPMessage {
        var sent = invite
        if let cseq = response.cseq { sent.headers.replace("CSeq", with: cseq.description) }
        return sent
    }

    private func finalResponse(_ response: SIPMessage) {
        guard let code = response.statusCode else { return }
        guard (200...299).contains(code) else {
            if phase != .ended {
                let cause: SIPCallEnd.Cause = code == 487 ? .cancelled : .rejected
                end(SIPCallEnd(cause, statusCode: code, reasonPhrase: response.reasonPhrase ?? "", headers: response.customHeaders))
            }
            return
        }
        do {
            var dialog = try SIPDialog.uac(invite: inviteAsSent(response), response: response)
            let ack = dialog.makeAck(inviteSequence: response.cseq?.sequence ?? 1, contact: contact)
            self.dialog = dialog
            ackOfInvite = ack
            send(ack)
            do {  // 2xx of other forks that came before this one
                let overtaking = overtakingResponses
                overtakingResponses = []
                for response in overtaking { receivedStray(response) }
            }
        } catch {
            end(SIPCallEnd(.failed, statusCode: code, reasonPhrase: "2xx without a dialog: \(error)"))
            return
        }
        if cancelWanted || phase == .ending {
            // The 2xx crossed our CANCEL (§9.1): the call exists, so it is ended with a BYE.
            phase = .confirmed
            sendBye(headers: [], cause: SIPCallEnd(.cancelled, statusCode: nil, reasonPhrase: "answered while cancelling; ended with BYE"))
            return
        }
        guard let offer = localDescription, let capabilities else { return }
        let result: Result<NegotiatedAudio, Error>
        if let answer = parseSDP(response.body) {
            result = Result { try offer.negotiate(answer: answer, localCapabilities: capabilities) }
        } else if let early = negotiated {
            result = .success(early)
        } else {
            result = .failure(SIPCallError("the 2xx carries no SDP answer"))
        }
        switch result {
        case .success(let media):
            negotiated = media
            phase = .confirmed
            yield(.established(media, headers: response.customHeaders))
        case .failure(let error):
            phase = .confirmed
            sendBye(headers: [("Reason", "SIP;cause=488;text=\"\(error)\"")],
                    cause: SIPCallEnd(.failed, statusCode: 488, reasonPhrase: "answer not acceptable: \(error)"))
        }
    }

    private func sendCancel() {
        guard let provisional = lastProvisional, let via = provisional.headers.first("Via") else { return }
        cancelWanted = false
        var sent = inviteAsSent(provisional)
        sent.headers.replace("Via", with: via.split(separator: ",").first.map(String.init) ?? via)
        let cancel = SIPMessage.cancel(of: sent)
        _ = endpoint.request(cancel, to: invitePeer!)
    }

    /// A 2xx after the one that made our dialog (§13.2.2.4). From the same fork (same To tag) it is a
    /// retransmission: our ACK was lost, so it is sent again. From another fork (a proxy forked the INVITE and a
    /// second phone answered too) it makes a dialog of its own: that one is ACKed and ended with a BYE, ours is
    /// kept; its retransmissions get the same ACK again. One that overtakes the first 2xx on its way to
    /// `finalResponse` waits there.
    func receivedStray(_ response: SIPMessage) {
        guard response.cseq?.method == .invite, let code = response.statusCode, (200...299).contains(code),
            direction == .outgoing, let tag = response.to?.tag
        else { return }
        guard let ack = ackOfInvite, let dialog else {
            if phase == .early { overtakingResponses.append(response) }
            return
        }
        if tag == dialog.id.remoteTag {
            if response.cseq?.sequence == ack.cseq?.sequence { send(ack) }
            return
        }
        if let forkAck = forkAcknowledgements[tag] {
            send(forkAck.ack, along: forkAck.dialog)
            return
        }
        guard var fork = try? SIPDialog.uac(invite: inviteAsSent(response), response: response) else { return }
        let forkAck = fork.makeAck(inviteSequence: response.cseq?.sequence ?? 1, contact: contact)
        let bye = fork.makeRequest(.bye, contact: contact, headers: [("Reason", "SIP;cause=200;text=\"Call answered elsewhere\"")])
        forkAcknowledgements[tag] = (forkAck, fork)
        send(forkAck, along: fork)
        guard let peer = try? SIPPeer.resolving(fork.nextHop, transport: agent.configuration.transport) else { return }
        let sender = agent.sender
        Task { _ = try? await sender.send(bye, to: peer) }
    }

    // MARK: Incoming

    /// Sends 180 Ringing, or with `earlyMedia` 183 Session Progress with our SDP answer (the answer the 200 will
    /// repeat). Returns the early media's negotiation, if any.
    @discardableResult
    public func ring(earlyMedia capabilities: AudioCapabilities? = nil, headers: [(String, String)] = []) async throws -> NegotiatedAudio? {
        try await eventLoop.flatSubmit { [self] () -> EventLoopFuture<NegotiatedAudio?> in
            guard direction == .incoming, phase == .early, let request = incomingInvite else {
                return eventLoop.makeFailedFuture(SIPCallError("ring: not an unanswered incoming call"))
            }
            var response = makeResponse(to: request.message, status: capabilities == nil ? 180 : 183, headers: headers)
            if let capabilities {
                do {
                    let media = try answerOffer(capabilities, into: &response)
                    negotiated = media
                } catch {
                    return eventLoop.makeFailedFuture(error)
                }
            }
            if dialog == nil { dialog = try? SIPDialog.uas(invite: request.message, localTag: localTag) }
            endpoint.respond(response, to: request)
            return eventLoop.makeSucceededFuture(capabilities == nil ? nil : negotiated)
        }.get()
    }

    /// Answers with 200 OK and an SDP answer made from `capabilities`. An offer that cannot be met (no Opus, no
    /// common SRTP suite) is refused with 488 and the call ends `failed`; the error is thrown.
    @discardableResult
    public func answer(with capabilities: AudioCapabilities, headers: [(String, String)] = []) async throws -> NegotiatedAudio {
        try await eventLoop.flatSubmit { [self] () -> EventLoopFuture<NegotiatedAudio> in
            guard direction == .incoming, phase == .early, let request = incomingInvite else {
                return eventLoop.makeFailedFuture(SIPCallError("answer: not an unanswered incoming call"))
            }
            var response = makeResponse(to: request.message, status: 200, headers: headers)
            let media: NegotiatedAudio
            do {
                media = try answerOffer(capabilities, into: &response)
            } catch {
                // The reason in the status line, so the caller sees why (no audio, no common codec or SRTP suite).
                endpoint.respond(makeResponse(to: request.message, status: 488, reason: "Not Acceptable Here (\((error as? SIPCallError)?.reason ?? "\(error)"))"), to: request)
                end(SIPCallEnd(.failed, statusCode: 488, reasonPhrase: "offer not acceptable: \(error)"))
                return eventLoop.makeFailedFuture(error)
            }
            do {
                if dialog == nil { dialog = try SIPDialog.uas(invite: request.message, localTag: localTag) }
            } catch {
                endpoint.respond(makeResponse(to: request.message, status: 400, reason: "Bad Request (\(error))"), to: request)
                end(SIPCallEnd(.failed, statusCode: 400, reasonPhrase: "\(error)"))
                return eventLoop.makeFailedFuture(error)
            }
            negotiated = media
            phase = .answered
            sendReliably(response, on: request)
            return eventLoop.makeSucceededFuture(media)
        }.get()
    }

    /// Refuses the incoming call with `status` (486 Busy Here by default, 603 Decline, …).
    public func reject(status: Int = 486, reason: String? = nil, headers: [(String, String)] = []) async {
        try? await eventLoop.submit { [self] in
            guard direction == .incoming, phase == .early, let request = incomingInvite else { return }
            endpoint.respond(makeResponse(to: request.message, status: status, reason: reason, headers: headers), to: request)
            end(SIPCallEnd(.rejected, statusCode: status, reasonPhrase: reason ?? SIPStatus.reasonPhrase(for: status)))
        }.get()
    }

    /// Our SDP answer to the remote offer into `response` (its body and Content-Type).
    private func answerOffer(_ capabilities: AudioCapabilities, into response: inout SIPMessage) throws -> NegotiatedAudio {
        guard let offer = remoteOffer else { throw SIPCallError(statusCode: 488, "the INVITE carries no SDP offer") }
        if let previous = localDescription, let media = negotiated {
            // The 183 already answered: the 200 repeats that answer (RFC 3264 §4: one offer, one answer).
            setSDP(previous, on: &response)
            return media
        }
        let (answer, media) = try SessionDescription.makeAnswer(to: offer, localCapabilities: capabilities)
        self.capabilities = capabilities
        localDescription = answer
        setSDP(answer, on: &response)
        return media
    }

    private func makeResponse(to request: SIPMessage, status: Int, reason: String? = nil, headers: [(String, String)] = []) -> SIPMessage {
        var response = SIPMessage.response(to: request, status: status, reasonPhrase: reason, toTag: localTag)
        if (101...299).contains(status) {
            // The UAS copies Record-Route into responses that create the dialog (§12.1.1).
            for route in request.headers["Record-Route"] { response.headers.add("Record-Route", route) }
            response.headers.add("Contact", SIPAddress(uri: contact).description)
            if request.requestMethod == .invite { response.headers.add("Allow", SIPUserAgent.allow) }
        }
        for (name, value) in headers { response.headers.add(name, value) }
        return response
    }

    /// Sends a 2xx to an INVITE and retransmits it (T1 doubling to T2) until the ACK comes; after 64·T1 without
    /// one the dialog is ended with BYE (§13.3.1.4). Over TCP and TLS too: the 2xx is retransmitted end to end, and
    /// a hop between us and the caller may be UDP, so the RFC retransmits it whatever our own transport is.
    private func sendReliably(_ response: SIPMessage, on request: SIPIncomingRequest) {
        endpoint.respond(response, to: request)
        unacknowledged = (response, request, endpoint.configuration.timers.t1, .now())
        scheduleRetransmission()
    }

    private func scheduleRetransmission() {
        guard let pending = unacknowledged else { return }
        let timers = endpoint.configuration.timers
        retransmission = eventLoop.scheduleTask(in: .nanoseconds(Int64(pending.interval.components.seconds) * 1_000_000_000 + pending.interval.components.attoseconds / 1_000_000_000)) { [self] in
            guard var pending = unacknowledged else { return }
            if NIODeadline.now() - pending.since > .nanoseconds(SIPInstant(timers.transactionTimeout).nanoseconds) {
                unacknowledged = nil
                if phase == .answered || phase == .confirmed {
                    phase = .confirmed
                    sendBye(headers: [], cause: SIPCallEnd(.failed, reasonPhrase: "no ACK for our 2xx within 64·T1"))
                }
                return
            }
            endpoint.respond(pending.response, to: pending.request)
            pending.interval = min(pending.interval * 2, timers.t2)
            unacknowledged = pending
            scheduleRetransmission()
        }
    }

    // MARK: Requests from the peer

    func received(_ request: SIPIncomingRequest) {
        let message = request.message
        guard let method = message.requestMethod else { return }
        if method == .cancel {
            receivedCancel(request)
            return
        }
        if method == .ack {
            receivedAck(message)
            return
        }
        guard request.transaction != nil else { return }
        guard var dialog, message.to?.tag == dialog.id.localTag, message.from?.tag == dialog.id.remoteTag else {
            endpoint.respond(.response(to: message, status: 481), to: request)
            return
        }
        if case .outOfOrder(let received, let last) = dialog.admit(message) {
            endpoint.respond(.response(to: message, status: 500, reasonPhrase: "Server Internal Error (CSeq \(received) not above \(last))"), to: request)
            return
        }
        self.dialog = dialog
        switch method {
        case .bye:
            endpoint.respond(.response(to: message, status: 200), to: request)
            cancelRetransmission()
            end(SIPCallEnd(.remoteHangup, reasonPhrase: message.headers.first("Reason") ?? "BYE", headers: message.customHeaders))
        case .invite:
            receivedReinvite(request)
        case .options:
            var ok = SIPMessage.response(to: message, status: 200)
            ok.headers.add("Allow", SIPUserAgent.allow)
            endpoint.respond(ok, to: request)
        default:
            var refused = SIPMessage.response(to: message, status: 405)
            refused.headers.add("Allow", SIPUserAgent.allow)
            endpoint.respond(refused, to: request)
        }
    }

    private func receivedCancel(_ request: SIPIncomingRequest) {
        guard request.transaction != nil else { return }
        let message = request.message
        guard direction == .incoming, let inviteRequest = incomingInvite,
            message.topVia?.branch == inviteRequest.message.topVia?.branch
        else {
            endpoint.respond(.response(to: message, status: 481), to: request)
            return
        }
        endpoint.respond(.response(to: message, status: 200), to: request)
        guard phase == .early else { return }  // already answered: the CANCEL has no effect (§9.2)
        endpoint.respond(makeResponse(to: inviteRequest.message, status: 487), to: inviteRequest)
        end(SIPCallEnd(
            .cancelled, statusCode: 487, reasonPhrase: "cancelled by the caller", headers: message.customHeaders,
            cancelReason: message.headers.first("Reason")))
    }

    private func receivedAck(_ ack: SIPMessage) {
        guard let pending = unacknowledged, ack.cseq?.sequence == pending.request.message.cseq?.sequence else { return }
        acknowledged()
    }

    /// Our 2xx got through: its ACK came, or a later request of the peer's shows it arrived.
    private func acknowledged() {
        cancelRetransmission()
        if heldBye != nil {
            sendHeldBye()
            return
        }
        if phase == .answered, let media = negotiated {
            phase = .confirmed
            yield(.established(media, headers: []))
        } else if let media = pendingUpdateNegotiated {
            pendingUpdateNegotiated = nil
            yield(.mediaUpdated(media, byPeer: true))
        }
    }

    private func cancelRetransmission() {
        retransmission?.cancel()
        retransmission = nil
        unacknowledged = nil
    }

    private func receivedReinvite(_ request: SIPIncomingRequest) {
        let message = request.message
        if reinviting {
            endpoint.respond(makeResponse(to: message, status: 491), to: request)  // glare (§14.2)
            return
        }
        // A new INVITE with a higher CSeq means the peer has our last 2xx, even if its ACK is still on the way.
        if unacknowledged != nil { acknowledged() }
        guard phase == .confirmed else {
            // Not answered yet: the peer must wait (§14.2: 500 with Retry-After).
            var busy = makeResponse(to: message, status: 500, reason: "Server Internal Error (previous INVITE in progress)")
            busy.headers.add("Retry-After", "\(Int.random(in: 0...10))")
            endpoint.respond(busy, to: request)
            return
        }
        guard let offer = parseSDP(message.body), let capabilities else {
            endpoint.respond(makeResponse(to: message, status: 488, reason: "Not Acceptable Here (no SDP offer)"), to: request)
            return
        }
        do {
            var (answer, media) = try SessionDescription.makeAnswer(to: offer, localCapabilities: capabilities)
            if let before = negotiated?.dtls, let after = media.dtls, let change = Self.newDTLSAssociation(from: before, to: after) {
                // RFC 8842 §5 (RFC 5763 §5): the same fingerprint and role keep the DTLS association and its SRTP
                // keys (a hold, a mute, a codec change); a new one asks for a new handshake, which this call does
                // not run mid-call. Refused, the re-INVITE leaves the session as it was (RFC 3261 §14.2).
                endpoint.respond(
                    makeResponse(to: message, status: 488, reason: "Not Acceptable Here (DTLS-SRTP: \(change) needs a new DTLS association; the call keeps its own)"),
                    to: request)
                return
            }
            if let previous = localDescription {
                answer.origin = previous.origin.next
                // Our key stays while the suite does (RFC 4568 §7.1.4 lets the answerer keep it): media already
                // protected with it keeps flowing through a hold or the peer's own re-key.
                if let index = answer.audio.crypto.indices.first, var srtp = media.srtp,
                    let kept = previous.audio.crypto.first(where: { $0.suite == answer.audio.crypto[index].suite })
                {
                    answer.audio.crypto[index].keys = kept.keys
                    srtp.localKey = kept.key
                    media.srtp = srtp
                }
            }
            localDescription = answer
            negotiated = media
            pendingUpdateNegotiated = media
            var ok = makeResponse(to: message, status: 200)
            setSDP(answer, on: &ok)
            sendReliably(ok, on: request)
        } catch {
            endpoint.respond(makeResponse(to: message, status: 488, reason: "Not Acceptable Here (\(error))"), to: request)
        }
    }

    /// What in a re-offer asks for a new DTLS association (nil: the existing one stays).
    static func newDTLSAssociation(from before: NegotiatedDTLS, to after: NegotiatedDTLS) -> String? {
        if after.remoteFingerprint.lowercased() != before.remoteFingerprint.lowercased() {
            return "a new a=fingerprint (\(after.remoteFingerprint.prefix(23))…)"
        }
        if after.isClient != before.isClient { return "a changed a=setup role" }
        return nil
    }

    // MARK: In the call

    /// Puts the peer on hold: a re-INVITE offering `a=sendonly` (`inactive` when we are held too), same keys.
    @discardableResult
    public func hold() async throws -> NegotiatedAudio { try await reoffer(direction: .sendonly, freshKeys: false) }

    /// Takes the peer off hold: a re-INVITE offering `a=sendrecv`, same keys.
    @discardableResult
    public func resume() async throws -> NegotiatedAudio { try await reoffer(direction: .sendrecv, freshKeys: false) }

    /// New SRTP keys: a re-INVITE offering fresh SDES keys in the current direction.
    @discardableResult
    public func rekey() async throws -> NegotiatedAudio { try await reoffer(direction: nil, freshKeys: true) }

    /// Sends a re-INVITE with a new offer and returns the negotiated result once the peer's 2xx is ACKed. 491 is
    /// retried after a random back-off (up to 3 times); any other final failure is thrown with its status.
    /// - Parameter offering: capabilities to offer from now on instead of the call's (e.g. a new DTLS
    ///   certificate's fingerprint); kept only when the peer accepts them.
    public func reoffer(direction: MediaDirection?, freshKeys: Bool, offering: AudioCapabilities? = nil) async throws -> NegotiatedAudio {
        var attempts = 0
        let waitLimit = ContinuousClock.now + endpoint.configuration.timers.transactionTimeout
        while attempts < 4 {
            let prepared = try await eventLoop.flatSubmit { [self] () -> EventLoopFuture<(SIPMessage, SIPPeer, SessionDescription, AudioCapabilities)?> in
                guard phase == .confirmed || phase == .answered, var dialog, var capabilities = offering ?? self.capabilities,
                    let previous = localDescription
                else {
                    return eventLoop.makeFailedFuture(SIPCallError("re-INVITE: the call is not established"))
                }
                // No new INVITE while another one of the dialog is in progress either way (RFC 3261 §14.1): wait.
                if phase == .answered || reinviting || unacknowledged != nil { return eventLoop.makeSucceededFuture(nil) }
                if let direction { capabilities.direction = direction }
                var offer = SessionDescription.makeOffer(capabilities)
                offer.origin = previous.origin.next
                if !freshKeys, !previous.audio.crypto.isEmpty { offer.audio.crypto = previous.audio.crypto }
                let request = dialog.makeRequest(.invite, contact: contact, headers: [("Allow", SIPUserAgent.allow)],
                                                 body: Array(offer.serialize().utf8), contentType: "application/sdp")
                let peer: SIPPeer
                do { peer = try SIPPeer.resolving(dialog.nextHop, transport: agent.configuration.transport) } catch {
                    return eventLoop.makeFailedFuture(error)
                }
                self.dialog = dialog
                reinviting = true
                return eventLoop.makeSucceededFuture((request, peer, offer, capabilities))
            }.get()
            guard let (request, peer, offer, capabilities) = prepared else {
                guard ContinuousClock.now < waitLimit else { throw SIPCallError("re-INVITE: another INVITE stayed in progress for 64·T1") }
                try await Task.sleep(for: .milliseconds(20))
                continue
            }
            attempts += 1
            let response: SIPMessage
            do {
                response = try await agent.sender.send(request, to: peer)
            } catch {
                try? await eventLoop.submit { self.reinviting = false }.get()
                throw SIPCallError("re-INVITE: \(error)")
            }
            let outcome = try await eventLoop.submit { [self] () -> Result<NegotiatedAudio, SIPCallError>? in
                reinviting = false
                guard let code = response.statusCode else { return .failure(SIPCallError("no status")) }
                if var dialog, let cseq = response.cseq {
                    dialog.noteSent(sequence: cseq.sequence)
                    if (200...299).contains(code) {
                        dialog.refreshTarget(from: response)
                        send(dialog.makeAck(inviteSequence: cseq.sequence, contact: contact))
                    }
                    self.dialog = dialog
                }
                if code == 491 { return nil }
                guard (200...299).contains(code) else {
                    if code == 481 || code == 408 {
                        end(SIPCallEnd(.failed, statusCode: code, reasonPhrase: response.reasonPhrase ?? ""))
                    }
                    return .failure(SIPCallError(statusCode: code, response.reasonPhrase ?? ""))
                }
                guard let answer = parseSDP(response.body) else { return .failure(SIPCallError(statusCode: code, "the 2xx carries no SDP answer")) }
                do {
                    let media = try offer.negotiate(answer: answer, localCapabilities: capabilities)
                    localDescription = offer
                    self.capabilities = capabilities
                    negotiated = media
                    yield(.mediaUpdated(media, byPeer: false))
                    return .success(media)
                } catch {
                    return .failure(SIPCallError(statusCode: code, "answer not acceptable: \(error)"))
                }
            }.get()
            switch outcome {
            case .success(let media): return media
            case .failure(let error): throw error
            case nil:
                let range = self.direction == .outgoing ? agent.configuration.glareBackoffAsCaller : agent.configuration.glareBackoffAsCallee
                try await Task.sleep(for: .milliseconds(Int(Double.random(in: range) * 1000)))
            }
        }
        throw SIPCallError(statusCode: 491, "re-INVITE refused with 491 four times")
    }

    /// Ends the call: CANCEL before an answer (outgoing), 603 Decline (incoming, unanswered), BYE after. Returns
    /// when the call has ended; `headers` (e.g. `X-Reason`) go on the BYE, CANCEL's INVITE or the rejection.
    public func hangUp(headers: [(String, String)] = []) async {
        let ended: EventLoopFuture<Void>? = try? await eventLoop.submit { [self] () -> EventLoopFuture<Void>? in
            switch (phase, direction) {
            case (.ended, _):
                return nil
            case (.early, .outgoing):
                phase = .ending
                cancelWanted = true
                if lastProvisional != nil { sendCancel() }
            case (.early, .incoming):
                if let request = incomingInvite {
                    endpoint.respond(makeResponse(to: request.message, status: 603, headers: headers), to: request)
                }
                end(SIPCallEnd(.rejected, statusCode: 603, reasonPhrase: "Decline"))
                return nil
            case (.answered, .incoming) where unacknowledged != nil:
                holdByeUntilAcknowledged(headers: headers)
            case (.answered, _), (.confirmed, _):
                cancelRetransmission()
                sendBye(headers: headers, cause: SIPCallEnd(.localHangup, reasonPhrase: "BYE"))
            case (.ending, _):
                break
            }
            let promise = eventLoop.makePromise(of: Void.self)
            endWaiters.append(promise)
            return promise.futureResult
        }.get()
        try? await ended?.get()
    }

    private var endWaiters: [EventLoopPromise<Void>] = []
    /// How the call ends once the BYE we sent is answered.
    private var byeCause: SIPCallEnd?

    /// Hang-up of an answered call whose 2xx is not ACKed yet: the BYE goes out when the ACK comes
    /// (`acknowledged`), or at the 2xx's transaction timeout (64·T1 after it was first sent) without one.
    private func holdByeUntilAcknowledged(headers: [(String, String)]) {
        phase = .ending
        let since = unacknowledged?.since ?? .now()
        let timeout = TimeAmount.nanoseconds(SIPInstant(endpoint.configuration.timers.transactionTimeout).nanoseconds)
        let deadline = eventLoop.scheduleTask(deadline: since + timeout) { [self] in
            guard var held = heldBye else { return }
            held.cause.reasonPhrase = "BYE (no ACK for our 2xx within 64·T1)"
            heldBye = held
            sendHeldBye()
        }
        heldBye = (headers, SIPCallEnd(.localHangup, reasonPhrase: "BYE"), deadline)
    }

    private func sendHeldBye() {
        guard let held = heldBye else { return }
        heldBye = nil
        held.deadline.cancel()
        cancelRetransmission()
        sendBye(headers: held.headers, cause: held.cause)
    }

    /// Our endpoint is closing: the call ends now (as the hang-up it was ending with, if any), since no BYE,
    /// retransmission or response can pass any more.
    func endpointClosed() {
        end(byeCause ?? heldBye?.cause ?? SIPCallEnd(.failed, reasonPhrase: "the SIP endpoint closed"))
    }

    private func sendBye(headers: [(String, String)], cause: SIPCallEnd) {
        byeCause = cause
        guard var dialog else {
            end(cause)
            return
        }
        phase = .ending
        let bye = dialog.makeRequest(.bye, contact: contact, headers: headers)
        self.dialog = dialog
        let peer: SIPPeer
        do { peer = try SIPPeer.resolving(dialog.nextHop, transport: agent.configuration.transport) } catch {
            end(cause)
            return
        }
        let sender = agent.sender
        Task {
            let response = try? await sender.send(bye, to: peer)
            endpoint.executeIfOpen {
                var cause = cause
                if let code = response?.statusCode, !(200...299).contains(code) { cause.statusCode = code }
                self.end(cause)
            }
        }
    }

    // MARK: Helpers

    private func send(_ request: SIPMessage) {
        guard let dialog else { return }
        send(request, along: dialog)
    }

    private func send(_ request: SIPMessage, along dialog: SIPDialog) {
        guard let peer = try? SIPPeer.resolving(dialog.nextHop, transport: agent.configuration.transport) else { return }
        endpoint.sendStateless(request, to: peer)
    }

    private func end(_ reason: SIPCallEnd) {
        guard phase != .ended else { return }
        phase = .ended
        cancelRetransmission()
        heldBye?.deadline.cancel()
        heldBye = nil
        yield(.ended(reason))
        continuation.finish()
        agent.forget(self)
        for waiter in endWaiters { waiter.succeed(()) }
        endWaiters.removeAll()
    }

    private func yield(_ event: SIPCallEvent) { continuation.yield(event) }

    private func parseSDP(_ body: [UInt8]) -> SessionDescription? {
        body.isEmpty ? nil : try? SessionDescription(parsing: String(decoding: body, as: UTF8.self))
    }

    private func setSDP(_ description: SessionDescription, on message: inout SIPMessage) {
        message.body = Array(description.serialize().utf8)
        message.headers.replace("Content-Type", with: "application/sdp")
    }
}

extension SDPOrigin {
    /// The same session, next version: what a new offer or answer in the same session carries (RFC 3264 §8).
    var next: SDPOrigin {
        var copy = self
        copy.sessionVersion = String((UInt64(sessionVersion) ?? 0) &+ 1)
        return copy
    }
}
