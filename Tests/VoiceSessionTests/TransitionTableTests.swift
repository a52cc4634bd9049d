import Testing
import VoiceCore

@testable import VoiceSession

/// One row of the transition table: a state (reached by accepted setup events at t = 0), an event at `atMs`,
/// and the expected effects and phase, or the expected refusal.
struct TransitionCase: Sendable, CustomTestStringConvertible {
    let name: String
    let setup: [SessionEvent]
    let event: SessionEvent
    var atMs: Int64 = 1_000
    var effects: [String] = []
    var phase: String? = nil
    var refusal: AudioSessionError? = nil
    var testDescription: String { name }
}

private let started: [SessionEvent] = [.engineStarted]
private let ringingA = started + [.callProgressing("A")]
private let liveA = started + [.callEstablished("A")]
private let liveAInterrupted = liveA + [.interruptionBegan(.hostApplication)]
private let ringingAInterrupted = ringingA + [.interruptionBegan(.device(.deviceBusy))]
private let idleInterrupted = started + [.interruptionBegan(.hostApplication)]
private let appActive = started + [.applicationActivate]
private let mediaStart = ["activateSession", "setVoiceProcessing(true)"]

let transitionTable: [TransitionCase] = [
    // Engine start: category and mode set exactly once.
    .init(
        name: "first engine start sets playAndRecord and voiceChat", setup: [], event: .engineStarted,
        effects: ["setCategory(playAndRecord)", "setMode(voiceChat)"], phase: "idle"),
    .init(name: "second engine start sets nothing", setup: started, event: .engineStarted, effects: [], phase: "idle"),
    .init(
        name: "progressing before engine start is refused", setup: [], event: .callProgressing("A"),
        refusal: .engineNotStarted),
    .init(
        name: "establishing before engine start is refused", setup: [], event: .callEstablished("A"),
        refusal: .engineNotStarted),
    // Category and mode from the host application.
    .init(
        name: "host sets category while idle", setup: started, event: .hostSetCategory(.playback), effects: [],
        phase: "idle"),
    .init(
        name: "call after host set playback is refused", setup: started + [.hostSetCategory(.playback)],
        event: .callEstablished("A"), refusal: .categoryCannotRecord(.playback)),
    .init(
        name: "ringing after host set record is refused", setup: started + [.hostSetCategory(.record)],
        event: .callProgressing("A"), refusal: .categoryCannotRecord(.record)),
    .init(
        name: "call after host restored playAndRecord is accepted",
        setup: started + [.hostSetCategory(.ambient), .hostSetCategory(.playAndRecord)],
        event: .callEstablished("A"), effects: mediaStart + ["startPlayout", "startCapture"], phase: "established(A)"),
    .init(
        name: "category change during a call is refused", setup: liveA, event: .hostSetCategory(.playback),
        refusal: .categoryLockedDuringCall(call: "A", requested: .playback)),
    .init(
        name: "category change while ringing is refused", setup: ringingA, event: .hostSetCategory(.soloAmbient),
        refusal: .categoryLockedDuringCall(call: "A", requested: .soloAmbient)),
    .init(name: "mode change while idle has no effect", setup: started, event: .hostSetMode(.default), effects: []),
    .init(
        name: "default mode during a call turns processing off", setup: liveA, event: .hostSetMode(.default),
        effects: ["setVoiceProcessing(false)"], phase: "established(A)"),
    .init(
        name: "call in default mode starts without processing", setup: started + [.hostSetMode(.default)],
        event: .callEstablished("A"),
        effects: ["activateSession", "setVoiceProcessing(false)", "startPlayout", "startCapture"]),
    // Application activation.
    .init(
        name: "application activates for its own audio", setup: started, event: .applicationActivate,
        effects: ["activateSession", "startPlayout"], phase: "idle"),
    .init(
        name: "application deactivates", setup: appActive, event: .applicationDeactivate,
        effects: ["stopPlayout", "deactivateSession"], phase: "idle"),
    .init(
        name: "deactivation during a call is refused", setup: liveA, event: .applicationDeactivate,
        refusal: .deactivationDuringCall("A")),
    .init(
        name: "deactivation while ringing is allowed", setup: ringingA, event: .applicationDeactivate,
        effects: [], phase: "progressing(A)"),
    .init(
        name: "activation during an interruption is refused", setup: idleInterrupted,
        event: .applicationActivate, refusal: .activationDuringInterruption(.hostApplication)),
    .init(
        name: "activation during a call changes nothing audible", setup: liveA, event: .applicationActivate,
        effects: [], phase: "established(A)"),
    // Call lifecycle.
    .init(
        name: "ringing starts playout and the progress tone", setup: started, event: .callProgressing("A"),
        effects: ["startPlayout", "startProgressTone(A)"], phase: "progressing(A)"),
    .init(
        name: "established stops the tone, activates, opens the microphone", setup: ringingA,
        event: .callEstablished("A"), effects: ["stopProgressTone"] + mediaStart + ["startCapture"],
        phase: "established(A)"),
    .init(
        name: "incoming call established directly", setup: started, event: .callEstablished("A"),
        effects: mediaStart + ["startPlayout", "startCapture"], phase: "established(A)"),
    .init(
        name: "established while app-activated only opens the microphone", setup: appActive,
        event: .callEstablished("A"), effects: ["setVoiceProcessing(true)", "startCapture"], phase: "established(A)"),
    .init(
        name: "late ringing of the established call is ignored", setup: liveA, event: .callProgressing("A"),
        effects: [], phase: "established(A)"),
    .init(
        name: "repeated establish is ignored", setup: liveA, event: .callEstablished("A"), effects: [],
        phase: "established(A)"),
    .init(
        name: "repeated ringing is ignored", setup: ringingA, event: .callProgressing("A"), effects: [],
        phase: "progressing(A)"),
    .init(
        name: "second call ringing while the first rings is refused", setup: ringingA,
        event: .callProgressing("B"), refusal: .anotherCallActive(active: "A", requested: "B")),
    .init(
        name: "second call established during the first is refused", setup: liveA, event: .callEstablished("B"),
        refusal: .anotherCallActive(active: "A", requested: "B")),
    .init(
        name: "second call ringing during the first is refused", setup: liveA, event: .callProgressing("B"),
        refusal: .anotherCallActive(active: "A", requested: "B")),
    .init(
        name: "ending the established call stops media and deactivates", setup: liveA,
        event: .callEnded("A", cause: .remoteHangup),
        effects: ["stopCapture", "stopPlayout", "deactivateSession", "callReport(A, remoteHangup)"], phase: "idle"),
    .init(
        name: "ending a ringing call stops the tone", setup: ringingA, event: .callEnded("A", cause: .denied),
        effects: ["stopProgressTone", "stopPlayout", "callReport(A, denied)"], phase: "idle"),
    .init(
        name: "ending the call deactivates even when the app had activated", setup: appActive + [.callEstablished("A")],
        event: .callEnded("A", cause: .localHangup),
        effects: ["stopCapture", "stopPlayout", "deactivateSession", "callReport(A, localHangup)"], phase: "idle"),
    .init(
        name: "ending an interrupted call only reports", setup: liveAInterrupted,
        event: .callEnded("A", cause: .localHangup), effects: ["callReport(A, localHangup)"], phase: "idle"),
    .init(
        name: "ending with no call is refused", setup: started, event: .callEnded("A", cause: .localHangup),
        refusal: .unknownCall("A", active: nil)),
    .init(
        name: "ending another call is refused", setup: liveA, event: .callEnded("B", cause: .localHangup),
        refusal: .unknownCall("B", active: "A")),
    // Interruptions.
    .init(
        name: "interruption stops a live call's devices", setup: liveA, event: .interruptionBegan(.hostApplication),
        effects: ["stopCapture", "stopPlayout", "deactivateSession"], phase: "established(A)"),
    .init(
        name: "device interruption stops a live call's devices", setup: liveA,
        event: .interruptionBegan(.device(.suspended)), effects: ["stopCapture", "stopPlayout", "deactivateSession"]),
    .init(
        name: "interruption end resumes with buffers flushed", setup: liveAInterrupted, event: .interruptionEnded,
        atMs: 29_999, effects: mediaStart + ["flushBuffers", "startPlayout", "startCapture"], phase: "established(A)"),
    .init(
        name: "second interruption begin is ignored", setup: liveAInterrupted,
        event: .interruptionBegan(.device(.deviceBusy)), effects: []),
    .init(
        name: "interruption end without interruption is ignored", setup: liveA, event: .interruptionEnded,
        effects: [], phase: "established(A)"),
    .init(
        name: "interruption silences the progress tone", setup: ringingA, event: .interruptionBegan(.hostApplication),
        effects: ["stopPlayout"], phase: "progressing(A)"),
    .init(
        name: "interruption end brings the progress tone back", setup: ringingAInterrupted, event: .interruptionEnded,
        effects: ["startPlayout"], phase: "progressing(A)"),
    .init(
        name: "established during an interruption keeps the microphone closed", setup: ringingAInterrupted,
        event: .callEstablished("A"), effects: ["stopProgressTone"], phase: "established(A)"),
    .init(
        name: "call arriving during an interruption stays paused", setup: idleInterrupted,
        event: .callEstablished("A"), effects: [], phase: "established(A)"),
    .init(
        name: "interruption deactivates the application's session", setup: appActive,
        event: .interruptionBegan(.device(.deviceLost)), effects: ["stopPlayout", "deactivateSession"], phase: "idle"),
    .init(
        name: "deactivation of an interrupted call is refused", setup: liveAInterrupted,
        event: .applicationDeactivate, refusal: .deactivationDuringCall("A")),
    // Time: the interruption timeout (30 s by default).
    .init(
        name: "tick before the timeout does nothing", setup: liveAInterrupted, event: .tick, atMs: 29_999,
        effects: [], phase: "established(A)"),
    .init(
        name: "tick at the timeout ends the call", setup: liveAInterrupted, event: .tick, atMs: 30_000,
        effects: ["endCall(A, interruptionTimeout)", "callReport(A, interruptionTimeout)"], phase: "idle"),
    .init(
        name: "a late interruption end ends the call instead of resuming", setup: liveAInterrupted,
        event: .interruptionEnded, atMs: 31_000,
        effects: ["endCall(A, interruptionTimeout)", "callReport(A, interruptionTimeout)"], phase: "idle"),
    .init(
        name: "timeout of a ringing call stops its tone", setup: ringingAInterrupted, event: .tick, atMs: 45_000,
        effects: ["stopProgressTone", "endCall(A, interruptionTimeout)", "callReport(A, interruptionTimeout)"],
        phase: "idle"),
    .init(
        name: "a due timeout is applied even when the event is refused", setup: liveAInterrupted,
        event: .callEnded("B", cause: .localHangup), atMs: 30_000,
        effects: ["endCall(A, interruptionTimeout)", "callReport(A, interruptionTimeout)"],
        refusal: .unknownCall("B", active: nil)),
    .init(name: "tick without a call does nothing", setup: idleInterrupted, event: .tick, atMs: 100_000, effects: []),
    .init(name: "tick during a live call does nothing", setup: liveA, event: .tick, atMs: 100_000, effects: [])
]

@Suite struct TransitionTableTests {
    @Test(arguments: transitionTable)
    func transitionMatchesTable(_ row: TransitionCase) {
        let before = state(after: row.setup)
        let t = AudioSessionMachine.transition(before, row.event, at: .milliseconds(row.atMs))
        #expect(t.effects.map(\.description) == row.effects)
        #expect(t.refusal == row.refusal)
        if let phase = row.phase { #expect(t.state.phase.description == phase) }
        if row.refusal != nil, row.effects.isEmpty {
            #expect(t.state == before, "a refused event changes nothing")
        }
    }

    /// Every row's refusal has a message naming what is wrong and a stable identifier.
    @Test func refusalsExplainThemselves() {
        for row in transitionTable {
            guard let refusal = row.refusal else { continue }
            #expect(refusal.description.count > 30)
            #expect(refusal.identifier.hasPrefix("session."))
            #expect(refusal.localizedDescription == refusal.description)
        }
    }

    @Test func categoryViolationNamesTheCategoryAndTheFix() {
        for category in AudioSessionCategory.allCases where category != .playAndRecord {
            let s = state(after: [.engineStarted, .hostSetCategory(category)])
            let t = AudioSessionMachine.transition(s, .callEstablished("call-1"), at: .zero)
            let message = t.refusal?.description ?? ""
            #expect(t.refusal == .categoryCannotRecord(category))
            #expect(message.contains("'\(category)'"), "message names the category: \(message)")
            #expect(message.contains("playAndRecord"), "message says how to fix it: \(message)")
            #expect(message.contains(category == .record ? "cannot play" : "cannot record from the microphone"))
            #expect(!t.state.isCaptureRunning)
        }
    }

    /// Every event in every reachable kind of state gives a result, deterministically, and a refusal never
    /// opens a device.
    @Test func transitionIsTotalAndDeterministic() {
        let setups: [[SessionEvent]] = [
            [], started, appActive, ringingA, liveA, liveAInterrupted, ringingAInterrupted, idleInterrupted,
            started + [.hostSetCategory(.playback)]
        ]
        let events: [SessionEvent] = [
            .engineStarted, .hostSetCategory(.record), .hostSetMode(.default), .hostSetMode(.voiceChat),
            .applicationActivate, .applicationDeactivate, .callProgressing("A"), .callProgressing("B"),
            .callEstablished("A"), .callEstablished("B"), .callEnded("A", cause: .failure),
            .callEnded("B", cause: .failure), .interruptionBegan(.hostApplication),
            .interruptionBegan(.device(.deviceLost)), .interruptionEnded, .tick
        ]
        for setup in setups {
            let s = state(after: setup)
            for event in events {
                for ms: Int64 in [0, 29_999, 30_000] {
                    let a = AudioSessionMachine.transition(s, event, at: .milliseconds(ms))
                    let b = AudioSessionMachine.transition(s, event, at: .milliseconds(ms))
                    #expect(a == b)
                    if a.refusal != nil {
                        #expect(!a.effects.contains(.startCapture) && !a.effects.contains(.activateSession))
                    }
                }
            }
        }
    }

    @Test func reportCountsInterruptionsAndDurations() {
        var s = state(after: [.engineStarted])
        let events: [(SessionEvent, Int64)] = [
            (.callProgressing("A"), 1_000), (.callEstablished("A"), 4_000),
            (.interruptionBegan(.hostApplication), 10_000), (.interruptionEnded, 12_500),
            (.interruptionBegan(.device(.suspended)), 20_000), (.interruptionEnded, 21_000),
            (.callEnded("A", cause: .localHangup), 64_000)
        ]
        var report: CallStatisticsReport?
        for (event, ms) in events {
            let t = AudioSessionMachine.transition(s, event, at: .milliseconds(ms))
            #expect(t.refusal == nil)
            s = t.state
            for case .callReport(let r) in t.effects { report = r }
        }
        let r = try! #require(report)
        #expect(r.callID == "A")
        #expect(r.endCause == .localHangup)
        #expect(r.startedAt == 1)
        #expect(r.establishedAt == 4)
        #expect(r.setupDuration == 3)
        #expect(r.callDuration == 60)
        #expect(r.interruptionCount == 2)
        #expect(r.interruptedDuration == 3.5)
        #expect(r.category == .playAndRecord && r.mode == .voiceChat)
    }

    @Test func timeoutReportEndsAtTheDeadline() {
        let config = AudioSessionConfiguration(interruptionTimeout: .milliseconds(5_000))
        var s = state(after: liveA, configuration: config)
        s = AudioSessionMachine.transition(s, .interruptionBegan(.device(.deviceBusy)), at: .milliseconds(2_000)).state
        #expect(s.interruptionDeadline == .milliseconds(7_000))
        let t = AudioSessionMachine.transition(s, .tick, at: .milliseconds(9_000))
        guard case .callReport(let r)? = t.effects.last else {
            Issue.record("no report")
            return
        }
        #expect(r.endCause == .interruptionTimeout)
        #expect(r.endedAt == 7)
        #expect(r.interruptedDuration == 5)
        #expect(r.interruptionCount == 1)
    }

    @Test func applicationMustActivateAgainAfterEachCall() {
        var s = state(after: appActive + [.callEstablished("A")])
        #expect(s.applicationActivated)
        s = AudioSessionMachine.transition(s, .callEnded("A", cause: .remoteHangup), at: .zero).state
        #expect(!s.isActive && !s.applicationActivated)
        let t = AudioSessionMachine.transition(s, .applicationActivate, at: .zero)
        #expect(t.effects == [.activateSession, .startPlayout])
    }

    @Test func oneCallAtATimeSecondCallAcceptedAfterFirstEnds() {
        var s = state(after: liveA)
        let refused = AudioSessionMachine.transition(s, .callEstablished("B"), at: .zero)
        #expect(refused.refusal == .anotherCallActive(active: "A", requested: "B"))
        #expect(refused.refusal?.description.contains("only one call") == true)
        #expect(refused.state.phase.call?.id == "A", "the first call keeps its audio")
        s = AudioSessionMachine.transition(s, .callEnded("A", cause: .localHangup), at: .zero).state
        let accepted = AudioSessionMachine.transition(s, .callEstablished("B"), at: .zero)
        #expect(accepted.refusal == nil)
        #expect(accepted.state.phase.description == "established(B)")
    }

    @Test func deviceEventsMapToSessionEvents() {
        let table: [(DeviceEvent, SessionEvent?)] = [
            (.interruptionBegan(reason: .suspended), .interruptionBegan(.device(.suspended))),
            (.interruptionBegan(reason: .deviceLost), .interruptionBegan(.device(.deviceLost))),
            (.interruptionBegan(reason: .deviceBusy), .interruptionBegan(.device(.deviceBusy))),
            (.interruptionEnded, .interruptionEnded),
            (.xrun(count: 3), nil),
            (.endOfInput, nil)
        ]
        for (device, expected) in table {
            #expect(AudioSessionMachine.sessionEvent(for: device) == expected, "\(device)")
        }
    }
}
