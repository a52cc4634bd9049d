import VoiceSIP

/// Which room an INVITE asks for: the Request-URI user `conf-<id>` (what the calling client's
/// `callConference(id:)` dials). The id is at most 64 characters of the URI's unreserved set, so that it can be a
/// file name, a log field and a dispatcher hash key as it is.
public struct ConferenceRoomAddress: Hashable, Sendable, CustomStringConvertible {
    /// The Request-URI user prefix of every room.
    public static let prefix = "conf-"
    public static let maximumIDLength = 64

    /// The room id (without the prefix).
    public let id: String

    /// Why a Request-URI names no room, with the SIP status it is refused with.
    public struct Refusal: Error, Equatable, Sendable, CustomStringConvertible {
        /// 404: not a room URI at all; 400: a room URI with an unusable id.
        public let statusCode: Int
        public let reason: String
        public var description: String { "\(statusCode) \(reason)" }
    }

    public init(id: String) throws(Refusal) {
        guard !id.isEmpty else { throw Refusal(statusCode: 400, reason: "Bad Request (empty conference room id)") }
        guard id.count <= Self.maximumIDLength else {
            throw Refusal(
                statusCode: 400,
                reason: "Bad Request (conference room id longer than \(Self.maximumIDLength) characters)")
        }
        guard id.unicodeScalars.allSatisfy(Self.isAllowed) else {
            throw Refusal(
                statusCode: 400, reason: "Bad Request (conference room id may hold only letters, digits and - . _ ~)")
        }
        self.id = id
    }

    /// The room a Request-URI names: its user must be `conf-<id>`.
    public init(requestURI uri: SIPURI) throws(Refusal) {
        guard let user = uri.user, user.lowercased().hasPrefix(Self.prefix) else {
            throw Refusal(statusCode: 404, reason: "Not Found (not a conference room: use sip:conf-<id>@host)")
        }
        try self.init(id: String(user.dropFirst(Self.prefix.count)))
    }

    /// The Request-URI user that names this room.
    public var user: String { Self.prefix + id }
    public var description: String { user }

    private static func isAllowed(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "A"..."Z", "0"..."9", "-", ".", "_", "~": true
        default: false
        }
    }
}
