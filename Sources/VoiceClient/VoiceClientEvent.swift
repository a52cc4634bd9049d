import Foundation

/// What the client reports, in order, on ``VoiceClient/events``.
public enum VoiceClientEvent: Sendable, Equatable {
    /// Registered: the client can send and receive.
    case started
    /// `start()` failed, with the reason; nothing stays registered.
    case failed(VoiceClientError)
    /// `stop()` or `terminate()` unregistered the user and released the audio session.
    case stopped
    /// A message arrived.
    case messageReceived(IncomingMessage)
    /// A message reached one recipient's device, at `timestamp` on the service's clock: at once, or when a
    /// recipient the service kept the message for came online (reported then, also after a restart of this
    /// client).
    case messageDelivered(id: String, recipient: String, timestamp: Date)
    /// The user sent a message: from this device when the service first accepted it, or from another of the
    /// user's registered devices (``SentMessage/fromThisDevice`` false), so it shows as sent on every device.
    case messageSent(SentMessage)
    /// The recipient was offline; the service keeps the message (30 days) and delivers it when they register.
    case messageStoredForLaterDelivery(id: String, recipient: String)
    /// A message could not reach one recipient: refused with a SIP status, or not sent within 12 hours.
    case messageFailed(id: String, recipient: String, reason: String, sipStatus: Int?)
    /// App-sent push: the recipient has no live connection; the app sends one push per pair, each pair's
    /// `payload` (``PushPayload``, to be handed to the recipient's `relayPushPayload(_:)`) to the device its
    /// `pushData` (what that device attached to its registration) names.
    case shouldSendPushNotifications(recipient: String, pushPairs: [PushPair])
    /// A call arrived (it rings: the ringtone plays until ``Call/answer()`` or ``Call/hangup()``, which declines).
    case incomingCall(IncomingCall)
    /// The SIP registration was lost after `start()`: a refresh was refused, or the connection to the service
    /// closed or stopped answering. For a lost connection the client registers again on its own (at once, then
    /// with backoff, failing over to ``VoiceClientConfiguration/additionalServiceHosts``) and reports
    /// ``reregistered(serviceHost:)``; a refused refresh is retried every 30 s. `stop()` and `start()` register
    /// afresh.
    case registrationLost(VoiceClientError)
    /// The address the client reaches the service from changed (`localAddress`), or went away with no other
    /// route (nil): the client registers again from the new address (``reregistered(serviceHost:)``), and calls
    /// placed from now on use it.
    case networkChanged(localAddress: String?)
    /// Registered again after ``registrationLost(_:)``, on a new connection to `serviceHost`: calls and messages
    /// reach the client again.
    case reregistered(serviceHost: String)
    /// The state store (``VoiceClientConfiguration/stateStore``) failed: a record could not be written, or one
    /// that could not be read was set aside (`<record>.rejected` in a ``DirectoryStateStore``) and the client
    /// goes on without it.
    case stateStoreFailed(VoiceClientError)
}

/// An incoming call: the call object, who calls, the custom headers of the call and whether it came by push
/// (``VoiceClient/relayPushPayload(_:)`` was handed a call payload just before).
public struct IncomingCall: Sendable, Equatable {
    public var call: Call
    /// The caller's user ID (or the user part of their SIP address).
    public var caller: String
    public var headers: [String: String]
    public var viaPush: Bool

    public static func == (a: IncomingCall, b: IncomingCall) -> Bool {
        a.call === b.call && a.caller == b.caller && a.headers == b.headers && a.viaPush == b.viaPush
    }
}

/// A message received over SIP MESSAGE.
public struct IncomingMessage: Sendable, Equatable {
    /// The sender's message ID (the same on every retry of one message).
    public var id: String
    /// The sender's user ID.
    public var sender: String
    public var text: String
    /// Custom headers (names starting with `x-`), as the sender gave them.
    public var headers: [String: String]
    /// Every recipient the sender addressed, this user among them (this user alone when a message the service
    /// kept for later had custom headers too large to keep the list with).
    public var recipients: [String]
    /// When the service accepted the message, on its clock (also for a message it kept while this user was
    /// offline).
    public var timestamp: Date
}

/// A message the user sent, as ``VoiceClientEvent/messageSent(_:)`` reports it.
public struct SentMessage: Sendable, Equatable {
    public var id: String
    public var recipients: [String]
    public var text: String
    /// Custom headers (names starting with `x-`).
    public var headers: [String: String]
    /// When the service accepted the message, on its clock.
    public var timestamp: Date
    /// Sent from this device (else from another device of the same user).
    public var fromThisDevice: Bool
}
