import VoiceCrypto

/// Where VoiceSIP gets a username and password when a server challenges a request (401/407). The user supplies
/// it; returning nil gives up and surfaces the challenge's status to the caller.
public protocol SIPCredentialsDelegate: Sendable {
    func credentials(forRealm realm: String) -> SIPCredentials?
}

public struct SIPCredentials: Equatable, Sendable {
    public var username: String
    public var password: String

    public init(username: String, password: String) {
        self.username = username
        self.password = password
    }
}

/// The same credentials for every realm: the common case of one account on one server.
public struct SIPStaticCredentials: SIPCredentialsDelegate {
    public let credentials: SIPCredentials
    public init(username: String, password: String) {
        credentials = SIPCredentials(username: username, password: password)
    }
    public func credentials(forRealm realm: String) -> SIPCredentials? { credentials }
}

/// A `Digest` challenge from WWW-Authenticate or Proxy-Authenticate (RFC 3261 §22.4, RFC 8760).
public struct SIPDigestChallenge: Equatable, Sendable {
    public enum Algorithm: String, Equatable, Sendable {
        case md5 = "MD5"
        case sha256 = "SHA-256"
    }

    public var realm: String
    public var nonce: String
    public var opaque: String?
    public var algorithm: Algorithm
    /// The qop values offered (`auth`, `auth-int`); empty for an RFC 2069-style challenge.
    public var qop: [String]
    /// The nonce expired but the credentials were right: retry with the new nonce (RFC 7616 §3.3).
    public var stale: Bool

    /// Parses a challenge value; a scheme other than Digest or an algorithm VoiceSIP does not implement is an error.
    public init(parsing value: String) throws {
        var scanner = SIPScanner(value)
        scanner.skipWhitespace()
        guard let scheme = scanner.token(), scheme.caseInsensitiveEquals("Digest") else {
            throw SIPError(.malformedHeader, "challenge is not a Digest challenge: '\(value.prefix(40))'")
        }
        var parameters: [String: String] = [:]
        repeat {
            scanner.skipWhitespace()
            guard let name = scanner.token(), scanner.consumeSeparator(UInt8(ascii: "=")) else {
                throw SIPError(.malformedHeader, "Digest challenge: expected name=value at '\(scanner.rest)'")
            }
            if scanner.peek == UInt8(ascii: "\"") {
                parameters[name.lowercased()] = try scanner.quotedString(in: "Digest challenge").value
            } else {
                parameters[name.lowercased()] = String(
                    decoding: scanner.take {
                        SIPCharacter.isToken($0) || $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "=")
                    }, as: UTF8.self)
            }
        } while scanner.consumeSeparator(UInt8(ascii: ","))
        guard let realm = parameters["realm"], let nonce = parameters["nonce"] else {
            throw SIPError(.malformedHeader, "Digest challenge without realm or nonce")
        }
        let algorithmName = parameters["algorithm"] ?? "MD5"
        guard let algorithm = Algorithm(rawValue: algorithmName.uppercased()) else {
            throw SIPError(.malformedHeader, "Digest algorithm '\(algorithmName)' is not MD5 or SHA-256")
        }
        self.realm = realm
        self.nonce = nonce
        self.opaque = parameters["opaque"]
        self.algorithm = algorithm
        self.qop =
            parameters["qop"].map { $0.split(separator: ",").map { String(String($0).trimmingWhitespace) } } ?? []
        self.stale = parameters["stale"]?.caseInsensitiveEquals("true") ?? false
    }
}

/// Computes Digest responses (RFC 2617/7616 as profiled for SIP by RFC 3261 §22.4 and RFC 8760), keeping the nonce
/// count per nonce so that a reused nonce gets nc=00000002, 00000003, … (RFC 7616 §3.4).
public struct SIPDigestAuthenticator: Sendable {
    private var nonceCounts: [String: UInt32] = [:]
    private let makeCnonce: @Sendable () -> String

    /// `cnonce`: where client nonces come from (random by default; a fixed one reproduces RFC examples).
    public init(cnonce: (@Sendable () -> String)? = nil) {
        self.makeCnonce = cnonce ?? { SIPRandomToken.make() + SIPRandomToken.make() }
    }

    /// The Authorization (or Proxy-Authorization) value answering `challenge` for `method` on `uri`. qop=auth is
    /// used when offered; auth-int alone is not supported (an error).
    public mutating func authorization(
        for challenge: SIPDigestChallenge, credentials: SIPCredentials, method: SIPMethod, uri: String
    ) throws -> String {
        let hash: ([UInt8]) -> String = { bytes in digestHex(bytes, algorithm: challenge.algorithm) }
        let ha1 = hash(Array("\(credentials.username):\(challenge.realm):\(credentials.password)".utf8))
        let ha2 = hash(Array("\(method.rawValue):\(uri)".utf8))
        var fields = [
            "username=\(quoted(credentials.username))", "realm=\(quoted(challenge.realm))",
            "nonce=\(quoted(challenge.nonce))", "uri=\(quoted(uri))"
        ]
        let response: String
        if challenge.qop.isEmpty {
            response = hash(Array("\(ha1):\(challenge.nonce):\(ha2)".utf8))
        } else {
            guard challenge.qop.contains(where: { $0.caseInsensitiveEquals("auth") }) else {
                throw SIPError(
                    .malformedHeader,
                    "Digest challenge offers only qop=\(challenge.qop.joined(separator: ",")); auth-int is not supported"
                )
            }
            let count = (nonceCounts[challenge.nonce] ?? 0) &+ 1
            nonceCounts[challenge.nonce] = count
            let nc = String(count, radix: 16).leftPadded(to: 8)
            let cnonce = makeCnonce()
            response = hash(Array("\(ha1):\(challenge.nonce):\(nc):\(cnonce):auth:\(ha2)".utf8))
            fields += ["qop=auth", "nc=\(nc)", "cnonce=\(quoted(cnonce))"]
        }
        fields.insert("response=\(quoted(response))", at: 4)
        fields.append("algorithm=\(challenge.algorithm.rawValue)")
        if let opaque = challenge.opaque { fields.append("opaque=\(quoted(opaque))") }
        return "Digest " + fields.joined(separator: ", ")
    }
}

/// Lower-case hex of MD5 or SHA-256 of `bytes`.
func digestHex(_ bytes: [UInt8], algorithm: SIPDigestChallenge.Algorithm) -> String {
    (algorithm == .md5 ? HashAlgorithm.md5 : .sha256).hexDigest(bytes)
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
