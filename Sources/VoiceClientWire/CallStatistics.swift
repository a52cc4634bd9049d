import Foundation

/// What the registration service reads of an uploaded end-of-call statistics report (`POST /v1/call-statistics`,
/// authenticated with the device's credentials): the fields it indexes and lists by. The upload is a JSON object
/// with these fields at its top level and the client's reports beside them; the service keeps the whole object
/// as it came and gives it back in ``CallStatisticsQuery`` answers.
public struct CallStatisticsSummary: Codable, Equatable, Sendable {
    public var applicationKey: String
    /// The call's ID (its SIP Call-ID): an upload repeated after a lost answer is stored once.
    public var callID: String
    /// `incoming` or `outgoing`.
    public var direction: String
    /// The other party's user ID, SIP address or number.
    public var remote: String
    /// When the call started, Unix time in seconds (the device's wall clock).
    public var startedAt: Double
    /// Established time until the end, seconds; 0 for a call never established.
    public var durationSeconds: Double
    /// Why the call ended, a `CallEndCause` raw value (`localHangup`, `remoteHangup`, `failure`, `timeout`, …).
    public var endCause: String
    /// What went wrong, for a failed call.
    public var error: String?

    public init(
        applicationKey: String, callID: String, direction: String, remote: String, startedAt: Double,
        durationSeconds: Double, endCause: String, error: String? = nil
    ) {
        self.applicationKey = applicationKey
        self.callID = callID
        self.direction = direction
        self.remote = remote
        self.startedAt = startedAt
        self.durationSeconds = durationSeconds
        self.endCause = endCause
        self.error = error
    }

    /// The largest upload the service takes, in bytes (the media report of a call is a few kilobytes).
    public static let maximumBytes = 32_768
    /// The longest call ID, remote and end cause the service keeps.
    public static let maximumFieldLength = 256

    /// Why the service refuses the summary, or nil when it is one it keeps.
    public var problem: String? {
        if callID.isEmpty { return "empty call ID" }
        for (name, value) in [
            ("callID", callID), ("remote", remote), ("endCause", endCause), ("applicationKey", applicationKey)
        ] where value.utf8.count > Self.maximumFieldLength {
            return "\(name) longer than \(Self.maximumFieldLength) bytes"
        }
        if direction != "incoming", direction != "outgoing" { return "direction is neither incoming nor outgoing" }
        if !startedAt.isFinite || startedAt < 0 || startedAt > 32_503_680_000 { return "startedAt is not a Unix time" }
        if !durationSeconds.isFinite || durationSeconds < 0 || durationSeconds > 31_536_000 {
            return "durationSeconds out of range"
        }
        return nil
    }
}

/// The service's answer to an upload: whether it was new (false: the same call was already stored).
public struct CallStatisticsReceipt: Codable, Equatable, Sendable {
    public var stored: Bool

    public init(stored: Bool) { self.stored = stored }
}

/// Asks for the authenticated user's last calls (`POST /v1/call-statistics/query`), newest first.
public struct CallStatisticsQuery: Codable, Equatable, Sendable {
    public var applicationKey: String
    /// At most this many (1–100).
    public var limit: Int

    public init(applicationKey: String, limit: Int = 20) {
        self.applicationKey = applicationKey
        self.limit = limit
    }

    public static let maximumLimit = 100
}
