import Foundation
import VoiceEngine
import VoiceSIP

/// Messages, both ways, over SIP MESSAGE through the service (the wire form: ``MessageWire``). Outgoing: kept in
/// the ``MessageOutbox`` and sent when due, one request per recipient, each outcome reported (a message stored
/// for an offline recipient asks for a push; its delivery is reported when the service's notification comes);
/// once the service accepted a message, a copy goes to the user's own address for their other devices.
/// Incoming: answered 200 on the event loop, then reported once per message however often it arrives.
///
/// Part of ``VoiceClient`` and isolated to it (not `Sendable`; its async methods run on the client's executor).
final class ClientMessages {
    private let userID: String
    private let clock: any MediaClock
    private let unixTime: @Sendable () -> UInt64
    /// Where the outbox is kept across restarts.
    private let state: ClientState
    private let events: AsyncStream<VoiceClientEvent>.Continuation
    /// The SIP connection and the domain the requests go through.
    private let registration: ClientRegistration
    private let push: ClientPush
    private var outbox = MessageOutbox()
    /// The messages whose attempt is under way (message ID and recipient), not to be sent twice at once.
    private var sending: Set<String> = []
    private var cseq: UInt32 = 0
    /// The latest incoming messages and notifications (sender, message ID, kind), to report a repeated delivery
    /// once.
    private var seenIncoming: [String] = []
    /// Messages whose sending this run reported (``VoiceClientEvent/messageSent(_:)``) and copied to the other
    /// devices.
    private var announcedSent: Set<String> = []
    /// Incoming MESSAGEs from the event loop, in arrival order, to the client (``receive(_:on:into:)`` yields
    /// them, the client reads ``incoming``).
    let inbox: AsyncStream<SIPMessage>.Continuation
    let incoming: AsyncStream<SIPMessage>

    init(
        userID: String, clock: any MediaClock, unixTime: @escaping @Sendable () -> UInt64,
        events: AsyncStream<VoiceClientEvent>.Continuation, registration: ClientRegistration, push: ClientPush,
        state: ClientState
    ) {
        (self.userID, self.clock, self.unixTime, self.events) = (userID, clock, unixTime, events)
        (self.registration, self.push, self.state) = (registration, push, state)
        (incoming, inbox) = AsyncStream.makeStream(of: SIPMessage.self)
        restoreOutbox()
    }

    /// Takes the messages an earlier run kept, each due at once with its 12 hours counted from its first attempt.
    private func restoreOutbox() {
        let now = clock.now, unixNow = unixTime()
        var expired = false
        for saved in state.outbox {
            let age = MediaTime.seconds(
                Double(unixNow > saved.firstAttemptUnixTime ? unixNow - saved.firstAttemptUnixTime : 0))
            guard age < MessageOutbox.retryWindow else {
                // The app was not running when its 12 hours ran out: the message fails without another attempt.
                expired = true
                events.yield(
                    .messageFailed(
                        id: saved.id, recipient: saved.recipient,
                        reason:
                            "not sent within 12 hours (\(saved.attempts) attempts; the app was not running at the end)",
                        sipStatus: nil))
                continue
            }
            outbox.add(
                OutgoingMessage(
                    id: saved.id, recipient: saved.recipient, text: saved.text,
                    headers: zip(saved.headerNames, saved.headerValues).map { (name: $0, value: $1) },
                    firstAttempt: now - age, nextAttempt: now, attempts: saved.attempts,
                    lastFailure: saved.lastFailure, recipients: saved.recipients))
        }
        if expired { saveOutbox() }
    }

    /// Writes the outbox to the state store (after every change, so a restart loses nothing it had).
    private func saveOutbox() {
        let now = clock.now, unixNow = unixTime()
        state.saveOutbox(
            outbox.pending.map { message in
                let age = UInt64(max(0, (now - message.firstAttempt).seconds).rounded())
                return ClientState.SavedMessage(
                    id: message.id, recipient: message.recipient, text: message.text,
                    headerNames: message.headers.map(\.name), headerValues: message.headers.map(\.value),
                    firstAttemptUnixTime: unixNow > age ? unixNow - age : 0, attempts: message.attempts,
                    lastFailure: message.lastFailure, recipients: message.recipients)
            })
    }

    /// Checks the recipients and headers and keeps one message per recipient, due now.
    /// - Returns: the message ID.
    /// - Throws: bad recipients or headers; nothing was kept then.
    func add(_ text: String, to recipients: [String], headers: [String: String]) throws(VoiceClientError) -> String {
        guard !recipients.isEmpty else { throw .invalidMessage("no recipients") }
        for recipient in recipients {
            do { _ = try UserID.validate(recipient) } catch { throw VoiceClientError(error) }
        }
        let checked = try CustomHeaders.validate(headers)
        let id = UUID().uuidString.lowercased()
        let now = clock.now
        let all = Set(recipients).sorted()
        for recipient in all {
            outbox.add(
                OutgoingMessage(
                    id: id, recipient: recipient, text: text, headers: checked, firstAttempt: now, nextAttempt: now,
                    attempts: 0, recipients: all))
        }
        saveOutbox()
        return id
    }

    /// Messages not yet delivered, stored or failed.
    var pending: [OutgoingMessage] { outbox.pending }

    /// Sends every message whose attempt is due on the client's clock and reports what became of each.
    nonisolated(nonsending) func retryDue() async {
        for message in outbox.due(at: clock.now) where !sending.contains(message.id + "\u{0}" + message.recipient) {
            let key = message.id + "\u{0}" + message.recipient
            sending.insert(key)
            let (outcome, serverTime) = await attempt(message)
            sending.remove(key)
            let final = outbox.record(outcome, for: message.id, recipient: message.recipient, at: clock.now)
            saveOutbox()
            let timestamp = serverTime ?? wallClock
            let firstAcceptance =
                (final == .delivered || final == .storedForLaterDelivery) && reportSent(message, at: timestamp)
            switch final {
            case .delivered:
                events.yield(.messageDelivered(id: message.id, recipient: message.recipient, timestamp: timestamp))
            case .storedForLaterDelivery:
                events.yield(.messageStoredForLaterDelivery(id: message.id, recipient: message.recipient))
                let headers = Self.dictionary(message.headers)
                await push.askToPush(
                    recipient: message.recipient, payload: push.payload(.message, id: message.id, headers: headers))
            case .failed(let reason, let status):
                events.yield(
                    .messageFailed(id: message.id, recipient: message.recipient, reason: reason, sipStatus: status))
            case nil: break
            }
            // One attempt: the copy is a courtesy to the other devices, not a message the user waits for.
            if firstAcceptance { _ = await send(message, to: userID, callID: "\(message.id)-sent", sentCopy: true) }
        }
    }

    /// The wall clock, for a time the service did not give.
    private var wallClock: Date { Date(timeIntervalSince1970: Double(unixTime())) }

    /// Reports a message as sent from this device the first time the service accepts it for a recipient (once per
    /// run). Returns whether it did, i.e. whether to copy the message to the user's other devices now (a copy
    /// that arrives there twice is reported once).
    private func reportSent(_ message: OutgoingMessage, at timestamp: Date) -> Bool {
        guard announcedSent.insert(message.id).inserted else { return false }
        events.yield(
            .messageSent(
                SentMessage(
                    id: message.id, recipients: message.recipients, text: message.text,
                    headers: Self.dictionary(message.headers), timestamp: timestamp, fromThisDevice: true)))
        return true
    }

    private nonisolated(nonsending) func attempt(_ message: OutgoingMessage) async -> (
        MessageAttemptOutcome, serverTime: Date?
    ) {
        // One Call-ID per message and recipient on every attempt, so the recipient drops a repeated delivery.
        await send(
            message, to: message.recipient, callID: "\(message.id)-\(SIPUserPart.escape(message.recipient))",
            sentCopy: false)
    }

    /// Sends `message` to `recipient` (the user's own address for the copy to their other devices) and
    /// classifies the answer; the answer's `Date` is the service's time of delivery or storing.
    private nonisolated(nonsending) func send(
        _ message: OutgoingMessage, to recipient: String, callID: String, sentCopy: Bool
    ) async -> (MessageAttemptOutcome, serverTime: Date?) {
        guard let sender = registration.sender, let serverPeer = registration.serverPeer, let grant = registration.grant
        else {
            return (.unsent(reason: "the client is not started"), nil)
        }
        cseq &+= 1
        var headers = SIPHeaders()
        headers.add(
            "From",
            "<sip:\(SIPUserPart.escape(userID))@\(grant.domain)>;tag=\(UUID().uuidString.prefix(8).lowercased())")
        headers.add("To", "<sip:\(SIPUserPart.escape(recipient))@\(grant.domain)>")
        headers.add("Call-ID", callID)
        headers.add("CSeq", SIPCSeq(cseq, .message).description)
        headers.add("Content-Type", "text/plain;charset=utf-8")
        headers.add(MessageWire.messageIDHeader, message.id)
        headers.add(MessageWire.recipientsHeader, MessageWire.recipientsValue(message.recipients, domain: grant.domain))
        if sentCopy { headers.add(MessageWire.sentByDeviceHeader, MessageWire.deviceValue(registration.deviceID)) }
        for (name, value) in message.headers { headers.add(name, value) }
        let uri = SIPURI(user: SIPUserPart.escape(recipient), host: grant.domain)
        do {
            let response = try await sender.send(
                .request(.message, uri, headers: headers, body: Array(message.text.utf8)), to: serverPeer)
            return (
                .classify(status: response.statusCode ?? 500, reason: response.reasonPhrase ?? ""),
                response.headers.first("Date").flatMap(SIPDate.parse)
            )
        } catch {
            return (.unsent(reason: "\(error)"), nil)
        }
    }

    private static func dictionary(_ headers: [(name: String, value: String)]) -> [String: String] {
        Dictionary(headers.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
    }

    /// Answers a request that is neither a call nor a response, on the event loop: a MESSAGE with 200 (it goes
    /// to `inbox`), anything else with 405.
    static func receive(
        _ request: SIPIncomingRequest, on endpoint: SIPEndpoint, into inbox: AsyncStream<SIPMessage>.Continuation
    ) {
        guard request.transaction != nil, let method = request.message.requestMethod else { return }
        switch method {
        case .message:
            endpoint.respond(.response(to: request.message, status: 200, toTag: "m"), to: request)
            inbox.yield(request.message)
        default:
            endpoint.respond(.response(to: request.message, status: 405, toTag: "x"), to: request)
        }
    }

    /// Reports an incoming message once however often it arrives (retried when its 200 was lost, or delivered
    /// again by the service): a message from another user, a copy of the user's own message sent from another of
    /// their devices (``VoiceClientEvent/messageSent(_:)``; this device's own copy is dropped), or the service's
    /// notification that a stored message reached its recipient.
    func deliver(_ message: SIPMessage) {
        let sender = message.from.flatMap { $0.uri.user }.map(SIPUserPart.unescape) ?? ""
        if let type = message.contentType, type.type.lowercased() == DeliveryNotification.contentType.type,
            type.subtype.lowercased() == DeliveryNotification.contentType.subtype
        {
            // Only the recipient's own address may say the recipient got it.
            guard let notification = DeliveryNotification(parsing: message.body), notification.recipient == sender,
                firstSight("delivered\u{0}\(notification.recipient)\u{0}\(notification.messageID)")
            else { return }
            events.yield(
                .messageDelivered(
                    id: notification.messageID, recipient: notification.recipient,
                    timestamp: notification.timestamp))
            return
        }
        let callID = message.callID ?? UUID().uuidString
        let id =
            message.headers.first(MessageWire.messageIDHeader)
            ?? callID.split(separator: "-").prefix(5).joined(separator: "-")
        let copyFrom = sender == userID ? message.headers.first(MessageWire.sentByDeviceHeader) : nil
        guard firstSight("\(copyFrom == nil ? "received" : "sent")\u{0}\(sender)\u{0}\(id)") else { return }
        var custom: [String: String] = [:]
        for field in message.headers where field.name.lowercased().hasPrefix("x-") { custom[field.name] = field.value }
        let text = String(decoding: message.body, as: UTF8.self)
        let recipients =
            message.headers.first(MessageWire.recipientsHeader).flatMap(MessageWire.recipients(from:)) ?? [userID]
        let timestamp = message.headers.first("Date").flatMap(SIPDate.parse) ?? wallClock
        if let copyFrom {
            guard copyFrom != MessageWire.deviceValue(registration.deviceID) else { return }
            events.yield(
                .messageSent(
                    SentMessage(
                        id: id, recipients: recipients, text: text, headers: custom, timestamp: timestamp,
                        fromThisDevice: false)))
            return
        }
        events.yield(
            .messageReceived(
                IncomingMessage(
                    id: id, sender: sender, text: text, headers: custom, recipients: recipients, timestamp: timestamp)))
    }

    /// Whether `key` is new among the latest 1000 incoming messages (and remembers it).
    private func firstSight(_ key: String) -> Bool {
        guard !seenIncoming.contains(key) else { return false }
        seenIncoming.append(key)
        if seenIncoming.count > 1000 { seenIncoming.removeFirst(seenIncoming.count - 1000) }
        return true
    }
}
