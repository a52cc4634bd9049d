import Foundation
import NIOPosix

/// App-sent push, both sides. The sender's: when a message or a call is kept by the service for a recipient
/// with no connection, the recipient's push data is fetched and the app is asked to push the payload. The
/// recipient's: a payload the app received is parsed, and a call payload marks the next incoming call as pushed.
///
/// Part of ``VoiceClient`` and isolated to it (not `Sendable`; its async methods run on the client's executor).
final class ClientPush {
    private let userID: String
    private let configuration: VoiceClientConfiguration
    private let unixTime: @Sendable () -> UInt64
    private let group: MultiThreadedEventLoopGroup
    private let events: AsyncStream<VoiceClientEvent>.Continuation
    /// The device's credentials authenticate the push-data query.
    private let registration: ClientRegistration
    /// A call payload was relayed: the next incoming call came by push.
    private var expectingPushedCall = false

    init(
        userID: String, configuration: VoiceClientConfiguration, unixTime: @escaping @Sendable () -> UInt64,
        group: MultiThreadedEventLoopGroup, events: AsyncStream<VoiceClientEvent>.Continuation,
        registration: ClientRegistration
    ) {
        self.userID = userID
        self.configuration = configuration
        self.unixTime = unixTime
        self.group = group
        self.events = events
        self.registration = registration
    }

    /// The payload that tells `recipient`'s device about a message or a call from this user, with the display
    /// name the app set.
    func payload(_ kind: PushPayload.Kind, id: String, headers: [String: String], canceled: Bool = false)
        -> PushPayload
    {
        PushPayload(
            kind: kind, sender: userID, id: id, sentAt: unixTime(), canceled: canceled, headers: headers,
            displayName: configuration.pushDisplayName)
    }

    /// The recipient is offline: when their devices attached push data, the app is asked to push the payload to
    /// each, in a ``VoiceClientEvent/shouldSendPushNotifications(recipient:pushPairs:)``.
    nonisolated(nonsending) func askToPush(recipient: String, payload: PushPayload) async {
        guard let grant = registration.grant else { return }
        let service = RegistrationServiceConnection(
            host: configuration.serviceHost, port: configuration.registrationPort, transport: configuration.transport)
        guard
            let devices = try? await service.pushData(
                of: recipient, applicationKey: configuration.applicationKey, as: grant),
            !devices.isEmpty, let encoded = try? payload.encoded()
        else { return }
        let pairs = devices.map { PushPair(deviceID: $0.deviceID, pushData: $0.pushData, payload: encoded) }
        events.yield(.shouldSendPushNotifications(recipient: recipient, pushPairs: pairs))
    }

    /// Parses a payload the app received; a call that was not canceled marks the next incoming call as pushed.
    /// - Throws: ``VoiceClientError/invalidPushData(_:)`` for a payload that is not one.
    func relay(_ payload: Data) throws(VoiceClientError) -> PushPayload {
        let parsed = try PushPayload.parse(payload)
        if parsed.kind == .call, !parsed.canceled { expectingPushedCall = true }
        return parsed
    }

    /// Whether the call arriving now came by push (asked once per incoming call).
    func takePushedCall() -> Bool {
        defer { expectingPushedCall = false }
        return expectingPushedCall
    }
}

/// One push the app sends: the payload, to the device whose push data this is.
public struct PushPair: Sendable, Equatable {
    /// The recipient's device (as its client registered it).
    public var deviceID: String
    /// What that device attached to its registration: where to push.
    public var pushData: Data
    /// The ``PushPayload`` to deliver, for the device's `relayPushPayload(_:)`.
    public var payload: Data

    public init(deviceID: String, pushData: Data, payload: Data) {
        (self.deviceID, self.pushData, self.payload) = (deviceID, pushData, payload)
    }
}
