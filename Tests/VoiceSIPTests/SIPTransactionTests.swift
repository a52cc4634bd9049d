import Testing
import VoiceSIP

/// A request as a UAC sends it: top Via with an RFC 3261 branch.
func makeRequest(
    _ method: SIPMethod, branch: String = "z9hG4bK-test-1", cseq: UInt32 = 1, sentBy: String = "127.0.0.1:5060"
) -> SIPMessage {
    var headers = SIPHeaders()
    headers.add("Via", "SIP/2.0/UDP \(sentBy);branch=\(branch)")
    headers.add("Max-Forwards", "70")
    headers.add("From", "<sip:alice@127.0.0.1>;tag=a1")
    headers.add("To", "<sip:bob@127.0.0.1>")
    headers.add("Call-ID", "call-1@127.0.0.1")
    headers.add("CSeq", "\(cseq) \(method)")
    headers.add("Route", "<sip:proxy.example.com;lr>")
    return .request(method, SIPURI(user: "bob", host: "127.0.0.1"), headers: headers)
}

func seconds(_ value: Double) -> SIPInstant { SIPInstant(.milliseconds(Int64((value * 1000).rounded()))) }

/// Runs the layer's clock from one deadline to the next until nothing is pending or `limit` is passed, and
/// returns every event with the time it happened.
func runClock(
    _ layer: inout SIPTransactionLayer<String>, from start: SIPInstant = .origin, until limit: SIPInstant = seconds(120)
)
    -> [(SIPInstant, SIPTransactionEvent<String>)]
{
    var events: [(SIPInstant, SIPTransactionEvent<String>)] = []
    while let deadline = layer.nextDeadline, deadline <= limit {
        events += layer.advance(to: max(deadline, start)).map { (deadline, $0) }
    }
    return events
}

func sentTimes(_ events: [(SIPInstant, SIPTransactionEvent<String>)]) -> [SIPInstant] {
    events.compactMap { time, event in
        if case .send = event { return time }
        return nil
    }
}

func response(_ code: Int, to request: SIPMessage, toTag: String? = "b1") -> SIPMessage {
    .response(to: request, status: code, toTag: toTag)
}

@Suite("SIP transactions")
struct SIPTransactionTests {
    @Test func inviteTimerBFiresAfter32SecondsWithTimerARetransmissions() throws {
        var layer = SIPTransactionLayer<String>()
        let invite = makeRequest(.invite)
        let (id, first) = try layer.send(request: invite, to: "peer", reliable: false, now: .origin)
        #expect(first.count == 1)
        let clock = ContinuousClock()
        let start = clock.now
        let events = runClock(&layer)
        let elapsed = clock.now - start
        // Timer A doubles from T1: 0.5, 1.5, 3.5, 7.5, 15.5, 31.5 s; Timer B = 64·T1 = 32 s.
        #expect(sentTimes(events) == [0.5, 1.5, 3.5, 7.5, 15.5, 31.5].map(seconds))
        guard case .timedOut(let timedOut, .b) = events.last?.1 else {
            Issue.record("no Timer B: \(events)")
            return
        }
        #expect(timedOut == id)
        #expect(events.last?.0 == seconds(32))
        #expect(layer.clientCount == 0)
        // 32 s of protocol time ran on the injected clock, not the wall clock.
        #expect(elapsed < .seconds(1), "took \(elapsed)")
    }

    @Test func reliableInviteIsNotRetransmitted() throws {
        var layer = SIPTransactionLayer<String>()
        _ = try layer.send(request: makeRequest(.invite), to: "peer", reliable: true, now: .origin)
        let events = runClock(&layer)
        #expect(sentTimes(events).isEmpty)
        #expect(events.count == 1)
        #expect(events.first?.0 == seconds(32))
    }

    @Test func inviteRejectedIsAcknowledgedByTheTransaction() throws {
        var layer = SIPTransactionLayer<String>()
        let invite = makeRequest(.invite)
        let (id, _) = try layer.send(request: invite, to: "peer", reliable: false, now: .origin)
        let ringing = layer.receive(response(180, to: invite), from: "peer", reliable: false, now: seconds(0.2))
        guard case .response(let r180, id)? = ringing.first else { throw SIPError(.invalidState, "\(ringing)") }
        #expect(r180.statusCode == 180)
        #expect(layer.clientState(id) == .proceeding)
        // No Timer A retransmission once a provisional response came.
        #expect(layer.nextDeadline == nil)

        let busy = response(486, to: invite)
        let events = layer.receive(busy, from: "peer", reliable: false, now: seconds(1))
        #expect(events.count == 2)
        guard case .response(let r486, id) = events[0], case .send(let ack, "peer") = events[1] else {
            throw SIPError(.invalidState, "\(events)")
        }
        #expect(r486.statusCode == 486)
        #expect(ack.requestMethod == .ack)
        #expect(ack.cseq == SIPCSeq(1, .ack))
        #expect(ack.topVia?.branch == "z9hG4bK-test-1")
        #expect(ack.to?.tag == "b1")
        #expect(ack.from?.tag == "a1")
        #expect(ack.requestURI == invite.requestURI)
        #expect(ack.routes.map(\.uri.host) == ["proxy.example.com"])
        #expect(layer.clientState(id) == .completed)

        // A retransmitted 486 is answered with the same ACK and not passed up again.
        let again = layer.receive(busy, from: "peer", reliable: false, now: seconds(2))
        guard case .send(let ack2, _)? = again.first, again.count == 1 else {
            throw SIPError(.invalidState, "\(again)")
        }
        #expect(ack2 == ack)
        // Timer D: 32 s after the final response.
        let rest = runClock(&layer, from: seconds(2))
        #expect(rest.isEmpty)
        #expect(layer.clientCount == 0)
    }

    @Test func inviteAcceptedPassesRetransmitted2xxUntilTimerM() throws {
        var layer = SIPTransactionLayer<String>()
        let invite = makeRequest(.invite)
        let (id, _) = try layer.send(request: invite, to: "peer", reliable: false, now: .origin)
        let ok = response(200, to: invite)
        #expect(layer.receive(ok, from: "peer", reliable: false, now: seconds(1)).count == 1)
        #expect(layer.clientState(id) == .accepted)
        // RFC 6026: a retransmitted (or forked) 2xx reaches the TU, which ACKs it; no ACK from the transaction.
        let again = layer.receive(ok, from: "peer", reliable: false, now: seconds(2))
        guard case .response(let r, id)? = again.first, again.count == 1 else {
            throw SIPError(.invalidState, "\(again)")
        }
        #expect(r.statusCode == 200)
        #expect(layer.nextDeadline == seconds(33))  // Timer M = 64·T1 after the first 2xx
        _ = layer.advance(to: seconds(33))
        #expect(layer.clientCount == 0)
        let late = layer.receive(ok, from: "peer", reliable: false, now: seconds(34))
        guard case .strayResponse? = late.first else { throw SIPError(.invalidState, "\(late)") }
    }

    @Test func nonInviteRetransmitsWithTimerECappedAtT2ThenTimerF() throws {
        var layer = SIPTransactionLayer<String>()
        let (id, _) = try layer.send(request: makeRequest(.options), to: "peer", reliable: false, now: .origin)
        let events = runClock(&layer)
        #expect(sentTimes(events) == [0.5, 1.5, 3.5, 7.5, 11.5, 15.5, 19.5, 23.5, 27.5, 31.5].map(seconds))
        guard case .timedOut(id, .f) = events.last?.1 else { throw SIPError(.invalidState, "\(events)") }
        #expect(events.last?.0 == seconds(32))
    }

    @Test func nonInviteAfterProvisionalRetransmitsEveryT2AndCompletesWithTimerK() throws {
        var layer = SIPTransactionLayer<String>()
        let register = makeRequest(.register)
        let (id, _) = try layer.send(request: register, to: "peer", reliable: false, now: .origin)
        _ = layer.advance(to: seconds(0.5))
        _ = layer.receive(response(100, to: register, toTag: nil), from: "peer", reliable: false, now: seconds(0.6))
        #expect(layer.clientState(id) == .proceeding)
        let retransmissions = runClock(&layer, until: seconds(10))
        #expect(sentTimes(retransmissions) == [1.5, 5.5, 9.5].map(seconds))
        let final = layer.receive(response(200, to: register), from: "peer", reliable: false, now: seconds(10))
        #expect(final.count == 1)
        #expect(layer.clientState(id) == .completed)
        #expect(layer.nextDeadline == seconds(15))  // Timer K = T4
        #expect(layer.receive(response(200, to: register), from: "peer", reliable: false, now: seconds(11)).isEmpty)
        _ = layer.advance(to: seconds(15))
        #expect(layer.clientCount == 0)
    }

    @Test func inviteServerRetransmitsItsErrorUntilTimerHWithoutAck() throws {
        var layer = SIPTransactionLayer<String>()
        let invite = makeRequest(.invite)
        let arrival = layer.receive(invite, from: "caller", reliable: false, now: .origin)
        guard case .request(_, let id, "caller") = arrival[0], case .send(let trying, "caller") = arrival[1] else {
            throw SIPError(.invalidState, "\(arrival)")
        }
        #expect(trying.statusCode == 100)
        // The retransmitted INVITE is answered with the last response, not passed up.
        let retransmitted = layer.receive(invite, from: "caller", reliable: false, now: seconds(0.5))
        guard case .send(let again, _)? = retransmitted.first, retransmitted.count == 1 else {
            throw SIPError(.invalidState, "\(retransmitted)")
        }
        #expect(again.statusCode == 100)

        _ = try layer.respond(response(486, to: invite), on: id, now: seconds(1))
        let events = runClock(&layer, from: seconds(1))
        // Timer G doubles from T1 up to T2 (4 s) until Timer H, 64·T1 after the response.
        #expect(sentTimes(events) == [1.5, 2.5, 4.5, 8.5, 12.5, 16.5, 20.5, 24.5, 28.5, 32.5].map(seconds))
        guard case .timedOut(id, .h) = events.last?.1 else { throw SIPError(.invalidState, "\(events)") }
        #expect(events.last?.0 == seconds(33))
    }

    @Test func inviteServerConfirmedByAckAbsorbsAcksUntilTimerI() throws {
        var layer = SIPTransactionLayer<String>()
        let invite = makeRequest(.invite)
        let arrival = layer.receive(invite, from: "caller", reliable: false, now: .origin)
        guard case .request(_, let id, _) = arrival[0] else { throw SIPError(.invalidState, "\(arrival)") }
        let decline = response(603, to: invite)
        _ = try layer.respond(decline, on: id, now: .origin)
        let ack = SIPMessage.ack(for: invite, response: decline)
        #expect(layer.receive(ack, from: "caller", reliable: false, now: seconds(0.1)).isEmpty)
        #expect(layer.serverState(id) == .confirmed)
        #expect(layer.receive(ack, from: "caller", reliable: false, now: seconds(0.2)).isEmpty)
        #expect(layer.nextDeadline == seconds(5.1))  // Timer I = T4, no more Timer G
        _ = layer.advance(to: seconds(5.1))
        #expect(layer.serverCount == 0)
    }

    @Test func inviteServerAcceptedLetsTheAckOfA2xxThroughUntilTimerL() throws {
        var layer = SIPTransactionLayer<String>()
        let invite = makeRequest(.invite)
        let arrival = layer.receive(invite, from: "caller", reliable: false, now: .origin)
        guard case .request(_, let id, _) = arrival[0] else { throw SIPError(.invalidState, "\(arrival)") }
        let ok = response(200, to: invite)
        let sent = try layer.respond(ok, on: id, now: seconds(1))
        #expect(sent.count == 1)
        #expect(layer.serverState(id) == .accepted)
        #expect(layer.receive(invite, from: "caller", reliable: false, now: seconds(1.5)).isEmpty)
        // The TU's own 2xx retransmission (§13.3.1.4) goes out through the transaction.
        #expect(try layer.respond(ok, on: id, now: seconds(1.5)).count == 1)
        var ack = SIPMessage.ack(for: invite, response: ok)
        ack.headers.replace("Via", with: "SIP/2.0/UDP 127.0.0.1:5060;branch=z9hG4bK-ack-2xx")
        // The 2xx ACK has a branch of its own: no server transaction matches it, the dialog gets it.
        let ackEvents = layer.receive(ack, from: "caller", reliable: false, now: seconds(2))
        guard case .strayAck? = ackEvents.first else { throw SIPError(.invalidState, "\(ackEvents)") }
        #expect(layer.nextDeadline == seconds(33))
        _ = layer.advance(to: seconds(33))
        #expect(layer.serverCount == 0)
        #expect(throws: SIPError.self) { try layer.respond(ok, on: id, now: seconds(34)) }
    }

    @Test func nonInviteServerAbsorbsRetransmissionsAndEndsWithTimerJ() throws {
        for reliable in [false, true] {
            var layer = SIPTransactionLayer<String>()
            let message = makeRequest(.message)
            let arrival = layer.receive(message, from: "peer", reliable: reliable, now: .origin)
            guard case .request(_, let id, _)? = arrival.first, arrival.count == 1 else {
                throw SIPError(.invalidState, "\(arrival)")
            }
            #expect(layer.receive(message, from: "peer", reliable: reliable, now: seconds(0.5)).isEmpty)
            let ok = response(200, to: message)
            _ = try layer.respond(ok, on: id, now: seconds(1))
            if reliable {
                #expect(layer.serverCount == 0)  // Timer J is zero on reliable transports
                continue
            }
            let resent = layer.receive(message, from: "peer", reliable: false, now: seconds(2))
            guard case .send(let again, _)? = resent.first else { throw SIPError(.invalidState, "\(resent)") }
            #expect(again == ok)
            #expect(layer.nextDeadline == seconds(33))
        }
    }

    @Test func cancelFindsItsInviteAndRFC2543RequestsMatchTheirAck() throws {
        var layer = SIPTransactionLayer<String>()
        let invite = makeRequest(.invite)
        _ = layer.receive(invite, from: "caller", reliable: false, now: .origin)
        let cancel = SIPMessage.cancel(of: invite)
        #expect(cancel.topVia?.branch == invite.topVia?.branch)
        #expect(cancel.cseq == SIPCSeq(1, .cancel))
        let cancelEvents = layer.receive(cancel, from: "caller", reliable: false, now: seconds(0.1))
        guard case .request(_, let cancelID, _)? = cancelEvents.first else {
            throw SIPError(.invalidState, "\(cancelEvents)")
        }
        #expect(cancelID.method == .cancel)
        let inviteID = try #require(layer.inviteTransaction(cancelledBy: cancel))
        #expect(inviteID.method == .invite)
        #expect(layer.serverCount == 2)

        var legacy = SIPTransactionLayer<String>()
        let old = makeRequest(.invite, branch: "2543-style")
        let arrival = legacy.receive(old, from: "caller", reliable: false, now: .origin)
        guard case .request(_, let id, _) = arrival[0] else { throw SIPError(.invalidState, "\(arrival)") }
        let notFound = response(404, to: old)
        _ = try legacy.respond(notFound, on: id, now: .origin)
        #expect(
            legacy.receive(
                SIPMessage.ack(for: old, response: notFound), from: "caller", reliable: false, now: seconds(0.1)
            ).isEmpty)
        #expect(legacy.serverState(id) == .confirmed)
    }

    @Test func transportFailureReachesTheTUAs503() throws {
        var layer = SIPTransactionLayer<String>()
        let (id, _) = try layer.send(request: makeRequest(.options), to: "peer", reliable: true, now: .origin)
        let events = layer.transportFailed(client: id)
        guard case .response(let failure, id)? = events.first else { throw SIPError(.invalidState, "\(events)") }
        #expect(failure.statusCode == 503)
        #expect(layer.clientCount == 0)
        #expect(throws: SIPError.self) {
            try layer.send(
                request: SIPMessage.ack(for: makeRequest(.invite), response: failure), to: "peer", reliable: true,
                now: .origin)
        }
    }
}
