/// A `name-addr` or `addr-spec` with the header's parameters: From, To, Contact, Route, Record-Route, Reply-To, …
/// (RFC 3261 §20.10, §25.1).
public struct SIPAddress: Equatable, Hashable, Sendable, CustomStringConvertible {
    /// The display name without quotes or escapes (nil when there is none).
    public var displayName: String?
    public var uri: SIPURI
    /// The header's parameters after the URI: `tag`, `expires`, `q`, …
    public var parameters: [SIPParameter]

    public init(displayName: String? = nil, uri: SIPURI, parameters: [SIPParameter] = []) {
        self.displayName = displayName
        self.uri = uri
        self.parameters = parameters
    }

    /// Parses one address (one element of a comma-separated list).
    public init(parsing text: some StringProtocol, header: String = "address") throws {
        var scanner = SIPScanner(text)
        scanner.skipWhitespace()
        self = try SIPAddress.parse(&scanner, header: header)
        scanner.skipWhitespace()
        guard scanner.atEnd else {
            throw SIPError(.malformedHeader, "\(header): unexpected '\(scanner.rest)' after the address")
        }
    }

    public var tag: String? {
        get { parameters[parameter: "tag"] }
        set {
            if let newValue { parameters.set("tag", newValue) } else { parameters.remove(named: "tag") }
        }
    }

    /// Always the `name-addr` form: it is the form in which any URI (with parameters or headers) is unambiguous.
    public var description: String {
        var text = ""
        if let displayName { text += quoted(displayName) + " " }
        return text + "<\(uri)>" + parameters.serialized
    }

    static func parse(_ scanner: inout SIPScanner, header: String) throws -> SIPAddress {
        var displayName: String?
        if scanner.peek == UInt8(ascii: "\"") {
            displayName = try scanner.quotedString(in: header).value
            scanner.skipWhitespace()
            guard scanner.peek == UInt8(ascii: "<") else {
                throw SIPError(.malformedHeader, "\(header): quoted display name not followed by '<'")
            }
        } else if scanner.peek != UInt8(ascii: "<"),
            let angle = scanner.bytes[scanner.index...].firstIndex(where: {
                $0 == UInt8(ascii: "<") || $0 == UInt8(ascii: ":")
            }),
            scanner.bytes[angle] == UInt8(ascii: "<")
        {
            // `*(token LWS) "<"`: an unquoted display name is made of tokens only (RFC 4475 §3.1.2.15).
            let words = scanner.bytes[scanner.index..<angle]
            guard words.allSatisfy({ SIPCharacter.isToken($0) || SIPCharacter.isWhitespace($0) }) else {
                throw SIPError(
                    .malformedHeader, "\(header): display name has characters outside a token and is not quoted")
            }
            let trimmed = String(decoding: words, as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\t" })
            displayName = trimmed.joined(separator: " ")
            scanner.index = angle
        }
        if scanner.consume(UInt8(ascii: "<")) {
            if let c = scanner.peek, SIPCharacter.isWhitespace(c) {
                throw SIPError(.malformedHeader, "\(header): whitespace after '<' (RFC 4475 §3.1.2.14)")
            }
            let uri = try SIPURI.parse(&scanner, stopAtSemicolon: false)
            guard scanner.consume(UInt8(ascii: ">")) else {
                throw SIPError(.malformedHeader, "\(header): URI not closed by '>' at '\(scanner.rest)'")
            }
            let parameters = try scanner.headerParameters(in: header)
            return SIPAddress(displayName: displayName, uri: uri, parameters: parameters)
        }
        // addr-spec: the URI ends where the header's parameters begin, and may not carry '?' headers or ','.
        let uri = try SIPURI.parse(&scanner, stopAtSemicolon: true)
        if scanner.peek == UInt8(ascii: "?") || scanner.peek == UInt8(ascii: ",") {
            throw SIPError(
                .malformedHeader, "\(header): a URI with '?' or ',' must be enclosed in '<>' (RFC 3261 §20.10)")
        }
        let parameters = try scanner.headerParameters(in: header)
        return SIPAddress(uri: uri, parameters: parameters)
    }
}

/// A quoted-string for `text`: quotes around, `"` and `\` escaped.
func quoted(_ text: String) -> String {
    var result = "\""
    for c in text.unicodeScalars {
        if c == "\"" || c == "\\" { result.unicodeScalars.append("\\") }
        result.unicodeScalars.append(c)
    }
    return result + "\""
}

/// One Contact value: an address, or `*` (RFC 3261 §10.2.2, unregister all bindings).
public enum SIPContact: Equatable, Hashable, Sendable, CustomStringConvertible {
    case address(SIPAddress)
    case wildcard

    public var description: String {
        switch self {
        case .address(let address): address.description
        case .wildcard: "*"
        }
    }

    /// All the values of a Contact header field.
    static func parseList(_ value: String) throws -> [SIPContact] {
        if value.trimmingWhitespace == "*" { return [.wildcard] }
        return try splitHeaderList(value, header: "Contact").map {
            .address(try SIPAddress(parsing: $0, header: "Contact"))
        }
    }
}

extension String {
    var trimmingWhitespace: Substring {
        var s = self[...]
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return s
    }
}
