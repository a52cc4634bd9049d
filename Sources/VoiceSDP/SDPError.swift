import VoiceSRTP

/// Why an SDP text was rejected, or why an offer/answer exchange could not agree on an audio stream.
///
/// Parse errors carry the 1-based line number of the offending line so the peer's SDP can be fixed. No case ever
/// carries key material: crypto errors carry the `SDESError` (VoiceSRTP) (which never holds keys) and the line number only.
public enum SDPError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A line is not `<letter>=<value>`, or a known line's value does not follow its grammar.
    case malformedLine(line: Int, reason: String)
    /// A line the SDP must have (`v=`, `o=`, `s=`, `m=audio`, a connection address) is absent.
    case missingLine(String)
    /// An `a=crypto:` line in the audio section is malformed (unknown suites are skipped, not rejected).
    case badCrypto(line: Int, SDESError)
    /// The offer or answer has no payload type of a codec we use (Opus, G.722, PCMU, PCMA) in its audio section;
    /// `offered` lists its encoding names (or bare payload types). A SIP user agent answers this `488`.
    case noCommonCodec(offered: [String])
    /// The audio section was rejected (port 0) by the answerer, or offers nothing to use.
    case audioRejected
    /// The offer carries `a=crypto` lines, but none with a suite we support (the offered suites are listed).
    case noCommonCryptoSuite(offered: [String])
    /// We require SRTP and the peer's description has no usable `a=crypto` line.
    case srtpRequired
    /// The peer requires SRTP (`RTP/SAVP`, `RTP/SAVPF`) and our capabilities have SRTP disabled.
    case srtpNotSupported
    /// The answer selects a crypto tag the offer never offered, or a different suite than the offer's tag.
    case answerDoesNotMatchOffer(String)
    /// DTLS-SRTP with an `a=setup` value we cannot act on (`holdconn`, or unknown).
    case unsupportedDTLSSetup(String)
    /// The offer keys SRTP only by SDES (`a=crypto`), which this side refuses: it accepts DTLS-SRTP only, because
    /// its signalling is not encrypted and SDES keys would cross the network in clear text.
    case sdesRefused

    public var description: String {
        switch self {
        case .malformedLine(let line, let reason): "SDP line \(line): \(reason)"
        case .missingLine(let what): "SDP has no \(what) line"
        case .badCrypto(let line, let error): "SDP line \(line): \(error)"
        case .noCommonCodec(let offered):
            "no common audio codec (offered: \(offered.isEmpty ? "none" : offered.joined(separator: ", ")))"
        case .audioRejected: "the audio section was rejected (port 0)"
        case .noCommonCryptoSuite(let offered):
            "no common SRTP crypto suite (offered: \(offered.joined(separator: ", ")))"
        case .srtpRequired: "SRTP is required but the peer offers no usable a=crypto line"
        case .srtpNotSupported: "the peer requires SRTP but SRTP is disabled locally"
        case .answerDoesNotMatchOffer(let reason): "the answer does not match the offer: \(reason)"
        case .unsupportedDTLSSetup(let setup): "DTLS-SRTP with a=setup:\(setup) is not supported"
        case .sdesRefused:
            "the offer keys SRTP only by SDES (a=crypto), refused over unencrypted signalling: DTLS-SRTP is required"
        }
    }
}
