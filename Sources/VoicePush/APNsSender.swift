import Crypto
import Foundation
import NIOCore

/// What became of one push.
public enum PushOutcome: Sendable, Equatable {
    /// The push service took the notification (its ID: APNs's `apns-id`, FCM's message name).
    case delivered(id: String)
    /// The push service says the token is no longer a device's (APNs `BadDeviceToken`/`Unregistered`, FCM
    /// `UNREGISTERED`): the device's push data is to be removed.
    case deviceGone(reason: String)
    /// The push service refused the notification for another reason (HTTP status and the service's reason).
    case refused(status: Int, reason: String)
    /// Not sent: the payload breaks the service's size limit, or the service could not be reached.
    case notSent(String)
}

/// APNs over HTTP/2 with token authentication, for VoIP pushes: `POST /3/device/<token>` with
/// `authorization: bearer <ES256 provider token>`, `apns-push-type: voip`, `apns-topic: <bundle ID>.voip`,
/// `apns-priority: 10` and `apns-expiration` (a call push is worthless once the service stopped holding the call).
public actor APNsSender {
    public struct Configuration: Sendable {
        /// The team ID of the developer account (the provider token's issuer, `iss`).
        public var teamID: String
        /// The 10-character ID of the `.p8` key (the token header's `kid`).
        public var keyID: String
        /// The `.p8` file's text: a PKCS#8 P-256 private key in PEM.
        public var privateKeyPEM: String
        /// The app's bundle ID; VoIP pushes go to the topic `<bundleID>.voip`.
        public var bundleID: String
        /// `https://api.push.apple.com` in production, `https://api.sandbox.push.apple.com` for development builds.
        public var endpoint: PushEndpoint
        /// PEM file of the CAs to trust instead of the system's (a test server's).
        public var trustRootsFile: String?
        /// Seconds after which APNs drops an undelivered push.
        public var expirationSeconds: UInt64

        public init(
            teamID: String, keyID: String, privateKeyPEM: String, bundleID: String,
            endpoint: PushEndpoint, trustRootsFile: String? = nil, expirationSeconds: UInt64 = 30
        ) {
            (self.teamID, self.keyID, self.privateKeyPEM, self.bundleID) = (teamID, keyID, privateKeyPEM, bundleID)
            (self.endpoint, self.trustRootsFile, self.expirationSeconds) = (endpoint, trustRootsFile, expirationSeconds)
        }
    }

    /// APNs's limit for a VoIP notification's payload.
    public static let maximumVoIPPayloadBytes = 5120

    /// A provider token is reused for this long: APNs refuses tokens older than an hour and throttles providers
    /// that make new ones more often than every 20 minutes.
    static let providerTokenLifetime: UInt64 = 50 * 60

    public let configuration: Configuration
    private let key: P256.Signing.PrivateKey
    private let connection: HTTP2Connection
    private let unixTime: @Sendable () -> UInt64
    private var providerToken: (token: String, issuedAt: UInt64)?

    /// - Throws: the key is not a PEM P-256 private key, or the trust roots cannot be loaded.
    public init(
        _ configuration: Configuration, group: any EventLoopGroup,
        unixTime: @escaping @Sendable () -> UInt64 = { UInt64(Date().timeIntervalSince1970) }
    ) throws {
        do {
            key = try P256.Signing.PrivateKey(pemRepresentation: configuration.privateKeyPEM)
        } catch {
            throw PushConfigurationError("the APNs key is not a PEM P-256 private key (.p8): \(error)")
        }
        connection = try HTTP2Connection(
            endpoint: configuration.endpoint, trustRootsFile: configuration.trustRootsFile, group: group)
        self.configuration = configuration
        self.unixTime = unixTime
    }

    /// Pushes `payload` (a JSON object) to the device with the hex `deviceToken`.
    public func send(_ payload: Data, toDevice deviceToken: String) async -> PushOutcome {
        guard payload.count <= Self.maximumVoIPPayloadBytes else {
            return .notSent("the payload is \(payload.count) bytes, APNs takes at most \(Self.maximumVoIPPayloadBytes)")
        }
        guard !deviceToken.isEmpty, deviceToken.allSatisfy(\.isHexDigit) else {
            return .deviceGone(reason: "BadDeviceToken (not a hex device token)")
        }
        var outcome = await attempt(payload, deviceToken)
        if case .refused(403, "ExpiredProviderToken") = outcome {
            providerToken = nil
            outcome = await attempt(payload, deviceToken)
        }
        return outcome
    }

    public func close() async { await connection.close() }

    private func attempt(_ payload: Data, _ deviceToken: String) async -> PushOutcome {
        let now = unixTime()
        let token: String
        do { token = try currentProviderToken(now: now) } catch {
            return .notSent("cannot sign the provider token: \(error)")
        }
        let headers = [
            ("authorization", "bearer \(token)"), ("apns-push-type", "voip"),
            ("apns-topic", "\(configuration.bundleID).voip"), ("apns-priority", "10"),
            ("apns-expiration", "\(now + configuration.expirationSeconds)"), ("content-type", "application/json")
        ]
        let response: HTTP2Connection.Response
        do {
            response = try await connection.request(
                path: "\(configuration.endpoint.path)/3/device/\(deviceToken)", headers: headers, body: payload)
        } catch {
            return .notSent("\(error)")
        }
        if response.status == 200 { return .delivered(id: response.header("apns-id") ?? "") }
        let reason =
            ((try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any])?["reason"] as? String
            ?? "HTTP \(response.status)"
        switch (response.status, reason) {
        case (400, "BadDeviceToken"), (410, _): return .deviceGone(reason: reason)
        default: return .refused(status: response.status, reason: reason)
        }
    }

    private func currentProviderToken(now: UInt64) throws -> String {
        if let providerToken, now < providerToken.issuedAt + Self.providerTokenLifetime { return providerToken.token }
        let token = try JSONWebToken.sign(
            header: ["kid": configuration.keyID], claims: ["iss": configuration.teamID, "iat": now], with: .es256(key))
        providerToken = (token, now)
        return token
    }
}

/// A push sender's configuration cannot be used (a key that does not load, a service account file without a
/// field): the service refuses to start and says which.
public struct PushConfigurationError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
