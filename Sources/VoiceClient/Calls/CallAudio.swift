import VoiceEngine

/// The devices a call's media runs on, opened when the call is established and closed at its end: ALSA PCM names
/// (`default`, `hw:0,0`), `file:PATH.wav` (a file microphone plays the file, a file speaker records what was
/// heard) or `null`. A file microphone sets the call's rate; otherwise `sampleRate`.
public struct CallAudioDevices: Sendable, Hashable {
    public var microphone: String
    public var speaker: String
    public var sampleRate: Int
    /// Echo cancellation, noise suppression and gain control in the send chain.
    public var voiceProcessing: Bool
    /// The app's ringtone for incoming calls (a mono 16-bit WAV at 8, 16 or 32 kHz, looped); nil: a built-in
    /// ringing cadence.
    public var ringtone: String?

    public init(microphone: String = "default", speaker: String = "default", sampleRate: Int = 48_000, voiceProcessing: Bool = true, ringtone: String? = nil) {
        self.microphone = microphone
        self.speaker = speaker
        self.sampleRate = sampleRate
        self.voiceProcessing = voiceProcessing
        self.ringtone = ringtone
    }
}

/// The tones of the calling client, through the engine's ``AudioController``: the ringtone while an incoming
/// call rings (until answered or ended), the busy tone after a call the callee declined or that failed (for
/// `busyToneDuration`); ringback while an outgoing call progresses is the audio session's (it has the same
/// controller).
final class CallTones: Sendable {
    let controller: AudioController
    let ringtone: String?
    static let busyToneDuration: Duration = .seconds(3)
    /// A ringing cadence when the app gives no ringtone file: 440 + 480 Hz, 1 s on, 2 s off (quieter than
    /// ringback, which is played into a call).
    static let builtInRingtone = ToneSpec(frequencies: [440, 480], cadence: [.on(1000), .off(2000)], amplitude: 0.25)

    init(controller: AudioController, ringtone: String?) {
        self.controller = controller
        self.ringtone = ringtone
    }

    func startRingtone() {
        if let ringtone, (try? controller.startPlayingSoundFile(ringtone, loop: true)) != nil { return }
        controller.startPlayingTone(Self.builtInRingtone)
    }

    func stopRingtone() {
        controller.stopPlayingSoundFile()
        controller.stopPlayingTone()
    }

    /// The busy tone for a while (the SDKs play it when a call is denied or fails).
    func playBusyTone() {
        controller.startPlayingTone(.busy)
        Task { [controller] in
            try? await Task.sleep(for: Self.busyToneDuration)
            controller.stopPlayingTone()
        }
    }
}
