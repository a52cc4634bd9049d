/// An INVITE or non-INVITE server transaction (RFC 3261 §17.2, with RFC 6026's Accepted state).
///
/// It absorbs retransmitted requests (answering them with the last response), retransmits a final INVITE response
/// until the ACK comes (Timer G, H), and lets the TU's 2xx and the ACK of a 2xx through. Pure, like
/// `SIPClientTransaction`.
public struct SIPServerTransaction: Sendable {
    public enum State: Equatable, Sendable {
        /// Non-INVITE received, nothing sent (§17.2.2).
        case trying
        case proceeding
        /// A final response sent: 300–699 for INVITE (waiting for the ACK), any for non-INVITE.
        case completed
        /// INVITE only: the ACK of a 300–699 arrived.
        case confirmed
        /// INVITE only: a 2xx sent (RFC 6026 §7.1).
        case accepted
        case terminated
    }

    public let request: SIPMessage
    public let isInvite: Bool
    public let isReliable: Bool
    public let configuration: SIPTimerConfiguration
    public private(set) var state: State
    /// The last response sent, resent when the request is retransmitted.
    public private(set) var lastResponse: SIPMessage?
    private var timers = SIPTimerSet()
    private var retransmitInterval: Duration

    /// Starts the transaction on a new request: the TU receives it, and an INVITE is answered with 100 Trying at
    /// once (§17.2.1 allows this instead of waiting 200 ms for the TU).
    public static func start(
        request: SIPMessage, reliable: Bool, configuration: SIPTimerConfiguration = SIPTimerConfiguration(),
        now: SIPInstant
    ) -> (SIPServerTransaction, [SIPTransactionOutput]) {
        var transaction = SIPServerTransaction(request: request, reliable: reliable, configuration: configuration)
        guard transaction.isInvite else { return (transaction, [.deliver(request)]) }
        let trying = SIPMessage.response(to: request, status: 100)
        transaction.lastResponse = trying
        return (transaction, [.deliver(request), .send(trying)])
    }

    private init(request: SIPMessage, reliable: Bool, configuration: SIPTimerConfiguration) {
        self.request = request
        self.isInvite = request.requestMethod == .invite
        self.isReliable = reliable
        self.configuration = configuration
        self.state = isInvite ? .proceeding : .trying
        self.retransmitInterval = configuration.t1
    }

    public var nextDeadline: SIPInstant? { timers.nextDeadline }
    public var isTerminated: Bool { state == .terminated }

    /// A request that matched this transaction (§17.2.3): a retransmission of its request, or the ACK of its INVITE.
    public mutating func receive(request incoming: SIPMessage, now: SIPInstant) -> [SIPTransactionOutput] {
        if incoming.requestMethod == .ack {
            guard isInvite else { return [] }
            switch state {
            case .completed:
                state = .confirmed
                timers.cancelAll()
                if isReliable { return terminate() }
                timers.start(.i, at: now + configuration.t4)
                return []
            case .accepted:
                // The ACK of a 2xx belongs to the dialog, not to this transaction (RFC 6026 §7.1).
                return [.deliver(incoming)]
            default:
                return []
            }
        }
        switch state {
        case .proceeding, .completed:
            return lastResponse.map { [.send($0)] } ?? []
        default:
            // Trying: nothing to resend yet; Accepted, Confirmed: retransmissions are absorbed.
            return []
        }
    }

    /// The TU's response. Provisional responses keep the transaction open; a final one completes it.
    public mutating func respond(_ response: SIPMessage, now: SIPInstant) throws -> [SIPTransactionOutput] {
        guard let code = response.statusCode else {
            throw SIPError(.invalidState, "a server transaction sends responses, not requests")
        }
        switch state {
        case .trying, .proceeding: break
        case .accepted where (200...299).contains(code):
            // The TU retransmits its 2xx until the ACK comes (§13.3.1.4); the transaction passes them on.
            lastResponse = response
            return [.send(response)]
        default:
            throw SIPError(.invalidState, "cannot send \(code) in state \(state)")
        }
        lastResponse = response
        switch code {
        case 100...199:
            state = .proceeding
            return [.send(response)]
        case 200...299 where isInvite:
            state = .accepted
            timers.start(.l, at: now + configuration.transactionTimeout)
            return [.send(response)]
        default:
            state = .completed
            if isInvite {
                if !isReliable { timers.start(.g, at: now + configuration.t1) }
                timers.start(.h, at: now + configuration.transactionTimeout)
                return [.send(response)]
            }
            if isReliable { return [.send(response)] + terminate() }
            timers.start(.j, at: now + configuration.transactionTimeout)
            return [.send(response)]
        }
    }

    public mutating func advance(to now: SIPInstant) -> [SIPTransactionOutput] {
        var out: [SIPTransactionOutput] = []
        while let (timer, due) = timers.popExpired(at: now) {
            switch timer {
            case .g where state == .completed:
                retransmitInterval = min(retransmitInterval * 2, configuration.t2)
                timers.start(.g, at: due + retransmitInterval)
                if let lastResponse { out.append(.send(lastResponse)) }
            case .h where state == .completed:
                out += [.timedOut(.h)] + terminate()
            case .i, .j, .l:
                out += terminate()
            default:
                break
            }
        }
        return out
    }

    /// The transport could not send a response (§17.2.4): the transaction ends.
    public mutating func transportFailed() -> [SIPTransactionOutput] {
        state == .terminated ? [] : terminate()
    }

    private mutating func terminate() -> [SIPTransactionOutput] {
        state = .terminated
        timers.cancelAll()
        return [.terminated]
    }
}
