/// One Via value (RFC 3261 §20.42) with RFC 3581's `rport`: `SIP/2.0/UDP host:port;branch=…;received=…;rport=…`.
public struct SIPVia: Equatable, Hashable, Sendable, CustomStringConvertible {
    /// `UDP`, `TCP`, `TLS`, `SCTP`, … as received (upper case when VoiceSIP builds it).
    public var transport: String
    public var host: String
    public var port: Int?
    public var parameters: [SIPParameter]

    /// The prefix of a branch built by RFC 3261 rules; a branch without it comes from RFC 2543 (§17.2.3).
    public static let magicCookie = "z9hG4bK"

    public init(
        transport: String, host: String, port: Int? = nil, branch: String? = nil, parameters: [SIPParameter] = []
    ) {
        self.transport = transport
        self.host = host
        self.port = port
        self.parameters = parameters
        if let branch { self.parameters.set("branch", branch) }
    }

    public var branch: String? { parameters[parameter: "branch"] }
    /// `received=`: the address the request came from, added by the receiver (RFC 3261 §18.2.1).
    public var received: String? {
        get { parameters[parameter: "received"] }
        set {
            if let newValue { parameters.set("received", newValue) } else { parameters.remove(named: "received") }
        }
    }
    /// `rport` present (RFC 3581 §3: the client asks for the source port in the response).
    public var requestsRport: Bool { parameters.first(named: "rport") != nil }
    /// `rport=N` as filled in by the server; nil when absent or empty.
    public var rport: Int? { parameters[parameter: "rport"].flatMap { Int($0) } }

    /// Whether the branch carries the RFC 3261 magic cookie, so it identifies the transaction by itself.
    public var hasRFC3261Branch: Bool { branch?.hasPrefix(Self.magicCookie) ?? false }

    public var description: String {
        "SIP/2.0/\(transport) \(host)" + (port.map { ":\($0)" } ?? "") + parameters.serialized
    }

    /// All the values of one Via header field.
    static func parseList(_ value: String) throws -> [SIPVia] {
        try splitHeaderList(value, header: "Via").map(SIPVia.init(parsing:))
    }

    public init(parsing text: some StringProtocol) throws {
        var scanner = SIPScanner(text)
        scanner.skipWhitespace()
        guard let name = scanner.token(), name.caseInsensitiveEquals("SIP"), scanner.consumeSeparator(UInt8(ascii: "/"))
        else {
            throw SIPError(.malformedHeader, "Via: sent-protocol does not start with 'SIP/'")
        }
        guard let version = scanner.token(), scanner.consumeSeparator(UInt8(ascii: "/")) else {
            throw SIPError(.malformedHeader, "Via: sent-protocol is not 'SIP/version/transport'")
        }
        guard version == "2.0" else { throw SIPError(.unsupportedVersion, "Via: protocol version \(version), not 2.0") }
        guard let transport = scanner.token() else { throw SIPError(.malformedHeader, "Via: missing transport") }
        let beforeHost = scanner.index
        scanner.skipWhitespace()
        guard scanner.index > beforeHost else { throw SIPError(.malformedHeader, "Via: no whitespace before sent-by") }
        self.transport = transport
        self.host = try SIPURI.host(&scanner, what: "Via sent-by")
        if scanner.consumeSeparator(UInt8(ascii: ":")) {
            let digits = scanner.take(while: SIPCharacter.isDigit)
            guard !digits.isEmpty, digits.count <= 5, let port = Int(String(decoding: digits, as: UTF8.self)),
                port <= 65535
            else {
                throw SIPError(.valueOutOfRange, "Via: port is not a number from 0 to 65535")
            }
            self.port = port
        } else {
            self.port = nil
        }
        self.parameters = try scanner.headerParameters(in: "Via")
        scanner.skipWhitespace()
        guard scanner.atEnd else { throw SIPError(.malformedHeader, "Via: unexpected '\(scanner.rest)'") }
        if let branch = parameters.first(named: "branch"), branch.value == nil {
            throw SIPError(.malformedHeader, "Via: branch without a value")
        }
    }
}
