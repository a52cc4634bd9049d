/// `Content-Type: type/subtype;parameters` (RFC 3261 §20.15).
public struct SIPMediaType: Equatable, Sendable, CustomStringConvertible {
    public var type: String
    public var subtype: String
    public var parameters: [SIPParameter]

    public init(type: String, subtype: String, parameters: [SIPParameter] = []) {
        self.type = type
        self.subtype = subtype
        self.parameters = parameters
    }

    public static let sdp = SIPMediaType(type: "application", subtype: "sdp")
    public static let textPlain = SIPMediaType(type: "text", subtype: "plain")

    public init(parsing text: some StringProtocol) throws {
        var scanner = SIPScanner(text)
        scanner.skipWhitespace()
        guard let type = scanner.token(), scanner.consumeSeparator(UInt8(ascii: "/")), let subtype = scanner.token()
        else {
            throw SIPError(.malformedHeader, "Content-Type '\(text)' is not type/subtype")
        }
        self.type = type
        self.subtype = subtype
        self.parameters = try scanner.headerParameters(in: "Content-Type")
        scanner.skipWhitespace()
        guard scanner.atEnd else { throw SIPError(.malformedHeader, "Content-Type: unexpected '\(scanner.rest)'") }
    }

    /// Same type and subtype (case-insensitively), parameters ignored.
    public func matches(_ other: SIPMediaType) -> Bool {
        type.caseInsensitiveEquals(other.type) && subtype.caseInsensitiveEquals(other.subtype)
    }

    public var isMultipart: Bool { type.caseInsensitiveEquals("multipart") }

    /// A parameter's value with the quotes of a quoted string removed (`boundary="abc"` gives `abc`).
    public func parameterValue(_ name: String) -> String? {
        guard let value = parameters[parameter: name] else { return nil }
        if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 {
            var scanner = SIPScanner(value)
            return (try? scanner.quotedString(in: "Content-Type"))?.value
        }
        return value
    }

    public var description: String { "\(type)/\(subtype)" + parameters.serialized }
}

/// One part of a multipart body: its own header fields (Content-Type, …) and bytes.
public struct SIPBodyPart: Equatable, Sendable {
    public var headers: SIPHeaders
    public var body: [UInt8]

    public init(headers: SIPHeaders, body: [UInt8]) {
        self.headers = headers
        self.body = body
    }

    public var contentType: SIPMediaType? { headers.first("Content-Type").flatMap { try? SIPMediaType(parsing: $0) } }
}

/// A `multipart/*` body (RFC 2046 §5.1): parts between `--boundary` delimiters. SIP carries SDP in one when a
/// request also carries, say, an ISUP or a signed part (RFC 3261 §7.4, RFC 5621).
public struct SIPMultipartBody: Equatable, Sendable {
    public var boundary: String
    public var parts: [SIPBodyPart]

    public init(boundary: String, parts: [SIPBodyPart]) {
        self.boundary = boundary
        self.parts = parts
    }

    public init(parsing body: [UInt8], boundary: String) throws {
        guard !boundary.isEmpty, boundary.utf8.count <= 70 else {
            throw SIPError(.malformedMultipart, "boundary must have 1 to 70 characters")
        }
        self.boundary = boundary
        self.parts = []
        let delimiter = Array("--\(boundary)".utf8)
        // Delimiters are at the start of the body or after CRLF; the bytes between are parts (preamble skipped).
        var starts: [(at: Int, end: Int, isClose: Bool)] = []
        var index = 0
        while let found = find(delimiter, in: body, from: index) {
            let atLineStart = found == 0 || (found >= 2 && body[found - 2] == 0x0D && body[found - 1] == 0x0A)
            index = found + delimiter.count
            guard atLineStart else { continue }
            let isClose =
                body.count >= index + 2 && body[index] == UInt8(ascii: "-") && body[index + 1] == UInt8(ascii: "-")
            starts.append((found, index + (isClose ? 2 : 0), isClose))
            if isClose { break }
        }
        guard let last = starts.last, last.isClose else {
            throw SIPError(.malformedMultipart, "no closing '--\(boundary)--' delimiter")
        }
        for (open, close) in zip(starts, starts.dropFirst()) {
            // A part runs from the line after its delimiter to the CRLF before the next one.
            guard let lineEnd = find([0x0D, 0x0A], in: body, from: open.end) else {
                throw SIPError(.malformedMultipart, "delimiter line not ended by CRLF")
            }
            let partEnd = close.at >= 2 ? close.at - 2 : close.at
            guard lineEnd + 2 <= partEnd else {
                throw SIPError(.malformedMultipart, "empty body part")
            }
            let part = Array(body[(lineEnd + 2)..<partEnd])
            let head = try SIPMessageParser.parseHeaderBlock(part, what: "body part")
            parts.append(SIPBodyPart(headers: head.headers, body: Array(part[head.bodyStart...])))
        }
        guard !parts.isEmpty else { throw SIPError(.malformedMultipart, "no body parts") }
    }

    public func serialized() -> [UInt8] {
        var out: [UInt8] = []
        for part in parts {
            out += Array("--\(boundary)\r\n".utf8)
            for field in part.headers { out += Array("\(field.name): \(field.value)\r\n".utf8) }
            out += [0x0D, 0x0A]
            out += part.body
            out += [0x0D, 0x0A]
        }
        out += Array("--\(boundary)--\r\n".utf8)
        return out
    }
}

func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
    guard !needle.isEmpty, haystack.count >= needle.count, start <= haystack.count - needle.count else { return nil }
    var i = start
    let first = needle[0]
    while i <= haystack.count - needle.count {
        if haystack[i] == first, haystack[i..<(i + needle.count)].elementsEqual(needle) { return i }
        i += 1
    }
    return nil
}

extension SIPMessage {
    /// The SDP the message carries: the whole body when it is `application/sdp`, or the first `application/sdp`
    /// part of a multipart body. Nil when there is none or the multipart body is malformed.
    public var sessionDescriptionText: String? {
        guard let type = contentType, !body.isEmpty else { return nil }
        if type.matches(.sdp) { return String(decoding: body, as: UTF8.self) }
        guard type.isMultipart, let boundary = type.parameterValue("boundary"),
            let multipart = try? SIPMultipartBody(parsing: body, boundary: boundary),
            let part = multipart.parts.first(where: { $0.contentType?.matches(.sdp) ?? false })
        else { return nil }
        return String(decoding: part.body, as: UTF8.self)
    }
}
