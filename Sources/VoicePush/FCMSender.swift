import CryptoExtras
import Foundation
import NIOCore

/// FCM's HTTP v1 API with a service account: an OAuth2 access token from the JWT bearer grant (RFC 7523, RS256,
/// scope `firebase.messaging`) at the token endpoint, kept until shortly before it expires, then
/// `POST /v1/projects/<project>/messages:send` with a high-priority data message per device.
public actor FCMSender {
    /// The fields of a service account's JSON key file that the sender uses.
    public struct ServiceAccount: Codable, Sendable {
        public var projectID: String
        public var privateKeyID: String
        public var privateKey: String
        public var clientEmail: String
        public var tokenURI: String

        enum CodingKeys: String, CodingKey {
            case projectID = "project_id", privateKeyID = "private_key_id", privateKey = "private_key"
            case clientEmail = "client_email", tokenURI = "token_uri"
        }

        public init(projectID: String, privateKeyID: String, privateKey: String, clientEmail: String, tokenURI: String)
        {
            (self.projectID, self.privateKeyID, self.privateKey) = (projectID, privateKeyID, privateKey)
            (self.clientEmail, self.tokenURI) = (clientEmail, tokenURI)
        }
    }

    public struct Configuration: Sendable {
        public var serviceAccount: ServiceAccount
        /// `https://fcm.googleapis.com` for Google's service.
        public var endpoint: PushEndpoint
        /// Where the grant is exchanged for an access token: the service account's `token_uri` unless set.
        public var tokenEndpoint: PushEndpoint?
        public var trustRootsFile: String?
        /// Seconds FCM keeps an undelivered message (`android.ttl`).
        public var timeToLiveSeconds: UInt64

        public init(
            serviceAccount: ServiceAccount, endpoint: PushEndpoint, tokenEndpoint: PushEndpoint? = nil,
            trustRootsFile: String? = nil, timeToLiveSeconds: UInt64 = 30
        ) {
            (self.serviceAccount, self.endpoint, self.tokenEndpoint) = (serviceAccount, endpoint, tokenEndpoint)
            (self.trustRootsFile, self.timeToLiveSeconds) = (trustRootsFile, timeToLiveSeconds)
        }
    }

    /// FCM's limit for a message's data (keys and values).
    public static let maximumDataBytes = 4096
    /// The data key the push payload travels under.
    public static let payloadKey = "voiceengine"
    static let scope = "https://www.googleapis.com/auth/firebase.messaging"

    public let configuration: Configuration
    private let key: _RSA.Signing.PrivateKey
    private let tokenEndpoint: PushEndpoint
    private let messages: HTTP2Connection
    private let tokens: HTTP2Connection
    private let unixTime: @Sendable () -> UInt64
    private var accessToken: (token: String, expiresAt: UInt64)?

    public init(
        _ configuration: Configuration, group: any EventLoopGroup,
        unixTime: @escaping @Sendable () -> UInt64 = { UInt64(Date().timeIntervalSince1970) }
    ) throws {
        do {
            key = try _RSA.Signing.PrivateKey(pemRepresentation: configuration.serviceAccount.privateKey)
        } catch {
            throw PushConfigurationError("the service account's private_key is not a PEM RSA private key: \(error)")
        }
        tokenEndpoint = try configuration.tokenEndpoint ?? PushEndpoint(configuration.serviceAccount.tokenURI)
        messages = try HTTP2Connection(
            endpoint: configuration.endpoint, trustRootsFile: configuration.trustRootsFile, group: group)
        tokens =
            tokenEndpoint.authority == configuration.endpoint.authority
            ? messages
            : try HTTP2Connection(endpoint: tokenEndpoint, trustRootsFile: configuration.trustRootsFile, group: group)
        self.configuration = configuration
        self.unixTime = unixTime
    }

    /// Pushes `payload` (the push payload's JSON, carried as the string value of ``payloadKey``) to the device with
    /// the registration `token`.
    public func send(_ payload: Data, toDevice token: String) async -> PushOutcome {
        let value = String(decoding: payload, as: UTF8.self)
        let dataBytes = Self.payloadKey.utf8.count + value.utf8.count
        guard dataBytes <= Self.maximumDataBytes else {
            return .notSent("the data is \(dataBytes) bytes, FCM takes at most \(Self.maximumDataBytes)")
        }
        var outcome = await attempt(value, token)
        if case .refused(401, _) = outcome {
            accessToken = nil
            outcome = await attempt(value, token)
        }
        return outcome
    }

    public func close() async {
        await messages.close()
        await tokens.close()
    }

    private func attempt(_ value: String, _ token: String) async -> PushOutcome {
        let bearer: String
        switch await currentAccessToken() {
        case .success(let token): bearer = token
        case .failure(let outcome): return outcome
        }
        let message: [String: Any] = [
            "message": [
                "token": token, "data": [Self.payloadKey: value],
                "android": ["priority": "HIGH", "ttl": "\(configuration.timeToLiveSeconds)s"]
            ]
        ]
        let body = (try? JSONSerialization.data(withJSONObject: message, options: [.sortedKeys])) ?? Data()
        let response: HTTP2Connection.Response
        do {
            response = try await messages.request(
                path:
                    "\(configuration.endpoint.path)/v1/projects/\(configuration.serviceAccount.projectID)/messages:send",
                headers: [("authorization", "Bearer \(bearer)"), ("content-type", "application/json; charset=UTF-8")],
                body: body)
        } catch {
            return .notSent("\(error)")
        }
        let answer = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any]
        if response.status == 200 { return .delivered(id: answer?["name"] as? String ?? "") }
        let error = answer?["error"] as? [String: Any]
        let details = error?["details"] as? [[String: Any]] ?? []
        let code =
            details.lazy.compactMap { $0["errorCode"] as? String }.first ?? error?["status"] as? String
            ?? "HTTP \(response.status)"
        if code == "UNREGISTERED" { return .deviceGone(reason: code) }
        return .refused(status: response.status, reason: code)
    }

    private enum TokenResult {
        case success(String)
        case failure(PushOutcome)
    }

    /// The cached access token, or a new one from the JWT bearer grant.
    private func currentAccessToken() async -> TokenResult {
        let now = unixTime()
        if let accessToken, now + 60 < accessToken.expiresAt { return .success(accessToken.token) }
        let account = configuration.serviceAccount
        let audience = account.tokenURI
        let assertion: String
        do {
            assertion = try JSONWebToken.sign(
                header: ["kid": account.privateKeyID],
                claims: [
                    "iss": account.clientEmail, "scope": Self.scope, "aud": audience, "iat": now, "exp": now + 3600
                ],
                with: .rs256(key))
        } catch {
            return .failure(.notSent("cannot sign the OAuth2 grant: \(error)"))
        }
        let form = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"
        let response: HTTP2Connection.Response
        do {
            response = try await tokens.request(
                path: tokenEndpoint.path.isEmpty ? "/" : tokenEndpoint.path,
                headers: [("content-type", "application/x-www-form-urlencoded")], body: Data(form.utf8))
        } catch {
            return .failure(.notSent("the token endpoint: \(error)"))
        }
        let answer = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any]
        guard response.status == 200, let token = answer?["access_token"] as? String else {
            let reason = answer?["error"] as? String ?? "HTTP \(response.status)"
            return .failure(
                .refused(status: response.status, reason: "the token endpoint refused the grant: \(reason)"))
        }
        let lifetime = (answer?["expires_in"] as? NSNumber)?.uint64Value ?? 3600
        accessToken = (token, now + lifetime)
        return .success(token)
    }
}
