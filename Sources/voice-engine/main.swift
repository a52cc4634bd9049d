import ArgumentParser
import Foundation
import VoiceCrypto
import VoiceEngine
import VoiceLab

/// `voice-engine`: the command-line face of VoiceEngine.
struct VoiceEngineCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "voice-engine",
        abstract: "A real-time voice media engine for Linux: demo calls, test vectors and tools.",
        discussion: """
            Every failure is one line on stderr starting with 'error:' (a usage error adds the command's usage \
            line). Exit status: 0 success, 64 usage (an unknown or missing option, a value out of its range), \
            65 bad input data (an unreadable or malformed WAV, capture, trace or key), 1 runtime failure (a \
            device, the network, a file that cannot be written); `sip` adds classes of its own (see `sip --help`).
            """,
        subcommands: [
            DemoCommand.self, VectorsCommand.self, DevicesCommand.self, PlayCommand.self, SimulateCommand.self,
            ReplayCommand.self, RTPDumpCommand.self, CallCommand.self, AECCommand.self, AECVectorsCommand.self,
            SIPCommand.self,
            SignRegistrationCommand.self, RegistrationServiceCommand.self, WebRTCDemoCommand.self, PhoneCommand.self,
            ConferenceServerCommand.self
        ]
    )
}

// A call still stopping when a command returns may sign or hash while the process exits.
CryptoLibrary.skipCleanupAtExit()
// The one place a command's failure is printed and turned into the exit status (CommandFailure).
var command: ParsableCommand
do {
    command = try VoiceEngineCommand.parseAsRoot()
} catch {
    // --help and --version exit 0 the way ArgumentParser prints them; every other parse or validation error is
    // one `error:` line that already holds the usage of the subcommand it belongs to.
    if VoiceEngineCommand.exitCode(for: error) == .success { VoiceEngineCommand.exit(withError: error) }
    var text = VoiceEngineCommand.fullMessage(for: error, columns: 120)
    if text.hasPrefix("Error: ") { text = String(text.dropFirst("Error: ".count)) }
    CommandFailure(text, status: .usage, showsUsage: false).printAndExit(usage: nil)
}
do {
    try command.run()
} catch {
    // `voice-engine <command> --help` parses as a help request that is raised when run: ArgumentParser prints it.
    if VoiceEngineCommand.exitCode(for: error) == .success { VoiceEngineCommand.exit(withError: error) }
    CommandFailure(error).printAndExit(usage: VoiceEngineCommand.usageString(for: type(of: command)))
}
