import VoiceSIP

/// Whom a call goes to, checked before anything is sent, and the request URI the service routes:
/// a user of the app (`sip:<user>@<domain>`), any SIP address (relayed by the service), a phone number
/// (`sip:+46…@<domain>;user=phone`, which the service sends to its gateway) or a conference room
/// (`sip:conf-<room>@<domain>`, which the service sends to its conference server).
public enum CallTarget: Sendable, Hashable, CustomStringConvertible {
    case user(String)
    case sip(SIPURI)
    case phoneNumber(String)
    case conference(String)

    /// Conference room IDs: printable ASCII, 1–64 characters (the SDKs' rule).
    public static let maximumConferenceIDLength = 64

    /// A user ID by the SDKs' rule (``UserID``).
    public static func user(checking id: String) throws(VoiceClientError) -> CallTarget {
        do { return .user(try UserID.validate(id)) } catch { throw .invalidCall(error.description) }
    }

    /// `user@domain`, `user@domain:port` or a `sip:` URI.
    public static func sip(checking address: String) throws(VoiceClientError) -> CallTarget {
        let text = address.hasPrefix("sip:") ? address : "sip:" + address
        guard let uri = try? SIPURI(parsing: text), uri.scheme == .sip, let user = uri.user, !user.isEmpty,
            !uri.host.isEmpty
        else {
            throw .invalidCall("'\(address)' is not a SIP address (user@domain)")
        }
        return .sip(uri)
    }

    /// An E.164 number: `+`, a first digit 1–9, at most 15 digits; spaces, dashes, dots and brackets are ignored.
    public static func phoneNumber(checking number: String) throws(VoiceClientError) -> CallTarget {
        let kept = number.filter { !" -.()".contains($0) }
        let digits = kept.dropFirst()
        guard kept.first == "+", (1...15).contains(digits.count), digits.allSatisfy({ $0.isASCII && $0.isNumber }),
            digits.first != "0"
        else {
            throw .invalidCall("'\(number)' is not an E.164 phone number (+, country code, at most 15 digits)")
        }
        return .phoneNumber(kept)
    }

    /// A conference room ID: printable ASCII, 1–64 characters.
    public static func conference(checking id: String) throws(VoiceClientError) -> CallTarget {
        guard !id.isEmpty, id.count <= maximumConferenceIDLength else {
            throw .invalidCall(
                "conference ID must have 1 to \(maximumConferenceIDLength) characters, '\(id.prefix(80))' has \(id.count)"
            )
        }
        guard id.unicodeScalars.allSatisfy({ (0x20...0x7E).contains($0.value) }) else {
            throw .invalidCall("conference ID '\(id)' must be printable ASCII")
        }
        return .conference(id)
    }

    /// The INVITE's request URI as text (what the service routes on).
    public func requestURIText(domain: String) -> String { requestURI(domain: domain).description }

    /// The INVITE's request URI; users, numbers and rooms are in the service's `domain`.
    func requestURI(domain: String) -> SIPURI {
        switch self {
        case .user(let id): SIPURI(user: SIPUserPart.escape(id), host: domain)
        case .sip(let uri): uri
        case .phoneNumber(let number): SIPURI(user: number, host: domain, parameters: [SIPParameter("user", "phone")])
        case .conference(let id): SIPURI(user: "conf-" + SIPUserPart.escape(id), host: domain)
        }
    }

    public var description: String {
        switch self {
        case .user(let id): id
        case .sip(let uri): uri.description
        case .phoneNumber(let number): number
        case .conference(let id): "conference \(id)"
        }
    }
}
