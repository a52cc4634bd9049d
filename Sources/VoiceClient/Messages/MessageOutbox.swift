import VoiceCore

/// One message to one recipient, as the outbox keeps it until it is delivered or fails for good.
public struct OutgoingMessage: Sendable, Equatable {
    public var id: String
    public var recipient: String
    public var text: String
    /// Custom headers, each name starting with `x-`.
    public var headers: [(name: String, value: String)]
    /// When the client first tried to send it.
    public var firstAttempt: MediaTime
    /// When to try again.
    public var nextAttempt: MediaTime
    public var attempts: Int
    /// Why the last attempt failed.
    public var lastFailure: String?
    /// Every recipient of the message (`recipient` among them), which each copy names.
    public var recipients: [String]

    public init(
        id: String, recipient: String, text: String, headers: [(name: String, value: String)], firstAttempt: MediaTime,
        nextAttempt: MediaTime, attempts: Int = 0, lastFailure: String? = nil, recipients: [String]? = nil
    ) {
        (self.id, self.recipient, self.text, self.headers) = (id, recipient, text, headers)
        self.recipients = recipients ?? [recipient]
        (self.firstAttempt, self.nextAttempt, self.attempts, self.lastFailure) = (
            firstAttempt, nextAttempt, attempts, lastFailure
        )
    }

    public static func == (a: OutgoingMessage, b: OutgoingMessage) -> Bool {
        a.id == b.id && a.recipient == b.recipient && a.text == b.text && a.firstAttempt == b.firstAttempt
            && a.nextAttempt == b.nextAttempt && a.attempts == b.attempts && a.lastFailure == b.lastFailure
            && a.recipients == b.recipients
            && a.headers.map(\.name) == b.headers.map(\.name) && a.headers.map(\.value) == b.headers.map(\.value)
    }
}

/// What became of one attempt to send a message to one recipient.
public enum MessageAttemptOutcome: Sendable, Equatable {
    /// The recipient's device answered 2xx.
    case delivered
    /// The service keeps it for the offline recipient (202) and delivers it when they register.
    case storedForLaterDelivery
    /// Refused for good (a SIP status that retrying cannot change, e.g. 404, 403, 488).
    case refused(status: Int, reason: String)
    /// Could not be sent now (network, timeout, 408/480/500/503/504): kept and tried again.
    case unsent(reason: String)

    /// Classifies a final SIP response.
    public static func classify(status: Int, reason: String) -> MessageAttemptOutcome {
        switch status {
        case 202: .storedForLaterDelivery
        case 200...299: .delivered
        case 408, 480, 500, 503, 504: .unsent(reason: "\(status) \(reason)")
        default: .refused(status: status, reason: reason)
        }
    }
}

/// The calling SDKs' rule for messages that cannot be sent: the client keeps them and tries again with growing
/// intervals (5 s doubling to 10 min) for 12 hours from the first attempt — the last try exactly when the 12 hours
/// are up — then they fail for good. Pure: time is
/// passed in, so a test runs the 12 hours on a manual clock.
public struct MessageOutbox: Sendable {
    public static let retryWindow = MediaTime.seconds(12 * 3600)
    public static let firstRetryDelay = MediaTime.seconds(5)
    public static let longestRetryDelay = MediaTime.seconds(600)

    public private(set) var pending: [OutgoingMessage] = []

    public init() {}

    public mutating func add(_ message: OutgoingMessage) { pending.append(message) }

    /// The messages whose next attempt is due at `now`.
    public func due(at now: MediaTime) -> [OutgoingMessage] { pending.filter { $0.nextAttempt <= now } }

    /// The earliest next attempt, if anything is pending.
    public var nextDeadline: MediaTime? { pending.map(\.nextAttempt).min() }

    /// Applies the outcome of an attempt made at `now`. Returns the final outcome to report, or nil while the
    /// message is kept for another attempt; `unsent` at or after the 12 hours becomes
    /// ``MessageFinalOutcome/failed(reason:sipStatus:)``.
    public mutating func record(_ outcome: MessageAttemptOutcome, for id: String, recipient: String, at now: MediaTime)
        -> MessageFinalOutcome?
    {
        guard let index = pending.firstIndex(where: { $0.id == id && $0.recipient == recipient }) else { return nil }
        switch outcome {
        case .delivered:
            pending.remove(at: index)
            return .delivered
        case .storedForLaterDelivery:
            pending.remove(at: index)
            return .storedForLaterDelivery
        case .refused(let status, let reason):
            pending.remove(at: index)
            return .failed(reason: "\(status) \(reason)", sipStatus: status)
        case .unsent(let reason):
            var message = pending[index]
            message.attempts += 1
            message.lastFailure = reason
            let delay = min(
                Self.longestRetryDelay.nanoseconds, Self.firstRetryDelay.nanoseconds << min(message.attempts - 1, 20))
            // The last attempt is made when the 12 hours are up; when that one fails too, the message fails.
            if now - message.firstAttempt >= Self.retryWindow {
                pending.remove(at: index)
                return .failed(
                    reason: "not sent within 12 hours (\(message.attempts) attempts; last: \(reason))", sipStatus: nil)
            }
            message.nextAttempt = min(now + MediaTime(nanoseconds: delay), message.firstAttempt + Self.retryWindow)
            pending[index] = message
            return nil
        }
    }
}

/// How a message to one recipient ended.
public enum MessageFinalOutcome: Sendable, Equatable {
    case delivered
    case storedForLaterDelivery
    case failed(reason: String, sipStatus: Int?)
}
