import VoiceCore

/// One applied (or refused) event, as published on ``AudioSession/updates``.
public struct AudioSessionUpdate: Sendable, Equatable {
    /// When the event happened, on the session's media clock.
    public var time: MediaTime
    /// The event.
    public var event: SessionEvent
    /// The state after it.
    public var state: AudioSessionState
    /// What the engine must do, in order (empty for most refusals).
    public var effects: [SessionEffect]
    /// Why the event was refused, or nil.
    public var refusal: AudioSessionError?
}

/// The audio session of one engine: applies ``AudioSessionMachine/transition(_:_:at:)`` to its state, one event
/// at a time, stamps each event with the injected ``MediaClock``, and publishes every update as an `AsyncStream`.
///
/// Time is never read from the wall clock: the interruption timeout is checked on every event, and the engine
/// calls ``tick()`` periodically (once a second is plenty) so a call stuck in an interruption is ended even when
/// nothing else happens. With a ``ManualClock`` a 30 s timeout passes in no time, so tests run in fast time.
///
/// When given an ``AudioController``, the session plays and stops the ringback tone itself (the
/// ``SessionEffect/startProgressTone(_:)`` and ``SessionEffect/stopProgressTone`` effects); every other effect is
/// the engine's to carry out, from the returned list or from ``updates``.
///
/// One-call policy: only one call's audio is live at a time, and a second call is **refused**
/// (``AudioSessionError/anotherCallActive(active:requested:)``) rather than putting the first on hold. Holding
/// would need the session to keep two calls' media, timers and reports consistent while only one may use the
/// devices; refusing keeps the invariant simple (the microphone belongs to the call that holds the session) and
/// the calling client, which owns call-waiting logic, ends or holds the first call at the signalling level and
/// then establishes the second.
public actor AudioSession {
    /// Every event and its outcome, in order. Single consumer; finished when the session is deallocated.
    public nonisolated let updates: AsyncStream<AudioSessionUpdate>
    private let continuation: AsyncStream<AudioSessionUpdate>.Continuation
    private let clock: any MediaClock
    private let controller: AudioController?

    /// The current state.
    public private(set) var state: AudioSessionState
    /// The report of the last call that ended, if any.
    public private(set) var lastReport: CallStatisticsReport?

    /// - Parameters:
    ///   - clock: the media clock every event is stamped with.
    ///   - configuration: the interruption timeout.
    ///   - controller: plays the progress tone; nil to leave tones to the engine.
    ///   - bufferingPolicy: how many unread updates ``updates`` keeps (the newest 256 by default).
    public init(
        clock: any MediaClock, configuration: AudioSessionConfiguration = AudioSessionConfiguration(),
        controller: AudioController? = nil,
        bufferingPolicy: AsyncStream<AudioSessionUpdate>.Continuation.BufferingPolicy = .bufferingNewest(256)
    ) {
        self.clock = clock
        self.controller = controller
        state = AudioSessionState(configuration: configuration)
        (updates, continuation) = AsyncStream.makeStream(of: AudioSessionUpdate.self, bufferingPolicy: bufferingPolicy)
    }

    deinit { continuation.finish() }

    /// Applies `event` now.
    /// - Returns: the effects the engine must carry out, in order.
    /// - Throws: the refusal; the state is then unchanged (apart from an interruption timeout that was due).
    @discardableResult
    public func send(_ event: SessionEvent) throws(AudioSessionError) -> [SessionEffect] {
        let now = clock.now
        let transition = AudioSessionMachine.transition(state, event, at: now)
        state = transition.state
        for effect in transition.effects {
            switch effect {
            case .startProgressTone: controller?.startPlayingTone(.ringback)
            case .stopProgressTone: controller?.stopPlayingTone()
            case .callReport(let report): lastReport = report
            default: break
            }
        }
        continuation.yield(
            AudioSessionUpdate(
                time: now, event: event, state: transition.state, effects: transition.effects,
                refusal: transition.refusal))
        if let refusal = transition.refusal { throw refusal }
        return transition.effects
    }

    /// Starts the engine's session: sets `playAndRecord` + `voiceChat` the first time only. Never refused.
    @discardableResult
    public func startEngine() -> [SessionEffect] { apply(.engineStarted) }

    /// Lets time pass: ends a call whose interruption has lasted the timeout. Never refused.
    @discardableResult
    public func tick() -> [SessionEffect] { apply(.tick) }

    /// Reports a device event (see ``AudioSessionMachine/sessionEvent(for:)`` for the mapping). Interruption
    /// events are never refused; events the session does not act on return no effects.
    @discardableResult
    public func handle(_ deviceEvent: DeviceEvent) -> [SessionEffect] {
        guard let event = AudioSessionMachine.sessionEvent(for: deviceEvent) else { return [] }
        return apply(event)
    }

    /// Feeds a device's events to the session until the stream finishes (the device is closed). Run it in a
    /// task per device: `Task { await session.monitor(device.events) }`.
    public func monitor(_ events: AsyncStream<DeviceEvent>) async {
        for await event in events { handle(event) }
    }

    // MARK: Call-audio lifecycle, for a calling client to wire to its call states

    /// The remote side is ringing: starts the progress tone (and the playout it needs).
    /// - Throws: engine not started, wrong category, or another call holds the session.
    @discardableResult
    public func callProgressing(_ call: CallID) throws(AudioSessionError) -> [SessionEffect] {
        try send(.callProgressing(call))
    }

    /// Media is established both ways: stops the progress tone, activates the session, opens the microphone.
    /// - Throws: engine not started, wrong category (the message names it), or another call holds the session.
    @discardableResult
    public func callEstablished(_ call: CallID) throws(AudioSessionError) -> [SessionEffect] {
        try send(.callEstablished(call))
    }

    /// The call ended: stops media, deactivates the session, and returns the end-of-call report.
    /// - Throws: ``AudioSessionError/unknownCall(_:active:)`` if `call` does not hold the session (for example
    ///   because the session already ended it on an interruption timeout; its report is then ``lastReport``).
    @discardableResult
    public func callEnded(_ call: CallID, cause: CallEndCause) throws(AudioSessionError)
        -> CallStatisticsReport
    {
        for case .callReport(let report) in try send(.callEnded(call, cause: cause)) { return report }
        preconditionFailure("an accepted callEnded always reports")
    }

    /// When the current call's interruption times out, if it is interrupted: the engine can schedule a tick.
    public var interruptionDeadline: MediaTime? { state.interruptionDeadline }

    /// For the events that the table never refuses.
    private func apply(_ event: SessionEvent) -> [SessionEffect] {
        do { return try send(event) } catch { preconditionFailure("\(event) is never refused, but was: \(error)") }
    }
}
