import Synchronization
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

    public init(
        microphone: String = "default", speaker: String = "default", sampleRate: Int = 48_000,
        voiceProcessing: Bool = true, ringtone: String? = nil
    ) {
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
///
/// They are heard: while a call is under way or the busy tone plays and no call media runs, a ``TonePlayout``
/// renders the controller on the speaker of the latest call; when a call's media starts the player is stopped
/// first (the device is free and one thread mixes the controller) and the call's ``LiveCall`` mixes the
/// controller over its audio (early media, call waiting); when the media stops the player takes over again.
final class CallTones: Sendable {
    let controller: AudioController
    let ringtone: String?
    static let busyToneDuration: Duration = .seconds(3)
    /// A ringing cadence when the app gives no ringtone file: 440 + 480 Hz, 1 s on, 2 s off (quieter than
    /// ringback, which is played into a call).
    static let builtInRingtone = ToneSpec(frequencies: [440, 480], cadence: [.on(1000), .off(2000)], amplitude: 0.25)

    private struct Output: ~Copyable {
        /// Calls under way plus busy tones playing: while above zero the tones should be heard.
        var activity = 0
        /// Calls whose media runs (their playout mixes the controller).
        var media = 0
        var speaker = "default"
        var player: TonePlayout?
    }
    private let output = Mutex(Output())

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
    func playBusyTone(on speaker: String) {
        controller.startPlayingTone(.busy)
        callBegan(speaker: speaker)
        Task { [self] in
            try? await Task.sleep(for: Self.busyToneDuration)
            controller.stopPlayingTone()
            callEnded()
        }
    }

    // MARK: Where the tones are heard

    /// A call is under way (or a busy tone plays) on `speaker`: the tones are played there until its media starts.
    func callBegan(speaker: String) {
        update {
            $0.activity += 1
            $0.speaker = speaker
        }
    }
    /// A call is over; when its media ran, both counts change in one step, so the player does not start in between
    /// (a file speaker would be written over) unless a busy tone is to be heard.
    func callEnded(hadMedia: Bool = false) {
        update {
            $0.activity -= 1
            if hadMedia { $0.media -= 1 }
        }
    }
    /// Before a call opens its devices: the player lets go of the speaker and of the controller.
    func mediaStarting() { update { $0.media += 1 } }
    /// After a call's media stopped (or failed to start).
    func mediaStopped() { update { $0.media -= 1 } }

    private func update(_ change: (inout Output) -> Void) {
        output.withLock { output in
            change(&output)
            let wanted = output.activity > 0 && output.media == 0
            if !wanted, let player = output.player {
                player.stop()
                output.player = nil
            } else if wanted, output.player == nil {
                // A speaker that cannot be opened leaves the tones silent; the call itself reports device faults.
                if let player = try? TonePlayout(controller: controller, speaker: LiveDeviceName(output.speaker)) {
                    if (try? player.start()) != nil { output.player = player } else { player.stop() }
                }
            }
        }
    }
}

/// Why ``Call/setAudioDevices(_:)`` changed nothing.
public enum CallDeviceError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The call has ended.
    case ended
    /// The call object has no media of its own (made with ``VoiceClient/newCall(id:direction:remote:headers:viaPush:)``).
    case noMedia
    /// The devices could not be opened; the call goes on on its previous devices.
    case cannotOpen(String)

    public var description: String {
        switch self {
        case .ended: "the call has ended"
        case .noMedia: "the call has no media of its own"
        case .cannotOpen(let reason): "cannot open the devices (the call stays on its previous ones): \(reason)"
        }
    }
}
