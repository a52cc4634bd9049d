/// A URI of a request line or an address: SIP and SIPS (RFC 3261 §19.1), tel (RFC 3966), or any other scheme kept
/// as opaque text (RFC 3261 allows `absoluteURI` wherever a URI goes; RFC 4475 §3.3.2 sends one).
///
/// Components are kept escaped, as on the wire, so that a parsed URI serializes to the same text.
public struct SIPURI: Equatable, Hashable, Sendable, CustomStringConvertible {
    public enum Scheme: Equatable, Hashable, Sendable {
        case sip, sips, tel
        case other(String)

        var text: String {
            switch self {
            case .sip: "sip"
            case .sips: "sips"
            case .tel: "tel"
            case .other(let name): name
            }
        }
    }

    public var scheme: Scheme
    /// The user part of a SIP/SIPS URI (escaped); nil without `user@`.
    public var user: String?
    public var password: String?
    /// The host of a SIP/SIPS URI (an IPv6 address keeps its brackets), the number of a tel URI, or everything after
    /// the colon of another scheme.
    public var host: String
    public var port: Int?
    /// `;name=value` URI parameters (`transport`, `lr`, `maddr`, `user`, … or, for tel, `phone-context`, …).
    public var parameters: [SIPParameter]
    /// `?name=value&…` headers of a SIP/SIPS URI (escaped).
    public var headers: [SIPParameter]

    public init(
        scheme: Scheme = .sip, user: String? = nil, password: String? = nil, host: String, port: Int? = nil,
        parameters: [SIPParameter] = [], headers: [SIPParameter] = []
    ) {
        self.scheme = scheme
        self.user = user
        self.password = password
        self.host = host
        self.port = port
        self.parameters = parameters
        self.headers = headers
    }

    /// Parses a complete URI; `text` must hold nothing else (no surrounding whitespace or angle brackets).
    public init(parsing text: some StringProtocol) throws {
        var scanner = SIPScanner(text)
        self = try SIPURI.parse(&scanner, stopAtSemicolon: false)
        guard scanner.atEnd else {
            throw SIPError(.malformedURI, "unexpected '\(scanner.rest)' after URI '\(text)'")
        }
    }

    public var description: String {
        var text = scheme.text + ":"
        if let user {
            text += user
            if let password { text += ":" + password }
            text += "@"
        }
        text += host
        if let port { text += ":\(port)" }
        text += parameters.serialized
        if !headers.isEmpty {
            text += "?" + headers.map { $0.name + "=" + ($0.value ?? "") }.joined(separator: "&")
        }
        return text
    }

    /// `transport=` in lower case, if present.
    public var transportParameter: String? { parameters[parameter: "transport"]?.lowercased() }

    /// Parses a URI at the scanner. `stopAtSemicolon`: the URI is an `addr-spec` outside `<…>`, where `;` starts
    /// the header's own parameters (RFC 3261 §20.10), so the URI has no parameters of its own.
    static func parse(_ scanner: inout SIPScanner, stopAtSemicolon: Bool) throws -> SIPURI {
        let schemeRun = scanner.take {
            SIPCharacter.isAlphanumeric($0) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-")
                || $0 == UInt8(ascii: ".")
        }
        guard let first = schemeRun.first, first >= 0x41, SIPCharacter.isAlphanumeric(first),
            !SIPCharacter.isDigit(first),
            scanner.consume(UInt8(ascii: ":"))
        else {
            throw SIPError(.malformedURI, "URI does not start with 'scheme:' at '\(scanner.rest)'")
        }
        let schemeName = String(decoding: schemeRun, as: UTF8.self)
        if schemeName.caseInsensitiveEquals("sip") || schemeName.caseInsensitiveEquals("sips") {
            return try parseSIP(
                &scanner, scheme: schemeName.count == 3 ? .sip : .sips, stopAtSemicolon: stopAtSemicolon)
        }
        if schemeName.caseInsensitiveEquals("tel") {
            let number = try scanner.takeEscaped(
                while: { SIPCharacter.isUnreserved($0) || "+#*/:&=$,".utf8.contains($0) }, what: "tel URI")
            guard !number.isEmpty else { throw SIPError(.malformedURI, "tel URI without a number") }
            let parameters = stopAtSemicolon ? [] : try uriParameters(&scanner, what: "tel URI")
            return SIPURI(scheme: .tel, host: String(decoding: number, as: UTF8.self), parameters: parameters)
        }
        let opaque = try scanner.takeEscaped(
            while: {
                SIPCharacter.isURIC($0) && !(stopAtSemicolon && ($0 == UInt8(ascii: ";") || $0 == UInt8(ascii: ",")))
            },
            what: "\(schemeName) URI")
        guard !opaque.isEmpty else { throw SIPError(.malformedURI, "'\(schemeName):' URI is empty") }
        return SIPURI(scheme: .other(schemeName), host: String(decoding: opaque, as: UTF8.self))
    }

    private static func parseSIP(_ scanner: inout SIPScanner, scheme: Scheme, stopAtSemicolon: Bool) throws -> SIPURI {
        let what = scheme == .sip ? "SIP URI" : "SIPS URI"
        var uri = SIPURI(scheme: scheme, host: "")
        // The user part ends at the first '@': neither user, password, host, parameters nor headers may hold one.
        let rest = scanner.bytes[scanner.index...]
        let hostEnd = rest.firstIndex { $0 == UInt8(ascii: ">") || SIPCharacter.isWhitespace($0) } ?? rest.endIndex
        if rest[..<hostEnd].contains(UInt8(ascii: "@")) {
            let user = try scanner.takeEscaped(while: SIPCharacter.isUser, what: "\(what) user")
            if scanner.consume(UInt8(ascii: ":")) {
                uri.password = String(
                    decoding: try scanner.takeEscaped(while: SIPCharacter.isPassword, what: "\(what) password"),
                    as: UTF8.self)
            }
            guard scanner.consume(UInt8(ascii: "@")) else {
                throw SIPError(.malformedURI, "\(what): invalid character in user part before '\(scanner.rest)'")
            }
            guard !user.isEmpty else { throw SIPError(.malformedURI, "\(what): empty user part before '@'") }
            uri.user = String(decoding: user, as: UTF8.self)
        }
        uri.host = try host(&scanner, what: what)
        if scanner.consume(UInt8(ascii: ":")) {
            let digits = scanner.take(while: SIPCharacter.isDigit)
            guard !digits.isEmpty, digits.count <= 5, let port = Int(String(decoding: digits, as: UTF8.self)),
                port <= 65535
            else {
                throw SIPError(.valueOutOfRange, "\(what): port is not a number from 0 to 65535")
            }
            uri.port = port
        }
        if stopAtSemicolon { return uri }
        uri.parameters = try uriParameters(&scanner, what: what)
        if scanner.consume(UInt8(ascii: "?")) {
            repeat {
                let name = try scanner.takeEscaped(while: SIPCharacter.isURIHeader, what: "\(what) header name")
                guard !name.isEmpty, scanner.consume(UInt8(ascii: "=")) else {
                    throw SIPError(.malformedURI, "\(what): header is not 'name=value' at '\(scanner.rest)'")
                }
                let value = try scanner.takeEscaped(while: SIPCharacter.isURIHeader, what: "\(what) header value")
                uri.headers.append(
                    SIPParameter(String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
            } while scanner.consume(UInt8(ascii: "&"))
        }
        return uri
    }

    /// `hostname / IPv4address / IPv6reference`.
    static func host(_ scanner: inout SIPScanner, what: String) throws -> String {
        if scanner.peek == UInt8(ascii: "[") {
            let start = scanner.index
            scanner.index += 1
            let inside = scanner.take {
                SIPCharacter.isHexDigit($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".")
            }
            guard scanner.consume(UInt8(ascii: "]")), inside.contains(UInt8(ascii: ":")) else {
                throw SIPError(.malformedURI, "\(what): bad IPv6 reference")
            }
            return String(decoding: scanner.bytes[start..<scanner.index], as: UTF8.self)
        }
        let name = scanner.take {
            SIPCharacter.isAlphanumeric($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".")
        }
        guard let first = name.first, SIPCharacter.isAlphanumeric(first) else {
            throw SIPError(.malformedURI, "\(what): missing or invalid host at '\(scanner.rest)'")
        }
        return String(decoding: name, as: UTF8.self)
    }

    /// `*( ";" pname [ "=" pvalue ] )` inside a URI: no whitespace allowed (RFC 4475 §3.1.2.8).
    static func uriParameters(_ scanner: inout SIPScanner, what: String) throws -> [SIPParameter] {
        var parameters: [SIPParameter] = []
        while scanner.consume(UInt8(ascii: ";")) {
            let name = try scanner.takeEscaped(while: SIPCharacter.isParameter, what: "\(what) parameter")
            guard !name.isEmpty else { throw SIPError(.malformedURI, "\(what): empty parameter name after ';'") }
            var value: String?
            if scanner.consume(UInt8(ascii: "=")) {
                let run = try scanner.takeEscaped(while: SIPCharacter.isParameter, what: "\(what) parameter")
                guard !run.isEmpty else {
                    throw SIPError(
                        .malformedURI,
                        "\(what): parameter '\(String(decoding: name, as: UTF8.self))' has '=' but no value")
                }
                value = String(decoding: run, as: UTF8.self)
            }
            parameters.append(SIPParameter(String(decoding: name, as: UTF8.self), value))
        }
        return parameters
    }
}
