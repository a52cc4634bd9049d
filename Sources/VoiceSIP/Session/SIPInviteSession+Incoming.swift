import VoiceSDP

/// The callee's side (ring, answer, reject, the caller's CANCEL, our 2xx until its ACK, a BYE held for that ACK),
/// and the requests the peer sends in the dialog.
extension SIPInviteSession {
    mutating func ring(earlyMedia capabilities: AudioCapabilities?, headers: [(String, String)], _ id: CommandID) {
        guard direction == .incoming, phase == .early, let request = incomingInvite else {
            complete(id, .failure(SIPCallError("ring: not an unanswered incoming call")))
            return
        }
        var response = makeResponse(to: request.message, status: capabilities == nil ? 180 : 183, headers: headers)
        if let capabilities {
            do {
                negotiated = try answerOffer(capabilities, into: &response)
            } catch {
                complete(id, .failure(error))
                return
            }
        }
        if dialog == nil { dialog = try? makeDialog() }
        respond(response, to: request)
        complete(id, .success(capabilities == nil ? nil : negotiated))
    }

    mutating func answer(with capabilities: AudioCapabilities, headers: [(String, String)], _ id: CommandID) {
        guard direction == .incoming, phase == .early, let request = incomingInvite else {
            complete(id, .failure(SIPCallError("answer: not an unanswered incoming call")))
            return
        }
        var response = makeResponse(to: request.message, status: 200, headers: headers)
        let media: NegotiatedAudio
        do {
            media = try answerOffer(capabilities, into: &response)
        } catch {
            // The reason in the status line, so the caller sees why (no audio, no common codec or SRTP suite).
            let reason = (error as? SIPCallError)?.reason ?? "\(error)"
            respond(
                makeResponse(to: request.message, status: 488, reason: "Not Acceptable Here (\(reason))"), to: request)
            end(SIPCallEnd(.failed, statusCode: 488, reasonPhrase: "offer not acceptable: \(error)"))
            complete(id, .failure(error))
            return
        }
        do {
            if dialog == nil { dialog = try makeDialog() }
        } catch {
            respond(makeResponse(to: request.message, status: 400, reason: "Bad Request (\(error))"), to: request)
            end(SIPCallEnd(.failed, statusCode: 400, reasonPhrase: "\(error)"))
            complete(id, .failure(error))
            return
        }
        negotiated = media
        phase = .answered
        sendReliably(response, on: request)
        complete(id, .success(media))
    }

    mutating func reject(status: Int, reason: String?, headers: [(String, String)], _ id: CommandID) {
        if direction == .incoming, phase == .early, let request = incomingInvite {
            respond(makeResponse(to: request.message, status: status, reason: reason, headers: headers), to: request)
            end(SIPCallEnd(.rejected, statusCode: status, reasonPhrase: reason ?? SIPStatus.reasonPhrase(for: status)))
        }
        complete(id, .success(nil))
    }

    /// The dialog our tag makes with the INVITE (§12.1.1), our first CSeq drawn from the session's generator.
    private mutating func makeDialog() throws -> SIPDialog {
        try SIPDialog.uas(
            invite: invite, localTag: localTag, localSequence: UInt32.random(in: 1...0x7FFF_FFFF, using: &random))
    }

    /// Our SDP answer to the remote offer into `response` (its body and Content-Type).
    private mutating func answerOffer(_ capabilities: AudioCapabilities, into response: inout SIPMessage) throws
        -> NegotiatedAudio
    {
        guard let offer = remoteOffer else { throw SIPCallError(statusCode: 488, "the INVITE carries no SDP offer") }
        if let previous = localDescription, let media = negotiated {
            // The 183 already answered: the 200 repeats that answer (RFC 3264 §4: one offer, one answer).
            setSDP(previous, on: &response)
            return media
        }
        let (answer, media) = try SessionDescription.makeAnswer(
            to: offer, localCapabilities: capabilities, sessionID: makeSessionID())
        self.capabilities = capabilities
        localDescription = answer
        setSDP(answer, on: &response)
        return media
    }

    // MARK: Our 2xx until its ACK

    /// Sends a 2xx to an INVITE and retransmits it (T1 doubling to T2) until the ACK comes; after 64·T1 without
    /// one the dialog is ended with BYE (§13.3.1.4). Over TCP and TLS too: the 2xx is retransmitted end to end, and
    /// a hop between us and the caller may be UDP, so the RFC retransmits it whatever our own transport is.
    mutating func sendReliably(_ response: SIPMessage, on request: SIPIncomingRequest) {
        respond(response, to: request)
        unacknowledged = Unacknowledged(
            response: response, request: request, interval: configuration.timers.t1, since: now)
        startTimer(.retransmission, at: now + configuration.timers.t1)
    }

    /// Timer of the 2xx: sent again with the interval doubled up to T2, or, past 64·T1, given up with a BYE.
    mutating func retransmissionDue() {
        guard var pending = unacknowledged else { return }
        let timers = configuration.timers
        if now - pending.since > timers.transactionTimeout {
            unacknowledged = nil
            if phase == .answered || phase == .confirmed {
                phase = .confirmed
                sendBye(headers: [], cause: SIPCallEnd(.failed, reasonPhrase: "no ACK for our 2xx within 64·T1"))
            }
            return
        }
        respond(pending.response, to: pending.request)
        pending.interval = min(pending.interval * 2, timers.t2)
        unacknowledged = pending
        startTimer(.retransmission, at: now + pending.interval)
    }

    mutating func cancelRetransmission() {
        cancelTimer(.retransmission)
        unacknowledged = nil
    }

    /// Our 2xx got through: its ACK came, or a later request of the peer's shows it arrived.
    mutating func acknowledged() {
        cancelRetransmission()
        if heldBye != nil {
            sendHeldBye()
            return
        }
        if phase == .answered, let media = negotiated {
            phase = .confirmed
            emit(.established(media, headers: []))
        } else if let media = pendingUpdateNegotiated {
            pendingUpdateNegotiated = nil
            emit(.mediaUpdated(media, byPeer: true))
        }
    }

    /// Hang-up of an answered call whose 2xx is not ACKed yet: the BYE goes out when the ACK comes
    /// (`acknowledged`), or at the 2xx's transaction timeout (64·T1 after it was first sent) without one.
    mutating func holdByeUntilAcknowledged(headers: [(String, String)]) {
        phase = .ending
        startTimer(.heldByeDeadline, at: (unacknowledged?.since ?? now) + configuration.timers.transactionTimeout)
        heldBye = (headers, SIPCallEnd(.localHangup, reasonPhrase: "BYE"))
    }

    mutating func heldByeDeadlinePassed() {
        guard heldBye != nil else { return }
        heldBye?.cause.reasonPhrase = "BYE (no ACK for our 2xx within 64·T1)"
        sendHeldBye()
    }

    private mutating func sendHeldBye() {
        guard let held = heldBye else { return }
        heldBye = nil
        cancelTimer(.heldByeDeadline)
        cancelRetransmission()
        sendBye(headers: held.headers, cause: held.cause)
    }

    // MARK: Requests from the peer

    mutating func received(_ request: SIPIncomingRequest) {
        let message = request.message
        guard let method = message.requestMethod else { return }
        if method == .cancel {
            receivedCancel(request)
            return
        }
        if method == .ack {
            if let pending = unacknowledged, message.cseq?.sequence == pending.request.message.cseq?.sequence {
                acknowledged()
            }
            return
        }
        guard request.transaction != nil else { return }
        guard var dialog, message.to?.tag == dialog.id.localTag, message.from?.tag == dialog.id.remoteTag else {
            respond(.response(to: message, status: 481), to: request)
            return
        }
        if case .outOfOrder(let received, let last) = dialog.admit(message) {
            respond(
                .response(
                    to: message, status: 500, reasonPhrase: "Server Internal Error (CSeq \(received) not above \(last))"
                ), to: request)
            return
        }
        self.dialog = dialog
        switch method {
        case .bye:
            respond(.response(to: message, status: 200), to: request)
            cancelRetransmission()
            end(
                SIPCallEnd(
                    .remoteHangup, reasonPhrase: message.headers.first("Reason") ?? "BYE",
                    headers: message.customHeaders))
        case .invite:
            receivedReinvite(request)
        case .info:
            receivedInfo(request)
        case .options:
            var ok = SIPMessage.response(to: message, status: 200)
            ok.headers.add("Allow", SIPUserAgent.allow)
            respond(ok, to: request)
        default:
            var refused = SIPMessage.response(to: message, status: 405)
            refused.headers.add("Allow", SIPUserAgent.allow)
            respond(refused, to: request)
        }
    }

    /// The caller's CANCEL (§9.2): 200 to it; before our final response, 487 to the INVITE and the call ends.
    private mutating func receivedCancel(_ request: SIPIncomingRequest) {
        guard request.transaction != nil else { return }
        let message = request.message
        guard direction == .incoming, let inviteRequest = incomingInvite,
            message.topVia?.branch == inviteRequest.message.topVia?.branch
        else {
            respond(.response(to: message, status: 481), to: request)
            return
        }
        respond(.response(to: message, status: 200), to: request)
        guard phase == .early else { return }  // already answered: the CANCEL has no effect (§9.2)
        respond(makeResponse(to: inviteRequest.message, status: 487), to: inviteRequest)
        end(
            SIPCallEnd(
                .cancelled, statusCode: 487, reasonPhrase: "cancelled by the caller", headers: message.customHeaders,
                cancelReason: message.headers.first("Reason")))
    }
}
