import VoiceSDP

/// The caller's side: provisional and final responses to our INVITE, CANCEL, and the 2xx of other forks.
extension SIPInviteSession {
    mutating func receivedProvisional(_ response: SIPMessage) {
        guard phase == .early || phase == .ending, let code = response.statusCode else { return }
        lastProvisional = response
        // RFC 3261 §9.1: no CANCEL before a provisional response; one asked for earlier goes out now.
        if cancelWanted { sendCancel() }
        guard code > 100 else { return }
        var early: NegotiatedAudio?
        if response.to?.tag != nil, dialog == nil {
            dialog = try? SIPDialog.uac(invite: inviteAsSent(response), response: response)
        }
        if !response.body.isEmpty, let answer = parseSDP(response.body), let offer = localDescription, let capabilities
        {
            early = try? offer.negotiate(answer: answer, localCapabilities: capabilities)
            if let early { negotiated = early }
        }
        emit(.progress(statusCode: code, reasonPhrase: response.reasonPhrase ?? "", earlyMedia: early))
    }

    /// The INVITE with the CSeq it was last sent with (a digest retry raised it).
    func inviteAsSent(_ response: SIPMessage) -> SIPMessage {
        var sent = invite
        if let cseq = response.cseq { sent.headers.replace("CSeq", with: cseq.description) }
        return sent
    }

    mutating func receivedFinalResponse(_ response: SIPMessage) {
        guard let code = response.statusCode else { return }
        guard (200...299).contains(code) else {
            end(
                SIPCallEnd(
                    code == 487 ? .cancelled : .rejected, statusCode: code, reasonPhrase: response.reasonPhrase ?? "",
                    headers: response.customHeaders))
            return
        }
        do {
            var dialog = try SIPDialog.uac(invite: inviteAsSent(response), response: response)
            let ack = dialog.makeAck(inviteSequence: response.cseq?.sequence ?? 1, contact: configuration.contact)
            self.dialog = dialog
            ackOfInvite = ack
            sendStateless(ack)
            // 2xx of other forks that came before this one.
            let overtaking = overtakingResponses
            overtakingResponses = []
            for response in overtaking { receivedStray(response) }
        } catch {
            end(SIPCallEnd(.failed, statusCode: code, reasonPhrase: "2xx without a dialog: \(error)"))
            return
        }
        if cancelWanted || phase == .ending {
            // The 2xx crossed our CANCEL (§9.1): the call exists, so it is ended with a BYE.
            phase = .confirmed
            sendBye(
                headers: [],
                cause: SIPCallEnd(
                    .cancelled, statusCode: nil, reasonPhrase: "answered while cancelling; ended with BYE"))
            return
        }
        guard let offer = localDescription, let capabilities else { return }
        let result: Result<NegotiatedAudio, any Error>
        if let answer = parseSDP(response.body) {
            result = Result { try offer.negotiate(answer: answer, localCapabilities: capabilities) }
        } else if let early = negotiated {
            result = .success(early)
        } else {
            result = .failure(SIPCallError("the 2xx carries no SDP answer"))
        }
        phase = .confirmed
        switch result {
        case .success(let media):
            negotiated = media
            emit(.established(media, headers: response.customHeaders))
        case .failure(let error):
            sendBye(
                headers: [("Reason", "SIP;cause=488;text=\"\(error)\"")],
                cause: SIPCallEnd(.failed, statusCode: 488, reasonPhrase: "answer not acceptable: \(error)"))
        }
    }

    /// CANCEL of our INVITE, matching the transaction the last provisional response names.
    mutating func sendCancel() {
        guard let provisional = lastProvisional, let via = provisional.headers.first("Via") else { return }
        cancelWanted = false
        var sent = inviteAsSent(provisional)
        sent.headers.replace("Via", with: via.split(separator: ",").first.map(String.init) ?? via)
        actions.append(.send(SIPMessage.cancel(of: sent), to: .inviteTarget, purpose: .cancel))
    }

    /// A 2xx after the one that made our dialog (§13.2.2.4). From the same fork (same To tag) it is a
    /// retransmission: our ACK was lost, so it is sent again. From another fork (a proxy forked the INVITE and a
    /// second phone answered too) it makes a dialog of its own: that one is ACKed and ended with a BYE, ours is
    /// kept; its retransmissions get the same ACK again. One that overtakes the first 2xx on its way to
    /// `receivedFinalResponse` waits there.
    mutating func receivedStray(_ response: SIPMessage) {
        guard response.cseq?.method == .invite, let code = response.statusCode, (200...299).contains(code),
            direction == .outgoing, let tag = response.to?.tag
        else { return }
        guard let ack = ackOfInvite, let dialog else {
            if phase == .early { overtakingResponses.append(response) }
            return
        }
        if tag == dialog.id.remoteTag {
            if response.cseq?.sequence == ack.cseq?.sequence { sendStateless(ack) }
            return
        }
        if let forkAck = forkAcknowledgements[tag] {
            sendStateless(forkAck.ack, along: forkAck.dialog)
            return
        }
        guard var fork = try? SIPDialog.uac(invite: inviteAsSent(response), response: response) else { return }
        let forkAck = fork.makeAck(inviteSequence: response.cseq?.sequence ?? 1, contact: configuration.contact)
        let bye = fork.makeRequest(
            .bye, contact: configuration.contact,
            headers: [("Reason", "SIP;cause=200;text=\"Call answered elsewhere\"")])
        forkAcknowledgements[tag] = (forkAck, fork)
        sendStateless(forkAck, along: fork)
        actions.append(.send(bye, to: .nextHop(fork.nextHop), purpose: .byeOfFork))
    }
}
