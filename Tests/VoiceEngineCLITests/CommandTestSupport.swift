import Foundation
import VoiceTestSupport

/// Finding the `voice-engine` tool for the tests that run it as a subprocess.
enum CommandTestSupport {
    /// The built `voice-engine` executable, or nil when it is absent.
    static var voiceEngineBinary: URL? { BuiltExecutables.url("voice-engine") }
}
