import Foundation
import Testing
import VoiceClient
import VoiceTestSupport

@Suite("Call object: the state diagram and the audio session")
struct CallStateMachineTests {
    @Test func outgoingCallProgressesRingsIsEstablishedAndHungUp() throws {
        var call = CallStateMachine(direction: .outgoing, startedAt: .seconds(1))
        #expect(try call.handle(.progress, at: .seconds(2)) == [.stateChanged(.progressing)])
        #expect(try call.handle(.ringing, at: .seconds(3)) == [.stateChanged(.ringing)])
        #expect(try call.handle(.established, at: .seconds(5)) == [.stateChanged(.established)])
        #expect(try call.handle(.mute(true), at: .seconds(6)) == [.setMicrophoneMuted(true)])
        #expect(try call.handle(.hold(true), at: .seconds(7)) == [.sendHold(true)])
        #expect(
            try call.handle(.hangup, at: .seconds(65)) == [.sendBye, .setMicrophoneMuted(false), .stateChanged(.ended)])
        let details = call.details
        #expect(details.progressedAt == .seconds(2))
        #expect(details.establishedAt == .seconds(5))
        #expect(details.endedAt == .seconds(65))
        #expect(details.duration == .seconds(60))
        #expect(details.endCause == .localHangup)
        // The no-answer timeout does not apply to an established call, and nothing moves an ended one.
        #expect(try call.handle(.tick, at: .seconds(200)) == [])
        #expect(throws: CallRefusal.self) { try call.handle(.answer, at: .seconds(201)) }
    }

    @Test func wallClockTimesFollowTheMonotonicOnes() throws {
        let wall = Date(timeIntervalSince1970: 1_800_000_000)
        var call = CallStateMachine(direction: .outgoing, startedAt: .seconds(1), startedAtWallClock: wall)
        _ = try call.handle(.ringing, at: .seconds(2.5))
        _ = try call.handle(.established, at: .seconds(4))
        _ = try call.handle(.hangup, at: .seconds(34))
        let details = call.details
        #expect(details.startedAtWallClock == wall)
        #expect(details.progressedAtWallClock == wall.addingTimeInterval(1.5))
        #expect(details.establishedAtWallClock == wall.addingTimeInterval(3))
        #expect(details.endedAtWallClock == wall.addingTimeInterval(33))
    }

    @Test func endCausesOfTheCaller() throws {
        func ended(_ events: [CallEvent]) throws -> CallDetails {
            var call = CallStateMachine(direction: .outgoing, startedAt: .zero)
            for (index, event) in events.enumerated() { _ = try call.handle(event, at: .seconds(Double(index))) }
            return call.details
        }
        #expect(try ended([.progress, .remoteDeclined(status: 603, reason: "Decline")]).endCause == .denied)
        #expect(
            try ended([.progress, .remoteDeclined(status: 486, reason: "Busy Here")]).error
                == .sip(status: 486, reason: "Busy Here"))
        #expect(try ended([.ringing, .hangup]).endCause == .canceled)
        #expect(try ended([.networkTimeout]).endCause == .timeout)
        #expect(try ended([.failed(.sip(status: 404, reason: "Not Found"))]).endCause == .failure)
        #expect(try ended([.established, .remoteHangup]).endCause == .remoteHangup)
        #expect(try ended([.established, .transferred]).endCause == .transferred)
        // No answer after 60 s: CANCEL and *no answer*.
        var call = CallStateMachine(direction: .outgoing, startedAt: .zero)
        _ = try call.handle(.ringing, at: .seconds(1))
        #expect(try call.handle(.tick, at: .seconds(59.9)) == [])
        #expect(try call.handle(.tick, at: .seconds(60)) == [.sendCancel, .stateChanged(.ended)])
        #expect(call.details.endCause == .noAnswer)
        // The callee's no-answer timeout (480, or a 408) ends a ringing call as *no answer*, the status kept; the
        // same responses before any ringing are a failure (480: unreachable) and a timeout (408).
        let calleeGaveUp = try ended([.ringing, .remoteNoAnswer(status: 480, reason: "Temporarily Unavailable")])
        #expect(calleeGaveUp.endCause == .noAnswer)
        #expect(calleeGaveUp.error == .sip(status: 480, reason: "Temporarily Unavailable"))
        #expect(try ended([.progress, .remoteNoAnswer(status: 408, reason: "Request Timeout")]).endCause == .noAnswer)
        #expect(try ended([.remoteNoAnswer(status: 480, reason: "Temporarily Unavailable")]).endCause == .failure)
        #expect(try ended([.remoteNoAnswer(status: 408, reason: "Request Timeout")]).endCause == .timeout)
    }

    @Test func endCausesOfTheCallee() throws {
        var declined = CallStateMachine(direction: .incoming, startedAt: .zero)
        #expect(declined.initialEffects == [.startRingtone])
        // Hanging up before answering declines: the caller sees denied.
        #expect(
            try declined.handle(.hangup, at: .seconds(1)) == [
                .stopRingtone, .sendDecline(status: 603), .stateChanged(.ended)
            ])
        #expect(declined.details.endCause == .denied)
        var canceled = CallStateMachine(direction: .incoming, startedAt: .zero)
        _ = try canceled.handle(.remoteCanceled, at: .seconds(1))
        #expect(canceled.details.endCause == .canceled)
        var elsewhere = CallStateMachine(direction: .incoming, startedAt: .zero)
        _ = try elsewhere.handle(.answeredElsewhere, at: .seconds(1))
        #expect(elsewhere.details.endCause == .otherDeviceAnswered)
        var unanswered = CallStateMachine(direction: .incoming, startedAt: .zero)
        #expect(
            try unanswered.handle(.tick, at: .seconds(60)) == [
                .stopRingtone, .sendDecline(status: 480), .stateChanged(.ended)
            ])
        #expect(unanswered.details.endCause == .noAnswer)
        var answered = CallStateMachine(direction: .incoming, startedAt: .zero)
        #expect(try answered.handle(.answer, at: .seconds(2)) == [.stopRingtone, .sendAnswer])
        // The callee does not get provisional responses, and cannot be established before answering.
        #expect(throws: CallRefusal.self) { try answered.handle(.progress, at: .seconds(2)) }
        #expect(try answered.handle(.established, at: .seconds(2.1)) == [.stateChanged(.established)])
        // Hanging up between the answer and its ACK: a BYE (the caller may be established already), not a 603.
        var answering = CallStateMachine(direction: .incoming, startedAt: .zero)
        _ = try answering.handle(.answer, at: .seconds(2))
        #expect(try answering.handle(.hangup, at: .seconds(2.01)) == [.sendBye, .stateChanged(.ended)])
        #expect(answering.details.endCause == .localHangup)
        var early = CallStateMachine(direction: .incoming, startedAt: .zero)
        #expect(throws: CallRefusal(event: .established, state: .initiating)) {
            try early.handle(.established, at: .seconds(1))
        }
        #expect(throws: CallRefusal.self) { try early.handle(.mute(true), at: .seconds(1)) }
    }

    /// Every end cause the app can see has a path through the call's diagram; the switch has no default, so a new
    /// cause without one does not compile.
    @Test(arguments: CallEndCause.allCases)
    func everyEndCauseHasAPathThroughTheDiagram(cause: CallEndCause) throws {
        let (direction, events): (CallDirection, [CallEvent]) =
            switch cause {
            case .localHangup: (.outgoing, [.established, .hangup])
            case .remoteHangup: (.incoming, [.answer, .established, .remoteHangup])
            case .canceled: (.outgoing, [.ringing, .hangup])
            case .denied: (.incoming, [.hangup])
            case .noAnswer: (.outgoing, [.ringing, .remoteNoAnswer(status: 480, reason: "Temporarily Unavailable")])
            case .timeout: (.outgoing, [.established, .mediaTimeout(silence: .seconds(20))])
            case .failure: (.outgoing, [.failed(.network("unreachable"))])
            case .interruptionTimeout: (.incoming, [.answer, .established, .interruptionTimeout(.seconds(30))])
            case .otherDeviceAnswered: (.incoming, [.answeredElsewhere])
            case .transferred: (.outgoing, [.established, .transferred])
            }
        var call = CallStateMachine(direction: direction, startedAt: .zero)
        for (index, event) in events.enumerated() { _ = try call.handle(event, at: .seconds(Double(index + 1))) }
        #expect(call.state == .ended && call.details.endCause == cause, "\(direction) \(events): \(call.details)")
    }

    /// The end cause as the SDKs define it, from the event that ended the call and the state it found: the
    /// oracle for the property below.
    static func expectedEndCause(
        of event: CallEvent, in state: CallState, direction: CallDirection, answered: Bool
    ) -> CallEndCause? {
        let established = state == .established
        switch event {
        case .hangup:
            if established || (direction == .incoming && answered) { return .localHangup }
            return direction == .outgoing ? .canceled : .denied
        case .remoteHangup: return established ? .remoteHangup : direction == .outgoing ? .failure : .canceled
        case .remoteDeclined: return .denied
        case .remoteNoAnswer(let status, _):
            return state == .ringing || state == .progressing ? .noAnswer : status == 408 ? .timeout : .failure
        case .remoteCanceled: return .canceled
        case .answeredElsewhere: return .otherDeviceAnswered
        case .transferred: return .transferred
        case .failed: return .failure
        case .networkTimeout, .mediaTimeout: return .timeout
        case .interruptionTimeout: return .interruptionTimeout
        case .tick: return .noAnswer
        default: return nil
        }
    }

    /// Random event sequences on the pure machine: whichever event ends a call, the end cause is the one the
    /// SDKs give it (a local hangup never reads as a remote one), and the audio session's report attached at the
    /// end carries the same cause.
    @Test(arguments: 0..<40)
    func theEndCauseFollowsTheEventThatEndedTheCall(seed: Int) throws {
        var random = SplitMix64(seed: UInt64(seed) &* 0x2545_F491 &+ 7)
        let pool: [CallEvent] = [
            .answer, .hangup, .mute(true), .hold(true), .hold(false), .progress, .ringing, .established, .remoteHangup,
            .remoteDeclined(status: 603, reason: "Decline"),
            .remoteNoAnswer(status: 480, reason: "Temporarily Unavailable"),
            .remoteNoAnswer(status: 408, reason: "Request Timeout"), .remoteCanceled, .answeredElsewhere, .transferred,
            .failed(.network("lost")), .networkTimeout, .tick, .mediaInterrupted(.deviceLost), .mediaResumed,
            .mediaTimeout(silence: .seconds(20)), .interruptionTimeout(.seconds(30))
        ]
        var ends = 0
        for run in 0..<25 {
            let direction: CallDirection = random.next() % 2 == 0 ? .outgoing : .incoming
            var call = CallStateMachine(direction: direction, startedAt: .zero)
            var now = MediaTime.zero
            while call.state != .ended {
                let event = pool[Int(random.next() % UInt64(pool.count))]
                now = now + .seconds(Double(random.next() % 30))
                let (state, answered) = (call.state, call.answered)
                guard (try? call.handle(event, at: now)) != nil, call.state == .ended else { continue }
                ends += 1
                let expected = Self.expectedEndCause(of: event, in: state, direction: direction, answered: answered)
                #expect(
                    call.details.endCause == expected,
                    "seed \(seed) run \(run): \(direction) \(event) in \(state) ended as \(call.details.endCause as Any)"
                )
                // The session's report, made with any cause (a held call's was made by the hold), says the call's.
                call.attach(
                    CallStatisticsReport(
                        callID: "c", endCause: .localHangup, startedAt: 0, establishedAt: nil, endedAt: now.seconds,
                        setupDuration: nil, callDuration: 0, interruptionCount: 0, interruptedDuration: 0,
                        category: .playAndRecord, mode: .voiceChat))
                #expect(call.details.report?.endCause == call.details.endCause)
            }
        }
        #expect(ends == 25)
    }

    /// Item 10: scripted random sequences of app, dialog and device events on two calls sharing one audio
    /// session never take a call along an edge the diagram does not have, never leave the session held by a call
    /// that has ended, and leave it inactive once every call has ended.
    @Test(arguments: 0..<60)
    func scriptedSequencesKeepTheDiagramAndNeverLeakTheAudioSession(seed: Int) async throws {
        var random = SplitMix64(seed: UInt64(seed) &* 0x9E37_79B9 &+ 19)
        let clock = ManualClock(start: .seconds(1))
        let session = AudioSession(clock: clock)
        await session.startEngine()
        var calls: [Call] = []
        let pool: [CallEvent] = [
            .answer, .hangup, .mute(true), .mute(false), .hold(true), .hold(false), .progress, .ringing, .established,
            .remoteHangup,
            .remoteDeclined(status: 486, reason: "Busy Here"), .remoteCanceled, .answeredElsewhere, .transferred,
            .failed(.network("lost")), .networkTimeout, .tick, .mediaInterrupted(.deviceLost), .mediaResumed,
            .mediaQuality(
                CallQuality(
                    lossPercent: 3, jitterMilliseconds: 4, roundTripMilliseconds: 20, concealmentPercent: 2, mos: 4.1,
                    networkQuality: .good)),
            .mediaTimeout(silence: .seconds(20)), .interruptionTimeout(.seconds(30))
        ]
        for step in 0..<120 {
            var live = 0
            for call in calls where await call.state != .ended { live += 1 }
            if live < 2, random.next() % 6 == 0 {
                let direction: CallDirection = random.next() % 2 == 0 ? .outgoing : .incoming
                calls.append(
                    Call(
                        id: CallID("c\(seed)-\(step)"), direction: direction, remote: "peer", audioSession: session,
                        clock: clock))
            }
            guard !calls.isEmpty else { continue }
            let call = calls[Int(random.next() % UInt64(calls.count))]
            let before = await call.state
            switch random.next() % 10 {
            case 0:
                clock.advance(by: .seconds(Double(random.next() % 40)))
                _ = await call.tick()
            case 1:
                // The device or host takes the audio away (or gives it back); a long interruption makes the
                // session end the call itself, and the client hangs that call up.
                _ = try? await session.send(
                    random.next() % 2 == 0 ? .interruptionBegan(.hostApplication) : .interruptionEnded)
                for case .endCall(let id, _) in await session.tick() {
                    for ended in calls where ended.id == id {
                        _ = try? await ended.dialog(.failed(.media("interrupted for longer than 30 s")))
                    }
                }
            default:
                _ = try? await call.dialog(pool[Int(random.next() % UInt64(pool.count))])
            }
            let after = await call.state
            #expect(after == before || before.allows(after), "seed \(seed) step \(step): \(before) → \(after)")
            if after == .ended {
                #expect(!(await call.isMediaInterrupted), "seed \(seed) step \(step): paused after the end")
            }
            // The session is held only by a call that has not ended.
            if let holder = await session.state.phase.call {
                let owner = calls.first { $0.id == holder.id }
                #expect(owner != nil, "the session holds an unknown call \(holder.id)")
                if let owner {
                    #expect(
                        await owner.state != .ended,
                        "seed \(seed) step \(step): ended call \(holder.id) still holds the audio session")
                    // Holding a call gives the session up, so a waiting call can take it.
                    #expect(
                        await !owner.isOnHold,
                        "seed \(seed) step \(step): held call \(holder.id) keeps the audio session")
                }
            }
        }
        for call in calls where await call.state != .ended {
            _ = try await call.hangup()
            let details = await call.details
            #expect(details.endCause != nil)
            #expect(details.endedAt != nil)
        }
        let final = await session.state
        #expect(final.phase.isIdle, "seed \(seed): \(final)")
        #expect(!final.isActive, "seed \(seed): the audio session leaked: \(final)")
        #expect(!final.isCaptureRunning)
    }

    @Test func establishedCallTakesTheAudioSessionAndItsEndReleasesItWithAReport() async throws {
        let clock = ManualClock(start: .seconds(1))
        let session = AudioSession(clock: clock)
        await session.startEngine()
        let first = Call(id: "first", direction: .outgoing, remote: "bob", audioSession: session, clock: clock)
        try await first.dialog(.ringing)
        #expect(await session.state.phase.isProgressing)
        try await first.dialog(.established)
        #expect(await session.state.isCaptureRunning)
        // A second call while the first holds the session fails with a media error instead of playing over it.
        let second = Call(id: "second", direction: .outgoing, remote: "carol", audioSession: session, clock: clock)
        try await second.dialog(.progress)
        #expect(await second.state == .ended)
        #expect(await second.details.endCause == .failure)
        guard case .media = await second.details.error else {
            Issue.record("no media error: \(String(describing: await second.details.error))")
            return
        }
        clock.advance(by: .seconds(30))
        try await first.hangup()
        let details = await first.details
        #expect(details.report?.callID == "first")
        #expect(details.report?.endCause == .localHangup)
        #expect(details.duration == .seconds(30))
        #expect(await !session.state.isActive)
    }
}

extension CallStateMachineTests {
    /// Call waiting on the audio session: the second call is answered only once the first is held, resuming is
    /// refused while the other call has the audio, ending one resumes nothing, and each call keeps its report.
    @Test func aHeldCallGivesTheAudioSessionToTheWaitingCallAndTakesItBackWhenResumed() async throws {
        let clock = ManualClock(start: .seconds(1))
        let session = AudioSession(clock: clock)
        await session.startEngine()
        let first = Call(id: "first", direction: .incoming, remote: "bob", audioSession: session, clock: clock)
        try await first.answer()
        try await first.dialog(.established)
        let second = Call(id: "second", direction: .incoming, remote: "carol", audioSession: session, clock: clock)
        let refused = await #expect(throws: CallRefusal.self) { try await second.answer() }
        #expect(refused?.reason?.contains("first") == true, "\(String(describing: refused))")
        #expect(try await first.hold(true) == [.sendHold(true)])
        #expect(await session.state.phase.isIdle)
        try await second.answer()
        try await second.dialog(.established)
        #expect(await session.state.phase.call?.id == "second")
        await #expect(throws: CallRefusal.self) { try await first.hold(false) }
        #expect(await first.isOnHold)
        clock.advance(by: .seconds(5))
        try await second.hangup()
        // Nothing resumes by itself: the first call stays held and the session idle until the app resumes it.
        #expect(await first.isOnHold)
        #expect(await session.state.phase.isIdle)
        #expect(await second.details.report?.callID == "second")
        #expect(try await first.hold(false) == [.sendHold(false)])
        #expect(await session.state.phase.call?.id == "first")
        #expect(await session.state.isCaptureRunning)
        try await first.hangup()
        #expect(await first.details.report?.callID == "first")
        #expect(await !session.state.isActive)
    }

    @Test func aCallEndedWhileHeldKeepsTheReportOfItsAudioUntilTheHold() async throws {
        let clock = ManualClock(start: .seconds(1))
        let session = AudioSession(clock: clock)
        await session.startEngine()
        let call = Call(id: "held", direction: .outgoing, remote: "bob", audioSession: session, clock: clock)
        try await call.dialog(.established)
        clock.advance(by: .seconds(3))
        try await call.hold(true)
        clock.advance(by: .seconds(3))
        try await call.dialog(.remoteHangup)
        let details = await call.details
        #expect(details.report?.callID == "held")
        #expect(details.endCause == .remoteHangup)
        // The report, ended when the hold gave the audio away, says how the call itself ended.
        #expect(details.report?.endCause == .remoteHangup)
        #expect(await session.state.phase.isIdle)
    }
}

@Suite("The client's calls and its audio session")
struct ClientCallTests {
    func client(clock: ManualClock) throws -> VoiceClient {
        try VoiceClient(
            userID: "alice", configuration: VoiceClientConfiguration(applicationKey: "k", serviceHost: "127.0.0.1"),
            clock: clock
        ) { _ in
            SignedRegistration(sequence: 1, signature: "")
        }
    }

    @Test func stopHangsUpTheCallsAndReleasesTheAudioSession() async throws {
        let clock = ManualClock(start: .seconds(1))
        let client = try client(clock: clock)
        await client.audioSession.startEngine()
        let call = try await client.newCall(
            id: "call-1", direction: .outgoing, remote: "bob", headers: ["X-Case": "stop"])
        try await call.dialog(.ringing)
        try await call.dialog(.established)
        #expect(await client.audioSession.state.isActive)
        _ = try await client.audioSession.send(.applicationActivate)
        await client.stop()
        #expect(await call.state == .ended)
        #expect(await call.details.endCause == .localHangup)
        #expect(await call.details.report?.callID == "call-1")
        let session = await client.audioSession.state
        #expect(session.phase.isIdle)
        #expect(!session.isActive, "\(session)")
        await client.terminate()
    }

    @Test func unansweredCallEndsWithNoAnswerAfterSixtySeconds() async throws {
        let clock = ManualClock(start: .seconds(1))
        let client = try client(clock: clock)
        await client.audioSession.startEngine()
        let call = try await client.newCall(id: "call-2", direction: .outgoing, remote: "bob")
        try await call.dialog(.ringing)
        clock.advance(by: .seconds(59))
        await client.tickCalls()
        #expect(await call.state == .ringing)
        clock.advance(by: .seconds(1))
        await client.tickCalls()
        #expect(await call.state == .ended)
        #expect(await call.details.endCause == .noAnswer)
        #expect(await !client.audioSession.state.isActive)
        await #expect(throws: VoiceClientError.self) {
            try await client.newCall(id: "c", direction: .outgoing, remote: "bob", headers: ["Subject": "x"])
        }
        await client.terminate()
    }
}
