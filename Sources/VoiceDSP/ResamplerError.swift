internal import CSpeexDSP

/// An error from the speexdsp resampler, or an argument the ``Resampler`` refused before calling it.
///
/// `code` mirrors speexdsp's `RESAMPLER_ERR_*` values; `call` names the C function that failed (or the Swift API
/// that validated its arguments); `field` names the offending argument when the error is an invalid argument
/// caught in Swift, so a caller (or a log line) can say exactly what was wrong.
public struct ResamplerError: Error, Equatable, Sendable, CustomStringConvertible {
    /// speexdsp's resampler error codes (`RESAMPLER_ERR_*` in `speex_resampler.h`).
    public enum Code: Equatable, Hashable, Sendable {
        /// `RESAMPLER_ERR_ALLOC_FAILED` (1): speexdsp could not allocate its state or filter table.
        case allocationFailed
        /// `RESAMPLER_ERR_BAD_STATE` (2): the state is unusable (an earlier filter update failed).
        case badState
        /// `RESAMPLER_ERR_INVALID_ARG` (3): a rate, ratio, quality or channel count out of range.
        case invalidArgument
        /// `RESAMPLER_ERR_PTR_OVERLAP` (4): input and output buffers overlap.
        case pointerOverlap
        /// `RESAMPLER_ERR_OVERFLOW` (5): a rate or ratio too large for speexdsp's 32-bit arithmetic.
        case overflow
        /// A code this wrapper does not know (a newer speexdsp).
        case unknown(Int32)

        init(rawValue: Int32) {
            switch rawValue {
            case Int32(RESAMPLER_ERR_ALLOC_FAILED): self = .allocationFailed
            case Int32(RESAMPLER_ERR_BAD_STATE): self = .badState
            case Int32(RESAMPLER_ERR_INVALID_ARG): self = .invalidArgument
            case Int32(RESAMPLER_ERR_PTR_OVERLAP): self = .pointerOverlap
            case Int32(RESAMPLER_ERR_OVERFLOW): self = .overflow
            default: self = .unknown(rawValue)
            }
        }

        /// The numeric speexdsp code.
        public var rawValue: Int32 {
            switch self {
            case .allocationFailed: Int32(RESAMPLER_ERR_ALLOC_FAILED)
            case .badState: Int32(RESAMPLER_ERR_BAD_STATE)
            case .invalidArgument: Int32(RESAMPLER_ERR_INVALID_ARG)
            case .pointerOverlap: Int32(RESAMPLER_ERR_PTR_OVERLAP)
            case .overflow: Int32(RESAMPLER_ERR_OVERFLOW)
            case .unknown(let raw): raw
            }
        }

        /// The C name of the code, e.g. `RESAMPLER_ERR_INVALID_ARG`.
        public var name: String {
            switch self {
            case .allocationFailed: "RESAMPLER_ERR_ALLOC_FAILED"
            case .badState: "RESAMPLER_ERR_BAD_STATE"
            case .invalidArgument: "RESAMPLER_ERR_INVALID_ARG"
            case .pointerOverlap: "RESAMPLER_ERR_PTR_OVERLAP"
            case .overflow: "RESAMPLER_ERR_OVERFLOW"
            case .unknown(let raw): "RESAMPLER_ERR(\(raw))"
            }
        }
    }

    /// What went wrong.
    public let code: Code
    /// The C function that returned the error (`speex_resampler_init`, …) or the Swift API that rejected an argument.
    public let call: String
    /// For an argument rejected in Swift, the parameter's name (`inputRate`, `outputRate`, `channels`, `quality`,
    /// `ppm`); `nil` for errors reported by speexdsp itself.
    public let field: String?

    public init(code: Code, call: String, field: String? = nil) {
        self.code = code
        self.call = call
        self.field = field
    }

    /// An argument rejected before reaching speexdsp; `field` names it.
    public static func invalidArgument(field: String, call: String) -> ResamplerError {
        ResamplerError(code: .invalidArgument, call: call, field: field)
    }

    public var description: String {
        if let field {
            return "\(call): invalid argument '\(field)' (\(code.name))"
        }
        return "\(call) failed: \(code.name) (\(code.rawValue))"
    }

    /// The one check every speexdsp resampler return code goes through.
    @inline(__always)
    static func check(_ result: Int32, _ call: StaticString) throws(ResamplerError) {
        if result != Int32(RESAMPLER_ERR_SUCCESS) {
            throw ResamplerError(code: Code(rawValue: result), call: "\(call)")
        }
    }
}
