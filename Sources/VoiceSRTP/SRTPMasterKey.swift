/// SRTP master key followed by master salt: the bytes an SDES `inline:` parameter carries.
///
/// Key material is secret. Its `description` (and therefore string interpolation and `print`) is redacted, so a
/// key cannot reach a log by accident; use ``withUnsafeBytes(_:)`` or ``bytes`` where the bytes are really needed.
public struct SRTPMasterKey: Equatable, Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// Master key || master salt.
    public let bytes: [UInt8]

    /// Wraps existing key material (for example received in SDES). Its length is checked against a suite when a
    /// session is created or an SDES line is produced.
    public init(bytes: [UInt8]) { self.bytes = bytes }

    /// Fresh key material for `suite` from the system's secure random source.
    ///
    /// On Linux `SystemRandomNumberGenerator` reads `getrandom(2)`, the kernel CSPRNG.
    public static func random(for suite: SRTPCryptoSuite) -> SRTPMasterKey {
        var generator = SystemRandomNumberGenerator()
        return random(for: suite, using: &generator)
    }

    /// Key material drawn from `generator`; tests may pass a seeded generator, production code must not.
    public static func random(for suite: SRTPCryptoSuite, using generator: inout some RandomNumberGenerator)
        -> SRTPMasterKey
    {
        var bytes = [UInt8](repeating: 0, count: suite.keyMaterialLength)
        for i in bytes.indices { bytes[i] = UInt8.random(in: .min ... .max, using: &generator) }
        return SRTPMasterKey(bytes: bytes)
    }

    /// Number of bytes (not secret).
    public var count: Int { bytes.count }

    /// Reads the key bytes without copying them.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes(body)
    }

    public var description: String { "SRTPMasterKey(\(bytes.count) bytes, redacted)" }
    public var debugDescription: String { description }
    /// No children, so `dump` and test-failure output cannot print the bytes either.
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}
