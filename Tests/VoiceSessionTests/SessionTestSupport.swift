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

/// A directory under the system temp dir, removed by the caller.
func makeTemporaryDirectory() -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("voice-session-\(UUID().uuidString)").path
    try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}
