import Foundation
import VoiceCore
import VoiceDevices
import VoiceSRTP

/// A device named on a command line: `null`, `file:PATH.wav`, or an ALSA PCM name (`default`, `hw:0,0`, …).
public enum LiveDeviceName: Sendable, Hashable, CustomStringConvertible {
    case null
    case file(String)
    case alsa(String)

    /// Parses `null`, `file:PATH` (a non-empty path) or anything else as an ALSA PCM name.
    public init(_ text: String) {
        if text == "null" {
            self = .null
        } else if text.hasPrefix("file:") {
            self = .file(String(text.dropFirst(5)))
        } else {
            self = .alsa(text)
        }
    }

    public var description: String {
        switch self {
        case .null: "null"
        case .file(let path): "file:\(path)"
        case .alsa(let name): name
        }
    }

    /// Opens a microphone and a speaker for a live call, in one mono format: a file microphone's own format,
    /// otherwise `sampleRate`. Every device runs in real time (file and null devices on their own timer threads).
    ///
    /// - Parameters:
    ///   - loopMicrophone: a file microphone starts again at its end instead of going silent.
    /// - Throws: ``LiveCallError/deviceOpenFailed(device:reason:)`` (missing or malformed WAV, a stereo file,
    ///   an ALSA error), ``LiveCallError/deviceMismatch(_:)`` when ALSA settles on another rate for one side.
    public static func openPair(
        microphone: LiveDeviceName, speaker: LiveDeviceName, sampleRate: Int = 48_000, loopMicrophone: Bool = false
    ) throws(LiveCallError) -> (capture: any AudioDevice, playout: any AudioDevice) {
        let capture = try microphone.open(
            direction: .capture, format: AudioFormat(sampleRate: sampleRate, channels: 1),
            loop: loopMicrophone)
        guard capture.format.channels == 1 else {
            capture.close()
            throw .deviceOpenFailed(
                device: microphone.description, reason: "\(capture.format) is not mono; use a mono WAV file")
        }
        let playout: any AudioDevice
        do {
            playout = try speaker.open(direction: .playout, format: capture.format, loop: false)
        } catch {
            capture.close()
            throw error
        }
        guard playout.format == capture.format else {
            capture.close()
            playout.close()
            throw .deviceMismatch(
                "speaker \(speaker) settled on \(playout.format), microphone \(microphone) on \(capture.format)")
        }
        return (capture, playout)
    }

    /// File and null devices keep the monotonic clock's time but have no thread of their own: the call's media
    /// thread transfers their due periods on its 10 ms tick (``LiveCall`` drives manually clocked devices), so a
    /// call wakes once per 10 ms rather than three times.
    static let clocking = DeviceClocking.manual(MonotonicClock())

    func open(direction: AudioDirection, format: AudioFormat, loop: Bool, clocking: DeviceClocking = clocking)
        throws(LiveCallError) -> any AudioDevice
    {
        do {
            switch self {
            case .null:
                return try NullAudioDevice(direction: direction, format: format, clocking: clocking)
            case .file(let path):
                guard !path.isEmpty else {
                    throw LiveCallError.deviceOpenFailed(device: description, reason: "no path after file:")
                }
                if direction == .capture {
                    return try FileCaptureDevice(
                        path: path, clocking: clocking, endOfFile: loop ? .loop : .silence)
                }
                return try FilePlayoutDevice(path: path, format: format, clocking: clocking)
            case .alsa(let name):
                return try ALSADevice(name: name, direction: direction, format: format)
            }
        } catch let error as LiveCallError {
            throw error
        } catch {
            throw .deviceOpenFailed(device: description, reason: "\(error)")
        }
    }
}

/// SDES key exchange for a call set up by hand: `a=crypto` lines that are printed and pasted, or keys given as
/// base64 on the command line.
public enum LiveCallKeys {
    /// Our offer line: the key given as base64 (`inline:` material, key and salt) or fresh random key material.
    /// - Throws: `SDESError` (VoiceSRTP) for bad base64 or a key of the wrong length for `suite`.
    public static func localAttribute(suite: SRTPCryptoSuite, base64Key: String? = nil) throws(SDESError)
        -> SDESCryptoAttribute
    {
        guard let base64Key else { return SDESCryptoAttribute.generate(tag: 1, suite: suite) }
        return try attribute(suite: suite, base64Key: base64Key)
    }

    /// The peer's attribute from a pasted `a=crypto:` line (with or without `a=`) or from a base64 key.
    /// - Throws: `SDESError` (VoiceSRTP) naming what is wrong with the line or key.
    public static func remoteAttribute(line: String? = nil, suite: SRTPCryptoSuite, base64Key: String? = nil)
        throws(SDESError) -> SDESCryptoAttribute
    {
        if let line {
            let attribute = try SDESCryptoAttribute(parsing: line)
            try attribute.validate()
            return attribute
        }
        return try attribute(suite: suite, base64Key: base64Key ?? "")
    }

    /// The stream's SRTP settings: we protect with our key, unprotect with the peer's; both use the peer's
    /// suite, which must be ours.
    /// - Throws: `SDESError.unknownSuite` (VoiceSRTP) when the suites differ.
    public static func streamKeys(local: SDESCryptoAttribute, remote: SDESCryptoAttribute) throws(SDESError)
        -> MediaStreamSRTP
    {
        guard local.suite == remote.suite else {
            throw .unknownSuite(
                "\(remote.suite.rawValue) (the peer's line) differs from ours (\(local.suite.rawValue))")
        }
        return MediaStreamSRTP(suite: local.suite, localKey: local.key, remoteKey: remote.key)
    }

    private static func attribute(suite: SRTPCryptoSuite, base64Key: String) throws(SDESError)
        -> SDESCryptoAttribute
    {
        let trimmed = base64Key.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty, !trimmed.contains(where: { $0.isWhitespace || $0 == "|" || $0 == ";" }) else {
            throw .badBase64
        }
        let attribute = try SDESCryptoAttribute(parsing: "crypto:1 \(suite.rawValue) inline:\(trimmed)")
        try attribute.validate()
        return attribute
    }
}
