import VoiceCore

/// Something that happens to the audio session: from the engine, the calling client's call logic, the host
/// application, the devices (through ``AudioSessionMachine/sessionEvent(for:)``), or the passing of time.
public enum SessionEvent: Sendable, Hashable, CustomStringConvertible {
    /// The engine started: it sets `playAndRecord` + `voiceChat` the first time, and never again.
    case engineStarted
    /// The host application changed the category.
    case hostSetCategory(AudioSessionCategory)
    /// The host application changed the mode.
    case hostSetMode(AudioSessionMode)
    /// The application activates the session to play its own audio.
    case applicationActivate
    /// The application deactivates the session.
    case applicationDeactivate
    /// The remote side is ringing: play the progress tone.
    case callProgressing(CallID)
    /// Media is established both ways: stop the tone, activate, open the microphone.
    case callEstablished(CallID)
    /// The calling client ended the call.
    case callEnded(CallID, cause: CallEndCause)
    /// Someone took the audio away.
    case interruptionBegan(InterruptionSource)
    /// The audio is back.
    case interruptionEnded
    /// Time passed (the engine calls this periodically so an interruption times out without other events).
    case tick

    public var description: String {
        switch self {
        case .engineStarted: "engineStarted"
        case .hostSetCategory(let c): "hostSetCategory(\(c))"
        case .hostSetMode(let m): "hostSetMode(\(m))"
        case .applicationActivate: "applicationActivate"
        case .applicationDeactivate: "applicationDeactivate"
        case .callProgressing(let id): "callProgressing(\(id))"
        case .callEstablished(let id): "callEstablished(\(id))"
        case .callEnded(let id, let cause): "callEnded(\(id), \(cause))"
        case .interruptionBegan(let source): "interruptionBegan(\(source))"
        case .interruptionEnded: "interruptionEnded"
        case .tick: "tick"
        }
    }
}

/// What the engine must do because of a transition, in the order given.
public enum SessionEffect: Sendable, Hashable, CustomStringConvertible {
    /// Set the audio session category (only ever `playAndRecord`, only at the first engine start).
    case setCategory(AudioSessionCategory)
    /// Set the audio session mode (only ever `voiceChat`, only at the first engine start).
    case setMode(AudioSessionMode)
    /// Activate the audio session.
    case activateSession
    /// Deactivate the audio session.
    case deactivateSession
    /// Start the playout device.
    case startPlayout
    /// Stop the playout device.
    case stopPlayout
    /// Open the microphone (start the capture device).
    case startCapture
    /// Close the microphone.
    case stopCapture
    /// Turn voice processing (echo cancellation, noise suppression, AGC) on or off in the send chain.
    case setVoiceProcessing(Bool)
    /// Drop everything buffered in the rings, jitter buffer and echo canceller history: the call resumes after
    /// an interruption with no stale audio and no extra latency.
    case flushBuffers
    /// Start the progress tone (ringback) for the ringing call.
    case startProgressTone(CallID)
    /// Stop the progress tone.
    case stopProgressTone
    /// The session ended the call itself (interruption timeout): the calling client must hang it up.
    case endCall(CallID, cause: CallEndCause)
    /// The call ended: its end-of-call report.
    case callReport(CallStatisticsReport)

    public var description: String {
        switch self {
        case .setCategory(let c): "setCategory(\(c))"
        case .setMode(let m): "setMode(\(m))"
        case .activateSession: "activateSession"
        case .deactivateSession: "deactivateSession"
        case .startPlayout: "startPlayout"
        case .stopPlayout: "stopPlayout"
        case .startCapture: "startCapture"
        case .stopCapture: "stopCapture"
        case .setVoiceProcessing(let on): "setVoiceProcessing(\(on))"
        case .flushBuffers: "flushBuffers"
        case .startProgressTone(let id): "startProgressTone(\(id))"
        case .stopProgressTone: "stopProgressTone"
        case .endCall(let id, let cause): "endCall(\(id), \(cause))"
        case .callReport(let r): "callReport(\(r.callID), \(r.endCause))"
        }
    }
}

/// The result of one event: the new state and the effects, or a refusal.
public struct SessionTransition: Sendable, Equatable {
    /// The state after the event (for a refusal: the state before it, apart from a timeout that was already due).
    public var state: AudioSessionState
    /// What the engine must do, in order.
    public var effects: [SessionEffect]
    /// Why the event was refused, or nil when it was applied.
    public var refusal: AudioSessionError?
}

/// The audio-session state machine: one pure function from (state, event, time) to (state, effects).
///
/// States are a ``CallPhase`` (idle, progressing, established) crossed with "interrupted or not", plus the
/// category, mode, engine-started and application-activation flags. The transition table:
///
/// | State | Event | New state | Effects (besides device start/stop) | Refused when |
/// |---|---|---|---|---|
/// | engine not started | engineStarted | started, playAndRecord, voiceChat | setCategory, setMode | — |
/// | engine started | engineStarted | unchanged | none (the category is set exactly once) | — |
/// | any, no call | hostSetCategory(c) | category c | — | a call holds the session |
/// | any | hostSetMode(m) | mode m | setVoiceProcessing if the microphone is open | — |
/// | not interrupted | applicationActivate | app-activated | — | interrupted |
/// | idle / progressing | applicationDeactivate | not app-activated | — | a call is established |
/// | idle | callProgressing(id) | progressing(id) | startProgressTone(id) | engine not started, category ≠ playAndRecord |
/// | idle / progressing(id) | callEstablished(id) | established(id) | stopProgressTone (if ringing) | engine not started, category ≠ playAndRecord |
/// | progressing/established(other) | callProgressing / callEstablished(id) | unchanged | — | always: one call at a time |
/// | progressing/established(id) | callEnded(id, cause) | idle, not app-activated | stopProgressTone (if ringing), callReport | unknown id |
/// | not interrupted | interruptionBegan(s) | interrupted, not app-activated | — (devices stop) | — |
/// | interrupted | interruptionBegan | unchanged (the first interruption's clock keeps running) | — | — |
/// | interrupted, call's interruption < timeout | interruptionEnded | not interrupted | flushBuffers (if established) | — |
/// | not interrupted | interruptionEnded | unchanged | — | — |
/// | call interrupted ≥ timeout | any event (tick) | idle, then the event | stopProgressTone (if ringing), endCall(id, interruptionTimeout), callReport | — |
///
/// Device effects are derived, not listed per row: the session is active while the application activated it
/// or an established call runs uninterrupted; the microphone is open only for an established, uninterrupted
/// call; playout runs while the session is active or a ringing call plays its progress tone uninterrupted.
/// Every transition compares these before and after and emits, in this order: stopCapture, stopPlayout,
/// deactivateSession; then activateSession, setVoiceProcessing, flushBuffers, startPlayout, startCapture.
public enum AudioSessionMachine {
    /// Applies `event`, which happens at `time`, to `state`.
    ///
    /// Pure and total: the same inputs always give the same transition, and every event in every state gives
    /// either a new state or a refusal with a reason. A call interrupted for the timeout or longer is ended
    /// (`interruptionTimeout`, effective at the deadline) before the event is looked at, so the result does not
    /// depend on whether anyone called ``SessionEvent/tick`` in between.
    /// - Parameter time: the media-clock time of the event; never earlier than the previous event's.
    public static func transition(
        _ state: AudioSessionState, _ event: SessionEvent, at time: MediaTime
    ) -> SessionTransition {
        var s = state
        var timeoutEffects: [SessionEffect] = []
        expireInterruptedCall(&s, at: time, into: &timeoutEffects)
        let afterTimeout = s

        var pre: [SessionEffect] = []
        var post: [SessionEffect] = []
        var flush = false

        func refuse(_ error: AudioSessionError) -> SessionTransition {
            SessionTransition(
                state: afterTimeout, effects: derivedEffects(from: state, to: afterTimeout, pre: timeoutEffects),
                refusal: error)
        }

        switch event {
        case .engineStarted:
            if !s.engineStarted {
                s.engineStarted = true
                s.category = .playAndRecord
                s.mode = .voiceChat
                pre += [.setCategory(.playAndRecord), .setMode(.voiceChat)]
            }

        case .hostSetCategory(let category):
            if let call = s.phase.call { return refuse(.categoryLockedDuringCall(call: call.id, requested: category)) }
            s.category = category

        case .hostSetMode(let mode):
            s.mode = mode

        case .applicationActivate:
            if let interruption = s.interruption { return refuse(.activationDuringInterruption(interruption.source)) }
            s.applicationActivated = true

        case .applicationDeactivate:
            if case .established(let call) = s.phase { return refuse(.deactivationDuringCall(call.id)) }
            s.applicationActivated = false

        case .callProgressing(let id), .callEstablished(let id):
            let establish = if case .callEstablished = event { true } else { false }
            if let call = s.phase.call, call.id != id {
                return refuse(.anotherCallActive(active: call.id, requested: id))
            }
            guard s.engineStarted else { return refuse(.engineNotStarted) }
            guard s.category == .playAndRecord else { return refuse(.categoryCannotRecord(s.category)) }
            switch s.phase {
            case .idle:
                var call = CallContext(id: id, startedAt: time)
                if s.interruption != nil {
                    // The call arrives into an interruption: it is interrupted from now, and its timeout runs.
                    call.interruptionCount = 1
                    call.interruptedSince = time
                }
                if establish {
                    call.establishedAt = time
                    s.phase = .established(call)
                } else {
                    s.phase = .progressing(call)
                    post.append(.startProgressTone(id))
                }
            case .progressing(var call):
                if establish {
                    call.establishedAt = time
                    s.phase = .established(call)
                    pre.append(.stopProgressTone)
                }
            case .established:
                break  // already established: a late ringing or a repeated establish changes nothing
            }

        case .callEnded(let id, let cause):
            guard let call = s.phase.call, call.id == id else {
                return refuse(.unknownCall(id, active: s.phase.call?.id))
            }
            if s.phase.isProgressing { pre.append(.stopProgressTone) }
            post.append(.callReport(endCall(&s, at: time, cause: cause)))

        case .interruptionBegan(let source):
            if s.interruption == nil {
                s.interruption = SessionInterruption(source: source, began: time)
                s.applicationActivated = false
                if var call = s.phase.call {
                    call.interruptionCount += 1
                    call.interruptedSince = time
                    s.phase = s.phase.with(call)
                }
            }

        case .interruptionEnded:
            if s.interruption != nil {
                s.interruption = nil
                if var call = s.phase.call, let since = call.interruptedSince {
                    call.interruptedDuration += time - since
                    call.interruptedSince = nil
                    s.phase = s.phase.with(call)
                    flush = s.phase.isEstablished
                }
            }

        case .tick:
            break
        }

        return SessionTransition(
            state: s,
            effects: derivedEffects(from: state, to: s, pre: timeoutEffects + pre, flush: flush, post: post),
            refusal: nil)
    }

    /// Ends the current call if its interruption has lasted the timeout, effective at the deadline.
    private static func expireInterruptedCall(
        _ s: inout AudioSessionState, at time: MediaTime, into effects: inout [SessionEffect]
    ) {
        guard let call = s.phase.call, let deadline = s.interruptionDeadline, time >= deadline else { return }
        if s.phase.isProgressing { effects.append(.stopProgressTone) }
        let report = endCall(&s, at: deadline, cause: .interruptionTimeout)
        effects += [.endCall(call.id, cause: .interruptionTimeout), .callReport(report)]
    }

    /// Closes the current call's books at `time`, returns to idle, and clears the application's activation
    /// (it must activate again after each call).
    private static func endCall(
        _ s: inout AudioSessionState, at time: MediaTime, cause: CallEndCause
    ) -> CallStatisticsReport {
        var call = s.phase.call!
        if let since = call.interruptedSince {
            call.interruptedDuration += time - since
            call.interruptedSince = nil
        }
        let report = CallStatisticsReport(call: call, cause: cause, endedAt: time, state: s)
        s.phase = .idle
        s.applicationActivated = false
        return report
    }

    /// `pre`, then the device effects that take the devices from `old`'s derived state to `new`'s, then `post`.
    private static func derivedEffects(
        from old: AudioSessionState, to new: AudioSessionState, pre: [SessionEffect], flush: Bool = false,
        post: [SessionEffect] = []
    ) -> [SessionEffect] {
        var effects = pre
        if old.isCaptureRunning && !new.isCaptureRunning { effects.append(.stopCapture) }
        if old.isPlayoutRunning && !new.isPlayoutRunning { effects.append(.stopPlayout) }
        if old.isActive && !new.isActive { effects.append(.deactivateSession) }
        if !old.isActive && new.isActive { effects.append(.activateSession) }
        if let on = new.voiceProcessing, on != old.voiceProcessing { effects.append(.setVoiceProcessing(on)) }
        if flush { effects.append(.flushBuffers) }
        if !old.isPlayoutRunning && new.isPlayoutRunning { effects.append(.startPlayout) }
        if !old.isCaptureRunning && new.isCaptureRunning { effects.append(.startCapture) }
        return effects + post
    }

    /// The session event a device event means, or nil for device events the session does not act on (xruns
    /// and end of a file-backed input are counted by the device, not the session's business).
    ///
    /// | Device event | Session event |
    /// |---|---|
    /// | interruptionBegan(suspended / deviceLost / deviceBusy) | interruptionBegan(.device(reason)) |
    /// | interruptionEnded | interruptionEnded |
    /// | xrun, endOfInput | nil |
    public static func sessionEvent(for deviceEvent: DeviceEvent) -> SessionEvent? {
        switch deviceEvent {
        case .interruptionBegan(let reason): .interruptionBegan(.device(reason))
        case .interruptionEnded: .interruptionEnded
        case .xrun, .endOfInput: nil
        }
    }
}
