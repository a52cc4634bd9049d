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

/// Why a call ended, as the SDKs name it: the one end cause an app sees. The client derives it from the SIP
/// dialog's end (``CallEvent``s, see ``CallStateMachine``) and gives the audio session its own
/// `AudioSessionEndReason` for the end-of-call report.
public enum CallEndCause: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Someone hung up an established call (either side).
    case hungUp
    /// The callee declined (busy, 486/603/600) — what the caller sees when the callee hangs up before answering.
    case denied
    /// Nobody answered within the no-answer timeout (60 s).
    case noAnswer
    /// The network gave no answer (SIP Timer B, transport timeout), or an established call received no media
    /// for the media timeout (``CallHealthConfiguration/mediaTimeout``).
    case timeout
    /// The caller hung up before the callee answered.
    case canceled
    /// Signalling, network or media failed (with ``CallDetails/error``) — also a device interruption that outlasted
    /// the interruption timeout.
    case failure
    /// Another device of the callee answered (the call was completed elsewhere).
    case otherDeviceAnswered
    /// The call was transferred.
    case transferred

    public var description: String { rawValue }

    /// The audio session's reason for the end-of-call report.
    var sessionReason: AudioSessionEndReason {
        switch self {
        case .hungUp, .canceled, .noAnswer, .otherDeviceAnswered, .transferred: .localHangup
        case .denied: .rejected
        case .timeout, .failure: .failed
        }
    }
}

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
