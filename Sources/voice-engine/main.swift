import ArgumentParser
import Foundation
import VoiceEngine
import VoiceLab

/// `voice-engine`: the command-line face of VoiceEngine.
struct VoiceEngineCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "voice-engine",
        abstract: "A real-time voice media engine for Linux: demo calls, test vectors and tools.",
        subcommands: [DemoCommand.self, VectorsCommand.self, DevicesCommand.self, PlayCommand.self, SimulateCommand.self, ReplayCommand.self, RTPDumpCommand.self, CallCommand.self, AECCommand.self, AECVectorsCommand.self, SIPCommand.self]
    )
}

do {
    var command = try VoiceEngineCommand.parseAsRoot()
    try command.run()
} catch let failure as CommandFailure {
    FileHandle.standardError.write(Data("error: \(failure)\n".utf8))
    exit(failure.status)
} catch {
    VoiceEngineCommand.exit(withError: error)
}
