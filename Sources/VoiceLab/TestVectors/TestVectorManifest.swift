import VoiceEngine
import Foundation

/// The test-vector manifest (`TestVectors/manifest.json`): which WAV inputs the project generates and which
/// objective checks, with which thresholds, the codec and DSP stages must meet on them.
///
/// The manifest is the single source of truth: `voice-engine vectors generate` writes the files its
/// `vectors` describe, and `voice-engine vectors check` (and `swift test`) runs its `checks`.
public struct TestVectorManifest: Codable, Sendable {
    public var vectors: [VectorSpec]
    public var checks: [CheckSpec]

    /// One generated WAV input: mono 16-bit PCM made by ``SignalGenerator``.
    public struct VectorSpec: Codable, Sendable {
        public var file: String
        /// `sine`, `sweep`, `speechLike`, `whiteNoise`, `pinkNoise` or `silence`.
        public var signal: String
        public var sampleRate: Int
        public var seconds: Double
        public var frequency: Double?
        public var toFrequency: Double?
        public var amplitude: Double?
        public var seed: UInt64?
    }

    /// One check: run `kind` on `input`, measure `metric`, and require it to be at least `min`.
    public struct CheckSpec: Codable, Sendable {
        public var name: String
        /// `opusRoundTrip`, `resamplerRoundTrip`, `resamplerStopBand` or `fecVersusPLC`.
        public var kind: String
        public var input: String
        public var metric: String
        public var min: Double
        public var parameters: Parameters
        public var description: String?
    }

    /// Parameters of a check; each kind reads the ones it needs and rejects the manifest when one is missing.
    public struct Parameters: Codable, Sendable {
        public var bitrate: Int?
        public var application: String?
        public var frameMilliseconds: Int?
        public var complexity: Int?
        public var lossPercent: Double?
        public var lossSeed: UInt64?
        public var intermediateRate: Int?
        public var quality: Int?
        public var toneFrequency: Double?
    }

    /// Loads and decodes a manifest, with an error naming the file when it is missing or malformed.
    public static func load(from url: URL) throws -> TestVectorManifest {
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw TestVectorError.unreadable(url.path, TestVectorError.fileReason(error))
        }
        do { return try JSONDecoder().decode(TestVectorManifest.self, from: data) } catch {
            throw TestVectorError.malformedManifest(url.path, String(describing: error))
        }
    }
}

/// Why the test vectors could not be generated or checked.
public enum TestVectorError: Error, CustomStringConvertible, Equatable {
    case unreadable(String, String)
    case malformedManifest(String, String)
    case unknownSignal(String)
    case unknownCheck(String)
    case missingParameter(check: String, parameter: String)
    case unexpectedInput(String, String)

    /// A file error as one sentence, the system's reason ("No such file or directory") when there is one, not
    /// Foundation's domain, code and user-info dump.
    public static func fileReason(_ error: any Error) -> String {
        let error = error as NSError
        if let posix = error.userInfo[NSUnderlyingErrorKey] as? NSError, posix.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(posix.code)))
        }
        return error.localizedDescription
    }

    public var description: String {
        switch self {
        case .unreadable(let path, let reason): "cannot read \(path): \(reason)"
        case .malformedManifest(let path, let reason): "malformed manifest \(path): \(reason)"
        case .unknownSignal(let name): "unknown signal kind '\(name)'"
        case .unknownCheck(let name): "unknown check kind '\(name)'"
        case .missingParameter(let check, let parameter): "check '\(check)' needs parameter '\(parameter)'"
        case .unexpectedInput(let file, let reason): "test vector \(file): \(reason)"
        }
    }
}
