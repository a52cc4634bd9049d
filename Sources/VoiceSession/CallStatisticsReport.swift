import VoiceCore

/// What the session knows about a call when it ends: the part of the end-of-call report (the data a calling
/// SDK uploads for call-quality monitoring) that belongs to the audio session. The engine adds the media
/// statistics (loss, jitter, MOS estimates) around it.
///
/// Times are seconds on the session's media clock; durations are seconds. Codable so it can be uploaded as is.
public struct CallStatisticsReport: Sendable, Hashable, Codable {
    /// The call.
    public var callID: CallID
    /// Why it ended.
    public var endCause: CallEndCause
    /// When the session first heard of the call (progressing or established), in media-clock seconds.
    public var startedAt: Double
    /// When media was established both ways; nil if the call never got that far.
    public var establishedAt: Double?
    /// When the call ended. For ``CallEndCause/interruptionTimeout`` this is the moment the timeout
    /// expired.
    public var endedAt: Double
    /// From progressing to established (ring time); nil if the call was never established or rang.
    public var setupDuration: Double?
    /// From established to ended; 0 for a call that was never established.
    public var callDuration: Double
    /// Interruptions the call lived through.
    public var interruptionCount: Int
    /// Total time interrupted, seconds.
    public var interruptedDuration: Double
    /// The category while the call ran.
    public var category: AudioSessionCategory
    /// The mode while the call ran (voiceChat: voice processing on).
    public var mode: AudioSessionMode

    public init(
        callID: CallID, endCause: CallEndCause, startedAt: Double, establishedAt: Double?, endedAt: Double,
        setupDuration: Double?, callDuration: Double, interruptionCount: Int, interruptedDuration: Double,
        category: AudioSessionCategory, mode: AudioSessionMode
    ) {
        self.callID = callID
        self.endCause = endCause
        self.startedAt = startedAt
        self.establishedAt = establishedAt
        self.endedAt = endedAt
        self.setupDuration = setupDuration
        self.callDuration = callDuration
        self.interruptionCount = interruptionCount
        self.interruptedDuration = interruptedDuration
        self.category = category
        self.mode = mode
    }

    /// The report for `call`, ended at `endedAt` for `cause` (the call's interruption must already be closed).
    init(call: CallContext, cause: CallEndCause, endedAt: MediaTime, state: AudioSessionState) {
        let established = call.establishedAt
        self.init(
            callID: call.id, endCause: cause, startedAt: call.startedAt.seconds, establishedAt: established?.seconds,
            endedAt: endedAt.seconds,
            setupDuration: established.flatMap { $0 > call.startedAt ? ($0 - call.startedAt).seconds : nil },
            callDuration: established.map { (endedAt - $0).seconds } ?? 0,
            interruptionCount: call.interruptionCount, interruptedDuration: call.interruptedDuration.seconds,
            category: state.category, mode: state.mode)
    }
}
