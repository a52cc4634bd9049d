/// Turns bytes into `SIPMessage`s (RFC 3261 §7, §18.3). One datagram holds one message; on a stream
/// (`SIPStreamFramer`) Content-Length delimits each. Every rejection is a `SIPError` saying which rule was broken.
public enum SIPMessageParser {
    /// The longest message accepted: RFC 3261 §18.1.1's 64 KB ceiling for anything not sent over UDP.
    public static let defaultMaximumMessageBytes = 65_535

    /// Parses the one message of a UDP datagram. Octets after the body that Content-Length delimits are ignored
    /// (RFC 4475 §3.1.1.8); without Content-Length the body is the rest of the datagram.
    public static func parse(datagram bytes: [UInt8]) throws -> SIPMessage {
        guard bytes.count <= defaultMaximumMessageBytes else {
            throw SIPError(.tooLarge, "datagram of \(bytes.count) bytes exceeds \(defaultMaximumMessageBytes)")
        }
        guard let (message, _) = try parse(bytes, from: 0, isStream: false) else {
            throw SIPError(.malformedStartLine, "datagram holds no message")
        }
        return message
    }

    public static func parse(datagram text: String) throws -> SIPMessage { try parse(datagram: Array(text.utf8)) }

    struct Head {
        var headers: SIPHeaders
        var bodyStart: Int
    }

    /// One message starting at `start` (leading CRLFs skipped, RFC 3261 §7.5). On a stream, nil when the bytes
    /// do not yet hold all of it; the second value is the index just past the message.
    static func parse(_ bytes: [UInt8], from start: Int, isStream: Bool) throws -> (SIPMessage, Int)? {
        var index = start
        while index + 1 < bytes.count, bytes[index] == 0x0D, bytes[index + 1] == 0x0A { index += 2 }
        guard let lineEnd = lineEnd(in: bytes, from: index) else {
            if isStream { return nil }
            throw SIPError(.malformedStartLine, "start line not ended by CRLF")
        }
        if isStream, find([0x0D, 0x0A, 0x0D, 0x0A], in: bytes, from: index) == nil { return nil }
        let startLine = try parseStartLine(bytes[index..<lineEnd.content])
        let head = try parseHeaderBlock(bytes, from: lineEnd.next, what: "message")
        let lengths = head.headers["Content-Length"]
        guard lengths.count <= 1 else {
            throw SIPError(
                .missingOrRepeatedHeader, "\(lengths.count) Content-Length header fields; at most one allowed")
        }
        let available = bytes.count - head.bodyStart
        let bodyLength: Int
        if let text = lengths.first {
            guard !text.isEmpty, text.utf8.allSatisfy(SIPCharacter.isDigit) else {
                throw SIPError(.malformedHeader, "Content-Length '\(text)' is not a non-negative number")
            }
            guard let length = decimal(text, limit: UInt64(defaultMaximumMessageBytes)).map(Int.init) else {
                throw SIPError(.tooLarge, "Content-Length \(text) exceeds \(defaultMaximumMessageBytes)")
            }
            if length > available {
                if isStream { return nil }
                throw SIPError(
                    .bodyLength, "Content-Length \(length) exceeds the \(available) bytes that follow the header")
            }
            bodyLength = length
        } else {
            if isStream {
                throw SIPError(.bodyLength, "a message on a stream must carry Content-Length (RFC 3261 §18.3)")
            }
            bodyLength = available
        }
        let end = head.bodyStart + bodyLength
        let message = SIPMessage(startLine: startLine, headers: head.headers, body: Array(bytes[head.bodyStart..<end]))
        try message.validate()
        return (message, end)
    }

    /// `Request-Line = Method SP Request-URI SP SIP-Version` or `Status-Line = SIP-Version SP Status-Code SP
    /// Reason-Phrase`: exactly one SP between elements (RFC 4475 §3.1.2.9, §3.1.2.10).
    static func parseStartLine(_ line: ArraySlice<UInt8>) throws -> SIPStartLine {
        guard !line.isEmpty else { throw SIPError(.malformedStartLine, "empty start line") }
        let text = try utf8(line, what: "start line")
        if text.utf8.count >= 4, text.prefix(4).caseInsensitiveEquals("SIP/") {
            let parts = text.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
            try checkVersion(parts[0])
            guard parts.count >= 2, parts[1].utf8.count == 3, parts[1].utf8.allSatisfy(SIPCharacter.isDigit),
                let code = Int(parts[1]), (100...699).contains(code)
            else {
                throw SIPError(
                    .valueOutOfRange,
                    "status code '\(parts.count >= 2 ? parts[1] : "")' is not three digits from 100 to 699")
            }
            return .response(statusCode: code, reasonPhrase: parts.count == 3 ? String(parts[2]) : "")
        }
        let parts = text.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty }) else {
            throw SIPError(
                .malformedStartLine, "request line is not 'Method SP Request-URI SP SIP-Version' with single spaces")
        }
        guard parts[0].utf8.allSatisfy(SIPCharacter.isToken) else {
            throw SIPError(.malformedStartLine, "method '\(parts[0])' is not a token")
        }
        guard !parts[1].hasPrefix("<") else {
            throw SIPError(.malformedURI, "Request-URI must not be enclosed in '<>' (RFC 4475 §3.1.2.7)")
        }
        let uri = try SIPURI(parsing: parts[1])
        try checkVersion(parts[2])
        return .request(method: SIPMethod(rawValue: String(parts[0])), uri: uri)
    }

    private static func checkVersion(_ version: Substring) throws {
        guard version.caseInsensitiveEquals("SIP/2.0") else {
            throw SIPError(.unsupportedVersion, "version '\(version)' is not SIP/2.0")
        }
    }

    /// Header fields up to the empty line, folding undone; `bodyStart` is the index after the empty line.
    static func parseHeaderBlock(_ bytes: [UInt8], from start: Int = 0, what: String) throws -> Head {
        var headers = SIPHeaders()
        var index = start
        var pendingName: String?
        var pendingValue: [UInt8] = []
        func flush() throws {
            if let name = pendingName {
                var upper = pendingValue.count
                while upper > 0, SIPCharacter.isWhitespace(pendingValue[upper - 1]) { upper -= 1 }
                headers.add(name, try utf8(pendingValue[..<upper], what: "\(name) header field"))
            }
            pendingName = nil
            pendingValue.removeAll(keepingCapacity: true)
        }
        while true {
            guard let line = lineEnd(in: bytes, from: index) else {
                throw SIPError(.malformedHeader, "\(what): header section not ended by an empty line")
            }
            let content = bytes[index..<line.content]
            index = line.next
            if content.isEmpty {
                try flush()
                return Head(headers: headers, bodyStart: index)
            }
            if SIPCharacter.isWhitespace(content.first!) {
                // Folding (LWS = [*WSP CRLF] 1*WSP): the line continues the previous field's value.
                guard pendingName != nil else {
                    throw SIPError(.malformedHeader, "\(what): continuation line before any header field")
                }
                let trimmed = content.drop(while: SIPCharacter.isWhitespace)
                if !trimmed.isEmpty {
                    if !pendingValue.isEmpty { pendingValue.append(0x20) }
                    pendingValue += trimmed
                }
                continue
            }
            try flush()
            let nameEnd = content.firstIndex { !SIPCharacter.isToken($0) } ?? content.endIndex
            var cursor = nameEnd
            while cursor < content.endIndex, SIPCharacter.isWhitespace(content[cursor]) { cursor += 1 }
            guard nameEnd > content.startIndex, cursor < content.endIndex, content[cursor] == UInt8(ascii: ":") else {
                let shown = String(decoding: content.prefix(40), as: UTF8.self)
                throw SIPError(.malformedHeader, "\(what): line '\(shown)' is not 'name: value'")
            }
            pendingName = String(decoding: content[content.startIndex..<nameEnd], as: UTF8.self)
            pendingValue += content[(cursor + 1)...].drop(while: SIPCharacter.isWhitespace)
        }
    }

    /// The end of the line starting at `start`: where its content ends (before CRLF, or a bare LF) and where the
    /// next line starts; nil when no line break follows.
    private static func lineEnd(in bytes: [UInt8], from start: Int) -> (content: Int, next: Int)? {
        var i = start
        while i < bytes.count {
            if bytes[i] == 0x0A { return (i > start && bytes[i - 1] == 0x0D ? i - 1 : i, i + 1) }
            i += 1
        }
        return nil
    }

    private static func utf8(_ bytes: some Collection<UInt8>, what: String) throws -> String {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw SIPError(.malformedHeader, "\(what) is not valid UTF-8")
        }
        return text
    }
}

extension SIPMessage {
    /// The message as sent on the wire. Content-Length is written from the body: in place of a stored one, or last.
    public func serialized() -> [UInt8] {
        var text: String
        switch startLine {
        case .request(let method, let uri): text = "\(method) \(uri) SIP/2.0\r\n"
        case .response(let code, let reason): text = "SIP/2.0 \(code) \(reason)\r\n"
        }
        var wroteLength = false
        for field in headers {
            if field.name == "Content-Length" {
                if !wroteLength { text += "Content-Length: \(body.count)\r\n" }
                wroteLength = true
            } else {
                text += field.name + ": " + field.value + "\r\n"
            }
        }
        if !wroteLength { text += "Content-Length: \(body.count)\r\n" }
        text += "\r\n"
        return Array(text.utf8) + body
    }

    /// The serialized text (a body that is not UTF-8 shows replacement characters): for traces and logs.
    public var wireText: String { String(decoding: serialized(), as: UTF8.self) }
}

/// Cuts a byte stream (TCP, TLS) into messages by Content-Length (RFC 3261 §18.3), and recognizes RFC 5626 §4.4.1
/// keepalives: a double CRLF ping and a single CRLF pong between messages.
///
/// After an error the stream cannot be resynchronized; the transport closes the connection.
public struct SIPStreamFramer: Sendable {
    public enum Frame: Equatable, Sendable {
        case message(SIPMessage)
        /// CRLF CRLF: the peer asks for a pong.
        case keepalivePing
        /// CRLF: the answer to our ping.
        case keepalivePong
    }

    public let maximumMessageBytes: Int
    private var buffer: [UInt8] = []
    private var readIndex = 0

    public init(maximumMessageBytes: Int = SIPMessageParser.defaultMaximumMessageBytes) {
        self.maximumMessageBytes = maximumMessageBytes
    }

    public var bufferedByteCount: Int { buffer.count - readIndex }

    public mutating func append(_ bytes: some Sequence<UInt8>) {
        if readIndex > 0, readIndex >= buffer.count / 2 {
            buffer.removeFirst(readIndex)
            readIndex = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next complete frame, or nil until more bytes arrive.
    public mutating func next() throws -> Frame? {
        let available = buffer.count - readIndex
        if available >= 2, buffer[readIndex] == 0x0D, buffer[readIndex + 1] == 0x0A {
            if available >= 4, buffer[readIndex + 2] == 0x0D, buffer[readIndex + 3] == 0x0A {
                readIndex += 4
                return .keepalivePing
            }
            if available == 3, buffer[readIndex + 2] == 0x0D { return nil }
            readIndex += 2
            return .keepalivePong
        }
        guard available > 0 else { return nil }
        guard let (message, end) = try SIPMessageParser.parse(buffer, from: readIndex, isStream: true) else {
            if available > maximumMessageBytes {
                throw SIPError(.tooLarge, "more than \(maximumMessageBytes) bytes without a complete message")
            }
            return nil
        }
        guard end - readIndex <= maximumMessageBytes else {
            throw SIPError(.tooLarge, "message of \(end - readIndex) bytes exceeds \(maximumMessageBytes)")
        }
        readIndex = end
        return .message(message)
    }
}
