import NIOCore
import NIOSSL

/// Settings of a `SIPEndpoint`.
public struct SIPEndpointConfiguration: Sendable {
    public var timers: SIPTimerConfiguration
    public var maximumMessageBytes: Int
    /// `User-Agent` added to requests that have none (nil: none added).
    public var userAgent: String?
    /// When set, every open TCP or TLS connection, and every UDP peer named with `keepAlive(_:)` (a registrar,
    /// as `SIPRegistration` does), gets an RFC 5626 CRLF CRLF ping this often, so that NATs and the server keep the
    /// binding open and an incoming INVITE can come back through it.
    public var keepaliveInterval: TimeAmount?
    /// Trust roots for TLS connections we open, and our certificate for a TLS listener. Nil: TLS peers get a
    /// `SIPError.Kind.tls` failure (no TLS without a decision on whom to trust).
    public var tls: SIPTLSConfiguration?
    /// How long a TLS connection we open may take to finish its handshake once TCP is connected. A server that
    /// accepts the connection but never answers (a crashed TLS worker behind a live listener) otherwise holds it
    /// pending for good, and every request to that peer waits behind it; past the deadline the connection fails
    /// with a `.tls` error (`handshakeFailed`) and the next request opens a new one.
    public var tlsHandshakeTimeout: TimeAmount

    public init(
        timers: SIPTimerConfiguration = SIPTimerConfiguration(),
        maximumMessageBytes: Int = SIPMessageParser.defaultMaximumMessageBytes,
        userAgent: String? = "VoiceEngine", keepaliveInterval: TimeAmount? = nil, tls: SIPTLSConfiguration? = nil,
        tlsHandshakeTimeout: TimeAmount = .seconds(5)
    ) {
        self.timers = timers
        self.maximumMessageBytes = maximumMessageBytes
        self.userAgent = userAgent
        self.keepaliveInterval = keepaliveInterval
        self.tls = tls
        self.tlsHandshakeTimeout = tlsHandshakeTimeout
    }
}

/// A request handed to the transaction user. `transaction` is nil for the ACK of a 2xx (it has none, RFC 3261
/// §17.1.1.3); for any other request the TU answers with `SIPEndpoint.respond(_:to:)`.
public struct SIPIncomingRequest: Sendable {
    public let message: SIPMessage
    public let transaction: SIPTransactionID?
    public let peer: SIPPeer
}

/// What the transport saw, for tests, benchmarks and `--trace`.
public struct SIPTransportStatistics: Equatable, Sendable {
    public var messagesReceived = 0
    public var messagesSent = 0
    /// Malformed messages counted and dropped (RFC 3261 §18.3: a UDP datagram is discarded; a stream is closed).
    public var malformedDropped = 0
    public var keepalivePongsReceived = 0
    /// CRLF CRLF pings sent to UDP peers (`keepAlive(_:)`).
    public var keepalivesSent = 0
    public var connectionsOpened = 0
    public var connectionsAccepted = 0
    /// Why the last message was dropped.
    public var lastDropReason: String?
}
