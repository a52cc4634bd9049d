/// The one error type of VoiceSIP: what kind of failure (for code to switch on) and why (for people to read).
///
/// Parsing failures carry the rule that was broken, so a malformed message that is counted and dropped can be
/// logged with its reason and a 400 can say what was wrong.
public struct SIPError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: String, Equatable, Sendable {
        /// The start line (request line or status line) breaks RFC 3261 §7.1/§7.2.
        case malformedStartLine
        /// A header field is not `name HCOLON value`, or a value breaks its header's grammar.
        case malformedHeader
        /// A URI breaks RFC 3261 §19.1 / RFC 3966.
        case malformedURI
        /// A header that must appear once is missing or repeated (RFC 3261 §8.1.1, §20).
        case missingOrRepeatedHeader
        /// A number is out of its legal range (CSeq, Max-Forwards, status code, port, Content-Length).
        case valueOutOfRange
        /// The body is not what Content-Length says, or a stream message has no Content-Length.
        case bodyLength
        /// The message (or one of its parts) exceeds a configured limit.
        case tooLarge
        /// The message is well formed but the CSeq method does not match the request method, or similar.
        case inconsistent
        /// A multipart body breaks RFC 2046 §5.1.
        case malformedMultipart
        /// The SIP version is not 2.0.
        case unsupportedVersion
        /// A transaction or dialog was asked to do something its state does not allow.
        case invalidState
        /// A transport could not send or receive.
        case transport
        /// A transaction timed out (Timer B, F or H).
        case timeout
        /// A TLS connection could not be made secure: the peer's certificate is not trusted or does not name the
        /// server, the handshake failed, or the TLS configuration cannot be loaded. The reason says which.
        case tls
    }

    public var kind: Kind
    /// What was wrong, in words: which header, which rule, which value.
    public var reason: String
    /// For kind `.tls`: why the connection was refused, when it is known.
    public var tlsFailure: SIPTLSFailure?

    public init(_ kind: Kind, _ reason: String, failure: SIPTLSFailure? = nil) {
        self.kind = kind
        self.reason = reason
        self.tlsFailure = failure
    }

    public var description: String { "\(kind.rawValue): \(reason)" }
}
