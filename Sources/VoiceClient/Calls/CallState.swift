import Foundation
import VoiceEngine

/// A call's states, in the order the SDKs' diagram allows:
/// `initiating → progressing → (ringing) → established → ended`, where any state but `ended` may go to `ended`
/// and `progressing`/`ringing` may be skipped (an answer can come before any provisional response).
public enum CallState: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case initiating, progressing, ringing, established, ended

    /// Whether the diagram has an edge from `self` to `next`.
    public func allows(_ next: CallState) -> Bool {
        switch (self, next) {
        case (.initiating, .progressing), (.initiating, .ringing), (.initiating, .established): true
        case (.progressing, .ringing), (.progressing, .established): true
        case (.ringing, .established): true
        case (.initiating, .ended), (.progressing, .ended), (.ringing, .ended), (.established, .ended): true
        default: false
        }
    }

    public var description: String { rawValue }
}

public enum CallDirection: String, Sendable, Hashable { case outgoing, incoming }

/// What went wrong, with its domain.
public enum CallError: Sendable, Hashable, CustomStringConvertible {
    /// A SIP final response: status and reason phrase.
    case sip(status: Int, reason: String)
    case network(String)
    case media(String)
    /// The call's SRTP keys could not be agreed securely: the DTLS-SRTP handshake failed (fingerprint mismatch,
    /// alert, no answer), or the peer offered only SDES keys over unencrypted signalling.
    case encryption(String)

    public var description: String {
        switch self {
        case .sip(let status, let reason): "SIP \(status) \(reason)"
        case .network(let reason): "network: \(reason)"
        case .media(let reason): "media: \(reason)"
        case .encryption(let reason): "encryption: \(reason)"
        }
    }
}

/// A call's times, end cause, error and end-of-call report. The times are on the client's monotonic clock (for
/// durations, immune to clock changes); each has its wall-clock twin (`…WallClock`), for showing and logging.
public struct CallDetails: Sendable, Hashable {
    public var startedAt: MediaTime
    /// The wall-clock time at ``startedAt``; the other wall-clock times are it plus their monotonic distance.
    public var startedAtWallClock: Date
    public var progressedAt: MediaTime?
    public var establishedAt: MediaTime?
    public var endedAt: MediaTime?
    /// Why the call ended (VoiceSession's `CallEndCause`, the same in ``report`` and the uploaded statistics).
    public var endCause: CallEndCause?
    public var error: CallError?
    /// The engine's end-of-call statistics, when the call had taken the audio session.
    public var report: CallStatisticsReport?
    /// Whether an incoming call came by push.
    public var viaPush: Bool = false

    public var progressedAtWallClock: Date? { progressedAt.map(wallClock) }
    public var establishedAtWallClock: Date? { establishedAt.map(wallClock) }
    public var endedAtWallClock: Date? { endedAt.map(wallClock) }

    private func wallClock(_ time: MediaTime) -> Date {
        startedAtWallClock.addingTimeInterval((time - startedAt).seconds)
    }

    /// Established time until the end (zero for a call never established).
    public var duration: MediaTime {
        guard let establishedAt, let endedAt else { return .zero }
        return endedAt - establishedAt
    }
}
