import Testing
import VoiceEngine
@testable import VoiceSIP

/// The INVITE session as tables: each row is an input at a time (seconds from the call's start) and the actions the
/// session answers with. No socket, no clock, no sleep: timers fire when the table says, at the deadline the
/// session set (RFC 3261 timers at their defaults: T1 0.5 s, T2 4 s, 64·T1 32 s), and every random draw lands mid-range
/// (`MidRangeRandom`) unless a test seeds its own generator.
@Suite("SIP INVITE session as a state machine")
struct SIPInviteSessionTests {
    // MARK: Set-ups

    /// Alice's call, answered by bob's 200 at 0.2 s. Returns the session and her INVITE as its transaction sent it.
    static func answeredCaller() throws -> (SessionScript, invite: SIPMessage) {
        var alice = SessionScript.caller()
        alice.step(at: 0, .start, ["send INVITE"])
        let invite = Party.withVia(try alice.lastSent(.invite), branch: "invite-1")
        let ok = Party.response(
            200, to: invite, tag: "bob-tag", contact: Party.bobContact,
            sdp: try Party.answer(to: invite, from: Party.bobCapabilities))
        alice.step(at: 0.2, .response(ok, to: .invite), ["ACK to 192.0.2.2", "emit established sendrecv"])
        return (alice, invite)
    }

    /// Alice's INVITE as it reaches bob.
    static func aliceInvite() -> SIPMessage {
        Party.withVia(
            Party.aliceInvite(offer: SessionDescription.makeOffer(Party.aliceCapabilities, sessionID: 1)),
            branch: "invite-1")
    }

    /// Bob's session answering alice at 0 s (its 2xx not yet ACKed), and alice's side of the dialog.
    static func answeredCallee() throws -> (SessionScript, alice: SIPDialog) {
        let invite = aliceInvite()
        var bob = try SessionScript.callee(invite)
        bob.step(
            at: 0, .command(.answer(Party.bobCapabilities, headers: []), .init(1)),
            ["respond 200 to INVITE", "start retransmission at 0.5", "complete #1 sendrecv"])
        return (bob, try SIPDialog.uac(invite: invite, response: try bob.lastResponse()))
    }

    /// `answeredCallee` with alice's ACK at 0.1 s.
    static func confirmedCallee() throws -> (SessionScript, alice: SIPDialog) {
        var (bob, alice) = try answeredCallee()
        bob.step(at: 0.1, .request(ack(&alice, sequence: 1)), ["cancel retransmission", "emit established sendrecv"])
        return (bob, alice)
    }

    static func ack(_ dialog: inout SIPDialog, sequence: UInt32) -> SIPIncomingRequest {
        Party.received(
            Party.withVia(
                dialog.makeAck(inviteSequence: sequence, contact: Party.aliceContact), branch: "ack-\(sequence)"))
    }

    /// A re-INVITE of alice's to bob with an offer in `direction`.
    static func aliceReinvite(_ dialog: inout SIPDialog, direction: MediaDirection, branch: String)
        -> SIPIncomingRequest
    {
        var capabilities = Party.aliceCapabilities
        capabilities.direction = direction
        let offer = SessionDescription.makeOffer(capabilities, sessionID: 1)
        let request = dialog.makeRequest(
            .invite, contact: Party.aliceContact, body: Array(offer.serialize().utf8), contentType: "application/sdp")
        return Party.received(Party.withVia(request, branch: branch))
    }

    // MARK: Outgoing: answer, forks

    /// Alice's INVITE forked by a proxy to bob's desk phone and his mobile, and the 200 of each.
    static func forkedCall() throws -> (SessionScript, invite: SIPMessage, desk: SIPMessage, mobile: SIPMessage) {
        var alice = SessionScript.caller()
        alice.step(at: 0, .start, ["send INVITE"])
        let invite = Party.withVia(try alice.lastSent(.invite), branch: "invite-1")
        let answer = try Party.answer(to: invite, from: Party.bobCapabilities)
        return (
            alice, invite, Party.response(200, to: invite, tag: "desk", contact: Party.bobContact, sdp: answer),
            Party.response(200, to: invite, tag: "mobile", contact: Party.bobOtherPhone, sdp: answer)
        )
    }

    @Test func theCallerAcksTheFirst2xxAndEndsEveryOtherForkWithBye() throws {
        var (alice, invite, desk, mobile) = try Self.forkedCall()
        alice.step(
            at: 0.1, .provisional(Party.response(180, to: invite, tag: "desk", contact: Party.bobContact)),
            ["emit progress 180"])
        alice.step(at: 0.2, .response(desk, to: .invite), ["ACK to 192.0.2.2", "emit established sendrecv"])
        // The other phone answered too (§13.2.2.4): its dialog is ACKed and ended; ours stays.
        alice.step(at: 0.3, .strayResponse(mobile), ["ACK to 192.0.2.3", "send BYE to 192.0.2.3 (other fork)"])
        let forkBye = try alice.lastSent(.bye)
        #expect(forkBye.headers.first("Reason") == "SIP;cause=200;text=\"Call answered elsewhere\"")
        #expect(forkBye.to?.tag == "mobile")
        // Retransmitted 2xx (our ACK was lost) get the same ACK again, from either fork; nothing else happens.
        alice.step(at: 0.4, .strayResponse(mobile), ["ACK to 192.0.2.3"])
        alice.step(at: 0.5, .strayResponse(desk), ["ACK to 192.0.2.2"])
        alice.step(
            at: 0.6,
            .response(Party.response(200, to: forkBye, tag: "mobile", contact: Party.bobOtherPhone), to: .byeOfFork), []
        )
        #expect(alice.session.phase == .confirmed && alice.session.dialog?.id.remoteTag == "desk")
    }

    @Test func aForked2xxOvertakingTheFirstWaitsForIt() throws {
        var (alice, _, desk, mobile) = try Self.forkedCall()
        alice.step(at: 0.1, .strayResponse(mobile), [])
        alice.step(
            at: 0.2, .response(desk, to: .invite),
            ["ACK to 192.0.2.2", "ACK to 192.0.2.3", "send BYE to 192.0.2.3 (other fork)", "emit established sendrecv"])
    }

    @Test func aCallThatGetsNoFinalResponseFailsWith408() throws {
        var alice = SessionScript.caller()
        alice.step(at: 0, .start, ["send INVITE"])
        alice.step(
            at: 32, .requestFailed(.invite, SIPError(.timeout, "Timer B fired")),
            ["emit ended failed 408 Request Timeout (no final response)"])
    }

    // MARK: Early media

    @Test func theAnswerOfA183CarriesIntoA2xxWithoutSDP() throws {
        var alice = SessionScript.caller()
        alice.step(at: 0, .start, ["send INVITE"])
        let invite = Party.withVia(try alice.lastSent(.invite), branch: "invite-1")
        let answer = try Party.answer(to: invite, from: Party.bobCapabilities)
        alice.step(
            at: 0.1,
            .provisional(Party.response(183, to: invite, tag: "bob-tag", contact: Party.bobContact, sdp: answer)),
            ["emit progress 183 with early media"])
        let early = try #require(alice.session.negotiated)
        #expect(early.remotePort == Party.bobCapabilities.port)
        alice.step(
            at: 0.5, .response(Party.response(200, to: invite, tag: "bob-tag", contact: Party.bobContact), to: .invite),
            ["ACK to 192.0.2.2", "emit established sendrecv"])
        #expect(alice.session.negotiated == early)
    }

    @Test func a2xxWithoutAnyAnswerIsAckedAndEndedWithBye488() throws {
        var alice = SessionScript.caller()
        alice.step(at: 0, .start, ["send INVITE"])
        let invite = Party.withVia(try alice.lastSent(.invite), branch: "invite-1")
        alice.step(
            at: 0.5, .response(Party.response(200, to: invite, tag: "bob-tag", contact: Party.bobContact), to: .invite),
            ["ACK to 192.0.2.2", "send BYE to 192.0.2.2"])
        let bye = try alice.lastSent(.bye)
        #expect(bye.headers.first("Reason")?.hasPrefix("SIP;cause=488") == true)
        alice.step(
            at: 0.6, .response(.response(to: bye, status: 200), to: .bye),
            ["emit ended failed 488 answer not acceptable: the 2xx carries no SDP answer"])
    }

    @Test func theCalleesEarlyAnswerIsRepeatedInIts200() throws {
        var bob = try SessionScript.callee(Self.aliceInvite())
        bob.step(
            at: 0, .command(.ring(earlyMedia: Party.bobCapabilities, headers: []), .init(1)),
            ["respond 183 to INVITE", "complete #1 sendrecv"])
        let sessionProgress = try bob.lastResponse()
        bob.step(
            at: 1, .command(.answer(Party.bobCapabilities, headers: []), .init(2)),
            ["respond 200 to INVITE", "start retransmission at 1.5", "complete #2 sendrecv"])
        #expect(try bob.lastResponse().body == sessionProgress.body)  // RFC 3264 §4: one offer, one answer
    }

    @Test func anOfferThatCannotBeMetIsRefusedWith488() throws {
        var bob = try SessionScript.callee(Self.aliceInvite())
        var plain = Party.bobCapabilities
        plain.srtp = .disabled
        let actions = bob.step(
            at: 0, .command(.answer(plain, headers: []), .init(1)),
            [
                "respond 488 to INVITE", "emit ended failed 488 offer not acceptable: \(SDPError.srtpNotSupported)",
                "fail #1: \(SDPError.srtpNotSupported)"
            ])
        guard case .complete(_, .failure(let error)) = actions.last else { return }
        #expect(error as? SDPError == .srtpNotSupported)
    }

    /// No common codec: 488 with `Warning: 305` before any ringing, and the call ends; an offer that can be met
    /// passes the check without a response, and the call then rings.
    @Test func anOfferWithNoCommonCodecIsRefusedBeforeRinging() throws {
        var g711Only = Party.bobCapabilities
        g711Only.codecs = [.pcmu, .pcma]
        let noCodec = SDPError.noCommonCodec(offered: ["opus/48000/2", "G722/8000"])
        var alice = Party.aliceCapabilities
        alice.codecs = [.opus, .g722]
        var bob = try SessionScript.callee(
            Party.withVia(Party.aliceInvite(offer: SessionDescription.makeOffer(alice, sessionID: 1)), branch: "inv"))
        bob.step(
            at: 0, .command(.refuseUnacceptableOffer(g711Only), .init(1)),
            ["respond 488 to INVITE", "emit ended failed 488 offer not acceptable: \(noCodec)", "fail #1: \(noCodec)"])
        let refusal = try bob.lastResponse()
        #expect(refusal.reasonPhrase == "Not Acceptable Here (\(noCodec))")
        #expect(refusal.headers.first("Warning")?.hasSuffix(" \"Incompatible media format\"") == true)
        #expect(refusal.headers.first("Warning")?.hasPrefix("305 ") == true)

        var ringing = try SessionScript.callee(Self.aliceInvite())
        ringing.step(at: 0, .command(.refuseUnacceptableOffer(Party.bobCapabilities), .init(1)), ["complete #1"])
        ringing.step(
            at: 0.1, .command(.ring(earlyMedia: nil, headers: []), .init(2)), ["respond 180 to INVITE", "complete #2"])
    }

    // MARK: CANCEL races

    @Test func aHangUpBeforeAnyProvisionalWaitsForOneToCancel() throws {
        var alice = SessionScript.caller()
        alice.step(at: 0, .start, ["send INVITE"])
        let invite = Party.withVia(try alice.lastSent(.invite), branch: "invite-1")
        // RFC 3261 §9.1: no CANCEL before a provisional response.
        alice.step(at: 0.05, .command(.hangUp(headers: []), .init(1)), [])
        alice.step(at: 0.1, .provisional(.response(to: invite, status: 100)), ["send CANCEL"])
        let cancel = try alice.lastSent(.cancel)
        #expect(cancel.topVia?.branch == "z9hG4bK-invite-1" && cancel.cseq == SIPCSeq(1, .cancel))
        alice.step(at: 0.2, .response(.response(to: cancel, status: 200), to: .cancel), [])
        alice.step(
            at: 0.3, .response(Party.response(487, to: invite, tag: "bob-tag", contact: Party.bobContact), to: .invite),
            ["emit ended cancelled 487 Request Terminated", "complete #1"])
    }

    @Test func a200CrossingOurCancelIsAckedAndEndedWithBye() throws {
        var alice = SessionScript.caller()
        alice.step(at: 0, .start, ["send INVITE"])
        let invite = Party.withVia(try alice.lastSent(.invite), branch: "invite-1")
        alice.step(
            at: 0.1, .provisional(Party.response(180, to: invite, tag: "bob-tag", contact: Party.bobContact)),
            ["emit progress 180"])
        alice.step(at: 0.2, .command(.hangUp(headers: []), .init(1)), ["send CANCEL"])
        let ok = Party.response(
            200, to: invite, tag: "bob-tag", contact: Party.bobContact,
            sdp: try Party.answer(to: invite, from: Party.bobCapabilities))
        alice.step(at: 0.3, .response(ok, to: .invite), ["ACK to 192.0.2.2", "send BYE to 192.0.2.2"])
        let bye = try alice.lastSent(.bye)
        alice.step(at: 0.35, .command(.hangUp(headers: []), .init(2)), [])  // a second hang-up waits for the same end
        alice.step(
            at: 0.4, .response(.response(to: bye, status: 200), to: .bye),
            ["emit ended cancelled answered while cancelling; ended with BYE", "complete #1", "complete #2"])
    }

    @Test func theCallersCancelWhileRingingEndsTheCallWith487() throws {
        let invite = Self.aliceInvite()
        var bob = try SessionScript.callee(invite)
        bob.step(
            at: 0, .command(.ring(earlyMedia: nil, headers: []), .init(1)), ["respond 180 to INVITE", "complete #1"])
        var cancel = SIPMessage.cancel(of: invite)
        cancel.headers.add("Reason", "SIP;cause=200;text=\"Call completed elsewhere\"")
        let actions = bob.step(
            at: 0.5, .request(Party.received(cancel)),
            ["respond 200 to CANCEL", "respond 487 to INVITE", "emit ended cancelled 487 cancelled by the caller"])
        guard case .emit(.ended(let end)) = actions.last else { return }
        #expect(end.cancelReasonSIPCause == 200)
        bob.step(
            at: 0.6, .command(.answer(Party.bobCapabilities, headers: []), .init(2)),
            ["fail #2: answer: not an unanswered incoming call"])
    }

    @Test func aCancelAfterOur200HasNoEffect() throws {
        var (bob, alice) = try Self.answeredCallee()
        bob.step(
            at: 0.1, .request(Party.received(SIPMessage.cancel(of: Self.aliceInvite()))), ["respond 200 to CANCEL"])
        bob.step(
            at: 0.2, .request(Self.ack(&alice, sequence: 1)), ["cancel retransmission", "emit established sendrecv"])
    }

    // MARK: Our 2xx until its ACK

    @Test func our2xxIsRetransmittedWithDoublingIntervalsAndTheCallEndsWithoutAnAck() throws {
        var (bob, _) = try Self.answeredCallee()
        // T1 doubling up to T2 (§13.3.1.4), given up at the first retransmission past 64·T1: BYE.
        #expect(
            bob.runTimers(until: 40) == [
                "0.5: respond 200 to INVITE, start retransmission at 1.5",
                "1.5: respond 200 to INVITE, start retransmission at 3.5",
                "3.5: respond 200 to INVITE, start retransmission at 7.5",
                "7.5: respond 200 to INVITE, start retransmission at 11.5",
                "11.5: respond 200 to INVITE, start retransmission at 15.5",
                "15.5: respond 200 to INVITE, start retransmission at 19.5",
                "19.5: respond 200 to INVITE, start retransmission at 23.5",
                "23.5: respond 200 to INVITE, start retransmission at 27.5",
                "27.5: respond 200 to INVITE, start retransmission at 31.5",
                "31.5: respond 200 to INVITE, start retransmission at 35.5",
                "35.5: send BYE to 192.0.2.1"
            ])
        let bye = try bob.lastSent(.bye)
        bob.step(
            at: 35.6, .response(.response(to: bye, status: 200), to: .bye),
            ["emit ended failed no ACK for our 2xx within 64·T1"])
    }

    @Test func theAckStopsTheRetransmissionsAndConfirmsTheCall() throws {
        var (bob, alice) = try Self.answeredCallee()
        #expect(
            bob.runTimers(until: 2) == [
                "0.5: respond 200 to INVITE, start retransmission at 1.5",
                "1.5: respond 200 to INVITE, start retransmission at 3.5"
            ])
        bob.step(at: 2.0, .request(Self.ack(&alice, sequence: 7)), [])  // not the INVITE's CSeq: not its ACK
        bob.step(
            at: 2.1, .request(Self.ack(&alice, sequence: 1)), ["cancel retransmission", "emit established sendrecv"])
        #expect(bob.runTimers(until: 60).isEmpty)
        #expect(bob.session.phase == .confirmed)
    }

    // MARK: Held BYE

    @Test func aHangUpBeforeTheAckHoldsTheByeUntilTheAck() throws {
        var (bob, alice) = try Self.answeredCallee()
        // RFC 3261 §15: no BYE before the ACK of our 2xx; the 2xx keeps going meanwhile.
        bob.step(
            at: 0.2, .command(.hangUp(headers: [("X-Reason", "done")]), .init(2)), ["start held BYE deadline at 32.0"])
        bob.step(at: 0.5, .timer(.retransmission), ["respond 200 to INVITE", "start retransmission at 1.5"])
        bob.step(
            at: 0.7, .request(Self.ack(&alice, sequence: 1)),
            ["cancel retransmission", "cancel held BYE deadline", "send BYE to 192.0.2.1"])
        let bye = try bob.lastSent(.bye)
        #expect(bye.headers.first("X-Reason") == "done")
        bob.step(
            at: 0.8, .response(.response(to: bye, status: 200), to: .bye), ["emit ended localHangup BYE", "complete #2"]
        )
    }

    @Test func aHeldByeGoesOut64T1AfterThe2xxWithoutAnAck() throws {
        var (bob, _) = try Self.answeredCallee()
        bob.step(at: 0.2, .command(.hangUp(headers: []), .init(2)), ["start held BYE deadline at 32.0"])
        let firings = bob.runTimers(until: 40)
        #expect(firings.count == 11)
        #expect(firings.last == "32.0: cancel retransmission, send BYE to 192.0.2.1")
        let bye = try bob.lastSent(.bye)
        bob.step(
            at: 32.1, .response(.response(to: bye, status: 200), to: .bye),
            ["emit ended localHangup BYE (no ACK for our 2xx within 64·T1)", "complete #2"])
    }

    @Test func closingTheEndpointEndsAHeldHangUpAtOnce() throws {
        var (bob, _) = try Self.answeredCallee()
        bob.step(at: 0.2, .command(.hangUp(headers: []), .init(2)), ["start held BYE deadline at 32.0"])
        bob.step(
            at: 0.3, .endpointClosed,
            ["cancel retransmission", "cancel held BYE deadline", "emit ended localHangup BYE", "complete #2"])
        #expect(bob.timers.isEmpty)
    }

    // MARK: Re-INVITE: our offers

    @Test func holdResumeAndRekeyAreReInvitesOfTheCurrentSession() throws {
        var (alice, _) = try Self.answeredCaller()
        let initial = try #require(alice.session.localDescription)
        let initialMedia = try #require(alice.session.negotiated)

        alice.step(
            at: 1.0, .command(.reoffer(direction: .sendonly, freshKeys: false, offering: nil), .init(1)),
            ["send INVITE to 192.0.2.2"])
        let hold = try alice.lastSent(.invite)
        let holdOffer = try Party.sdp(of: hold)
        #expect(hold.cseq == SIPCSeq(2, .invite))
        #expect(holdOffer.audio.direction == .sendonly)
        #expect(holdOffer.audio.crypto == initial.audio.crypto)  // a hold keeps the keys
        #expect(holdOffer.origin.sessionID == initial.origin.sessionID && holdOffer.origin.sessionVersion == "2")
        alice.step(
            at: 1.1,
            .response(
                Party.response(
                    200, to: hold, tag: "bob-tag", contact: Party.bobContact,
                    sdp: try Party.answer(to: hold, from: Party.bobCapabilities)), to: .reinvite(.init(1))),
            ["ACK to 192.0.2.2", "emit media sendonly by us", "complete #1 sendonly"])
        #expect(try alice.lastSent(.ack).cseq == SIPCSeq(2, .ack))

        alice.step(
            at: 2.0, .command(.reoffer(direction: .sendrecv, freshKeys: false, offering: nil), .init(2)),
            ["send INVITE to 192.0.2.2"])
        let resume = try alice.lastSent(.invite)
        #expect(try Party.sdp(of: resume).origin.sessionVersion == "3")
        alice.step(
            at: 2.1,
            .response(
                Party.response(
                    200, to: resume, tag: "bob-tag", contact: Party.bobContact,
                    sdp: try Party.answer(to: resume, from: Party.bobCapabilities)), to: .reinvite(.init(2))),
            ["ACK to 192.0.2.2", "emit media sendrecv by us", "complete #2 sendrecv"])

        alice.step(
            at: 3.0, .command(.reoffer(direction: nil, freshKeys: true, offering: nil), .init(3)),
            ["send INVITE to 192.0.2.2"])
        let rekey = try alice.lastSent(.invite)
        #expect(try Party.sdp(of: rekey).audio.crypto.first?.key != initial.audio.crypto.first?.key)
        alice.step(
            at: 3.1,
            .response(
                Party.response(
                    200, to: rekey, tag: "bob-tag", contact: Party.bobContact,
                    sdp: try Party.answer(to: rekey, from: Party.bobCapabilities)), to: .reinvite(.init(3))),
            ["ACK to 192.0.2.2", "emit media sendrecv by us", "complete #3 sendrecv"])
        let rekeyed = try #require(alice.session.negotiated?.srtp)
        #expect(rekeyed.localKey != initialMedia.srtp?.localKey)
    }

    @Test func aRejectedReInviteKeepsTheMediaAndA481EndsTheCall() throws {
        var (alice, _) = try Self.answeredCaller()
        let before = try #require(alice.session.negotiated)
        let description = alice.session.localDescription

        alice.step(
            at: 1.0, .command(.reoffer(direction: .sendonly, freshKeys: true, offering: nil), .init(1)),
            ["send INVITE to 192.0.2.2"])
        let refused = try alice.lastSent(.invite)
        alice.step(
            at: 1.1, .response(.response(to: refused, status: 488), to: .reinvite(.init(1))),
            ["fail #1: 488 Not Acceptable Here"])
        #expect(alice.session.negotiated == before)
        #expect(alice.session.localDescription == description)
        #expect(alice.session.phase == .confirmed)

        alice.step(
            at: 2.0, .command(.reoffer(direction: .sendonly, freshKeys: false, offering: nil), .init(2)),
            ["send INVITE to 192.0.2.2"])
        #expect(try alice.lastSent(.invite).cseq == SIPCSeq(3, .invite))
        alice.step(
            at: 2.1, .response(.response(to: try alice.lastSent(.invite), status: 481), to: .reinvite(.init(2))),
            ["emit ended failed 481 Call/Transaction Does Not Exist", "fail #2: 481 Call/Transaction Does Not Exist"])
    }

    @Test func aReofferWaitsWhileOur2xxIsUnacknowledged() throws {
        var (bob, alice) = try Self.answeredCallee()
        bob.step(
            at: 0.1, .command(.reoffer(direction: .sendonly, freshKeys: false, offering: nil), .init(2)),
            ["start wait limit #2 at 32.1"])
        bob.step(
            at: 0.2, .request(Self.ack(&alice, sequence: 1)),
            ["cancel retransmission", "emit established sendrecv", "cancel wait limit #2", "send INVITE to 192.0.2.1"])
    }

    @Test func aReofferGivesUpWaiting64T1After() throws {
        var (bob, _) = try Self.answeredCallee()
        bob.step(
            at: 0.1, .command(.reoffer(direction: .sendonly, freshKeys: false, offering: nil), .init(2)),
            ["start wait limit #2 at 32.1"])
        let firings = bob.runTimers(until: 33)
        #expect(firings.last == "32.1: fail #2: re-INVITE: another INVITE stayed in progress for 64·T1")
    }

    @Test func aReofferOutsideAnEstablishedCallFails() throws {
        var alice = SessionScript.caller()
        alice.step(at: 0, .start, ["send INVITE"])
        alice.step(
            at: 0.1, .command(.reoffer(direction: .sendonly, freshKeys: false, offering: nil), .init(1)),
            ["fail #1: re-INVITE: the call is not established"])
    }

    // MARK: Re-INVITE: the peer's offers

    @Test func thePeersReInviteIsAnsweredAndReportedAtItsAck() throws {
        var (bob, alice) = try Self.confirmedCallee()
        let bobKey = bob.session.negotiated?.srtp?.localKey
        bob.step(
            at: 1.0, .request(Self.aliceReinvite(&alice, direction: .sendonly, branch: "reinvite-1")),
            ["respond 200 to INVITE", "start retransmission at 1.5"])
        let answer = try Party.sdp(of: try bob.lastResponse())
        #expect(answer.audio.direction == .recvonly)
        #expect(answer.origin.sessionVersion == "2")
        #expect(bob.session.negotiated?.srtp?.localKey == bobKey)  // the answerer keeps its key (RFC 4568 §7.1.4)
        bob.step(
            at: 1.1, .request(Self.ack(&alice, sequence: 2)), ["cancel retransmission", "emit media recvonly by peer"])
    }

    @Test func aPeersReInviteOutOfOrderOrOutsideTheDialogOrWithoutOfferIsRefused() throws {
        var (bob, alice) = try Self.confirmedCallee()
        let before = bob.session.negotiated
        var stale = alice
        bob.step(
            at: 1.0, .request(Self.aliceReinvite(&alice, direction: .sendonly, branch: "reinvite-1")),
            ["respond 200 to INVITE", "start retransmission at 1.5"])
        bob.step(
            at: 1.1, .request(Self.ack(&alice, sequence: 2)), ["cancel retransmission", "emit media recvonly by peer"])
        // The same CSeq again (§12.2.2): 500.
        bob.step(
            at: 2.0, .request(Self.aliceReinvite(&stale, direction: .sendrecv, branch: "reinvite-stale")),
            ["respond 500 to INVITE"])
        // No offer: 488, and the media stays as the last answer made it.
        let held = bob.session.negotiated
        let bare = alice.makeRequest(.invite, contact: Party.aliceContact)
        bob.step(
            at: 3.0, .request(Party.received(Party.withVia(bare, branch: "reinvite-bare"))), ["respond 488 to INVITE"])
        #expect(bob.session.negotiated == held && held != before)
        // Another dialog's tag: 481.
        var foreign = Party.withVia(alice.makeRequest(.bye, contact: Party.aliceContact), branch: "bye-foreign")
        foreign.headers.replace("To", with: "<sip:bob@192.0.2.2>;tag=someone-else")
        bob.step(at: 4.0, .request(Party.received(foreign)), ["respond 481 to BYE"])
    }

    @Test func aPeersReInviteBeforeWeAnsweredIsTold500WithRetryAfter() throws {
        let invite = Self.aliceInvite()
        var bob = try SessionScript.callee(invite)
        bob.step(
            at: 0, .command(.ring(earlyMedia: nil, headers: []), .init(1)), ["respond 180 to INVITE", "complete #1"])
        var alice = try SIPDialog.uac(invite: invite, response: try bob.lastResponse())
        bob.step(
            at: 0.5, .request(Self.aliceReinvite(&alice, direction: .sendonly, branch: "reinvite-1")),
            ["respond 500 to INVITE"])
        // §14.2: Retry-After, drawn from the session's generator (0–10 s: 5 mid-range).
        #expect(try bob.lastResponse().headers.first("Retry-After") == "5")
    }

    @Test func aByeFromThePeerEndsTheCall() throws {
        var (bob, alice) = try Self.confirmedCallee()
        var bye = Party.withVia(
            alice.makeRequest(.bye, contact: Party.aliceContact, headers: [("X-Cause", "done")]), branch: "bye-1")
        bye.headers.add("Reason", "SIP;cause=16")
        bob.step(at: 1.0, .request(Party.received(bye)), ["respond 200 to BYE", "emit ended remoteHangup SIP;cause=16"])
    }

    // MARK: Glare

    @Test func reInvitesCrossingAre491BothWaysAndTheCallerRetriesAfterItsBackOff() throws {
        var (alice, invite) = try Self.answeredCaller()
        var bob = try SIPDialog.uas(invite: invite, localTag: "bob-tag", localSequence: 100)
        func bobReinvite(_ direction: MediaDirection, branch: String) -> SIPIncomingRequest {
            var capabilities = Party.bobCapabilities
            capabilities.direction = direction
            let offer = SessionDescription.makeOffer(capabilities, sessionID: 9)
            let request = bob.makeRequest(
                .invite, contact: Party.bobContact, body: Array(offer.serialize().utf8), contentType: "application/sdp")
            return Party.received(Party.withVia(request, branch: branch, from: "192.0.2.2"), from: "192.0.2.2")
        }

        alice.step(
            at: 1.0, .command(.reoffer(direction: .sendonly, freshKeys: false, offering: nil), .init(1)),
            ["send INVITE to 192.0.2.2"])
        let first = try alice.lastSent(.invite)
        // Bob's re-INVITE crosses ours: ours is in progress, so his gets 491 (§14.2)…
        alice.step(at: 1.05, .request(bobReinvite(.sendonly, branch: "bob-reinvite-1")), ["respond 491 to INVITE"])
        // …and his 491 to ours sends us into the caller's back-off (2.1–4 s, 3.05 mid-range).
        alice.step(
            at: 1.1, .response(.response(to: first, status: 491), to: .reinvite(.init(1))),
            ["start glare retry #1 at 4.15"])
        // Bob, the callee, backs off less (0–2 s) and comes first: nothing of ours is in progress, so it is answered.
        alice.step(
            at: 2.1, .request(bobReinvite(.sendonly, branch: "bob-reinvite-2")),
            ["respond 200 to INVITE", "start retransmission at 2.6"])
        alice.step(
            at: 2.2,
            .request(
                Party.received(
                    Party.withVia(bob.makeAck(inviteSequence: 102, contact: Party.bobContact), branch: "bob-ack"),
                    from: "192.0.2.2")),
            ["cancel retransmission", "emit media recvonly by peer"])
        alice.step(at: 4.15, .timer(.glareRetry(.init(1))), ["send INVITE to 192.0.2.2"])
        let retry = try alice.lastSent(.invite)
        #expect(retry.cseq == SIPCSeq(3, .invite))
        #expect(try Party.sdp(of: retry).audio.direction == .sendonly)
        // Bob holds alice, so he answers her hold from his own sendonly side: neither sends.
        var bobHolding = Party.bobCapabilities
        bobHolding.direction = .sendonly
        alice.step(
            at: 4.2,
            .response(
                Party.response(
                    200, to: retry, tag: "bob-tag", contact: Party.bobContact,
                    sdp: try Party.answer(to: retry, from: bobHolding)), to: .reinvite(.init(1))),
            ["ACK to 192.0.2.2", "emit media inactive by us", "complete #1 inactive"])
        #expect(try alice.lastSent(.ack).cseq == SIPCSeq(3, .ack))
    }

    @Test func theCalleeRetriesAfterItsShorterBackOffAndGivesUpAfterFour491s() throws {
        var (bob, _) = try Self.confirmedCallee()
        let before = bob.session.negotiated
        bob.step(
            at: 1.0, .command(.reoffer(direction: .sendonly, freshKeys: false, offering: nil), .init(2)),
            ["send INVITE to 192.0.2.1"])
        var sequences = [try bob.lastSent(.invite).cseq?.sequence]
        bob.step(
            at: 1.1, .response(.response(to: try bob.lastSent(.invite), status: 491), to: .reinvite(.init(2))),
            ["start glare retry #2 at 2.1"])
        bob.step(at: 2.1, .timer(.glareRetry(.init(2))), ["send INVITE to 192.0.2.1"])
        sequences.append(try bob.lastSent(.invite).cseq?.sequence)
        bob.step(
            at: 2.2, .response(.response(to: try bob.lastSent(.invite), status: 491), to: .reinvite(.init(2))),
            ["start glare retry #2 at 3.2"])
        bob.step(at: 3.2, .timer(.glareRetry(.init(2))), ["send INVITE to 192.0.2.1"])
        bob.step(
            at: 3.3, .response(.response(to: try bob.lastSent(.invite), status: 491), to: .reinvite(.init(2))),
            ["start glare retry #2 at 4.3"])
        bob.step(at: 4.3, .timer(.glareRetry(.init(2))), ["send INVITE to 192.0.2.1"])
        sequences.append(try bob.lastSent(.invite).cseq?.sequence)
        bob.step(
            at: 4.4, .response(.response(to: try bob.lastSent(.invite), status: 491), to: .reinvite(.init(2))),
            ["fail #2: 491 re-INVITE refused with 491 four times"])
        #expect(sequences[1]! == sequences[0]! + 1 && sequences[2]! == sequences[0]! + 3)
        #expect(bob.session.negotiated == before)
    }

    @Test func aCallEndingDuringTheBackOffFailsTheReoffer() throws {
        var (bob, alice) = try Self.confirmedCallee()
        bob.step(
            at: 1.0, .command(.reoffer(direction: .sendonly, freshKeys: false, offering: nil), .init(2)),
            ["send INVITE to 192.0.2.1"])
        bob.step(
            at: 1.1, .response(.response(to: try bob.lastSent(.invite), status: 491), to: .reinvite(.init(2))),
            ["start glare retry #2 at 2.1"])
        let bye = Party.withVia(alice.makeRequest(.bye, contact: Party.aliceContact), branch: "bye-1")
        bob.step(
            at: 1.5, .request(Party.received(bye)),
            [
                "respond 200 to BYE", "emit ended remoteHangup BYE", "cancel glare retry #2",
                "fail #2: re-INVITE: the call is not established"
            ])
    }

    // MARK: Randomness

    @Test func everyRandomChoiceComesFromTheInjectedGenerator() throws {
        /// Bob's tag, the CSeq his dialog starts from and his 491 back-off, with a generator seeded `seed`.
        func choices(seed: UInt64) throws -> (tag: String, sequence: UInt32?, backOff: Duration) {
            let invite = Self.aliceInvite()
            var bob = try SessionScript.callee(invite, random: SeededRandom(state: seed))
            bob.step(
                at: 0, .command(.answer(Party.bobCapabilities, headers: []), .init(1)),
                ["respond 200 to INVITE", "start retransmission at 0.5", "complete #1 sendrecv"])
            var alice = try SIPDialog.uac(invite: invite, response: try bob.lastResponse())
            bob.step(
                at: 0.1, .request(Self.ack(&alice, sequence: 1)), ["cancel retransmission", "emit established sendrecv"]
            )
            bob.step(
                at: 1.0, .command(.reoffer(direction: .sendonly, freshKeys: false, offering: nil), .init(2)),
                ["send INVITE to 192.0.2.1"])
            let reinvite = try bob.lastSent(.invite)
            bob.feed(at: 1.1, .response(.response(to: reinvite, status: 491), to: .reinvite(.init(2))))
            let retry = try #require(bob.timers[.glareRetry(.init(2))])
            return (bob.session.localTag, reinvite.cseq.map { $0.sequence - 1 }, retry - instant(1.1))
        }
        let first = try choices(seed: 42), again = try choices(seed: 42), other = try choices(seed: 43)
        #expect(first.tag == again.tag && first.sequence == again.sequence && first.backOff == again.backOff)
        #expect(first.tag != other.tag && first.sequence != other.sequence && first.backOff != other.backOff)
        #expect(first.backOff >= .zero && first.backOff <= .seconds(2))  // the callee's range
    }
}
