/// Why an SRTP operation failed.
///
/// Per-packet failures (`authenticationFailed`, `replayOld`, `replayFail`) mean "drop this packet and carry on";
/// the others mean the session could not be set up or the caller passed a buffer that cannot hold the result.
public enum SRTPError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The packet's authentication tag did not verify: wrong key, tampered packet, or a wrong rollover counter.
    case authenticationFailed
    /// The packet is older than the replay window.
    case replayOld
    /// The packet was already received (a replay), or an outbound sequence number was repeated.
    case replayFail
    /// The key material does not fit the suite (wrong length).
    case badKey(expectedLength: Int, actualLength: Int)
    /// libsrtp rejected a parameter (a malformed packet, a bad window size…), in the named C call.
    case badParameter(call: String)  // also libsrtp parse errors
    /// The suite is not available in this build of libsrtp (for example GCM without a crypto backend).
    case unsupportedSuite(SRTPCryptoSuite)
    /// The caller's buffer cannot hold the protected packet.
    case bufferTooSmall(needed: Int, capacity: Int)
    /// Any other libsrtp status code, with the C call that returned it.
    case other(code: Int32, call: String)

    public var description: String {
        switch self {
        case .authenticationFailed: "SRTP authentication failed"
        case .replayOld: "SRTP packet too old for the replay window"
        case .replayFail: "SRTP packet replayed"
        case .badKey(let expected, let actual): "SRTP key material is \(actual) bytes, the suite needs \(expected)"
        case .badParameter(let call): "libsrtp \(call) rejected a parameter"
        case .unsupportedSuite(let suite): "SRTP suite \(suite) is not supported by this libsrtp build"
        case .bufferTooSmall(let needed, let capacity): "buffer holds \(capacity) bytes, SRTP needs \(needed)"
        case .other(let code, let call): "libsrtp \(call) failed with status \(code)"
        }
    }
}
