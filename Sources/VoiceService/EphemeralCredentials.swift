import Foundation
import VoiceClientWire
import VoiceCrypto

/// Time-limited SIP credentials in the TURN REST API form (draft-uberti-behave-turn-rest, as coturn's
/// `use-auth-secret`), which Kamailio's `auth_ephemeral` checks with the same shared secret: username
/// `<expiry unix time>:<user ID>`, password `Base64(HMAC-SHA1(secret, username))`. Kamailio needs no database of
/// users and the application secret stays on the app's server; only this service and Kamailio know the shared
/// secret.
public struct EphemeralCredentialIssuer: Sendable {
    public var sharedSecret: String
    /// How long issued credentials stay valid.
    public var lifetime: UInt64
    /// The SIP domain users register in.
    public var domain: String
    /// The STUN/TURN server URLs (`turn:host:port`) handed out with every grant; coturn checks their credentials
    /// with the same shared secret (`use-auth-secret`, `static-auth-secret`). Empty: grants carry none.
    public var iceServerURLs: [String]

    public init(sharedSecret: String, lifetime: UInt64 = 86_400, domain: String, iceServerURLs: [String] = []) {
        self.sharedSecret = sharedSecret
        self.lifetime = lifetime
        self.domain = domain
        self.iceServerURLs = iceServerURLs
    }

    public func issue(userID: String, now: UInt64) -> RegistrationGrant {
        let expires = now + lifetime
        let username = "\(expires):\(userID)"
        let password = Self.password(username: username, secret: sharedSecret)
        // The TURN REST credentials are the SIP ones: same username form, same HMAC, same secret and expiry.
        let iceServers =
            iceServerURLs.isEmpty
            ? nil : [ICEServer(urls: iceServerURLs, username: username, credential: password)]
        return RegistrationGrant(
            username: username, password: password, expires: expires, domain: domain, iceServers: iceServers)
    }

    public static func password(username: String, secret: String) -> String {
        Data(HashAlgorithm.sha1.hmac(key: Array(secret.utf8), message: Array(username.utf8))).base64EncodedString()
    }

    /// Whether `username`/`password` are credentials this issuer made and still valid at `now` (what Kamailio's
    /// auth_ephemeral checks, for the service's own endpoints).
    public func accepts(username: String, password: String, now: UInt64) -> Bool {
        guard let expiry = username.split(separator: ":", maxSplits: 1).first.flatMap({ UInt64($0) }), expiry > now
        else { return false }
        return RegistrationVerifier.constantTimeEqual(
            Array(Self.password(username: username, secret: sharedSecret).utf8), Array(password.utf8))
    }
}
