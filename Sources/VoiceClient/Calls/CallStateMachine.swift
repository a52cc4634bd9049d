import Foundation
import VoiceEngine

/// What happens to a call: from the app (answer, hang up, mute, hold), from the dialog layer (provisional and
/// final responses, BYE, CANCEL) and from time (the no-answer timeout).
public enum CallEvent: Sendable, Hashable, CustomStringConvertible {
    // The app
    case answer
    case hangup
    case mute(Bool)
    case hold(Bool)
    // The dialog layer
    /// 183 Session Progress (or a 180 the app treats as progress): play the progress tone.
    case progress
    /// 180 Ringing.
    case ringing
    /// The dialog is confirmed (2xx and ACK) and media flows.
    case established
    /// The remote side sent BYE.
    case remoteHangup
    /// The remote side declined (486, 600, 603) — for the caller.
    case remoteDeclined(status: Int, reason: String)
    /// The callee's side gave up ringing (480 Temporarily Unavailable from its no-answer timeout, or 408) — for
    /// the caller. From a ringing (or progressing) call this is *no answer*, as the SDKs report it; before any ringing a 480 is a
    /// failure (the callee cannot be reached) and a 408 a timeout.
    case remoteNoAnswer(status: Int, reason: String)
    /// The caller canceled (CANCEL) — for the callee.
    case remoteCanceled
    /// CANCEL with "call completed elsewhere" — for the callee.
    case answeredElsewhere
    case transferred
    /// Any other failure, with its domain.
    case failed(CallError)
    /// No answer from the network (Timer B).
    case networkTimeout
    // The media
    /// A device stopped delivering audio; the call's audio is paused.
    case mediaInterrupted(InterruptionReason)
    /// The devices deliver again; the call's audio resumed.
    case mediaResumed
    /// The media's quality over the last interval.
    case mediaQuality(CallQuality)
    /// Nothing (neither RTP nor RTCP) arrived for `silence`: the peer or the network is gone.
    case mediaTimeout(silence: MediaTime)
    /// An interruption outlasted the audio session's interruption timeout (the session ended the call's audio).
    case interruptionTimeout(MediaTime)
    // Time
    case tick

    public var description: String {
        switch self {
        case .answer: "answer"
        case .hangup: "hangup"
        case .mute(let on): "mute(\(on))"
        case .hold(let on): "hold(\(on))"
        case .progress: "progress"
        case .ringing: "ringing"
        case .established: "established"
        case .remoteHangup: "remoteHangup"
        case .remoteDeclined(let status, _): "remoteDeclined(\(status))"
        case .remoteNoAnswer(let status, _): "remoteNoAnswer(\(status))"
        case .remoteCanceled: "remoteCanceled"
        case .answeredElsewhere: "answeredElsewhere"
        case .transferred: "transferred"
        case .failed(let error): "failed(\(error))"
        case .networkTimeout: "networkTimeout"
        case .mediaInterrupted(let reason): "mediaInterrupted(\(reason))"
        case .mediaResumed: "mediaResumed"
        case .mediaQuality(let quality): "mediaQuality(\(quality.networkQuality))"
        case .mediaTimeout(let silence): "mediaTimeout(\(silence.seconds) s)"
        case .interruptionTimeout(let timeout): "interruptionTimeout(\(timeout.seconds) s)"
        case .tick: "tick"
        }
    }
}

/// What the dialog layer and the audio must do because of an event, in order.
public enum CallEffect: Sendable, Hashable {
    /// Callee: send 200 OK with the answer.
    case sendAnswer
    /// Callee: decline an unanswered call (the caller sees *denied*), or 480 on the no-answer timeout.
    case sendDecline(status: Int)
    /// Caller: CANCEL the unanswered INVITE.
    case sendCancel
    /// Either side: BYE the established call.
    case sendBye
    /// re-INVITE with `a=sendonly` (true) or `a=sendrecv` (false).
    case sendHold(Bool)
    case setMicrophoneMuted(Bool)
    /// Callee: the app's ringtone, until answered or ended.
    case startRingtone
    case stopRingtone
    /// The call moved to `state` (an event for the app).
    case stateChanged(CallState)
    /// The established call's audio paused: a device stopped delivering (an event for the app). Unless
    /// ``mediaResumed`` follows within the interruption timeout (30 s), the call ends with
    /// `CallEndCause.interruptionTimeout`.
    case mediaInterrupted(InterruptionReason)
    /// The devices deliver again and the call's audio resumed (an event for the app).
    case mediaResumed
    /// The established call's receive quality over the last interval (an event for the app, every quality
    /// interval: ``CallHealthConfiguration/qualityInterval``).
    case qualityUpdated(CallQuality)
    /// Send these DTMF keys (``Call/sendDTMF(_:)``): RFC 4733 in the media when negotiated, else SIP INFO.
    case sendDTMF([DTMFDigit])
    /// The peer pressed a key (an event for the app): from the media (RFC 4733) or a SIP INFO.
    case dtmfReceived(DTMFDigit)
    /// The address the call's media is bound to left the host (an event for the app, from the client's network
    /// watch): ``reconnected`` follows if it comes back within the network loss timeout
    /// (``VoiceClientConfiguration/networkLossTimeout``), otherwise the call ends with *failure*, error *network*.
    case reconnecting
    /// The call's address is back and its media flows again (an event for the app).
    case reconnected
}

/// Why an event was refused; the call is unchanged.
public struct CallRefusal: Error, Sendable, Hashable, CustomStringConvertible {
    public var event: CallEvent
    public var state: CallState
    /// Why, when the state alone does not say it (another call has the audio).
    public var reason: String?
    public init(event: CallEvent, state: CallState, reason: String? = nil) {
        self.event = event
        self.state = state
        self.reason = reason
    }
    public var description: String {
        "\(event) is not allowed in state \(state)" + (reason.map { ": \($0)" } ?? "")
    }
}

/// The call object's state machine, pure: events in, new state and effects out, times from outside. The
/// dialog layer (the client's SIP INVITE dialogs) turns SIP into ``CallEvent``s and carries out the send-effects;
/// ``Call`` applies the audio side to the engine's ``AudioSession``.
public struct CallStateMachine: Sendable, Hashable {
    public let direction: CallDirection
    public private(set) var state: CallState = .initiating
    public private(set) var details: CallDetails
    public private(set) var muted = false
    public private(set) var onHold = false
    /// The established call's audio is paused by a device interruption.
    public private(set) var mediaInterrupted = false
    /// Callee: `answer()` was called and the dialog layer is confirming it.
    public private(set) var answered = false
    /// Unanswered calls end with *no answer* after this long.
    public let noAnswerTimeout: MediaTime

    public static let defaultNoAnswerTimeout = MediaTime.seconds(60)

    /// - Parameter startedAtWallClock: the wall-clock time at `startedAt` (``CallDetails/startedAtWallClock``).
    public init(
        direction: CallDirection, startedAt: MediaTime, startedAtWallClock: Date = Date(),
        noAnswerTimeout: MediaTime = defaultNoAnswerTimeout, viaPush: Bool = false
    ) {
        self.direction = direction
        self.noAnswerTimeout = noAnswerTimeout
        details = CallDetails(startedAt: startedAt, startedAtWallClock: startedAtWallClock, viaPush: viaPush)
    }

    /// The effects a new call starts with (the callee's ringtone).
    public var initialEffects: [CallEffect] { direction == .incoming ? [.startRingtone] : [] }

    /// Applies `event` at `now`.
    /// - Returns: the effects, in order (empty for a tick with nothing due).
    /// - Throws: ``CallRefusal`` when the diagram does not allow the event now; nothing changes.
    public mutating func handle(_ event: CallEvent, at now: MediaTime) throws(CallRefusal) -> [CallEffect] {
        let refuse = CallRefusal(event: event, state: state)
        if state == .ended {
            // Late network events after the end are dropped; the app's requests are refused.
            switch event {
            case .tick, .remoteHangup, .remoteCanceled, .answeredElsewhere, .networkTimeout, .failed, .progress,
                .ringing, .established,
                .remoteDeclined, .remoteNoAnswer, .transferred, .mediaInterrupted, .mediaResumed, .mediaQuality,
                .mediaTimeout, .interruptionTimeout:
                return []
            default: throw refuse
            }
        }
        let unanswered = state != .established
        switch event {
        case .tick:
            guard unanswered, now - details.startedAt >= noAnswerTimeout else { return [] }
            return end(.noAnswer, at: now, send: direction == .outgoing ? .sendCancel : .sendDecline(status: 480))
        case .answer:
            guard direction == .incoming, unanswered, !answered else { throw refuse }
            answered = true
            return [.stopRingtone, .sendAnswer]
        case .hangup:
            if !unanswered { return end(.localHangup, at: now, send: .sendBye) }
            // The callee answered (its 2xx is out, the ACK not yet in): the INVITE can no longer be declined, so the
            // call is hung up with a BYE — the caller may already be established.
            if direction == .incoming && answered { return end(.localHangup, at: now, send: .sendBye) }
            // The callee hanging up before answering declines: both sides see *denied*.
            return direction == .outgoing
                ? end(.canceled, at: now, send: .sendCancel) : end(.denied, at: now, send: .sendDecline(status: 603))
        case .mute(let on):
            guard !unanswered else { throw refuse }
            guard on != muted else { return [] }
            muted = on
            return [.setMicrophoneMuted(on)]
        case .hold(let on):
            guard !unanswered else { throw refuse }
            guard on != onHold else { return [] }
            onHold = on
            return [.sendHold(on)]
        case .progress, .ringing:
            guard direction == .outgoing else { throw refuse }
            let next: CallState = event == .progress ? .progressing : .ringing
            guard next != state else { return [] }
            guard state.allows(next) else { throw refuse }
            return move(to: next, at: now)
        case .established:
            guard unanswered, direction == .outgoing || answered else { throw refuse }
            return move(to: .established, at: now)
        case .remoteHangup:
            return end(unanswered ? (direction == .outgoing ? .failure : .canceled) : .remoteHangup, at: now, send: nil)
        case .remoteDeclined(let status, let reason):
            guard direction == .outgoing, unanswered else { throw refuse }
            details.error = .sip(status: status, reason: reason)
            return end(.denied, at: now, send: nil)
        case .remoteNoAnswer(let status, let reason):
            guard direction == .outgoing, unanswered else { throw refuse }
            details.error = .sip(status: status, reason: reason)
            if state == .ringing || state == .progressing { return end(.noAnswer, at: now, send: nil) }
            return end(status == 408 ? .timeout : .failure, at: now, send: nil)
        case .remoteCanceled:
            guard direction == .incoming, unanswered else { throw refuse }
            return end(.canceled, at: now, send: nil)
        case .answeredElsewhere:
            guard direction == .incoming, unanswered else { throw refuse }
            return end(.otherDeviceAnswered, at: now, send: nil)
        case .transferred:
            return end(.transferred, at: now, send: unanswered ? nil : .sendBye)
        case .failed(let error):
            details.error = error
            return end(.failure, at: now, send: unanswered ? (direction == .outgoing ? .sendCancel : nil) : .sendBye)
        case .networkTimeout:
            details.error = .network("no answer from the network")
            return end(.timeout, at: now, send: nil)
        case .mediaInterrupted(let reason):
            // Media runs only once established; an interruption before (or a repeated one) changes nothing.
            guard !unanswered, !mediaInterrupted else { return [] }
            mediaInterrupted = true
            return [.mediaInterrupted(reason)]
        case .mediaResumed:
            guard mediaInterrupted else { return [] }
            mediaInterrupted = false
            return [.mediaResumed]
        case .mediaQuality(let quality):
            guard !unanswered else { return [] }
            return [.qualityUpdated(quality)]
        case .mediaTimeout(let silence):
            guard !unanswered else { return [] }
            // BYE, so the peer (if it is still there) ends too instead of waiting for its own timeout.
            details.error = .network("no media received for \(Int(silence.seconds.rounded())) s")
            return end(.timeout, at: now, send: .sendBye)
        case .interruptionTimeout(let timeout):
            guard !unanswered else { return [] }
            details.error = .media("the audio devices were interrupted for \(Int(timeout.seconds.rounded())) s")
            return end(.interruptionTimeout, at: now, send: .sendBye)
        }
    }

    /// Records the end-of-call report the audio session produced, with the call's end cause: a call that gave the
    /// audio to another call (held for call waiting) had its audio ended before the call itself.
    public mutating func attach(_ report: CallStatisticsReport) {
        var report = report
        if let cause = details.endCause { report.endCause = cause }
        details.report = report
    }

    private mutating func move(to next: CallState, at now: MediaTime) -> [CallEffect] {
        precondition(state.allows(next), "\(state) → \(next) is not in the diagram")
        state = next
        switch next {
        case .progressing, .ringing: if details.progressedAt == nil { details.progressedAt = now }
        case .established: details.establishedAt = now
        case .ended: details.endedAt = now
        case .initiating: break
        }
        return [.stateChanged(next)]
    }

    private mutating func end(_ cause: CallEndCause, at now: MediaTime, send: CallEffect?) -> [CallEffect] {
        details.endCause = cause
        var effects: [CallEffect] = []
        if direction == .incoming, state != .established, !answered { effects.append(.stopRingtone) }
        if let send { effects.append(send) }
        if muted {
            muted = false
            effects.append(.setMicrophoneMuted(false))
        }
        onHold = false
        mediaInterrupted = false
        return effects + move(to: .ended, at: now)
    }
}
