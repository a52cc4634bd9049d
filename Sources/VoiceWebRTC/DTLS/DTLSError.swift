/// Why a DTLS-SRTP association failed: each ends the call, and each says what a person can check.
public enum DTLSError: Error, Equatable, Sendable {
    /// OpenSSL could not create the context, key or certificate (named call, OpenSSL's reason).
    case setup(call: String, reason: String)
    /// The peer's certificate does not hash to the `a=fingerprint` its SDP announced (RFC 8122 §5): someone
    /// in the middle, or signalling that mixed two sessions up.
    case fingerprintMismatch(expected: DTLSFingerprint, actual: DTLSFingerprint)
    /// The peer sent a fatal alert (RFC 5246 §7.2 description code and OpenSSL's name for it).
    case alertReceived(code: UInt8, description: String)
    /// The handshake failed on our side (OpenSSL's reason, e.g. no shared cipher or SRTP profile).
    case handshakeFailed(reason: String)
    /// The handshake finished without a use_srtp profile both sides support (RFC 5764 §4.1.2).
    case noCommonSRTPProfile
    /// The peer closed the association (close_notify).
    case closedByPeer
    /// No answer to the retransmitted flights within the handshake's time limit.
    case timedOut
}
