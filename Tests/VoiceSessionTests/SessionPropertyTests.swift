import Testing
import VoiceCore

@testable import VoiceSession
import VoiceTestSupport

/// What the devices would be doing if the engine carried out every effect in order: the invariants are checked
/// on this model, so they test the effect sequences, not just the derived flags.
private struct DeviceModel {
    var active = false
    var capture = false
    var playout = false
    var categorySets = 0

    mutating func apply(_ effect: SessionEffect) {
        switch effect {
        case .activateSession:
            #expect(!active, "activated twice")
            active = true
        case .deactivateSession:
            #expect(active, "deactivated while inactive")
            active = false
        case .startCapture:
            #expect(!capture, "capture started twice")
            capture = true
        case .stopCapture:
            #expect(capture, "capture stopped twice")
            capture = false
        case .startPlayout:
            #expect(!playout, "playout started twice")
            playout = true
        case .stopPlayout:
            #expect(playout, "playout stopped twice")
            playout = false
        case .setCategory: categorySets += 1
        default: break
        }
    }
}

@Suite struct SessionPropertyTests {
    private static func randomEvent(_ rng: inout SplitMix64) -> SessionEvent {
        let calls: [CallID] = ["A", "B"]
        switch Int.random(in: 0..<16, using: &rng) {
        case 0: return .engineStarted
        case 1: return .hostSetCategory(AudioSessionCategory.allCases.randomElement(using: &rng)!)
        case 2: return .hostSetMode(AudioSessionMode.allCases.randomElement(using: &rng)!)
        case 3: return .applicationActivate
        case 4: return .applicationDeactivate
        case 5, 6: return .callProgressing(calls.randomElement(using: &rng)!)
        case 7, 8: return .callEstablished(calls.randomElement(using: &rng)!)
        case 9, 10:
            return .callEnded(
                calls.randomElement(using: &rng)!, cause: CallEndCause.allCases.randomElement(using: &rng)!)
        case 11:
            let sources: [InterruptionSource] = [
                .hostApplication, .device(.suspended), .device(.deviceLost), .device(.deviceBusy)
            ]
            return .interruptionBegan(sources.randomElement(using: &rng)!)
        case 12, 13: return .interruptionEnded
        default: return .tick
        }
    }

    /// Random steps of time: mostly short, sometimes past the timeout.
    private static func randomStep(_ rng: inout SplitMix64) -> MediaTime {
        switch Int.random(in: 0..<10, using: &rng) {
        case 0: .milliseconds(Int64.random(in: 25_000...45_000, using: &rng))
        case 1: .zero
        default: .milliseconds(Int64.random(in: 1...8_000, using: &rng))
        }
    }

    @Test(arguments: 0..<40)
    func invariantsHoldOverRandomEventSequences(seed: Int) {
        var rng = SplitMix64(seed: UInt64(seed) &* 0x2545_F491_4F6C_DD1D &+ 1)
        let timeout = MediaTime.milliseconds([30_000, 10_000, 5_000].randomElement(using: &rng)!)
        var s = AudioSessionState(configuration: AudioSessionConfiguration(interruptionTimeout: timeout))
        var devices = DeviceModel()
        var now = MediaTime.zero
        var categoryAfterStart: AudioSessionCategory?
        for step in 0..<400 {
            now += Self.randomStep(&rng)
            let event = Self.randomEvent(&rng)
            let deadline = s.interruptionDeadline
            let wasStarted = s.engineStarted
            let t = AudioSessionMachine.transition(s, event, at: now)
            let context = "seed \(seed) step \(step): \(event) at \(now) from \(s)"
            for effect in t.effects { devices.apply(effect) }
            s = t.state

            // The effects carried out leave the devices exactly where the state says they are.
            #expect(devices.active == s.isActive, "\(context)")
            #expect(devices.capture == s.isCaptureRunning, "\(context)")
            #expect(devices.playout == s.isPlayoutRunning, "\(context)")
            // The microphone is never open while the session is inactive or interrupted.
            if devices.capture { #expect(devices.active && s.interruption == nil, "\(context)") }
            // The engine sets the category once, at its first start, and never changes it after.
            #expect(devices.categorySets == (s.engineStarted ? 1 : 0), "\(context)")
            if wasStarted, let previous = categoryAfterStart, s.category != previous {
                #expect(event == .hostSetCategory(s.category), "only the host changes the category: \(context)")
            }
            categoryAfterStart = s.engineStarted ? s.category : nil
            // An interruption that reached the timeout always ends the call; a shorter one never does.
            let timedOut = t.effects.contains { if case .endCall(_, .interruptionTimeout) = $0 { true } else { false } }
            let due = deadline.map { now >= $0 } ?? false
            #expect(timedOut == due, "\(context)")
            // Every ended call leaves the session deactivated (the next event may start a new call).
            for case .callReport(let report) in t.effects {
                if !(event.isCallStart) { #expect(!s.isActive && !devices.active, "\(context)") }
                if timedOut && report.endCause == .interruptionTimeout {
                    #expect(report.interruptedDuration >= timeout.seconds - 1e-9, "\(context)")
                }
            }
            if t.refusal != nil, !due { #expect(t.effects.isEmpty, "\(context)") }
        }
    }
}

extension SessionEvent {
    var isCallStart: Bool {
        switch self {
        case .callProgressing, .callEstablished: true
        default: false
        }
    }
}
