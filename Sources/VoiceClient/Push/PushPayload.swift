import Foundation

/// What a push notification carries for a client that is not connected, and what the app hands to the push
/// helper: the service's payload (at most 100 bytes of JSON: kind, sender, ID, time, canceled) plus the call's
/// custom headers (at most 1024 bytes, as in the call itself) and the sender's display name (at most 64 bytes).
/// Parsed without a started client.
public struct PushPayload: Sendable, Equatable, Codable {
    public enum Kind: String, Sendable, Codable { case call = "c", message = "m" }

    public var kind: Kind
    /// The caller's or sender's user ID.
    public var sender: String
    /// The call or message ID.
    public var id: String
    /// When the service sent the push (unix seconds).
    public var sentAt: UInt64
    /// The caller canceled before the callee was reached.
    public var canceled: Bool
    /// Custom `x-` headers of the call or message.
    public var headers: [String: String]
    /// The name the sender's app set for its user's pushes, if any.
    public var displayName: String?

    public static let maximumServicePayloadBytes = 100

    public init(
        kind: Kind, sender: String, id: String, sentAt: UInt64, canceled: Bool = false, headers: [String: String] = [:],
        displayName: String? = nil
    ) {
        (self.kind, self.sender, self.id, self.sentAt, self.canceled, self.headers) = (
            kind, sender, id, sentAt, canceled, headers
        )
        self.displayName = displayName
    }

    enum CodingKeys: String, CodingKey {
        case kind = "k", sender = "f", id = "i", sentAt = "t", canceled = "x", headers = "h", displayName = "n"
    }

    /// How long the service keeps a call for a callee with no connection before it gives up with 480
    /// (`PUSH_WAIT` in Services/kamailio/kamailio.cfg): after that a relayed call push finds no call.
    public static let serviceHoldSeconds: UInt64 = 30

    /// A call's push is stale once the service's hold time (``serviceHoldSeconds``) has passed since it was sent.
    public func isTimedOut(at unixTime: UInt64, holdTime: UInt64 = serviceHoldSeconds) -> Bool {
        kind == .call && unixTime >= sentAt + holdTime
    }

    /// The service's part (everything but the headers and the display name) as JSON, at most 100 bytes.
    public func servicePayload() throws(VoiceClientError) -> Data {
        var bare = self
        bare.headers = [:]
        bare.displayName = nil
        let data = (try? JSONEncoder().encode(bare)) ?? Data()
        guard data.count <= Self.maximumServicePayloadBytes else {
            throw .invalidPushData(
                "the service payload is \(data.count) bytes, at most \(Self.maximumServicePayloadBytes) allowed")
        }
        return data
    }

    /// The whole payload (with headers) for the push notification.
    public func encoded() throws(VoiceClientError) -> Data {
        _ = try servicePayload()
        try checkDisplayName()
        _ = try CustomHeaders.validate(headers)
        return (try? JSONEncoder().encode(self)) ?? Data()
    }

    /// The push helper: parses a payload as a push notification delivered it, checking every rule.
    /// - Throws: ``VoiceClientError/invalidPushData(_:)`` with the reason; never crashes on any bytes.
    public static func parse(_ data: Data) throws(VoiceClientError) -> PushPayload {
        guard
            data.count <= maximumServicePayloadBytes + CustomHeaders.maximumTotalBytes
                + PushData.maximumDisplayNameBytes
                + 512
        else {
            throw .invalidPushData("\(data.count) bytes is larger than any push payload")
        }
        let payload: PushPayload
        do { payload = try JSONDecoder().decode(PushPayload.self, from: data) } catch {
            throw .invalidPushData("not a push payload: \(error)")
        }
        do { _ = try UserID.validate(payload.sender) } catch { throw .invalidPushData("sender: \(error)") }
        guard !payload.id.isEmpty, payload.id.utf8.count <= 64 else {
            throw .invalidPushData("the ID must have 1 to 64 bytes")
        }
        _ = try payload.servicePayload()
        try payload.checkDisplayName()
        do { _ = try CustomHeaders.validate(payload.headers) } catch { throw .invalidPushData("headers: \(error)") }
        return payload
    }

    private func checkDisplayName() throws(VoiceClientError) {
        if let displayName, displayName.utf8.count > PushData.maximumDisplayNameBytes {
            throw .invalidPushData("the display name must have at most \(PushData.maximumDisplayNameBytes) bytes")
        }
    }
}
