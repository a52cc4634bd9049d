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
    /// A message reached one recipient's device.
    case messageDelivered(id: String, recipient: String)
    /// The recipient was offline; the service keeps the message (30 days) and delivers it when they register.
    case messageStoredForLaterDelivery(id: String, recipient: String)
    /// A message could not reach one recipient: refused with a SIP status, or not sent within 12 hours.
    case messageFailed(id: String, recipient: String, reason: String, sipStatus: Int?)
    /// App-sent push: the recipient has no live connection; the app pushes `payload` (``PushPayload``, to be
    /// handed to the recipient's `relayPushPayload(_:)`) to each of the recipient's devices, whose push data
    /// (what they attached to their registration) says where.
    case shouldSendPushNotifications(recipient: String, payload: Data, pushData: [Data])
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
}
