import VoiceSDP
import VoiceRTP

/// What happens to a `SIPCall`, in order, on its `events` stream (single consumer; finished after `.ended`).
public enum SIPCallEvent: Sendable, CustomStringConvertible {
    /// Outgoing: a 180/183 came. With an SDP answer in it (early media, usually 183) `earlyMedia` is the
    /// negotiated stream, which the caller may start playing before the call is answered.
    case progress(statusCode: Int, reasonPhrase: String, earlyMedia: NegotiatedAudio?)
    /// The call is up: outgoing, the 2xx came (and was ACKed); incoming, the ACK of our 2xx came. `headers` are the
    /// custom `X-` headers of the 2xx (outgoing; empty for incoming calls, whose INVITE's are `requestHeaders`).
    case established(NegotiatedAudio, headers: [SIPHeaders.Field])
    /// A re-INVITE changed the media: hold (`sendonly`/`inactive`), resume, new SRTP keys. `byPeer`: the peer's
    /// re-INVITE (we answered it) rather than ours.
    case mediaUpdated(NegotiatedAudio, byPeer: Bool)
    /// The peer sent a DTMF key by SIP INFO (`application/dtmf-relay`), with the duration it gave (ms). Keys sent
    /// as RFC 4733 telephone-events travel in the media and are the media's to report.
    case dtmfReceived(DTMFDigit, durationMilliseconds: Int?)
    /// The call is over, and why.
    case ended(SIPCallEnd)

    public var description: String {
        switch self {
        case .progress(let code, let reason, let early):
            "progress \(code) \(reason)" + (early == nil ? "" : " (early media)")
        case .established(let media, _): "established (\(media.direction), \(media.srtp.map { "\($0)" } ?? "RTP"))"
        case .mediaUpdated(let media, let byPeer): "media updated by \(byPeer ? "peer" : "us"): \(media.direction)"
        case .dtmfReceived(let digit, _): "DTMF \(digit) (SIP INFO)"
        case .ended(let end): "ended: \(end)"
        }
    }
}

/// Why a call ended: the cause for code to switch on, the SIP status and reason phrase when one ended it (a final
/// response or a BYE's Reason), and the custom `X-` headers of the message that ended it.
public struct SIPCallEnd: Sendable, Equatable, CustomStringConvertible {
    public enum Cause: String, Sendable, Equatable {
        /// We hung up (BYE sent) after the call was established.
        case localHangup
        /// The peer sent BYE.
        case remoteHangup
        /// The call was cancelled before it was answered: by us (CANCEL sent, 487 received) or by the peer (its
        /// CANCEL, our 487).
        case cancelled
        /// The peer (or a proxy) answered the INVITE with a final 3xx–6xx, or we rejected the incoming call.
        case rejected
        /// No final response (Timer B), a transport failure, an SDP that could not be negotiated, no ACK.
        case failed
    }

    public var cause: Cause
    /// The status that ended the call (a final response's code, 487 for a cancel), nil for a BYE or a timeout.
    public var statusCode: Int?
    public var reasonPhrase: String
    public var headers: [SIPHeaders.Field]
    /// The peer's CANCEL's Reason header (RFC 3326), as sent; nil when it had none or the call did not end by one.
    /// A forking proxy cancels the other branches with `SIP;cause=200` when one device answered.
    public var cancelReason: String?

    public init(
        _ cause: Cause, statusCode: Int? = nil, reasonPhrase: String, headers: [SIPHeaders.Field] = [],
        cancelReason: String? = nil
    ) {
        self.cause = cause
        self.statusCode = statusCode
        self.reasonPhrase = reasonPhrase
        self.headers = headers
        self.cancelReason = cancelReason
    }

    /// The SIP status in `cancelReason`'s `SIP` value (`SIP;cause=200;text="Call completed elsewhere"` → 200); nil
    /// when there is none, or only other protocols' causes (`Q.850;cause=16`).
    public var cancelReasonSIPCause: Int? { cancelReason.flatMap(Self.sipCause(inReason:)) }

    /// The `cause` of the first `SIP` value of a Reason header's comma-separated values (commas inside quoted text
    /// do not split); nil for anything malformed.
    static func sipCause(inReason header: String) -> Int? {
        var values: [Substring] = [], start = header.startIndex, quoted = false
        for index in header.indices {
            let character = header[index]
            if character == "\"" {
                quoted.toggle()
            } else if character == ",", !quoted {
                values.append(header[start..<index])
                start = header.index(after: index)
            }
        }
        values.append(header[start...])
        for value in values {
            let parts = value.split(separator: ";", omittingEmptySubsequences: false)
            guard let proto = parts.first, proto.trimmingBlanks.uppercased() == "SIP" else { continue }
            for parameter in parts.dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1)
                guard pair.count == 2, pair[0].trimmingBlanks.lowercased() == "cause" else { continue }
                guard let code = Int(pair[1].trimmingBlanks), (100...699).contains(code) else { return nil }
                return code
            }
        }
        return nil
    }

    public var description: String {
        "\(cause.rawValue)" + (statusCode.map { " \($0)" } ?? "") + (reasonPhrase.isEmpty ? "" : " \(reasonPhrase)")
    }
}

extension Substring {
    /// Without leading and trailing spaces and tabs (SIP's linear white space once lines are unfolded).
    fileprivate var trimmingBlanks: Substring {
        var trimmed = self
        while let first = trimmed.first, first == " " || first == "\t" { trimmed.removeFirst() }
        while let last = trimmed.last, last == " " || last == "\t" { trimmed.removeLast() }
        return trimmed
    }
}

/// A request of the call's that failed with a final response, or could not be made in the call's state.
public struct SIPCallError: Error, Sendable, Equatable, CustomStringConvertible {
    public var statusCode: Int?
    public var reason: String

    public init(statusCode: Int? = nil, _ reason: String) {
        self.statusCode = statusCode
        self.reason = reason
    }

    public var description: String { (statusCode.map { "\($0) " } ?? "") + reason }
}

extension SIPMessage {
    /// The custom headers (`X-…`, any case) in order: what an application passes through calls (RFC 6648 retired
    /// the prefix for standards, not for private use between an app and its server).
    public var customHeaders: [SIPHeaders.Field] {
        headers.fields.filter { $0.name.lowercased().hasPrefix("x-") }
    }
}
