import VoiceCore

/// Why the audio session refused an event. A refused event changes nothing: the state and the devices stay as
/// they were, and the caller (the calling client's call logic) decides what to do, usually end the call.
public enum AudioSessionError: VoiceEngineError, Equatable {
    /// A call event arrived before the engine started (and set the category and mode).
    case engineNotStarted
    /// A call's audio cannot start because the host application changed the category away from
    /// `playAndRecord` after the engine set it.
    case categoryCannotRecord(AudioSessionCategory)
    /// Only one call's audio is live at a time: `requested` was refused because `active` holds the session.
    case anotherCallActive(active: CallID, requested: CallID)
    /// The event names a call the session does not know (`nil`: no call at all).
    case unknownCall(CallID, active: CallID?)
    /// The category cannot change while a call holds the session; `requested` was refused.
    case categoryLockedDuringCall(call: CallID, requested: AudioSessionCategory)
    /// The application may not deactivate the session while a call holds it.
    case deactivationDuringCall(CallID)
    /// The application may not activate the session while an interruption holds the audio device.
    case activationDuringInterruption(InterruptionSource)

    public var identifier: String {
        switch self {
        case .engineNotStarted: "session.engineNotStarted"
        case .categoryCannotRecord: "session.categoryCannotRecord"
        case .anotherCallActive: "session.anotherCallActive"
        case .unknownCall: "session.unknownCall"
        case .categoryLockedDuringCall: "session.categoryLockedDuringCall"
        case .deactivationDuringCall: "session.deactivationDuringCall"
        case .activationDuringInterruption: "session.activationDuringInterruption"
        }
    }

    public var description: String {
        switch self {
        case .engineNotStarted:
            return "the audio engine has not been started; start it before placing or answering a call"
        case .categoryCannotRecord(let category):
            let what = category.canRecord ? "cannot play audio" : "cannot record from the microphone"
            return "a call needs the microphone and the speaker, but the audio session category is '\(category)', "
                + "which \(what); the application changed the category after the engine started and must set it "
                + "back to 'playAndRecord' before the call"
        case .anotherCallActive(let active, let requested):
            return "call \(requested) refused: call \(active) holds the audio session and only one call's audio "
                + "is live at a time; end call \(active) first"
        case .unknownCall(let call, let active):
            if let active { return "unknown call \(call): the audio session belongs to call \(active)" }
            return "unknown call \(call): no call holds the audio session"
        case .categoryLockedDuringCall(let call, let requested):
            return "cannot change the audio session category to '\(requested)' while call \(call) holds the "
                + "session; change it after the call ends"
        case .deactivationDuringCall(let call):
            return "cannot deactivate the audio session while call \(call) holds it; it is deactivated when the "
                + "call ends"
        case .activationDuringInterruption(let source):
            return "cannot activate the audio session while it is interrupted by the \(source); activate it "
                + "after the interruption ends"
        }
    }
}
