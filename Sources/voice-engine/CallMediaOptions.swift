import ArgumentParser
import VoiceEngine

/// The devices and codec of a live call, shared by `call` and `sip call`/`sip listen` so both take and check them alike.
struct CallMediaOptions: ParsableArguments {
    @Option(help: "Microphone: null, file:IN.wav, or an ALSA PCM name.")
    var mic: String = "default"
    @Option(help: "Speaker: null, file:OUT.wav, or an ALSA PCM name.")
    var speaker: String = "default"
    @Option(help: "Device rate in Hz when the microphone is not a file.")
    var rate: Int = 48_000
    @Flag(help: "Skip voice processing (echo cancellation, noise suppression, AGC).")
    var noVoiceProcessing = false
    @Flag(help: "Voice processing without the echo canceller: noise suppression and VAD only (a headset).")
    var noEchoCanceller = false
    @Option(help: "Opus bitrate in bits per second.")
    var bitrate: Int = 32_000

    func validate() throws {
        try Self.checkRate(rate, within: 8_000...192_000)
        try SimulateCommand.bitrateRange.check(bitrate)
    }

    /// A device rate: within `range` and a multiple of 100 Hz (10 ms frames). `phone` declares its own device
    /// options (other help, at most 48 kHz) and shares the checks.
    static func checkRate(_ rate: Int, within range: ClosedRange<Double>) throws {
        try OptionRange("--rate", range, "Hz").check(rate)
        guard rate % 100 == 0 else { throw ValidationError("--rate \(rate): must be a multiple of 100 Hz") }
    }

    /// `configuration` with `--no-echo-canceller` applied.
    func applyingEchoCancellerChoice(_ configuration: MediaStreamConfiguration) -> MediaStreamConfiguration {
        var c = configuration
        if noEchoCanceller { c.echoCanceller.stages.remove(.echoFilter) }
        return c
    }

    /// A `file:` speaker's path is checked before the call, not after it.
    func checkOutputs() throws { try Self.checkSpeakerFile(speaker) }

    static func checkSpeakerFile(_ speaker: String) throws {
        if speaker.hasPrefix("file:") { try OutputPaths.checkFile(String(speaker.dropFirst(5)), option: "--speaker") }
    }
}
