import Synchronization
import VoiceCore

/// Plays ringtones, sound files and call-progress tones into the playout path (ARCHITECTURE.md §4).
///
/// Two independent voices are mixed: a **sound file** (``startPlayingSoundFile(_:loop:)``) and a **tone**
/// (``startPlayingTone(_:profile:)``, which the audio session also uses for the progress tone). The playout path
/// calls ``mix(into:)`` once per 10 ms block, after it has written the call's audio (or silence) into the block:
/// the voices are added with saturation, so outside a call the block holds just the ringtone and during a call
/// the call's audio with the tone on top.
///
/// Threads: the control methods (`start…`, `stop…`) may be called from any thread or task; ``mix(into:)`` from
/// one audio thread at a time. Control methods prepare everything (the file is read, validated and resampled
/// to the device rate up front) and hand the ready voice to the audio thread through a single-producer,
/// single-consumer queue (the control side is serialised by a mutex). The audio thread hands replaced voices
/// back through a second queue, so their memory is freed on a control thread. `mix(into:)` therefore never
/// allocates, frees or waits. Its one synchronisation besides the lock-free queues is a try-lock that never
/// waits: if control calls filled the queue while playout was stopped, the newest command per voice is kept
/// aside and the audio thread moves it into the queue when the mutex happens to be free.
public final class AudioController: @unchecked Sendable {
    // @unchecked Sendable: `fileVoice`/`toneVoice` are touched only by the audio thread inside `mix(into:)` (one
    // at a time, the documented contract); the queues are SPSC with the control side serialised by `control`;
    // everything else is immutable.

    /// The playout device's format: the rate voices are converted to, the channels they are copied into.
    public let deviceFormat: AudioFormat
    /// The tone profile used when none is given.
    public let toneProfile: ToneProfile

    private enum Command: Sendable {
        case file(FileVoice?)
        case tone(ToneVoice?)
    }

    private struct ControlState: ~Copyable {
        /// A command per voice that did not fit in the queue yet (the audio thread has not run); a newer command
        /// for the same voice replaces it.
        var pendingFile: Command?
        var pendingTone: Command?
    }

    private let control = Mutex(ControlState())
    private let commands: SPSCQueue<Command>
    private let retired: SPSCQueue<AnyObject & Sendable>
    private var fileVoice: FileVoice?
    private var toneVoice: ToneVoice?

    /// - Parameters:
    ///   - deviceFormat: the playout device's format.
    ///   - toneProfile: the country profile for tones started without one (US by default).
    public init(deviceFormat: AudioFormat, toneProfile: ToneProfile = .us) {
        self.deviceFormat = deviceFormat
        self.toneProfile = toneProfile
        commands = SPSCQueue(capacity: 32)
        retired = SPSCQueue(capacity: 128)
    }

    // MARK: Control side

    /// Reads, validates and plays the sound file at `path`, replacing any sound file already playing.
    ///
    /// - Parameters:
    ///   - path: a mono, 16-bit PCM WAV file at 8, 16 or 32 kHz.
    ///   - loop: repeat without a gap until ``stopPlayingSoundFile()``; otherwise play once.
    /// - Throws: ``SoundFileError`` naming the offending property; nothing changes then (a playing file keeps
    ///   playing).
    public func startPlayingSoundFile(_ path: String, loop: Bool) throws(SoundFileError) {
        try startPlayingSoundFile(SoundFile(path: path), loop: loop)
    }

    /// Plays an already validated sound file.
    public func startPlayingSoundFile(_ file: SoundFile, loop: Bool) throws(SoundFileError) {
        let samples = try file.samples(atRate: deviceFormat.sampleRate, loop: loop)
        submit(.file(FileVoice(samples: samples, loop: loop)))
    }

    /// Stops the sound file (at the next block). Does nothing if none plays.
    public func stopPlayingSoundFile() { submit(.file(nil)) }

    /// Starts generating `tone` with the cadence of `profile` (``toneProfile`` if nil), replacing any tone.
    public func startPlayingTone(_ tone: CallProgressTone, profile: ToneProfile? = nil) {
        let spec = (profile ?? toneProfile).spec(for: tone)
        startPlayingTone(spec)
    }

    /// Starts generating a custom tone, replacing any tone.
    public func startPlayingTone(_ spec: ToneSpec) {
        submit(.tone(ToneVoice(ToneGenerator(spec: spec, sampleRate: deviceFormat.sampleRate))))
    }

    /// Stops the tone (at the next block). Does nothing if none plays.
    public func stopPlayingTone() { submit(.tone(nil)) }

    private func submit(_ command: Command) {
        control.withLock { state in
            while retired.pop() != nil {}  // free replaced voices here, not on the audio thread
            switch command {
            case .file: state.pendingFile = command
            case .tone: state.pendingTone = command
            }
            if let pending = state.pendingFile, commands.push(pending) { state.pendingFile = nil }
            if let pending = state.pendingTone, commands.push(pending) { state.pendingTone = nil }
        }
    }

    // MARK: Audio side

    /// Adds the playing voices to `buffer` (interleaved samples of ``deviceFormat``, any whole number of frames,
    /// normally one 10 ms block) with saturation. Call it every block from the playout thread, after writing the
    /// call's audio or silence. Never allocates, frees, locks or waits.
    public func mix(into buffer: UnsafeMutableBufferPointer<Int16>) {
        let channels = deviceFormat.channels
        precondition(buffer.count % channels == 0, "buffer must hold whole interleaved frames")
        deliverPendingCommands()
        while let command = commands.pop() {
            switch command {
            case .file(let voice):
                retire(fileVoice)
                fileVoice = voice
            case .tone(let voice):
                retire(toneVoice)
                toneVoice = voice
            }
        }
        if let voice = fileVoice {
            voice.mix(into: buffer, channels: channels)
            if voice.isFinished {
                retire(voice)
                fileVoice = nil
            }
        }
        toneVoice?.generator.mix(into: buffer, channels: channels)
    }

    /// Moves commands that did not fit the queue into it, if the control side is not busy right now. A
    /// try-lock: never waits. The queue's producer side stays serialised by the mutex, as SPSC requires.
    private func deliverPendingCommands() {
        _ = control.withLockIfAvailable { state in
            if let pending = state.pendingFile, commands.push(pending) { state.pendingFile = nil }
            if let pending = state.pendingTone, commands.push(pending) { state.pendingTone = nil }
        }
    }

    /// ``mix(into:)`` for a whole frame; the frame must be in ``deviceFormat``.
    public func mix(into frame: inout AudioFrame) {
        precondition(frame.format == deviceFormat, "frame format \(frame.format) is not the device's \(deviceFormat)")
        frame.withUnsafeMutableSamples { mix(into: $0) }
    }

    /// Hands a replaced voice to the control side to free. If that queue is full (no control call for a long
    /// time), the voice is released here: a rare free on the audio thread rather than a leak.
    private func retire(_ voice: (AnyObject & Sendable)?) {
        guard let voice else { return }
        retired.push(voice)
    }
}

/// A sound file converted to the device rate, and where playback is.
final class FileVoice: @unchecked Sendable {
    // @unchecked Sendable: created on a control thread and handed over through the SPSC queue; after that only
    // the audio thread touches `position`.
    let samples: [Int16]
    let loop: Bool
    private(set) var position = 0
    var isFinished: Bool { !loop && position >= samples.count }

    init(samples: [Int16], loop: Bool) {
        self.samples = samples
        self.loop = loop
    }

    /// Adds the next frames (the same sample to every channel), wrapping to the start without a gap when looping.
    func mix(into buffer: UnsafeMutableBufferPointer<Int16>, channels: Int) {
        let frames = buffer.count / channels
        samples.withUnsafeBufferPointer { source in
            var done = 0
            while done < frames {
                if position >= source.count {
                    guard loop, !source.isEmpty else { return }
                    position = 0
                }
                let n = min(frames - done, source.count - position)
                for k in 0..<n {
                    let s = Int32(source[position + k])
                    let base = (done + k) * channels
                    for c in 0..<channels { buffer[base + c] = saturatingAdd(buffer[base + c], s) }
                }
                done += n
                position += n
            }
        }
    }
}

/// A tone generator owned by the audio thread once handed over.
final class ToneVoice: @unchecked Sendable {
    // @unchecked Sendable: as FileVoice; only the audio thread mutates `generator` after the hand-over.
    var generator: ToneGenerator

    init(_ generator: ToneGenerator) { self.generator = generator }
}
