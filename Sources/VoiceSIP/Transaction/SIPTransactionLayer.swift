/// Identifies a transaction by RFC 3261 §17.1.3 / §17.2.3 matching: the top Via branch and the method (an ACK
/// belongs to its INVITE), and for server transactions the Via sent-by too. A request whose branch lacks the
/// magic cookie (RFC 2543) is identified by Request-URI, tags, Call-ID, CSeq and top Via instead.
public struct SIPTransactionID: Hashable, Sendable, CustomStringConvertible {
    public enum Role: Hashable, Sendable { case client, server }
    public var role: Role
    public var key: String
    public var method: SIPMethod

    public var description: String { "\(role == .client ? "client" : "server") \(method) \(key)" }

    /// The client transaction a response belongs to; nil without a top Via branch or CSeq.
    public static func client(forResponse response: SIPMessage) -> SIPTransactionID? {
        guard let branch = response.topVia?.branch, let cseq = response.cseq else { return nil }
        return SIPTransactionID(role: .client, key: branch, method: cseq.method)
    }

    /// The client transaction of a request we send.
    public static func client(forRequest request: SIPMessage) -> SIPTransactionID? {
        guard let branch = request.topVia?.branch, let method = request.requestMethod else { return nil }
        return SIPTransactionID(role: .client, key: branch, method: method)
    }

    /// The server transaction a received request belongs to (an ACK maps to its INVITE's).
    public static func server(forRequest request: SIPMessage) -> SIPTransactionID? {
        guard let via = request.topVia, let method = request.requestMethod else { return nil }
        let matchedMethod: SIPMethod = method == .ack ? .invite : method
        if via.hasRFC3261Branch, let branch = via.branch {
            return SIPTransactionID(role: .server, key: "\(branch) \(via.host):\(via.port ?? 0)", method: matchedMethod)
        }
        // §17.2.3 for RFC 2543 peers; the To tag is left out so that the ACK (which has it) matches the INVITE.
        let uri = request.requestURI?.description ?? ""
        let key = [
            uri, request.from?.tag ?? "", request.callID ?? "", "\(request.cseq?.sequence ?? 0)", via.description
        ]
        .joined(separator: "|")
        return SIPTransactionID(role: .server, key: key, method: matchedMethod)
    }
}

/// What the transaction layer asks of the transport and the transaction user (the TU: dialogs, registration).
public enum SIPTransactionEvent<Destination: Hashable & Sendable>: Sendable {
    /// Send a message to a peer.
    case send(SIPMessage, to: Destination)
    /// A response for the TU, from the client transaction `transaction`.
    case response(SIPMessage, transaction: SIPTransactionID)
    /// A new request for the TU (or the ACK of a 2xx), from the server transaction `transaction`.
    case request(SIPMessage, transaction: SIPTransactionID, from: Destination)
    /// Timer B or F (client: the TU treats it as 408) or H (server: no ACK came).
    case timedOut(SIPTransactionID, SIPTimer)
    /// A response no transaction claims: for a UAC, a 2xx retransmitted after Timer M, which the dialog re-ACKs.
    case strayResponse(SIPMessage, from: Destination)
    /// An ACK no transaction claims: the ACK of a 2xx after Timer L, for the dialog.
    case strayAck(SIPMessage, from: Destination)
}

/// All client and server transactions of one user agent, keyed by `SIPTransactionID`, on one clock.
///
/// The owner feeds it received messages and the TU's requests and responses, calls `advance(to:)` at
/// `nextDeadline`, and carries out the returned events. `Destination` is whatever the transport uses to address a
/// peer (a socket address, a connection).
public struct SIPTransactionLayer<Destination: Hashable & Sendable>: Sendable {
    public var configuration: SIPTimerConfiguration
    private var clients: [SIPTransactionID: (transaction: SIPClientTransaction, peer: Destination)] = [:]
    private var servers: [SIPTransactionID: (transaction: SIPServerTransaction, peer: Destination)] = [:]
    /// Every transaction's next deadline, soonest first, so that finding and firing due timers does not scan every
    /// live transaction (over UDP thousands linger for Timer J/K/L under load). Entries go stale when a
    /// transaction's deadline moves or it ends; they are dropped when they reach the top.
    private var deadlines = SIPDeadlineQueue()

    public init(configuration: SIPTimerConfiguration = SIPTimerConfiguration()) {
        self.configuration = configuration
    }

    public var clientCount: Int { clients.count }
    public var serverCount: Int { servers.count }

    public func clientState(_ id: SIPTransactionID) -> SIPClientTransaction.State? { clients[id]?.transaction.state }
    public func serverState(_ id: SIPTransactionID) -> SIPServerTransaction.State? { servers[id]?.transaction.state }

    /// The earliest deadline of any transaction.
    public var nextDeadline: SIPInstant? { deadlines.first?.deadline }

    /// Starts a client transaction for `request` (which must carry a top Via with a branch).
    public mutating func send(request: SIPMessage, to peer: Destination, reliable: Bool, now: SIPInstant) throws
        -> (SIPTransactionID, [SIPTransactionEvent<Destination>])
    {
        guard request.isRequest, request.requestMethod != .ack else {
            throw SIPError(.invalidState, "an ACK or a response is sent without a client transaction")
        }
        guard let id = SIPTransactionID.client(forRequest: request) else {
            throw SIPError(.missingOrRepeatedHeader, "request has no top Via with a branch")
        }
        guard clients[id] == nil else { throw SIPError(.invalidState, "a client transaction \(id) already exists") }
        let (transaction, outputs) = SIPClientTransaction.start(
            request: request, reliable: reliable, configuration: configuration, now: now)
        return (id, store(client: (transaction, peer), id: id, outputs: outputs))
    }

    /// Sends a message outside any transaction: the ACK of a 2xx (§13.2.2.4), which the dialog owns.
    public func sendStateless(_ message: SIPMessage, to peer: Destination) -> [SIPTransactionEvent<Destination>] {
        [.send(message, to: peer)]
    }

    /// The TU's response on server transaction `id`.
    public mutating func respond(_ response: SIPMessage, on id: SIPTransactionID, now: SIPInstant) throws
        -> [SIPTransactionEvent<Destination>]
    {
        guard var entry = servers[id] else { throw SIPError(.invalidState, "no server transaction \(id)") }
        let outputs = try entry.transaction.respond(response, now: now)
        return store(server: entry, id: id, outputs: outputs)
    }

    /// A message from `peer`, already parsed and validated.
    public mutating func receive(_ message: SIPMessage, from peer: Destination, reliable: Bool, now: SIPInstant)
        -> [SIPTransactionEvent<Destination>]
    {
        if message.isRequest {
            guard let id = SIPTransactionID.server(forRequest: message) else { return [] }
            if var entry = servers[id] {
                let outputs = entry.transaction.receive(request: message, now: now)
                return store(server: entry, id: id, outputs: outputs)
            }
            if message.requestMethod == .ack { return [.strayAck(message, from: peer)] }
            let (transaction, outputs) = SIPServerTransaction.start(
                request: message, reliable: reliable, configuration: configuration, now: now)
            return store(server: (transaction, peer), id: id, outputs: outputs)
        }
        guard let id = SIPTransactionID.client(forResponse: message), var entry = clients[id] else {
            return [.strayResponse(message, from: peer)]
        }
        let outputs = entry.transaction.receive(response: message, now: now)
        return store(client: entry, id: id, outputs: outputs)
    }

    /// The server transaction of the INVITE a received CANCEL cancels (§9.2), if it is still there.
    public func inviteTransaction(cancelledBy cancel: SIPMessage) -> SIPTransactionID? {
        guard var id = SIPTransactionID.server(forRequest: cancel) else { return nil }
        id.method = .invite
        return servers[id] == nil ? nil : id
    }

    /// Fires every timer due at `now`.
    public mutating func advance(to now: SIPInstant) -> [SIPTransactionEvent<Destination>] {
        var events: [SIPTransactionEvent<Destination>] = []
        while let due = deadlines.first, due.deadline <= now {
            deadlines.removeFirst()
            let id = due.id
            switch id.role {
            case .client:
                guard var entry = clients[id], entry.transaction.nextDeadline == due.deadline else { continue }
                let outputs = entry.transaction.advance(to: now)
                events += store(client: entry, id: id, outputs: outputs)
            case .server:
                guard var entry = servers[id], entry.transaction.nextDeadline == due.deadline else { continue }
                let outputs = entry.transaction.advance(to: now)
                events += store(server: entry, id: id, outputs: outputs)
            }
        }
        dropStaleDeadlines()
        return events
    }

    /// Pops entries at the top that no longer match their transaction, so that `nextDeadline` is a live one.
    private mutating func dropStaleDeadlines() {
        while let top = deadlines.first {
            let current =
                top.id.role == .client
                ? clients[top.id]?.transaction.nextDeadline : servers[top.id]?.transaction.nextDeadline
            if current == top.deadline { return }
            deadlines.removeFirst()
        }
    }

    /// The transport failed to reach the peer of client transaction `id`.
    public mutating func transportFailed(client id: SIPTransactionID) -> [SIPTransactionEvent<Destination>] {
        guard var entry = clients[id] else { return [] }
        let outputs = entry.transaction.transportFailed()
        return store(client: entry, id: id, outputs: outputs)
    }

    private mutating func store(
        client entry: (transaction: SIPClientTransaction, peer: Destination), id: SIPTransactionID,
        outputs: [SIPTransactionOutput]
    ) -> [SIPTransactionEvent<Destination>] {
        let before = clients[id]?.transaction.nextDeadline
        clients[id] = entry.transaction.isTerminated ? nil : entry
        noteDeadline(entry.transaction.isTerminated ? nil : entry.transaction.nextDeadline, was: before, id: id)
        return translate(outputs, id: id, peer: entry.peer)
    }

    private mutating func store(
        server entry: (transaction: SIPServerTransaction, peer: Destination), id: SIPTransactionID,
        outputs: [SIPTransactionOutput]
    ) -> [SIPTransactionEvent<Destination>] {
        let before = servers[id]?.transaction.nextDeadline
        servers[id] = entry.transaction.isTerminated ? nil : entry
        noteDeadline(entry.transaction.isTerminated ? nil : entry.transaction.nextDeadline, was: before, id: id)
        return translate(outputs, id: id, peer: entry.peer)
    }

    private mutating func noteDeadline(_ deadline: SIPInstant?, was before: SIPInstant?, id: SIPTransactionID) {
        if let deadline, deadline != before { deadlines.insert((deadline, id)) }
        dropStaleDeadlines()
    }

    private func translate(_ outputs: [SIPTransactionOutput], id: SIPTransactionID, peer: Destination)
        -> [SIPTransactionEvent<Destination>]
    {
        outputs.compactMap { output in
            switch output {
            case .send(let message): .send(message, to: peer)
            case .deliver(let message) where id.role == .client: .response(message, transaction: id)
            case .deliver(let message): .request(message, transaction: id, from: peer)
            case .timedOut(let timer): .timedOut(id, timer)
            case .terminated: nil
            }
        }
    }
}

/// A binary min-heap of (deadline, transaction) for `SIPTransactionLayer`.
struct SIPDeadlineQueue: Sendable {
    private var heap: [(deadline: SIPInstant, id: SIPTransactionID)] = []

    var first: (deadline: SIPInstant, id: SIPTransactionID)? { heap.first }
    var count: Int { heap.count }

    mutating func insert(_ entry: (deadline: SIPInstant, id: SIPTransactionID)) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].deadline < heap[parent].deadline else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    mutating func removeFirst() {
        guard !heap.isEmpty else { return }
        heap.swapAt(0, heap.count - 1)
        heap.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < heap.count, heap[left].deadline < heap[smallest].deadline { smallest = left }
            if right < heap.count, heap[right].deadline < heap[smallest].deadline { smallest = right }
            guard smallest != parent else { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
