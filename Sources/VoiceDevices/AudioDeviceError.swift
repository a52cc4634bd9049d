import VoiceCore

/// Why a file-backed or null device could not be opened or started (ALSA devices throw ``ALSAError``).
public enum AudioDeviceError: VoiceEngineError, Equatable {
    /// `start()` after `close()`.
    case closed(device: String)
    /// `start()` after the device's thread exited on a fault it could not recover from.
    case failed(device: String)
    /// The audio thread could not be created (`pthread_create` returned `code`).
    case threadCreationFailed(device: String, code: Int32)
    /// The wakeup pipe of the audio thread could not be created.
    case wakeupUnavailable(device: String, errno: Int32)
    /// The requested period is not a whole, positive number of samples at the format's rate.
    case invalidPeriod(milliseconds: Int, format: AudioFormat)
    /// A file holds a different format than the one asked for (file devices do not resample).
    case formatMismatch(device: String, requested: AudioFormat, found: AudioFormat)
    /// The WAV file of a file-backed microphone could not be read.
    case wav(WAVError)
    /// The file of a file-backed speaker could not be created, written or finalised.
    case fileWriteFailed(path: String, reason: String)

    public var identifier: String {
        switch self {
        case .closed: "devices.closed"
        case .failed: "devices.failed"
        case .threadCreationFailed: "devices.threadCreationFailed"
        case .wakeupUnavailable: "devices.wakeupUnavailable"
        case .invalidPeriod: "devices.invalidPeriod"
        case .formatMismatch: "devices.formatMismatch"
        case .wav: "devices.wav"
        case .fileWriteFailed: "devices.fileWriteFailed"
        }
    }

    public var description: String {
        switch self {
        case .closed(let device): "device \(device) is closed and cannot be started again"
        case .failed(let device): "device \(device) failed (see its events) and cannot be started again"
        case .threadCreationFailed(let device, let code):
            "could not create the audio thread of \(device): pthread_create returned \(code)"
        case .wakeupUnavailable(let device, let code):
            "could not create the wakeup pipe of \(device): errno \(code)"
        case .invalidPeriod(let ms, let format):
            "a period of \(ms) ms is not a whole, positive number of samples at \(format.sampleRate) Hz"
        case .formatMismatch(let device, let requested, let found):
            "\(device) holds \(found), not the requested \(requested) (file devices do not resample)"
        case .wav(let error): "WAV microphone: \(error.description)"
        case .fileWriteFailed(let path, let reason): "cannot write speaker file \(path): \(reason)"
        }
    }
}
