import ArgumentParser
import VoiceEngine

/// `voice-engine devices`: the sound cards and ALSA PCM devices this machine has, with their directions.
struct DevicesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "List sound cards and ALSA PCM devices (capture/playout) on this machine.")

    func run() throws {
        print(ALSADeviceList.current().printable)
    }
}
