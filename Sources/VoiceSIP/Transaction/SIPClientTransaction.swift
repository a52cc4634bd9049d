/// What a transaction asks its owner (the transaction layer, then the transport and the TU) to do.
public enum SIPTransactionOutput: Equatable, Sendable {
    /// Send this message to the transaction's peer.
    case send(SIPMessage)
    /// Pass this response (client) or request (server; an ACK of a 2xx included) to the transaction user.
    case deliver(SIPMessage)
    /// The timer ran out without the awaited message: B or F (client, 408 for the TU), H (server, no ACK).
    case timedOut(SIPTimer)
    /// The transaction is over; the owner forgets it.
    case terminated
}

/// An INVITE or non-INVITE client transaction (RFC 3261 §17.1, with RFC 6026's Accepted state).
///
/// Pure: it reads no clock and opens no socket. Each call takes `now` and returns what to send and deliver;
/// `nextDeadline` says when `advance(to:)` must next be called.
public struct SIPClientTransaction: Sendable {
    public enum State: Equatable, Sendable {
        /// INVITE sent, nothing heard (§17.1.1.2).
        case calling
        /// Non-INVITE sent, nothing heard (§17.1.2.2).
        case trying
        case proceeding
        /// A 300–699 (INVITE) or any final response (non-INVITE) received.
        case completed
        /// A 2xx to the INVITE received: further 2xx go to the TU, which ACKs them (RFC 6026 §7.2).
        case accepted
        case terminated
    }

    public let request: SIPMessage
    public let isInvite: Bool
    /// Over TCP/TLS nothing is retransmitted and the absorbing timers (D, K) are zero (§17.1.1.2, §17.1.2.2).
    public let isReliable: Bool
    public let configuration: SIPTimerConfiguration
    public private(set) var state: State
    private var timers = SIPTimerSet()
    private var retransmitInterval: Duration
    private var ack: SIPMessage?

    /// Starts the transaction: the request is to be sent now.
    public static func start(
        request: SIPMessage, reliable: Bool, configuration: SIPTimerConfiguration = SIPTimerConfiguration(),
        now: SIPInstant
    ) -> (SIPClientTransaction, [SIPTransactionOutput]) {
        let transaction = SIPClientTransaction(
            request: request, reliable: reliable, configuration: configuration, now: now)
        return (transaction, [.send(request)])
    }

    private init(request: SIPMessage, reliable: Bool, configuration: SIPTimerConfiguration, now: SIPInstant) {
        self.request = request
        self.isInvite = request.requestMethod == .invite
        self.isReliable = reliable
        self.configuration = configuration
        self.state = isInvite ? .calling : .trying
        self.retransmitInterval = configuration.t1
        if isInvite {
            if !reliable { timers.start(.a, at: now + configuration.t1) }
            timers.start(.b, at: now + configuration.transactionTimeout)
        } else {
            if !reliable { timers.start(.e, at: now + configuration.t1) }
            timers.start(.f, at: now + configuration.transactionTimeout)
        }
    }

    public var nextDeadline: SIPInstant? { timers.nextDeadline }
    public var isTerminated: Bool { state == .terminated }

    /// A response whose top Via branch and CSeq method matched this transaction (§17.1.3).
    public mutating func receive(response: SIPMessage, now: SIPInstant) -> [SIPTransactionOutput] {
        guard let code = response.statusCode else { return [] }
        return isInvite
            ? receiveInviteResponse(response, code: code, now: now)
            : receiveNonInviteResponse(response, code: code, now: now)
    }

    private mutating func receiveInviteResponse(_ response: SIPMessage, code: Int, now: SIPInstant)
        -> [SIPTransactionOutput]
    {
        switch (state, code) {
        case (.calling, 100...199), (.proceeding, 100...199):
            state = .proceeding
            timers.cancel(.a)
            timers.cancel(.b)
            return [.deliver(response)]
        case (.calling, 200...299), (.proceeding, 200...299):
            state = .accepted
            timers.cancelAll()
            timers.start(.m, at: now + configuration.transactionTimeout)
            return [.deliver(response)]
        case (.accepted, 200...299):
            return [.deliver(response)]
        case (.calling, 300...699), (.proceeding, 300...699):
            state = .completed
            timers.cancelAll()
            let ack = SIPMessage.ack(for: request, response: response)
            self.ack = ack
            let out: [SIPTransactionOutput] = [.deliver(response), .send(ack)]
            if isReliable { return out + terminate() }
            timers.start(.d, at: now + .seconds(32))
            return out
        case (.completed, 300...699):
            return ack.map { [.send($0)] } ?? []
        default:
            return []
        }
    }

    private mutating func receiveNonInviteResponse(_ response: SIPMessage, code: Int, now: SIPInstant)
        -> [SIPTransactionOutput]
    {
        switch (state, code) {
        case (.trying, 100...199), (.proceeding, 100...199):
            state = .proceeding
            return [.deliver(response)]
        case (.trying, 200...699), (.proceeding, 200...699):
            state = .completed
            timers.cancelAll()
            if isReliable { return [.deliver(response)] + terminate() }
            timers.start(.k, at: now + configuration.t4)
            return [.deliver(response)]
        default:
            return []
        }
    }

    /// Fires every timer due at `now`, in deadline order.
    public mutating func advance(to now: SIPInstant) -> [SIPTransactionOutput] {
        var out: [SIPTransactionOutput] = []
        while let (timer, deadline) = timers.popExpired(at: now) {
            out += fire(timer, due: deadline)
        }
        return out
    }

    private mutating func fire(_ timer: SIPTimer, due: SIPInstant) -> [SIPTransactionOutput] {
        switch timer {
        case .a where state == .calling:
            retransmitInterval = retransmitInterval * 2
            timers.start(.a, at: due + retransmitInterval)
            return [.send(request)]
        case .e where state == .trying || state == .proceeding:
            // §17.1.2.2: doubling up to T2 while Trying; every T2 once a provisional response came.
            retransmitInterval = state == .trying ? min(retransmitInterval * 2, configuration.t2) : configuration.t2
            timers.start(.e, at: due + retransmitInterval)
            return [.send(request)]
        case .b where state == .calling, .f where state == .trying || state == .proceeding:
            return [.timedOut(timer)] + terminate()
        case .d, .k, .m:
            return terminate()
        default:
            return []
        }
    }

    /// The transport could not send the request (§17.1.4): the TU hears of it as a 503.
    public mutating func transportFailed() -> [SIPTransactionOutput] {
        guard state != .terminated else { return [] }
        return [.deliver(.response(to: request, status: 503, reasonPhrase: "Transport Error"))] + terminate()
    }

    private mutating func terminate() -> [SIPTransactionOutput] {
        state = .terminated
        timers.cancelAll()
        return [.terminated]
    }
}
