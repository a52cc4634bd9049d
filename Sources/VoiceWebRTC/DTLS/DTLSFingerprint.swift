/// A certificate fingerprint as SDP carries it (`a=fingerprint:sha-256 AB:CD:…`, RFC 8122).
public struct DTLSFingerprint: Equatable, Hashable, Sendable, CustomStringConvertible {
    /// Hash function name in lower case ("sha-256"); the engine produces and checks sha-256.
    public var algorithm: String
    public var bytes: [UInt8]

    public init(algorithm: String = "sha-256", bytes: [UInt8]) {
        self.algorithm = algorithm.lowercased()
        self.bytes = bytes
    }

    /// Parses the attribute value "sha-256 AB:CD:…" (hash name case-insensitive, hex either case); nil if malformed.
    public init?(sdpValue: some StringProtocol) {
        let parts = sdpValue.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 2 else { return nil }
        var bytes: [UInt8] = []
        for pair in parts[1].split(separator: ":", omittingEmptySubsequences: false) {
            guard pair.count == 2, let byte = UInt8(pair, radix: 16) else { return nil }
            bytes.append(byte)
        }
        guard !bytes.isEmpty else { return nil }
        self.init(algorithm: String(parts[0]), bytes: bytes)
    }

    /// "sha-256 AB:CD:…" as `a=fingerprint:` carries it.
    public var sdpValue: String {
        algorithm + " "
            + bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16, uppercase: true) }.joined(separator: ":")
    }

    public var description: String { sdpValue }
}
