internal import CSpeexDSP
import VoiceCore

/// An error from speexdsp's echo canceller or preprocessor, or an argument the ``EchoCanceller``,
/// ``MDFEchoFilter`` or ``Preprocessor`` refused before calling it.
///
/// speexdsp's echo and preprocess calls report failure only as a NULL state or a `-1` from a `*_ctl` request, so
/// the error names the C call (and the request) that failed; arguments caught in Swift name the field.
public enum SpeexDSPError: VoiceEngineError, Equatable {
    /// `speex_echo_state_init` / `speex_preprocess_state_init` returned NULL (allocation failed).
    case initFailed(call: String)
    /// A `*_ctl` request returned a non-zero code: `call` is the C function, `request` the request name.
    case controlFailed(call: String, request: String, code: Int32)
    /// An argument rejected in Swift: `field` names it, `reason` says what is allowed.
    case invalidArgument(field: String, reason: String)
    /// The far-end reference's drift resampler failed.
    case resampler(ResamplerError)

    public var identifier: String {
        switch self {
        case .initFailed: "speexdsp.initFailed"
        case .controlFailed: "speexdsp.controlFailed"
        case .invalidArgument: "speexdsp.invalidArgument"
        case .resampler: "speexdsp.resampler"
        }
    }

    public var description: String {
        switch self {
        case .initFailed(let call): "\(call) failed: returned NULL (out of memory or invalid size)"
        case .controlFailed(let call, let request, let code): "\(call)(\(request)) failed with code \(code)"
        case .invalidArgument(let field, let reason): "invalid \(field): \(reason)"
        case .resampler(let error): "far-end drift resampler: \(error)"
        }
    }

    /// The one check every speexdsp echo / preprocess return code goes through.
    @inline(__always)
    static func check(_ result: Int32, _ call: StaticString, _ request: StaticString) throws(SpeexDSPError) {
        if result != 0 {
            throw .controlFailed(call: "\(call)", request: "\(request)", code: result)
        }
    }

    /// The processing rates the echo canceller and preprocessor accept.
    public static let supportedRates: [Int] = [8_000, 16_000, 32_000, 48_000]

    static func checkRate(_ rate: Int) throws(SpeexDSPError) {
        guard supportedRates.contains(rate) else {
            throw .invalidArgument(field: "sampleRate", reason: "\(rate) Hz; supported: 8000, 16000, 32000, 48000")
        }
    }
}
