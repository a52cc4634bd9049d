import VoiceEngine

/// A call object: the ``CallStateMachine`` plus the engine's audio session. Progress takes the session and plays
/// the progress tone, establishment activates it, the end releases it and keeps the end-of-call report in
/// ``details``. The dialog layer feeds SIP through ``dialog(_:)`` and carries out the `send…` effects it gets
/// back (and from ``updates``); the app calls ``answer()``, ``hangup()``, ``mute(_:)``, ``hold(_:)``.
///
/// The audio session and the devices belong to one call at a time, the one whose audio is live. Holding a call
/// gives them up: its media moves off the devices (it goes on without any, on the same socket and keys, so RTCP
/// and the peer's view of the call continue), which lets another call be answered or placed (call waiting).
/// Resuming takes them back (a `file:` speaker is written afresh) and is refused while another call has them.
/// Answering while another call's audio is live is refused too: the app holds or ends that call first, as CallKit
/// asks with its hold-and-answer action. Ending a call resumes no other call: that is the app's choice.
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
    /// The audio session's report of the call's audio until it was last held, for a call that ends while held.
    private var heldReport: CallStatisticsReport?
    /// Moves the call's media to other devices (its ``CallLink``); nil for a call not bound to SIP.
    private var deviceSwitch: (@Sendable (CallAudioDevices) async throws(CallDeviceError) -> Void)?

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
    /// has stopped — just after the end (``CallDetails/report`` is the audio session's part). It covers the media
    /// since it last moved to other devices (a hold, a resume, ``setAudioDevices(_:)``); ``mediaReports`` has
    /// every stretch.
    public var mediaReport: CallReport? { mediaReports.last }
    /// One report per stretch of media, in order: each move to other devices starts a new one (the media runs
    /// there with a new SSRC).
    public private(set) var mediaReports: [CallReport] = []

    func attachMedia(_ report: CallReport) { mediaReports.append(report) }

    public var state: CallState { machine.state }
    public var details: CallDetails { machine.details }
    public var isMuted: Bool { machine.muted }
    public var isOnHold: Bool { machine.onHold }
    /// Whether a device interruption pauses the call's audio (``CallEffect/mediaInterrupted(_:)``).
    public var isMediaInterrupted: Bool { machine.mediaInterrupted }

    /// Answers an incoming call; refused while another call's audio is live (hold or end that one first).
    @discardableResult public func answer() async throws(CallRefusal) -> [CallEffect] {
        try await refuseWhileAnotherCallIsLive(.answer)
        return try await apply(.answer)
    }
    @discardableResult public func hangup() async throws(CallRefusal) -> [CallEffect] { try await apply(.hangup) }
    @discardableResult public func mute(_ on: Bool) async throws(CallRefusal) -> [CallEffect] {
        try await apply(.mute(on))
    }
    /// Holds (re-INVITE `sendonly`) or resumes (`sendrecv`) the established call. Holding frees the audio
    /// session and the devices for another call; resuming is refused while another call has them.
    @discardableResult public func hold(_ on: Bool) async throws(CallRefusal) -> [CallEffect] {
        if !on, machine.onHold { try await refuseWhileAnotherCallIsLive(.hold(false)) }
        return try await apply(.hold(on))
    }

    /// Moves the call's audio to other devices (ALSA names, `file:…`, `null`) without dropping it: the media
    /// goes on on the same socket and keys. A held call takes them when resumed. Before the call is established
    /// they are the ones its media will open.
    /// - Throws: ``CallDeviceError`` (the call stays on its previous devices).
    public func setAudioDevices(_ devices: CallAudioDevices) async throws(CallDeviceError) {
        guard machine.state != .ended else { throw .ended }
        guard let deviceSwitch else { throw .noMedia }
        try await deviceSwitch(devices)
    }

    func bindDeviceSwitch(_ handler: @escaping @Sendable (CallAudioDevices) async throws(CallDeviceError) -> Void) {
        deviceSwitch = handler
    }

    private func refuseWhileAnotherCallIsLive(_ event: CallEvent) async throws(CallRefusal) {
        if let other = await audioSession.state.phase.call?.id, other != id {
            throw CallRefusal(
                event: event, state: machine.state, reason: "call \(other) has the audio: hold or end it first")
        }
    }
    /// Ends an unanswered call at the no-answer timeout, and an established one whose audio interruption has
    /// outlasted the audio session's interruption timeout; call it periodically.
    @discardableResult public func tick() async -> [CallEffect] {
        if machine.state == .established, machine.mediaInterrupted,
            let deadline = await audioSession.interruptionDeadline,
            clock.now >= deadline
        {
            let sessionEffects = await audioSession.tick()
            if sessionEffects.contains(where: {
                if case .endCall(id, .interruptionTimeout) = $0 { true } else { false }
            }) {
                let timeout = await audioSession.state.configuration.interruptionTimeout
                return (try? await apply(.interruptionTimeout(timeout))) ?? []
            }
        }
        return (try? await apply(.tick)) ?? []
    }

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
        let wasInterrupted = machine.mediaInterrupted
        var effects = try machine.handle(event, at: clock.now)
        if machine.state != before { effects += await followAudio(from: before) }
        for case .sendHold(let on) in effects where machine.state == .established { effects += await followHold(on) }
        for effect in effects {
            // The audio session's interruption rules (its timeout, its report) apply to the call's devices.
            switch effect {
            case .mediaInterrupted(let reason): _ = try? await audioSession.send(.interruptionBegan(.device(reason)))
            case .mediaResumed: _ = try? await audioSession.send(.interruptionEnded)
            default: break
            }
        }
        if wasInterrupted, machine.state == .ended {
            // The interrupted devices closed with the call: the next call does not begin interrupted.
            _ = try? await audioSession.send(.interruptionEnded)
        }
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

    /// Holding gives the audio session up (keeping its report for an end while held), resuming takes it again;
    /// a refusal by the session ends the call with a media failure.
    private func followHold(_ on: Bool) async -> [CallEffect] {
        if on {
            guard holdsAudio else { return [] }
            holdsAudio = false
            heldReport = try? await audioSession.callEnded(id, cause: .localHangup)
            return []
        }
        do {
            try await audioSession.callEstablished(id)
            holdsAudio = true
            return []
        } catch {
            return
                (try? machine.handle(
                    .failed(.media("the audio session refused the resumed call: \(error)")), at: clock.now)) ?? []
        }
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
                if !holdsAudio, let heldReport {
                    machine.attach(heldReport)
                } else if holdsAudio {
                    holdsAudio = false
                    if let report = try? await audioSession.callEnded(
                        id, cause: machine.details.endCause ?? .failure)
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
