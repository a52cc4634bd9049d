internal import COpus

/// The error every VoiceCodec operation throws: a libopus return code, the C call that returned it, and a
/// named kind a caller can switch on without knowing libopus constants.
///
/// Configuration validation (done in Swift before any C call) throws `.badArgument` with `code` `-1`
/// (`OPUS_BAD_ARG`), `call` naming the validating API and `field` naming the offending configuration field.
public struct OpusError: Error, Equatable, CustomStringConvertible {
    /// What went wrong, mirroring libopus's `OPUS_*` error codes.
    public enum Kind: Equatable, Hashable, Sendable {
        /// `OPUS_BAD_ARG` (-1): an argument or configuration value is out of range.
        case badArgument
        /// `OPUS_BUFFER_TOO_SMALL` (-2): the caller's output buffer cannot hold the result.
        case bufferTooSmall
        /// `OPUS_INTERNAL_ERROR` (-3).
        case internalError
        /// `OPUS_INVALID_PACKET` (-4): the packet is corrupt or not an Opus packet.
        case invalidPacket
        /// `OPUS_UNIMPLEMENTED` (-5): the request is not supported by this libopus build.
        case unimplemented
        /// `OPUS_INVALID_STATE` (-6): the encoder or decoder state is corrupt.
        case invalidState
        /// `OPUS_ALLOC_FAIL` (-7): libopus could not allocate memory.
        case allocFail
        /// Any other negative return code.
        case unknown(Int32)
    }

    /// The named kind of failure.
    public let kind: Kind
    /// The raw libopus return code (negative).
    public let code: Int32
    /// The C function (or, for failures detected in Swift, the Swift API) that failed, e.g. `"opus_decode"`.
    public let call: String
    /// For `.badArgument` raised by validation: the offending field, e.g. `"sampleRate"`; otherwise `nil`.
    public let field: String?

    /// Makes an error from a libopus return code.
    public init(code: Int32, call: String, field: String? = nil) {
        self.code = code
        self.call = call
        self.field = field
        self.kind = Kind(code: code)
    }

    /// Makes an error of a given kind (used for failures detected in Swift before calling libopus).
    public init(_ kind: Kind, call: String, field: String? = nil) {
        self.kind = kind
        self.call = call
        self.field = field
        self.code = kind.code
    }

    public var description: String {
        var text = "\(call) failed: \(kind) (\(code))"
        if let field { text += " [field: \(field)]" }
        return text
    }
}

extension OpusError.Kind {
    init(code: Int32) {
        switch code {
        case OPUS_BAD_ARG: self = .badArgument
        case OPUS_BUFFER_TOO_SMALL: self = .bufferTooSmall
        case OPUS_INTERNAL_ERROR: self = .internalError
        case OPUS_INVALID_PACKET: self = .invalidPacket
        case OPUS_UNIMPLEMENTED: self = .unimplemented
        case OPUS_INVALID_STATE: self = .invalidState
        case OPUS_ALLOC_FAIL: self = .allocFail
        default: self = .unknown(code)
        }
    }

    /// The libopus code for this kind.
    var code: Int32 {
        switch self {
        case .badArgument: OPUS_BAD_ARG
        case .bufferTooSmall: OPUS_BUFFER_TOO_SMALL
        case .internalError: OPUS_INTERNAL_ERROR
        case .invalidPacket: OPUS_INVALID_PACKET
        case .unimplemented: OPUS_UNIMPLEMENTED
        case .invalidState: OPUS_INVALID_STATE
        case .allocFail: OPUS_ALLOC_FAIL
        case .unknown(let code): code
        }
    }
}

/// The one check every libopus return value goes through: negative values throw an `OpusError` naming the C call,
/// non-negative values (byte or sample counts, `OPUS_OK`) are returned as `Int`.
///
/// `call` is a `StaticString` so the success path never builds a `String`.
@inline(__always)
@discardableResult
func checkOpus(_ result: Int32, _ call: StaticString) throws(OpusError) -> Int {
    if result < 0 {
        throw OpusError(code: result, call: call.description)
    }
    return Int(result)
}
