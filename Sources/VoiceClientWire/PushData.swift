import Foundation

/// Push data: any bytes a device attaches to its registration (the SDKs' app-sent push), handed to callers'
/// clients when the device has no live connection. Kept per device: a user's phone and tablet each have theirs.
public enum PushData {
    public static let maximumBytes = 1024
    /// The longest display name (UTF-8 bytes) an app may set for its user's pushes.
    public static let maximumDisplayNameBytes = 64
}

/// The push data of a device for managed push (the service sends the pushes): which push service reaches the
/// device and its token there. JSON `{"apns":"<hex device token>"}` or `{"fcm":"<registration token>"}`.
public enum ManagedPushToken: Codable, Equatable, Sendable {
    /// An APNs VoIP device token (PushKit), in hex.
    case apns(String)
    /// An FCM registration token.
    case fcm(String)

    private enum CodingKeys: String, CodingKey { case apns, fcm }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if let token = try container.decodeIfPresent(String.self, forKey: .apns) {
            self = .apns(token)
        } else {
            self = .fcm(try container.decode(String.self, forKey: .fcm))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .apns(let token): try container.encode(token, forKey: .apns)
        case .fcm(let token): try container.encode(token, forKey: .fcm)
        }
    }

    /// The push data to register with.
    public var pushData: Data { (try? JSONEncoder().encode(self)) ?? Data() }

    /// The token in push data, nil when the data is not a managed push token (app-sent push data).
    public init?(pushData: Data) {
        guard let token = try? JSONDecoder().decode(Self.self, from: pushData) else { return nil }
        self = token
    }
}

/// A device's push data as a caller's client gets it, with the device it belongs to.
public struct DevicePushData: Codable, Equatable, Sendable {
    public var deviceID: String
    public var pushData: Data
    public init(deviceID: String, pushData: Data) {
        self.deviceID = deviceID
        self.pushData = pushData
    }
}

/// A registered device replaces or removes its push data (`POST /v1/devices`, authenticated with the
/// credentials the service issued it): after a token change, or when the app reports the token invalidated.
public struct PushDataUpdate: Codable, Equatable, Sendable {
    public var applicationKey: String
    public var deviceID: String
    /// The new push data; nil removes the device's.
    public var pushData: Data?
    public var displayName: String?

    public init(applicationKey: String, deviceID: String, pushData: Data?, displayName: String? = nil) {
        (self.applicationKey, self.deviceID, self.pushData, self.displayName) = (
            applicationKey, deviceID, pushData, displayName
        )
    }
}

/// The service's answer to an accepted ``PushDataUpdate``: the device whose push data it now keeps.
public struct PushDataUpdateAnswer: Codable, Equatable, Sendable {
    public var deviceID: String
    public init(deviceID: String) { self.deviceID = deviceID }
}
