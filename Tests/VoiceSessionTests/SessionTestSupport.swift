import Foundation
import Testing
import VoiceCore

@testable import VoiceSession

/// Applies `events` at `time` each, requiring every one to be accepted.
func state(
    after events: [SessionEvent], at time: MediaTime = .zero,
    configuration: AudioSessionConfiguration = AudioSessionConfiguration()
) -> AudioSessionState {
    var s = AudioSessionState(configuration: configuration)
    for event in events {
        let t = AudioSessionMachine.transition(s, event, at: time)
        precondition(t.refusal == nil, "setup event \(event) refused: \(t.refusal!)")
        s = t.state
    }
    return s
}

/// SplitMix64, so random event sequences are reproducible from their seed.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A directory under the system temp dir, removed by the caller.
func makeTemporaryDirectory() -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("voice-session-\(UUID().uuidString)").path
    try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

