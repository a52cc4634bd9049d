/// Character classes of RFC 3261 §25.1, as byte tests.
enum SIPCharacter {
    static func isAlphanumeric(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A)
    }
    static func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }
    static func isHexDigit(_ c: UInt8) -> Bool {
        isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)
    }
    static func isWhitespace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 }

    /// `token` characters: alphanum / "-" / "." / "!" / "%" / "*" / "_" / "+" / "`" / "'" / "~".
    static func isToken(_ c: UInt8) -> Bool {
        isAlphanumeric(c) || tokenMarks.contains(c)
    }
    private static let tokenMarks: Set<UInt8> = Set("-.!%*_+`'~".utf8)

    /// `word` characters (Call-ID): token characters and `( ) < > : \ " / [ ] ? { }`.
    static func isWord(_ c: UInt8) -> Bool { isToken(c) || wordExtras.contains(c) }
    private static let wordExtras: Set<UInt8> = Set("()<>:\\\"/[]?{}".utf8)

    /// `unreserved` = alphanum / mark.
    static func isUnreserved(_ c: UInt8) -> Bool { isAlphanumeric(c) || marks.contains(c) }
    private static let marks: Set<UInt8> = Set("-_.!~*'()".utf8)

    /// What may appear unescaped in a SIP URI's user part.
    static func isUser(_ c: UInt8) -> Bool { isUnreserved(c) || userUnreserved.contains(c) }
    private static let userUnreserved: Set<UInt8> = Set("&=+$,;?/".utf8)

    /// What may appear unescaped in a SIP URI's password.
    static func isPassword(_ c: UInt8) -> Bool { isUnreserved(c) || passwordExtras.contains(c) }
    private static let passwordExtras: Set<UInt8> = Set("&=+$,".utf8)

    /// `paramchar` without escapes: param-unreserved / unreserved.
    static func isParameter(_ c: UInt8) -> Bool { isUnreserved(c) || parameterUnreserved.contains(c) }
    private static let parameterUnreserved: Set<UInt8> = Set("[]/:&+$".utf8)

    /// `hname`/`hvalue` characters without escapes: hnv-unreserved / unreserved.
    static func isURIHeader(_ c: UInt8) -> Bool { isUnreserved(c) || headerUnreserved.contains(c) }
    private static let headerUnreserved: Set<UInt8> = Set("[]/?:+$".utf8)

    /// `uric` of RFC 2396 without escapes: reserved / unreserved (for URIs of schemes VoiceSIP does not know).
    static func isURIC(_ c: UInt8) -> Bool { isUnreserved(c) || reserved.contains(c) }
    private static let reserved: Set<UInt8> = Set(";/?:@&=+$,".utf8)
}

/// A cursor over the bytes of one header value (already unfolded) or one URI.
///
/// The grammar's separators (`SEMI`, `EQUAL`, `SLASH`, `COMMA`, …) allow whitespace on both sides; callers skip it
/// explicitly where the grammar allows it, so that places where it is forbidden (inside `<…>`, inside a URI) reject it.
struct SIPScanner {
    let bytes: [UInt8]
    var index: Int

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
        self.index = 0
    }

    init(_ text: some StringProtocol) { self.init(Array(text.utf8)) }

    var atEnd: Bool { index >= bytes.count }
    var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

    mutating func skipWhitespace() {
        while index < bytes.count, SIPCharacter.isWhitespace(bytes[index]) { index += 1 }
    }

    /// Consumes `byte` if it is next.
    mutating func consume(_ byte: UInt8) -> Bool {
        guard peek == byte else { return false }
        index += 1
        return true
    }

    /// Consumes `byte` with optional whitespace on both sides (`SEMI`, `EQUAL`, `SLASH`, `COLON`, `COMMA`).
    mutating func consumeSeparator(_ byte: UInt8) -> Bool {
        let start = index
        skipWhitespace()
        guard consume(byte) else {
            index = start
            return false
        }
        skipWhitespace()
        return true
    }

    /// The longest run of bytes satisfying `predicate` (possibly empty).
    mutating func take(while predicate: (UInt8) -> Bool) -> ArraySlice<UInt8> {
        let start = index
        while index < bytes.count, predicate(bytes[index]) { index += 1 }
        return bytes[start..<index]
    }

    /// Like `take(while:)`, with `%HH` escapes accepted; a `%` not followed by two hex digits is an error.
    mutating func takeEscaped(while predicate: (UInt8) -> Bool, what: String) throws -> ArraySlice<UInt8> {
        let start = index
        while index < bytes.count {
            let c = bytes[index]
            if c == UInt8(ascii: "%") {
                guard index + 2 < bytes.count,
                    SIPCharacter.isHexDigit(bytes[index + 1]), SIPCharacter.isHexDigit(bytes[index + 2])
                else { throw SIPError(.malformedURI, "\(what): '%' not followed by two hex digits") }
                index += 3
            } else if predicate(c) {
                index += 1
            } else {
                break
            }
        }
        return bytes[start..<index]
    }

    mutating func token() -> String? {
        let run = take(while: SIPCharacter.isToken)
        return run.isEmpty ? nil : String(decoding: run, as: UTF8.self)
    }

    /// A `quoted-string` starting at the opening quote: its text with the quotes (as on the wire) and without
    /// (quoted-pairs resolved).
    mutating func quotedString(in what: String) throws -> (raw: String, value: String) {
        let start = index
        guard consume(UInt8(ascii: "\"")) else { throw SIPError(.malformedHeader, "\(what): expected '\"'") }
        var value: [UInt8] = []
        while true {
            guard let c = peek else {
                throw SIPError(.malformedHeader, "\(what): unterminated quoted string")
            }
            index += 1
            switch c {
            case UInt8(ascii: "\""):
                return (String(decoding: bytes[start..<index], as: UTF8.self), String(decoding: value, as: UTF8.self))
            case UInt8(ascii: "\\"):
                guard let escaped = peek, escaped != 0x0A, escaped != 0x0D, escaped < 0x80 else {
                    throw SIPError(.malformedHeader, "\(what): bad quoted-pair in quoted string")
                }
                index += 1
                value.append(escaped)
            case 0x0D, 0x0A:
                throw SIPError(.malformedHeader, "\(what): line break in quoted string")
            default:
                value.append(c)
            }
        }
    }

    var rest: String { String(decoding: bytes[min(index, bytes.count)...], as: UTF8.self) }
}

/// A `;name[=value]` parameter of a URI or a header field. The value is kept as on the wire (a quoted string keeps
/// its quotes) so that a parsed message serializes back to what was received.
public struct SIPParameter: Equatable, Hashable, Sendable {
    public var name: String
    public var value: String?

    public init(_ name: String, _ value: String? = nil) {
        self.name = name
        self.value = value
    }
}

extension Array where Element == SIPParameter {
    /// The parameter named `name` (case-insensitively), if present.
    public func first(named name: String) -> SIPParameter? {
        first { $0.name.caseInsensitiveEquals(name) }
    }

    /// The value of `name`; nil when absent or when present without a value.
    public subscript(parameter name: String) -> String? { first(named: name)?.value }

    /// Sets (or with nil, adds without a value) `name`, replacing an existing parameter of that name.
    public mutating func set(_ name: String, _ value: String?) {
        if let i = firstIndex(where: { $0.name.caseInsensitiveEquals(name) }) {
            self[i].value = value
        } else {
            append(SIPParameter(name, value))
        }
    }

    public mutating func remove(named name: String) {
        removeAll { $0.name.caseInsensitiveEquals(name) }
    }

    /// `;name=value;flag` as serialized.
    var serialized: String {
        var text = ""
        for parameter in self {
            text += ";" + parameter.name
            if let value = parameter.value { text += "=" + value }
        }
        return text
    }
}

extension SIPScanner {
    /// `*( SEMI generic-param )` of header fields: `generic-param = token [ EQUAL gen-value ]`,
    /// `gen-value = token / host / quoted-string`.
    mutating func headerParameters(in what: String) throws -> [SIPParameter] {
        var parameters: [SIPParameter] = []
        while consumeSeparator(UInt8(ascii: ";")) {
            guard let name = token() else {
                throw SIPError(.malformedHeader, "\(what): empty or invalid parameter name after ';'")
            }
            var value: String?
            if consumeSeparator(UInt8(ascii: "=")) {
                if peek == UInt8(ascii: "\"") {
                    value = try quotedString(in: what).raw
                } else {
                    let run = take {
                        SIPCharacter.isToken($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: "[")
                            || $0 == UInt8(ascii: "]")
                    }
                    guard !run.isEmpty else {
                        throw SIPError(.malformedHeader, "\(what): parameter '\(name)' has '=' but no value")
                    }
                    value = String(decoding: run, as: UTF8.self)
                }
            }
            parameters.append(SIPParameter(name, value))
        }
        return parameters
    }
}

extension StringProtocol {
    /// ASCII case-insensitive comparison (SIP's tokens, header names and parameter names).
    func caseInsensitiveEquals(_ other: some StringProtocol) -> Bool {
        let a = utf8, b = other.utf8
        guard a.count == b.count else { return false }
        for (x, y) in zip(a, b) where x != y {
            let lx = (x >= 0x41 && x <= 0x5A) ? x | 0x20 : x
            let ly = (y >= 0x41 && y <= 0x5A) ? y | 0x20 : y
            if lx != ly { return false }
        }
        return true
    }
}

/// Splits a header value at commas that separate values (`#element`), not at commas inside quoted strings or
/// `<…>`. An empty element is an error: `Via: a,,b` has nothing between the commas.
func splitHeaderList(_ value: String, header: String) throws -> [String] {
    var elements: [String] = []
    var current: [UInt8] = []
    var inQuotes = false, inAngle = false, escaped = false
    for c in value.utf8 {
        if inQuotes {
            current.append(c)
            if escaped {
                escaped = false
            } else if c == UInt8(ascii: "\\") {
                escaped = true
            } else if c == UInt8(ascii: "\"") {
                inQuotes = false
            }
            continue
        }
        switch c {
        case UInt8(ascii: "\""): inQuotes = true
        case UInt8(ascii: "<"): inAngle = true
        case UInt8(ascii: ">"): inAngle = false
        case UInt8(ascii: ","):
            if !inAngle {
                try appendElement(&elements, current, header: header)
                current.removeAll(keepingCapacity: true)
                continue
            }
        default: break
        }
        current.append(c)
    }
    try appendElement(&elements, current, header: header)
    return elements
}

private func appendElement(_ elements: inout [String], _ bytes: [UInt8], header: String) throws {
    var lower = 0, upper = bytes.count
    while lower < upper, SIPCharacter.isWhitespace(bytes[lower]) { lower += 1 }
    while upper > lower, SIPCharacter.isWhitespace(bytes[upper - 1]) { upper -= 1 }
    guard lower < upper else { throw SIPError(.malformedHeader, "\(header): empty element in comma-separated list") }
    elements.append(String(decoding: bytes[lower..<upper], as: UTF8.self))
}

/// `1*DIGIT` as a number, leading zeros allowed ("0068"); nil when not all digits or above `limit`, however many
/// digits it has (no overflow: RFC 4475 §3.1.2.4 sends 10^100).
func decimal(_ text: some StringProtocol, limit: UInt64) -> UInt64? {
    guard !text.isEmpty, text.utf8.allSatisfy(SIPCharacter.isDigit) else { return nil }
    var value: UInt64 = 0
    for digit in text.utf8 {
        value = value * 10 + UInt64(digit - 0x30)
        if value > limit { return nil }
    }
    return value
}
