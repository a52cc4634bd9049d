import NIOCore
import Testing
import VoiceEngine
@testable import VoiceSIP

/// Draws that land in the middle of their range: the 491 back-off is 1 s for the callee (0–2 s) and 3.05 s for
/// the caller (2.1–4 s), Retry-After is 5. Each number is 2⁶³ plus a count: a `Double` is made from the top 53
/// bits, so the count (below 2¹¹ in any test) does not move it, while a narrower integer, made from the low bits,
/// still varies (a constant would keep its rejection sampling from ever accepting).
struct MidRangeRandom: RandomNumberGenerator, Sendable {
    private var count: UInt64 = 0
    mutating func next() -> UInt64 {
        count += 1
        return 1 << 63 | count
    }
}

/// SplitMix64: a generator that replays the same numbers from the same seed.
struct SeededRandom: RandomNumberGenerator, Sendable {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The two parties of the scripted calls: alice calls bob; neither has a socket.
enum Party {
    static let aliceContact = SIPURI(user: "alice", host: "192.0.2.1", port: 5060)
    static let bobContact = SIPURI(user: "bob", host: "192.0.2.2", port: 5060)
    /// The phone that answers too when a proxy forks alice's INVITE.
    static let bobOtherPhone = SIPURI(user: "bob", host: "192.0.2.3", port: 5060)
    static let aliceCapabilities = AudioCapabilities(address: "192.0.2.1", port: 40000)
    static let bobCapabilities = AudioCapabilities(address: "192.0.2.2", port: 40002)

    static func configuration(contact: SIPURI, glareBackoff: ClosedRange<Double>) -> SIPInviteSession.Configuration {
        SIPInviteSession.Configuration(contact: contact, timers: SIPTimerConfiguration(), glareBackoff: glareBackoff)
    }

    /// Alice's INVITE as her user agent builds it (no Via yet), offering `offer`.
    static func aliceInvite(offer: SessionDescription) -> SIPMessage {
        var headers = SIPHeaders()
        headers.add("From", "<sip:alice@192.0.2.1>;tag=alice-tag")
        headers.add("To", "<sip:bob@192.0.2.2>")
        headers.add("Call-ID", "scripted-call")
        headers.add("CSeq", "1 INVITE")
        headers.add("Contact", SIPAddress(uri: aliceContact).description)
        headers.add("Allow", SIPUserAgent.allow)
        headers.add("Content-Type", "application/sdp")
        return .request(
            .invite, SIPURI(user: "bob", host: "192.0.2.2"), headers: headers, body: Array(offer.serialize().utf8))
    }

    /// A request as its transaction sends it: with a top Via of `branch`.
    static func withVia(_ request: SIPMessage, branch: String, from host: String = "192.0.2.1") -> SIPMessage {
        var request = request
        request.headers.prepend("Via", "SIP/2.0/UDP \(host):5060;branch=z9hG4bK-\(branch)")
        return request
    }

    /// A request as the endpoint hands it to the session: with its server transaction (none for an ACK).
    static func received(_ request: SIPMessage, from host: String = "192.0.2.1") -> SIPIncomingRequest {
        let transaction =
            request.requestMethod == .ack
            ? nil
            : SIPTransactionID(
                role: .server, key: request.topVia?.branch ?? "", method: request.requestMethod ?? .invite)
        return SIPIncomingRequest(
            message: request, transaction: transaction,
            peer: SIPPeer(.udp, try! SocketAddress(ipAddress: host, port: 5060)))
    }

    /// A response of the peer's to `request`: its tag and, on 101–299, its Contact; `sdp` as the body.
    static func response(
        _ status: Int, to request: SIPMessage, tag: String, contact: SIPURI, sdp: SessionDescription? = nil
    ) -> SIPMessage {
        var response = SIPMessage.response(to: request, status: status, toTag: tag)
        if (101...299).contains(status) { response.headers.add("Contact", SIPAddress(uri: contact).description) }
        if let sdp {
            response.headers.add("Content-Type", "application/sdp")
            response.body = Array(sdp.serialize().utf8)
        }
        return response
    }

    /// The peer's answer to the offer in `message`'s body.
    static func answer(to message: SIPMessage, from capabilities: AudioCapabilities) throws -> SessionDescription {
        let offer = try SessionDescription(parsing: String(decoding: message.body, as: UTF8.self))
        return try SessionDescription.makeAnswer(to: offer, localCapabilities: capabilities, sessionID: 7).answer
    }

    static func sdp(of message: SIPMessage) throws -> SessionDescription {
        try SessionDescription(parsing: String(decoding: message.body, as: UTF8.self))
    }
}

/// One session driven through a table: each step is an input at a time and the actions it must produce, written
/// as short lines (`describe`). Timers are checked too: a `.timer` input must come at the deadline its last
/// `startTimer` set, and only while it runs.
struct SessionScript {
    var session: SIPInviteSession
    /// The deadlines of the running timers, from the actions so far.
    private(set) var timers: [SIPInviteTimer: SIPInstant] = [:]
    /// Every request the session sent (in a transaction or as an ACK) and every response it gave, in order.
    private(set) var sent: [SIPMessage] = []
    private(set) var responses: [SIPMessage] = []

    init(_ session: SIPInviteSession) { self.session = session }

    /// Alice calling bob, offering `Party.aliceCapabilities`.
    static func caller(random: any RandomNumberGenerator & Sendable = MidRangeRandom()) -> SessionScript {
        let offer = SessionDescription.makeOffer(Party.aliceCapabilities, sessionID: 1)
        return SessionScript(
            SIPInviteSession(
                outgoing: Party.aliceInvite(offer: offer), offer: offer, capabilities: Party.aliceCapabilities,
                configuration: Party.configuration(contact: Party.aliceContact, glareBackoff: 2.1...4.0), random: random
            ))
    }

    /// Bob called by alice: `invite` is her INVITE as it reached him.
    static func callee(_ invite: SIPMessage, random: any RandomNumberGenerator & Sendable = MidRangeRandom()) throws
        -> SessionScript
    {
        SessionScript(
            SIPInviteSession(
                incoming: Party.received(invite), offer: try Party.sdp(of: invite),
                configuration: Party.configuration(contact: Party.bobContact, glareBackoff: 0...2), random: random))
    }

    @discardableResult
    mutating func step(
        at seconds: Double, _ input: SIPInviteSession.Input, _ expected: [String],
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> [SIPInviteAction] {
        let now = instant(seconds)
        if case .timer(let timer) = input {
            #expect(
                timers[timer] == now,
                "\(timer) fired at \(now) but its deadline is \(timers[timer].map { "\($0)" } ?? "none")",
                sourceLocation: sourceLocation)
            timers[timer] = nil
        }
        let actions = feed(at: seconds, input)
        #expect(actions.map(describe) == expected, sourceLocation: sourceLocation)
        return actions
    }

    /// Hands `input` to the session at `seconds` and keeps track of what it did, expecting nothing in particular.
    @discardableResult
    mutating func feed(at seconds: Double, _ input: SIPInviteSession.Input) -> [SIPInviteAction] {
        let actions = session.handle(input, at: instant(seconds))
        record(actions)
        return actions
    }

    /// Fires the running timers in deadline order up to `seconds`; returns each firing as "time: actions".
    mutating func runTimers(until seconds: Double) -> [String] {
        var lines: [String] = []
        while let (timer, deadline) = timers.min(by: { $0.value < $1.value }), deadline <= instant(seconds) {
            timers[timer] = nil
            let actions = session.handle(.timer(timer), at: deadline)
            record(actions)
            lines.append("\(format(deadline)): " + actions.map(describe).joined(separator: ", "))
        }
        return lines
    }

    /// The last request of `method` the session sent.
    func lastSent(_ method: SIPMethod) throws -> SIPMessage {
        try #require(sent.last { $0.requestMethod == method }, "no \(method) sent")
    }

    /// The last response the session gave.
    func lastResponse() throws -> SIPMessage { try #require(responses.last, "no response given") }

    private mutating func record(_ actions: [SIPInviteAction]) {
        for action in actions {
            switch action {
            case .send(let request, _, _), .sendAck(let request, _): sent.append(request)
            case .respond(let response, _): responses.append(response)
            case .startTimer(let timer, let deadline): timers[timer] = deadline
            case .cancelTimer(let timer): timers[timer] = nil
            case .emit, .complete: break
            }
        }
    }
}

func instant(_ seconds: Double) -> SIPInstant { SIPInstant(.milliseconds(Int64((seconds * 1000).rounded()))) }

/// Seconds with up to three decimals, as the tables write them.
func format(_ instant: SIPInstant) -> String {
    let milliseconds = instant.nanoseconds / 1_000_000
    return "\(Double(milliseconds) / 1000)"
}

/// One action as a table line: what is sent where, answered, timed, told or completed. CSeq numbers are left out
/// (a callee numbers from a random start); the tests check them apart where they matter.
func describe(_ action: SIPInviteAction) -> String {
    switch action {
    case .send(let request, .inviteTarget, _):
        return "send \(request.requestMethod?.rawValue ?? "?")"
    case .send(let request, .nextHop(let hop), let purpose):
        return "send \(request.requestMethod?.rawValue ?? "?") to \(hop.host)"
            + (purpose == .byeOfFork ? " (other fork)" : "")
    case .sendAck(_, let hop):
        return "ACK to \(hop.host)"
    case .respond(let response, let request):
        return "respond \(response.statusCode ?? 0) to \(request.message.requestMethod?.rawValue ?? "?")"
    case .startTimer(let timer, let deadline):
        return "start \(name(timer)) at \(format(deadline))"
    case .cancelTimer(let timer):
        return "cancel \(name(timer))"
    case .emit(.progress(let code, _, let early)):
        return "emit progress \(code)" + (early == nil ? "" : " with early media")
    case .emit(.established(let media, _)):
        return "emit established \(media.direction)"
    case .emit(.mediaUpdated(let media, let byPeer)):
        return "emit media \(media.direction) by \(byPeer ? "peer" : "us")"
    case .emit(.dtmfReceived(let digit, _)):
        return "emit DTMF \(digit)"
    case .emit(.ended(let end)):
        return "emit ended \(end)"
    case .complete(let id, .success(let media)):
        return "complete \(id)" + (media.map { " \($0.direction)" } ?? "")
    case .complete(let id, .failure(let error)):
        return "fail \(id): \(error)"
    }
}

private func name(_ timer: SIPInviteTimer) -> String {
    switch timer {
    case .retransmission: "retransmission"
    case .heldByeDeadline: "held BYE deadline"
    case .glareRetry(let id): "glare retry \(id)"
    case .reofferWaitLimit(let id): "wait limit \(id)"
    }
}
