internal import CALSA
import VoiceCore

#if canImport(Glibc)
import Glibc
#endif

/// What an ALSA device supports, read from its unrestricted hardware configuration space; part of the
/// error when nothing the engine can use fits, so the message says what would.
public struct ALSACapabilities: Sendable, Hashable, CustomStringConvertible {
    public var rates: ClosedRange<UInt32>
    public var channels: ClosedRange<UInt32>
    /// Sample formats by ALSA name (`"S16_LE"`, `"S32_LE"`, `"FLOAT_LE"`, …).
    public var formats: [String]
    /// Access types by ALSA name (`"RW_INTERLEAVED"`, `"MMAP_INTERLEAVED"`, …).
    public var accessTypes: [String]
    public var periodFrames: ClosedRange<UInt>
    public var bufferFrames: ClosedRange<UInt>

    public init(
        rates: ClosedRange<UInt32>, channels: ClosedRange<UInt32>, formats: [String], accessTypes: [String],
        periodFrames: ClosedRange<UInt>, bufferFrames: ClosedRange<UInt>
    ) {
        self.rates = rates
        self.channels = channels
        self.formats = formats
        self.accessTypes = accessTypes
        self.periodFrames = periodFrames
        self.bufferFrames = bufferFrames
    }

    public var description: String {
        "rates \(rates.lowerBound)–\(rates.upperBound) Hz, channels \(channels.lowerBound)–\(channels.upperBound), "
            + "formats [\(formats.joined(separator: ", "))], access [\(accessTypes.joined(separator: ", "))], "
            + "period \(periodFrames.lowerBound)–\(periodFrames.upperBound) frames, "
            + "buffer \(bufferFrames.lowerBound)–\(bufferFrames.upperBound) frames"
    }
}

/// A failed ALSA call, or a device that offers nothing the engine can use.
public enum ALSAError: VoiceEngineError, Equatable {
    /// `call` on `device` returned the negative errno `code`; `message` is `snd_strerror(code)`.
    case callFailed(call: String, device: String, code: Int32, message: String)
    /// The device cannot do what was asked (`constraint`, e.g. "format S16_LE" or "channels 1"), even with
    /// the near-value fallbacks; `supported` lists what it can do.
    case unsupportedConfiguration(device: String, constraint: String, supported: ALSACapabilities)

    /// The negative errno of a failed call (nil for an unsupported configuration).
    public var code: Int32? {
        if case .callFailed(_, _, let code, _) = self { return code }
        return nil
    }

    /// The interruption this error means for the audio session, if it is one (busy, lost, suspended).
    public var interruptionReason: InterruptionReason? {
        guard let code else { return nil }
        return ALSAFault(code: Int(code)).interruptionReason
    }

    public var identifier: String {
        switch self {
        case .callFailed(let call, _, let code, _):
            if code == -EBUSY { return "alsa.deviceBusy" }
            if call == "snd_pcm_open" && (code == -ENOENT || code == -ENODEV || code == -EINVAL || code == -ENXIO) {
                return "alsa.noSuchDevice"
            }
            return "alsa.callFailed"
        case .unsupportedConfiguration: return "alsa.unsupportedConfiguration"
        }
    }

    public var description: String {
        switch self {
        case .callFailed(let call, let device, let code, let message):
            var text = "\(call) on ALSA device \"\(device)\" failed: \(message) (\(code))"
            if identifier == "alsa.noSuchDevice" {
                text += "; no such PCM — `voice-engine devices` lists the available ones"
            } else if code == -EBUSY {
                text += "; another client is using the device"
            }
            return text
        case .unsupportedConfiguration(let device, let constraint, let supported):
            return "ALSA device \"\(device)\" cannot do \(constraint); it supports \(supported)"
        }
    }
}

/// The one check every ALSA return code goes through: non-negative passes through, negative throws
/// ``ALSAError/callFailed(call:device:code:message:)`` with `snd_strerror`'s text.
@discardableResult
func alsaCheck<T: BinaryInteger>(_ result: T, _ call: String, device: String) throws(ALSAError) -> T {
    guard result < 0 else { return result }
    let code = Int32(truncatingIfNeeded: result)
    throw .callFailed(call: call, device: device, code: code, message: alsaMessage(code))
}

/// `snd_strerror` as a Swift string (also covers plain errno values).
func alsaMessage(_ code: Int32) -> String {
    String(cString: snd_strerror(code))
}

/// ALSA library diagnostics on stderr.
public enum ALSADiagnostics {
    /// Stops alsa-lib from printing its own messages to stderr ("ALSA lib pcm.c:2666: Unknown PCM …");
    /// every failure still reaches the caller as an ``ALSAError``. Process-wide.
    public static func silenceLibraryMessages() { _ = voiceengine_alsa_silence_library_errors() }
    /// Restores alsa-lib's default stderr messages.
    public static func restoreLibraryMessages() { _ = voiceengine_alsa_restore_library_errors() }
}
