import VoiceCore

/// What the session knows about the call that holds it: enough to time its interruptions and write its
/// end-of-call report.
public struct CallContext: Sendable, Hashable {
    /// The call.
    public let id: CallID
    /// When the session first heard of the call (progressing, or established directly for an incoming call).
    public let startedAt: MediaTime
    /// When media was established in both directions; nil while the remote side is still ringing.
    public internal(set) var establishedAt: MediaTime?
    /// Interruptions this call has lived through (an interruption already under way when the call appeared
    /// counts as one).
    public internal(set) var interruptionCount: Int = 0
    /// Time spent interrupted, finished interruptions only (see ``interruptedSince``).
    public internal(set) var interruptedDuration: MediaTime = .zero
    /// Set while the call is interrupted: when its current interruption started counting for this call. The
    /// interruption timeout runs from here.
    public internal(set) var interruptedSince: MediaTime?

    init(id: CallID, startedAt: MediaTime) {
        self.id = id
        self.startedAt = startedAt
    }
}

/// Where the session is in a call's life. Together with ``AudioSessionState/interruption`` this is the
/// state of the machine: idle, progressing or established, each either running or interrupted.
public enum CallPhase: Sendable, Hashable, CustomStringConvertible {
    /// No call holds the session.
    case idle
    /// The remote side is ringing: the progress tone plays, the microphone stays closed.
    case progressing(CallContext)
    /// Media flows both ways (or would, were the session not interrupted).
    case established(CallContext)

    /// The call holding the session, if any.
    public var call: CallContext? {
        switch self {
        case .idle: nil
        case .progressing(let c), .established(let c): c
        }
    }

    public var isIdle: Bool { if case .idle = self { true } else { false } }
    public var isProgressing: Bool { if case .progressing = self { true } else { false } }
    public var isEstablished: Bool { if case .established = self { true } else { false } }

    public var description: String {
        switch self {
        case .idle: "idle"
        case .progressing(let c): "progressing(\(c.id))"
        case .established(let c): "established(\(c.id))"
        }
    }

    /// The same phase with its call context replaced.
    func with(_ call: CallContext) -> CallPhase {
        switch self {
        case .idle: .idle
        case .progressing: .progressing(call)
        case .established: .established(call)
        }
    }
}

/// An interruption under way: who took the audio and when.
public struct SessionInterruption: Sendable, Hashable {
    public let source: InterruptionSource
    public let began: MediaTime
}

/// The whole state of the audio session, a plain value. ``AudioSessionMachine/transition(_:_:at:)`` is the only
/// thing that produces a new one; everything that matters to the devices (is the session active, is the
/// microphone open, does playout run) is derived from it, so those can never disagree with the call's phase.
public struct AudioSessionState: Sendable, Hashable, CustomStringConvertible {
    /// Settings (the interruption timeout).
    public let configuration: AudioSessionConfiguration
    /// Whether the engine has started (and set `playAndRecord` + `voiceChat`, once).
    public internal(set) var engineStarted = false
    /// The current category: the system default until the engine starts, then whatever the engine or, later,
    /// the host application set.
    public internal(set) var category: AudioSessionCategory = .soloAmbient
    /// The current mode.
    public internal(set) var mode: AudioSessionMode = .default
    /// The call holding the session, and how far it is.
    public internal(set) var phase: CallPhase = .idle
    /// The interruption under way, if any.
    public internal(set) var interruption: SessionInterruption?
    /// Whether the application activated the session to play its own audio. Cleared when a call ends and when
    /// an interruption begins: the application must activate again after each.
    public internal(set) var applicationActivated = false

    public init(configuration: AudioSessionConfiguration = AudioSessionConfiguration()) {
        self.configuration = configuration
    }

    /// Whether the session is active: activated by the application, or by an established, uninterrupted call.
    public var isActive: Bool { applicationActivated || isCaptureRunning }
    /// Whether the microphone is open: only for an established call that is not interrupted.
    public var isCaptureRunning: Bool { phase.isEstablished && interruption == nil }
    /// Whether the playout device runs: while the session is active, and for a ringing call's progress tone.
    public var isPlayoutRunning: Bool { isActive || (phase.isProgressing && interruption == nil) }
    /// Whether the send chain processes the microphone (echo cancellation, noise suppression, AGC); nil while
    /// the microphone is closed.
    public var voiceProcessing: Bool? { isCaptureRunning ? mode.voiceProcessing : nil }
    /// Whether the call is interrupted.
    public var isInterrupted: Bool { interruption != nil }
    /// When the interruption of the current call times out, if it is interrupted.
    public var interruptionDeadline: MediaTime? {
        phase.call?.interruptedSince.map { $0 + configuration.interruptionTimeout }
    }

    public var description: String {
        var parts = ["\(phase)", "category=\(category)", "mode=\(mode)"]
        if !engineStarted { parts.append("engine stopped") }
        if let interruption { parts.append("interrupted by \(interruption.source)") }
        if isActive { parts.append("active") }
        if applicationActivated { parts.append("app-activated") }
        return parts.joined(separator: " ")
    }
}
