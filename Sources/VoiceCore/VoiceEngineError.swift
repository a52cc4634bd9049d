#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The convention every typed error in VoiceEngine follows (`WAVError`, `OpusError`, `SRTPError`, …).
///
/// `description` is the human message: it names what is wrong and, for a C library, the call and its code.
/// `identifier` is a short stable name (`"wav.missingDataChunk"`) for counters and log fields, which must not
/// depend on message wording. Conforming to `LocalizedError` makes Foundation's `localizedDescription` show
/// the same message instead of a generic one.
public protocol VoiceEngineError: LocalizedError, CustomStringConvertible, Sendable {
    /// A stable, machine-readable name for the error case, `"<module>.<case>"`.
    var identifier: String { get }
}

extension VoiceEngineError {
    public var errorDescription: String? { description }
}
