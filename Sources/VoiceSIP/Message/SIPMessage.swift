/// A request method: a token, compared case-sensitively (RFC 3261 §7.1). Extension methods are just other tokens.
public struct SIPMethod: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }
    public var description: String { rawValue }

    public static let invite: SIPMethod = "INVITE"
    public static let ack: SIPMethod = "ACK"
    public static let bye: SIPMethod = "BYE"
    public static let cancel: SIPMethod = "CANCEL"
    public static let register: SIPMethod = "REGISTER"
    public static let options: SIPMethod = "OPTIONS"
    public static let message: SIPMethod = "MESSAGE"
    public static let prack: SIPMethod = "PRACK"
    public static let update: SIPMethod = "UPDATE"
    public static let info: SIPMethod = "INFO"
}

/// `CSeq: <sequence> <method>` (RFC 3261 §20.16).
public struct SIPCSeq: Equatable, Hashable, Sendable, CustomStringConvertible {
    public var sequence: UInt32
    public var method: SIPMethod

    public init(_ sequence: UInt32, _ method: SIPMethod) {
        self.sequence = sequence
        self.method = method
    }

    public init(parsing text: some StringProtocol) throws {
        var scanner = SIPScanner(text)
        scanner.skipWhitespace()
        let digits = scanner.take(while: SIPCharacter.isDigit)
        guard !digits.isEmpty else { throw SIPError(.malformedHeader, "CSeq: no sequence number") }
        // Leading zeros are legal ("0009"); the value must fit 32 bits (RFC 3261 §8.1.1.5, RFC 4475 §3.1.2.4).
        guard let sequence = decimal(String(decoding: digits, as: UTF8.self), limit: UInt64(UInt32.max)) else {
            throw SIPError(
                .valueOutOfRange, "CSeq: sequence number \(String(decoding: digits, as: UTF8.self)) exceeds 2^32-1")
        }
        let beforeMethod = scanner.index
        scanner.skipWhitespace()
        guard scanner.index > beforeMethod, let method = scanner.token() else {
            throw SIPError(.malformedHeader, "CSeq: no method after the sequence number")
        }
        scanner.skipWhitespace()
        guard scanner.atEnd else {
            throw SIPError(.malformedHeader, "CSeq: unexpected '\(scanner.rest)' after the method")
        }
        self.init(UInt32(sequence), SIPMethod(rawValue: method))
    }

    public var description: String { "\(sequence) \(method)" }
}

/// The first line of a message.
public enum SIPStartLine: Equatable, Sendable {
    case request(method: SIPMethod, uri: SIPURI)
    case response(statusCode: Int, reasonPhrase: String)
}

/// A SIP request or response: start line, header fields and body (RFC 3261 §7).
///
/// Header fields are kept as text; the typed properties (`via`, `from`, `cseq`, …) parse them when asked. A message
/// that came from `SIPMessageParser` has passed `validate()`, so for it those properties are never nil where the
/// header is mandatory.
public struct SIPMessage: Equatable, Sendable {
    public var startLine: SIPStartLine
    public var headers: SIPHeaders
    /// The body as bytes: a multipart body may carry binary parts (RFC 4475 §3.1.1.11).
    public var body: [UInt8]

    public init(startLine: SIPStartLine, headers: SIPHeaders = SIPHeaders(), body: [UInt8] = []) {
        self.startLine = startLine
        self.headers = headers
        self.body = body
    }

    public static func request(
        _ method: SIPMethod, _ uri: SIPURI, headers: SIPHeaders = SIPHeaders(), body: [UInt8] = []
    ) -> SIPMessage {
        SIPMessage(startLine: .request(method: method, uri: uri), headers: headers, body: body)
    }

    public static func response(
        _ statusCode: Int, _ reasonPhrase: String? = nil, headers: SIPHeaders = SIPHeaders(), body: [UInt8] = []
    ) -> SIPMessage {
        SIPMessage(
            startLine: .response(
                statusCode: statusCode, reasonPhrase: reasonPhrase ?? SIPStatus.reasonPhrase(for: statusCode)),
            headers: headers, body: body)
    }

    public var isRequest: Bool {
        if case .request = startLine { return true }
        return false
    }

    /// The request's method; nil for a response (its CSeq names the method it answers).
    public var requestMethod: SIPMethod? {
        if case .request(let method, _) = startLine { return method }
        return nil
    }

    public var requestURI: SIPURI? {
        if case .request(_, let uri) = startLine { return uri }
        return nil
    }

    public var statusCode: Int? {
        if case .response(let code, _) = startLine { return code }
        return nil
    }

    public var reasonPhrase: String? {
        if case .response(_, let reason) = startLine { return reason }
        return nil
    }

    /// Every Via value, top first, across all Via fields.
    public var via: [SIPVia] { (try? parsedVia()) ?? [] }
    public var topVia: SIPVia? { via.first }
    public var from: SIPAddress? { headers.first("From").flatMap { try? SIPAddress(parsing: $0, header: "From") } }
    public var to: SIPAddress? { headers.first("To").flatMap { try? SIPAddress(parsing: $0, header: "To") } }
    public var callID: String? { headers.first("Call-ID") }
    public var cseq: SIPCSeq? { headers.first("CSeq").flatMap { try? SIPCSeq(parsing: $0) } }
    public var maxForwards: Int? { headers.first("Max-Forwards").flatMap { decimal($0, limit: 255).map(Int.init) } }
    public var contacts: [SIPContact] { (try? headers["Contact"].flatMap(SIPContact.parseList)) ?? [] }
    public var routes: [SIPAddress] { (try? addressList("Route")) ?? [] }
    public var recordRoutes: [SIPAddress] { (try? addressList("Record-Route")) ?? [] }
    public var expires: UInt32? { headers.first("Expires").flatMap { UInt32($0) } }
    public var contentType: SIPMediaType? { headers.first("Content-Type").flatMap { try? SIPMediaType(parsing: $0) } }

    func parsedVia() throws -> [SIPVia] { try headers["Via"].flatMap(SIPVia.parseList) }

    func addressList(_ name: String) throws -> [SIPAddress] {
        try headers[name].flatMap { try splitHeaderList($0, header: name) }.map {
            try SIPAddress(parsing: $0, header: name)
        }
    }

    /// The checks RFC 3261 (§8.2, §20) and RFC 4475 make of a received message beyond its framing: mandatory header
    /// fields present once, their values well formed, numbers in range, the CSeq method matching the request.
    public func validate() throws {
        let vias = try parsedVia()
        guard !vias.isEmpty else { throw SIPError(.missingOrRepeatedHeader, "no Via header field") }
        for name in ["From", "To", "Call-ID", "CSeq"] {
            let count = headers[name].count
            guard count == 1 else {
                throw SIPError(
                    .missingOrRepeatedHeader,
                    count == 0 ? "no \(name) header field" : "\(count) \(name) header fields; exactly one allowed")
            }
        }
        for name in ["Max-Forwards", "Content-Length", "Content-Type", "Expires"] where headers[name].count > 1 {
            throw SIPError(
                .missingOrRepeatedHeader, "\(headers[name].count) \(name) header fields; at most one allowed")
        }
        _ = try SIPAddress(parsing: headers.first("From")!, header: "From")
        _ = try SIPAddress(parsing: headers.first("To")!, header: "To")
        let callID = headers.first("Call-ID")!
        guard !callID.isEmpty, callID.utf8.allSatisfy({ SIPCharacter.isWord($0) || $0 == UInt8(ascii: "@") }),
            callID.utf8.filter({ $0 == UInt8(ascii: "@") }).count <= 1
        else { throw SIPError(.malformedHeader, "Call-ID '\(callID)' is not word[@word]") }
        let cseq = try SIPCSeq(parsing: headers.first("CSeq")!)
        if case .request(let method, let uri) = startLine {
            guard cseq.method == method else {
                throw SIPError(.inconsistent, "CSeq method \(cseq.method) does not match the request method \(method)")
            }
            if uri.scheme == .sip || uri.scheme == .sips, !uri.headers.isEmpty {
                throw SIPError(.malformedURI, "Request-URI carries '?' headers, which RFC 3261 §19.1.1 forbids there")
            }
        }
        if let value = headers.first("Max-Forwards") {
            guard !value.isEmpty, value.utf8.allSatisfy(SIPCharacter.isDigit) else {
                throw SIPError(.malformedHeader, "Max-Forwards '\(value)' is not a number")
            }
            guard decimal(value, limit: 255) != nil else {
                throw SIPError(.valueOutOfRange, "Max-Forwards \(value) exceeds 255")
            }
        }
        if let value = headers.first("Expires"), value.isEmpty || !value.utf8.allSatisfy(SIPCharacter.isDigit) {
            throw SIPError(.malformedHeader, "Expires '\(value)' is not delta-seconds")
        }
        for value in headers["Contact"] { _ = try SIPContact.parseList(value) }
        _ = try addressList("Route")
        _ = try addressList("Record-Route")
        if let value = headers.first("Content-Type") { _ = try SIPMediaType(parsing: value) }
        if let date = headers.first("Date"), !date.hasSuffix(" GMT") {
            throw SIPError(.malformedHeader, "Date '\(date)' is not an RFC 1123 date in GMT (RFC 3261 §20.17)")
        }
    }
}

/// Reason phrases of RFC 3261 §21 and the extensions VoiceSIP uses.
public enum SIPStatus {
    public static func reasonPhrase(for code: Int) -> String {
        switch code {
        case 100: "Trying"
        case 180: "Ringing"
        case 181: "Call Is Being Forwarded"
        case 182: "Queued"
        case 183: "Session Progress"
        case 200: "OK"
        case 202: "Accepted"
        case 301: "Moved Permanently"
        case 302: "Moved Temporarily"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 406: "Not Acceptable"
        case 407: "Proxy Authentication Required"
        case 408: "Request Timeout"
        case 413: "Request Entity Too Large"
        case 415: "Unsupported Media Type"
        case 416: "Unsupported URI Scheme"
        case 420: "Bad Extension"
        case 423: "Interval Too Brief"
        case 480: "Temporarily Unavailable"
        case 481: "Call/Transaction Does Not Exist"
        case 482: "Loop Detected"
        case 483: "Too Many Hops"
        case 486: "Busy Here"
        case 487: "Request Terminated"
        case 488: "Not Acceptable Here"
        case 491: "Request Pending"
        case 500: "Server Internal Error"
        case 501: "Not Implemented"
        case 503: "Service Unavailable"
        case 504: "Server Time-out"
        case 505: "Version Not Supported"
        case 600: "Busy Everywhere"
        case 603: "Decline"
        case 604: "Does Not Exist Anywhere"
        case 606: "Not Acceptable"
        default: "Unknown"
        }
    }
}
