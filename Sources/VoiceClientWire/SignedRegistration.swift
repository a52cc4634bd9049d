import Foundation
import VoiceCrypto

/// Registration by signed request, as the calling SDKs define it: the app's own server holds the application
/// secret and signs `(userId, applicationKey, sequence)`; the device passes the signature and the sequence to the
/// registration service, which verifies them and issues SIP credentials. The secret never reaches the device.
public struct SignedRegistration: Codable, Equatable, Sendable {
    /// Strictly increasing per user and application key: a replayed or lower sequence is refused.
    public var sequence: UInt64
    /// `Base64(SHA1(userId + applicationKey + sequence + applicationSecret))`.
    public var signature: String

    public init(sequence: UInt64, signature: String) {
        self.sequence = sequence
        self.signature = signature
    }

    /// Signs a registration — the library function for the app's server (and `voice-engine sign-registration`).
    /// The sequence is written in decimal, the strings concatenated as UTF-8 without separators.
    public static func sign(userID: String, applicationKey: String, sequence: UInt64, applicationSecret: String)
        -> SignedRegistration
    {
        let text = userID + applicationKey + String(sequence) + applicationSecret
        return SignedRegistration(
            sequence: sequence, signature: Data(HashAlgorithm.sha1.digest(Array(text.utf8))).base64EncodedString())
    }
}

/// What the client sends to the registration service (JSON, `POST /v1/registrations`).
public struct RegistrationRequest: Codable, Equatable, Sendable {
    public var applicationKey: String
    public var userID: String
    public var sequence: UInt64
    public var signature: String
    /// Push data of this device (at most 1024 bytes, Base64 on the wire), kept with the registration.
    public var pushData: Data?
    /// Which of the user's devices registers: each keeps its own push data. nil (older clients): the device "".
    public var deviceID: String?
    /// The name the user's pushes show (at most 64 bytes).
    public var displayName: String?

    public init(
        applicationKey: String, userID: String, signed: SignedRegistration, pushData: Data? = nil,
        deviceID: String? = nil, displayName: String? = nil
    ) {
        self.applicationKey = applicationKey
        self.userID = userID
        self.sequence = signed.sequence
        self.signature = signed.signature
        self.pushData = pushData
        self.deviceID = deviceID
        self.displayName = displayName
    }
}

/// The service's answer to an accepted request: time-limited SIP digest credentials in the TURN REST API form that
/// Kamailio's `auth_ephemeral` checks — username `<expiry unix time>:<user ID>`, password
/// `Base64(HMAC-SHA1(shared secret, username))`.
public struct RegistrationGrant: Codable, Equatable, Sendable {
    public var username: String
    public var password: String
    /// Unix time (seconds) after which Kamailio refuses the credentials.
    public var expires: UInt64
    /// The SIP domain of the user's address of record (`sip:<user ID>@<domain>`).
    public var domain: String
    /// The service's STUN/TURN servers with credentials that expire with the SIP ones; nil when the service names
    /// none (a grant without the field decodes to nil). The client's calls gather only host candidates so far.
    public var iceServers: [ICEServer]?

    public init(username: String, password: String, expires: UInt64, domain: String, iceServers: [ICEServer]? = nil) {
        self.username = username
        self.password = password
        self.expires = expires
        self.domain = domain
        self.iceServers = iceServers
    }

    /// Whether the credentials are still usable at `unixTime` with `margin` seconds to spare.
    public func isValid(at unixTime: UInt64, margin: UInt64 = 60) -> Bool { unixTime + margin < expires }
}

/// A STUN or TURN server for ICE, as WebRTC's `RTCIceServer` names it: `turn:host:port` / `stun:host:port` URLs
/// (RFC 7064/7065) and, for TURN, time-limited credentials (coturn's `use-auth-secret`: username
/// `<expiry>:<user ID>`, credential Base64(HMAC-SHA1(shared secret, username))).
public struct ICEServer: Codable, Equatable, Sendable {
    public var urls: [String]
    public var username: String?
    public var credential: String?

    public init(urls: [String], username: String? = nil, credential: String? = nil) {
        self.urls = urls
        self.username = username
        self.credential = credential
    }
}

/// Why the registration service refused a signed request: a typed error on both sides of the wire.
public enum RegistrationRefusal: Error, Equatable, Sendable, Codable, CustomStringConvertible {
    /// No application with this key is configured on the service.
    case unknownApplicationKey(String)
    /// The signature does not match the one the application secret gives.
    case forgedSignature
    /// The sequence is not above the last one accepted for this user (a replay or an older request).
    case sequenceNotIncreasing(received: UInt64, lastAccepted: UInt64)
    /// The user ID breaks the SDKs' rule.
    case invalidUserID(String)
    /// The push data is larger than 1024 bytes.
    case pushDataTooLarge(Int)
    /// The request was not a readable registration request.
    case malformedRequest(String)
    /// The device's credentials (for a push-data query) are not ones the service issued, or have expired.
    case credentialsRefused

    public var description: String {
        switch self {
        case .unknownApplicationKey(let key): "unknown application key '\(key)'"
        case .forgedSignature: "the signature does not match"
        case .sequenceNotIncreasing(let received, let last):
            "sequence \(received) is not above the last accepted \(last)"
        case .invalidUserID(let reason): "invalid user ID: \(reason)"
        case .pushDataTooLarge(let count): "push data is \(count) bytes, at most 1024 allowed"
        case .malformedRequest(let reason): "malformed request: \(reason)"
        case .credentialsRefused: "the credentials were not issued by this service or have expired"
        }
    }
}

/// A push-data query: whose push data, in which application.
public struct PushDataQuery: Codable, Equatable, Sendable {
    public var applicationKey: String
    public var userID: String
    public init(applicationKey: String, userID: String) {
        self.applicationKey = applicationKey
        self.userID = userID
    }
}

/// The push data of each of the user's devices (Base64 in JSON); empty when none attached any.
public struct PushDataAnswer: Codable, Equatable, Sendable {
    public var devices: [DevicePushData]
    public init(devices: [DevicePushData]) { self.devices = devices }
}
