import Crypto
import CryptoExtras
import Foundation

/// Compact JSON Web Tokens (RFC 7519) signed with the two algorithms the push services take: ES256 for APNs
/// provider tokens, RS256 for the OAuth2 grant of a Google service account.
public enum JSONWebToken {
    /// A key that signs tokens.
    public enum SigningKey: Sendable {
        /// An APNs `.p8` key (P-256, PKCS#8 PEM): ES256, the signature as the raw `r || s` pair (RFC 7518 §3.4).
        case es256(P256.Signing.PrivateKey)
        /// A service account's RSA key (PKCS#8 PEM): RS256, RSASSA-PKCS1-v1_5 with SHA-256.
        case rs256(_RSA.Signing.PrivateKey)

        var algorithm: String {
            switch self {
            case .es256: "ES256"
            case .rs256: "RS256"
            }
        }
    }

    /// `header.claims.signature`, each part Base64url without padding. `header` gets `alg` (and `typ`) added.
    public static func sign(header: [String: String], claims: [String: Any], with key: SigningKey) throws
        -> String
    {
        var header = header
        header["alg"] = key.algorithm
        header["typ"] = "JWT"
        let headerJSON = try JSONSerialization.data(withJSONObject: header, options: [.sortedKeys])
        let claimsJSON = try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])
        let signingInput = base64URL(headerJSON) + "." + base64URL(claimsJSON)
        let signature: Data
        switch key {
        case .es256(let key):
            signature = try key.signature(for: Data(signingInput.utf8)).rawRepresentation
        case .rs256(let key):
            signature = try key.signature(for: Data(signingInput.utf8), padding: .insecurePKCS1v1_5).rawRepresentation
        }
        return signingInput + "." + base64URL(signature)
    }

    /// Base64url without padding (RFC 7515 §2).
    public static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The bytes of a Base64url text (padding optional); nil when it is not one.
    public static func decodeBase64URL(_ text: some StringProtocol) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}
