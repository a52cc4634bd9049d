import VoiceSDP

/// Re-INVITEs (RFC 3261 §14): ours, one at a time, retried after a random back-off when refused with 491, and the
/// peer's, answered from the call's capabilities (491 when one of ours is in progress).
extension SIPInviteSession {
    /// A re-offer asked for by the user, until its re-INVITE is answered.
    struct Reoffer: Sendable {
        var id: CommandID
        var direction: MediaDirection?
        var freshKeys: Bool
        var offering: AudioCapabilities?
        /// When waiting for another INVITE of the dialog to finish stops (64·T1 after the command).
        var waitLimit: SIPInstant
        var attempts = 0
        /// The offer in the re-INVITE in progress, and the capabilities it was made from.
        var offer: SessionDescription?
        var offeredCapabilities: AudioCapabilities?

        init(
            id: CommandID, direction: MediaDirection?, freshKeys: Bool, offering: AudioCapabilities?,
            waitLimit: SIPInstant
        ) {
            self.id = id
            self.direction = direction
            self.freshKeys = freshKeys
            self.offering = offering
            self.waitLimit = waitLimit
        }
    }

    /// How many re-INVITEs one re-offer sends at most while the peer answers 491 (the message says "four").
    static let reofferAttempts = 4

    /// Sends the re-offer's re-INVITE now, or queues it while another INVITE of the dialog is in progress either way
    /// (RFC 3261 §14.1), or fails it when the call is not (or no longer) established.
    mutating func reoffer(_ reoffer: Reoffer) {
        guard phase == .confirmed || phase == .answered, dialog != nil, reoffer.offering ?? capabilities != nil,
            localDescription != nil
        else {
            fail(reoffer, SIPCallError("re-INVITE: the call is not established"))
            return
        }
        if phase == .answered || reofferInProgress != nil || unacknowledged != nil {
            guard now < reoffer.waitLimit else {
                fail(reoffer, SIPCallError("re-INVITE: another INVITE stayed in progress for 64·T1"))
                return
            }
            waitingReoffers.append(reoffer)
            startTimer(.reofferWaitLimit(reoffer.id), at: reoffer.waitLimit)
            return
        }
        sendReinvite(reoffer)
    }

    private mutating func sendReinvite(_ reoffer: Reoffer) {
        guard var dialog, var capabilities = reoffer.offering ?? self.capabilities, let previous = localDescription
        else { return }
        var reoffer = reoffer
        if let direction = reoffer.direction { capabilities.direction = direction }
        var offer = SessionDescription.makeOffer(capabilities, sessionID: makeSessionID())
        offer.origin = previous.origin.next
        if !reoffer.freshKeys, !previous.audio.crypto.isEmpty { offer.audio.crypto = previous.audio.crypto }
        // RFC 8842 §5.5: a re-offer that keeps the DTLS association (same certificate) keeps its role; actpass would
        // let the answerer take the other one, which needs a new association.
        if let dtls = negotiated?.dtls, capabilities.dtlsFingerprint == self.capabilities?.dtlsFingerprint,
            let index = offer.audio.otherAttributes.firstIndex(of: "setup:actpass")
        {
            offer.audio.otherAttributes[index] = dtls.isClient ? "setup:active" : "setup:passive"
        }
        let request = dialog.makeRequest(
            .invite, contact: configuration.contact, headers: [("Allow", SIPUserAgent.allow)],
            body: Array(offer.serialize().utf8), contentType: "application/sdp")
        self.dialog = dialog
        reoffer.attempts += 1
        reoffer.offer = offer
        reoffer.offeredCapabilities = capabilities
        reofferInProgress = reoffer
        actions.append(.send(request, to: .nextHop(dialog.nextHop), purpose: .reinvite(reoffer.id)))
    }

    /// After every input: the first waiting re-offer goes out once no other INVITE is in progress; all of them
    /// fail once the call is no longer established.
    mutating func startWaitingReoffers() {
        while let next = waitingReoffers.first {
            let established = phase == .confirmed || phase == .answered
            if established, phase == .answered || reofferInProgress != nil || unacknowledged != nil { return }
            waitingReoffers.removeFirst()
            cancelTimer(.reofferWaitLimit(next.id))
            reoffer(next)
        }
    }

    mutating func reofferWaitLimitPassed(_ id: CommandID) {
        guard let index = waitingReoffers.firstIndex(where: { $0.id == id }) else { return }
        let reoffer = waitingReoffers.remove(at: index)
        fail(reoffer, SIPCallError("re-INVITE: another INVITE stayed in progress for 64·T1"))
    }

    mutating func glareBackoffOver(_ id: CommandID) {
        guard let reoffer = backingOffReoffers.removeValue(forKey: id) else { return }
        self.reoffer(reoffer)
    }

    mutating func fail(_ reoffer: Reoffer, _ error: SIPCallError) {
        cancelTimer(.reofferWaitLimit(reoffer.id))
        cancelTimer(.glareRetry(reoffer.id))
        complete(reoffer.id, .failure(error))
    }

    mutating func reinviteFailed(_ id: CommandID, _ error: any Error) {
        guard let reoffer = reofferInProgress, reoffer.id == id else { return }
        reofferInProgress = nil
        complete(id, .failure(SIPCallError("re-INVITE: \(error)")))
    }

    /// The final response to our re-INVITE: a 2xx is ACKed and its answer taken; 491 backs off and tries again;
    /// 481 and 408 end the call (§12.2.1.2); any other status fails the re-offer and keeps the media as it was.
    mutating func reinviteAnswered(_ response: SIPMessage, _ id: CommandID) {
        guard let reoffer = reofferInProgress, reoffer.id == id, let offer = reoffer.offer,
            let offeredCapabilities = reoffer.offeredCapabilities
        else { return }
        reofferInProgress = nil
        guard let code = response.statusCode else {
            complete(id, .failure(SIPCallError("no status")))
            return
        }
        if var dialog, let cseq = response.cseq {
            dialog.noteSent(sequence: cseq.sequence)
            if (200...299).contains(code) {
                dialog.refreshTarget(from: response)
                sendStateless(
                    dialog.makeAck(inviteSequence: cseq.sequence, contact: configuration.contact), along: dialog)
            }
            self.dialog = dialog
        }
        if code == 491 {
            backOff(reoffer)
            return
        }
        guard (200...299).contains(code) else {
            if code == 481 || code == 408 {
                end(SIPCallEnd(.failed, statusCode: code, reasonPhrase: response.reasonPhrase ?? ""))
            }
            complete(id, .failure(SIPCallError(statusCode: code, response.reasonPhrase ?? "")))
            return
        }
        guard let answer = parseSDP(response.body) else {
            complete(id, .failure(SIPCallError(statusCode: code, "the 2xx carries no SDP answer")))
            return
        }
        do {
            let media = try offer.negotiate(answer: answer, localCapabilities: offeredCapabilities)
            localDescription = offer
            capabilities = offeredCapabilities
            negotiated = media
            emit(.mediaUpdated(media, byPeer: false))
            complete(id, .success(media))
        } catch {
            complete(id, .failure(SIPCallError(statusCode: code, "answer not acceptable: \(error)")))
        }
    }

    /// Glare (§14.1): the re-offer goes again after a random delay from the configured range (2.1–4 s for the
    /// caller, who owns the Call-ID; 0–2 s for the callee), unless it has used up its attempts.
    private mutating func backOff(_ reoffer: Reoffer) {
        guard reoffer.attempts < Self.reofferAttempts else {
            complete(reoffer.id, .failure(SIPCallError(statusCode: 491, "re-INVITE refused with 491 four times")))
            return
        }
        guard phase == .confirmed || phase == .answered else {
            fail(reoffer, SIPCallError("re-INVITE: the call is not established"))
            return
        }
        let delay = Double.random(in: configuration.glareBackoff, using: &random)
        backingOffReoffers[reoffer.id] = reoffer
        startTimer(.glareRetry(reoffer.id), at: now + .milliseconds(Int64(delay * 1000)))
    }

    // MARK: The peer's re-INVITE

    mutating func receivedReinvite(_ request: SIPIncomingRequest) {
        let message = request.message
        if reofferInProgress != nil {
            respond(makeResponse(to: message, status: 491), to: request)  // glare (§14.2)
            return
        }
        // A new INVITE with a higher CSeq means the peer has our last 2xx, even if its ACK is still on the way.
        if unacknowledged != nil { acknowledged() }
        guard phase == .confirmed else {
            // Not answered yet: the peer must wait (§14.2: 500 with Retry-After).
            var busy = makeResponse(
                to: message, status: 500, reason: "Server Internal Error (previous INVITE in progress)")
            busy.headers.add("Retry-After", "\(Int.random(in: 0...10, using: &random))")
            respond(busy, to: request)
            return
        }
        guard let offer = parseSDP(message.body), let capabilities else {
            respond(makeResponse(to: message, status: 488, reason: "Not Acceptable Here (no SDP offer)"), to: request)
            return
        }
        do {
            var (answer, media) = try SessionDescription.makeAnswer(
                to: offer, localCapabilities: capabilities, sessionID: makeSessionID())
            if let restart = iceRestartAnswer, let before = negotiated?.remoteICE, let after = media.remoteICE,
                before.ufrag != after.ufrag || before.password != after.password
            {
                // The peer restarted ICE (RFC 8445 §9, RFC 8839 §4.4.1.1): we restart too, with the credentials
                // prepared for it, and later answers repeat them.
                var restarted = capabilities
                restarted.ice = restart
                (answer, media) = try SessionDescription.makeAnswer(
                    to: offer, localCapabilities: restarted, sessionID: makeSessionID())
                self.capabilities = restarted
                iceRestartAnswer = nil
            }
            if let before = negotiated?.dtls, let after = media.dtls,
                let change = Self.newDTLSAssociation(from: before, to: after)
            {
                // RFC 8842 §5 (RFC 5763 §5): the same fingerprint and role keep the DTLS association and its SRTP
                // keys (a hold, a mute, a codec change); a new one asks for a new handshake, which this call does
                // not run mid-call. Refused, the re-INVITE leaves the session as it was (RFC 3261 §14.2).
                respond(
                    makeResponse(
                        to: message, status: 488,
                        reason:
                            "Not Acceptable Here (DTLS-SRTP: \(change) needs a new DTLS association; the call keeps its own)"
                    ),
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
            respond(makeResponse(to: message, status: 488, reason: "Not Acceptable Here (\(error))"), to: request)
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
}
