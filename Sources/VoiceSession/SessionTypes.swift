// VoiceSession: the audio-session state machine and the audio controller (ringtones, progress tones).
import VoiceCore
// The device layer's event types are part of this module's API (device events are mapped to session events).
@_exported import enum VoiceDevices.DeviceEvent
@_exported import enum VoiceDevices.InterruptionReason

/// What the application intends to do with audio, as in the calling SDKs this engine serves (ARCHITECTURE.md §4).
///
/// Only ``playAndRecord`` allows a call: a call needs both the microphone and the speaker. The engine sets it
/// once, when it starts; if the host application changes it later, the next call fails with an error naming
/// the category rather than running without a microphone.
public enum AudioSessionCategory: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// Playback that mixes with other audio and is silenced by the mute switch; no recording.
    case ambient
    /// Playback that silences other audio (the system default category); no recording.
    case soloAmbient
    /// Playback that keeps playing when the screen locks; no recording.
    case playback
    /// Recording only; nothing is played.
    case record
    /// Recording and playback at the same time: the only category a call can use.
    case playAndRecord

    /// Whether the microphone may be open in this category.
    public var canRecord: Bool { self == .record || self == .playAndRecord }
    /// Whether audio may be played in this category.
    public var canPlay: Bool { self != .record }

    public var description: String { rawValue }
}

/// How the audio is processed within the category.
public enum AudioSessionMode: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// Audio passes through unprocessed.
    case `default`
    /// Voice processing is on: echo cancellation, noise suppression and automatic gain control.
    case voiceChat

    /// Whether the send chain runs the echo canceller, noise suppression and AGC in this mode.
    public var voiceProcessing: Bool { self == .voiceChat }

    public var description: String { rawValue }
}

/// Identifies one call, as the calling client names it (a call SID, a UUID string).
public struct CallID: Hashable, Sendable, Codable, CustomStringConvertible, ExpressibleByStringLiteral {
    public var rawValue: String

    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { rawValue = value }
    public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }
}

/// Why a call ended: the one end cause there is, in the engine's ``SessionEffect/endCall(_:cause:)`` and
/// ``CallStatisticsReport``, and in the calling client's call details, call events and uploaded statistics. The
/// engine on its own sets the hangups, ``failure``, ``timeout`` and ``interruptionTimeout``; the calling client
/// sets every case from the end of the SIP dialog.
public enum CallEndCause: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// The local user hung up an established call (or one already answered).
    case localHangup
    /// The remote party hung up an established call.
    case remoteHangup
    /// The caller hung up before the callee answered (both sides see it).
    case canceled
    /// The callee declined (busy, 486/600/603), or hung up before answering (both sides see it).
    case denied
    /// Nobody answered within the no-answer timeout.
    case noAnswer
    /// The network gave no answer (SIP Timer B, 408), or an established call received no media for the media
    /// timeout.
    case timeout
    /// Signalling, network or media failed; the calling client's call details say why.
    case failure
    /// The audio devices stayed interrupted longer than ``AudioSessionConfiguration/interruptionTimeout``.
    case interruptionTimeout
    /// Another device of the callee answered (the call was completed elsewhere).
    case otherDeviceAnswered
    /// The call was transferred.
    case transferred

    /// Someone hung up an established call (either side): the calling SDKs' *hung up*.
    public var isHangup: Bool { self == .localHangup || self == .remoteHangup }

    public var description: String { rawValue }
}

/// Who interrupted the call's audio.
public enum InterruptionSource: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The host application reported an interruption (another call took the audio, the app went to background).
    case hostApplication
    /// A device stopped delivering audio (ALSA suspend, device lost, device busy).
    case device(InterruptionReason)

    public var description: String {
        switch self {
        case .hostApplication: "host application"
        case .device(let reason): "device (\(reason))"
        }
    }

    private enum CodingKeys: String, CodingKey { case source, reason }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        if let reason = try c.decodeIfPresent(String.self, forKey: .reason) {
            guard let r = InterruptionReason(rawValue: reason) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .reason, in: c, debugDescription: "unknown interruption reason \(reason)")
            }
            self = .device(r)
        } else {
            self = .hostApplication
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .hostApplication:
            try c.encode("hostApplication", forKey: .source)
        case .device(let reason):
            try c.encode("device", forKey: .source)
            try c.encode(reason.rawValue, forKey: .reason)
        }
    }
}

/// Settings of an ``AudioSession``, fixed when it is created.
public struct AudioSessionConfiguration: Sendable, Hashable {
    /// How long an interruption may last before the call is ended with
    /// ``CallEndCause/interruptionTimeout``. 30 s by default, as the calling SDKs use.
    public var interruptionTimeout: MediaTime

    public init(interruptionTimeout: MediaTime = .milliseconds(30_000)) {
        precondition(interruptionTimeout.nanoseconds > 0, "the interruption timeout must be positive")
        self.interruptionTimeout = interruptionTimeout
    }
}
