import VoiceEngine

/// A call object: the ``CallStateMachine`` plus the engine's audio session. Progress takes the session and plays
/// the progress tone, establishment activates it, the end releases it and keeps the end-of-call report in
/// ``details``. The dialog layer feeds SIP through ``dialog(_:)`` and carries out the `send…` effects it gets
/// back (and from ``updates``); the app calls ``answer()``, ``hangup()``, ``mute(_:)``, ``hold(_:)``.
///
/// The audio session holds one call at a time: a call that cannot take it (another call is live) fails with a
/// media error instead of playing over the other.
public actor Call {
    public nonisolated let id: CallID
    public nonisolated let direction: CallDirection
    /// The other party's user ID, SIP address or number.
    public nonisolated let remote: String
    /// Custom `x-` headers of the call.
    public nonisolated let headers: [String: String]
    /// Every state change and effect, in order. Finished when the call ends.
    public nonisolated let updates: AsyncStream<CallEffect>

    private let continuation: AsyncStream<CallEffect>.Continuation
    /// The same effects for the client's dialog driver, which carries out the `send…` ones (the app keeps
    /// ``updates`` to itself).
    nonisolated let driverEffects: AsyncStream<CallEffect>
    private let driverContinuation: AsyncStream<CallEffect>.Continuation
    private var machine: CallStateMachine
    private let audioSession: AudioSession
    private let clock: any MediaClock
    private var holdsAudio = false

    public init(
        id: CallID, direction: CallDirection, remote: String, headers: [String: String] = [:],
        audioSession: AudioSession,
        clock: any MediaClock, noAnswerTimeout: MediaTime = CallStateMachine.defaultNoAnswerTimeout,
        viaPush: Bool = false
    ) {
        self.id = id
        self.direction = direction
        self.remote = remote
        self.headers = headers
        self.audioSession = audioSession
        self.clock = clock
        machine = CallStateMachine(
            direction: direction, startedAt: clock.now, noAnswerTimeout: noAnswerTimeout, viaPush: viaPush)
        (updates, continuation) = AsyncStream.makeStream(of: CallEffect.self)
        (driverEffects, driverContinuation) = AsyncStream.makeStream(of: CallEffect.self)
        for effect in machine.initialEffects {
            continuation.yield(effect)
            driverContinuation.yield(effect)
        }
    }

    /// The media's end-of-call report (RTP, loss, jitter, codec, quality), once the media of an established call
    /// has stopped — just after the end (``CallDetails/report`` is the audio session's part).
    public private(set) var mediaReport: CallReport?

    func attachMedia(_ report: CallReport) { mediaReport = report }

    public var state: CallState { machine.state }
    public var details: CallDetails { machine.details }
    public var isMuted: Bool { machine.muted }
    public var isOnHold: Bool { machine.onHold }

    @discardableResult public func answer() async throws(CallRefusal) -> [CallEffect] { try await apply(.answer) }
    @discardableResult public func hangup() async throws(CallRefusal) -> [CallEffect] { try await apply(.hangup) }
    @discardableResult public func mute(_ on: Bool) async throws(CallRefusal) -> [CallEffect] {
        try await apply(.mute(on))
    }
    @discardableResult public func hold(_ on: Bool) async throws(CallRefusal) -> [CallEffect] {
        try await apply(.hold(on))
    }
    /// Ends an unanswered call at the no-answer timeout; call it periodically.
    @discardableResult public func tick() async -> [CallEffect] { (try? await apply(.tick)) ?? [] }

    /// An event from the dialog layer.
    @discardableResult public func dialog(_ event: CallEvent) async throws(CallRefusal) -> [CallEffect] {
        try await apply(event)
    }

    /// Yields an effect outside the state machine (DTMF): to the app's ``updates`` and/or the dialog driver.
    func yield(_ effect: CallEffect, toApp: Bool, toDriver: Bool) {
        if toApp { continuation.yield(effect) }
        if toDriver { driverContinuation.yield(effect) }
    }

    private func apply(_ event: CallEvent) async throws(CallRefusal) -> [CallEffect] {
        let before = machine.state
        var effects = try machine.handle(event, at: clock.now)
        if machine.state != before { effects += await followAudio(from: before) }
        for effect in effects {
            continuation.yield(effect)
            driverContinuation.yield(effect)
        }
        if machine.state == .ended {
            continuation.finish()
            driverContinuation.finish()
        }
        return effects
    }

    /// Moves the audio session with the call; a refusal by the session ends the call with a media failure.
    private func followAudio(from before: CallState) async -> [CallEffect] {
        do {
            switch machine.state {
            case .progressing, .ringing:
                if !holdsAudio {
                    try await audioSession.callProgressing(id)
                    holdsAudio = true
                }
            case .established:
                try await audioSession.callEstablished(id)
                holdsAudio = true
            case .ended:
                if holdsAudio {
                    holdsAudio = false
                    if let report = try? await audioSession.callEnded(
                        id, cause: machine.details.endCause?.sessionReason ?? .failed)
                    {
                        machine.attach(report)
                    } else if let report = await audioSession.lastReport, report.callID == id {
                        // The session had ended the call itself (interruption timeout).
                        machine.attach(report)
                    }
                }
            case .initiating:
                break
            }
            return []
        } catch {
            let refused =
                (try? machine.handle(.failed(.media("the audio session refused the call: \(error)")), at: clock.now))
                ?? []
            return refused
        }
    }
}
