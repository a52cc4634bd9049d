/// Why an SDES `a=crypto:` line (RFC 4568 §9.1) was rejected. No case carries key material.
public enum SDESError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The line is not a `crypto:` attribute (or has fewer than tag, suite and key parameters).
    case notACryptoAttribute
    /// The tag is not 1–9 decimal digits.
    case badTag(String)
    /// The suite name is not one the engine supports.
    case unknownSuite(String)
    /// A key parameter does not use the `inline:` key method.
    case missingInline
    /// The key is not valid base64.
    case badBase64
    /// The decoded key||salt has the wrong length for the suite.
    case wrongKeyLength(suite: SRTPCryptoSuite, expected: Int, actual: Int)
    /// The lifetime is not a positive decimal or `2^n`, exceeds the suite's maximum, or is misplaced.
    case badLifetime(String)
    /// The MKI is not `value:length` with a length of 1–128 bytes holding the value, or several keys lack
    /// distinct MKIs of one length.
    case badMKI(String)
    /// Anything else about the line's syntax (empty fields, too many `|` fields, bad characters).
    case malformed(String)

    public var description: String {
        switch self {
        case .notACryptoAttribute: "not an a=crypto: attribute"
        case .badTag(let tag): "bad crypto tag '\(tag)'"
        case .unknownSuite(let suite): "unknown SRTP crypto suite '\(suite)'"
        case .missingInline: "key parameter does not use the inline: method"
        case .badBase64: "key is not valid base64"
        case .wrongKeyLength(let suite, let expected, let actual):
            "key is \(actual) bytes, \(suite) needs \(expected)"
        case .badLifetime(let reason): "bad key lifetime: \(reason)"
        case .badMKI(let reason): "bad MKI: \(reason)"
        case .malformed(let reason): "malformed crypto attribute: \(reason)"
        }
    }
}

/// A master key index: `value` sent in `length` bytes after each SRTP packet (RFC 3711 §3.1).
public struct SDESMasterKeyIdentifier: Equatable, Hashable, Sendable {
    public var value: UInt64
    /// Bytes of MKI field, 1…128.
    public var length: Int

    public init(value: UInt64, length: Int) {
        self.value = value
        self.length = length
    }
}

/// One `inline:` key parameter: key material with optional lifetime and MKI.
public struct SDESKeyParameter: Equatable, Sendable, CustomStringConvertible {
    /// Master key || master salt. Redacted in descriptions.
    public var key: SRTPMasterKey
    /// Packets the key may protect before it must be replaced; nil for the suite's default.
    public var lifetime: UInt64?
    /// The key's MKI, required when a line carries several keys.
    public var mki: SDESMasterKeyIdentifier?

    public init(key: SRTPMasterKey, lifetime: UInt64? = nil, mki: SDESMasterKeyIdentifier? = nil) {
        self.key = key
        self.lifetime = lifetime
        self.mki = mki
    }

    public var description: String {
        var parts = ["inline:<redacted \(key.count) bytes>"]
        if let lifetime { parts.append("lifetime \(lifetime)") }
        if let mki { parts.append("MKI \(mki.value):\(mki.length)") }
        return parts.joined(separator: " ")
    }
}

/// An SDES crypto attribute (RFC 4568): `a=crypto:<tag> <suite> inline:<key||salt>[|lifetime][|MKI:length]
/// [;inline:…] [session parameters]`.
///
/// Key lines carry secrets: ``attributeLine`` contains the key for the SDP and must never be logged, while
/// `description` is redacted.
public struct SDESCryptoAttribute: Equatable, Sendable, CustomStringConvertible {
    /// Identifies this attribute among the offer's alternatives; the answer echoes it. 0…999999999.
    public var tag: UInt32
    public var suite: SRTPCryptoSuite
    /// One or more keys; RFC 4568 allows several, each with a distinct MKI. The first is the one to use.
    public var keys: [SDESKeyParameter]
    /// Session parameters (`KDR=…`, `UNENCRYPTED_SRTP`, `WSH=…`…), kept verbatim.
    public var sessionParameters: [String]

    /// The first key's material, the one a session is created with.
    public var key: SRTPMasterKey { keys[0].key }

    /// An attribute with one key. The key's length must match `suite` (checked by ``validate()`` and by
    /// `SRTPSession`).
    public init(
        tag: UInt32, suite: SRTPCryptoSuite, key: SRTPMasterKey, lifetime: UInt64? = nil,
        mki: SDESMasterKeyIdentifier? = nil, sessionParameters: [String] = []
    ) {
        self.init(
            tag: tag, suite: suite, keys: [SDESKeyParameter(key: key, lifetime: lifetime, mki: mki)],
            sessionParameters: sessionParameters)
    }

    public init(tag: UInt32, suite: SRTPCryptoSuite, keys: [SDESKeyParameter], sessionParameters: [String] = []) {
        precondition(!keys.isEmpty, "an SDES crypto attribute has at least one key")
        self.tag = tag
        self.suite = suite
        self.keys = keys
        self.sessionParameters = sessionParameters
    }

    /// An offer line with fresh key material from the system's secure random source.
    public static func generate(tag: UInt32 = 1, suite: SRTPCryptoSuite = .aesCM128HmacSHA1_80) -> SDESCryptoAttribute {
        SDESCryptoAttribute(tag: tag, suite: suite, key: .random(for: suite))
    }

    // MARK: Producing

    /// The SDP line with the `a=` prefix, e.g. `a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:…`. Contains the key.
    public var attributeLine: String { "a=" + attributeValue }

    /// The attribute without `a=`: `crypto:1 AES_CM_128_HMAC_SHA1_80 inline:…`. Contains the key.
    public var attributeValue: String {
        let keyParams = keys.map { param -> String in
            var s = "inline:" + Base64.encode(param.key.bytes)
            if let lifetime = param.lifetime {
                let isPowerOfTwo = lifetime > 0 && lifetime & (lifetime - 1) == 0
                s += isPowerOfTwo ? "|2^\(lifetime.trailingZeroBitCount)" : "|\(lifetime)"
            }
            if let mki = param.mki { s += "|\(mki.value):\(mki.length)" }
            return s
        }.joined(separator: ";")
        return (["crypto:\(tag)", suite.rawValue, keyParams] + sessionParameters).joined(separator: " ")
    }

    /// Redacted: tag, suite and parameters, never the key.
    public var description: String {
        "crypto:\(tag) \(suite) " + keys.map(\.description).joined(separator: "; ")
            + (sessionParameters.isEmpty ? "" : " " + sessionParameters.joined(separator: " "))
    }

    /// Checks what the initialisers cannot: key lengths, lifetimes and MKIs (the same rules parsing applies).
    public func validate() throws(SDESError) {
        guard tag <= 999_999_999 else { throw .badTag("\(tag)") }
        for param in keys {
            guard param.key.count == suite.keyMaterialLength else {
                throw .wrongKeyLength(suite: suite, expected: suite.keyMaterialLength, actual: param.key.count)
            }
            if let lifetime = param.lifetime {
                guard lifetime > 0, lifetime <= suite.maximumLifetime else {
                    throw .badLifetime("\(lifetime) is outside 1…2^48")
                }
            }
            if let mki = param.mki { try Self.validate(mki) }
        }
        try Self.validateMKIs(keys)
    }

    // MARK: Parsing

    /// Parses a crypto attribute, with or without the `a=` prefix; surrounding whitespace and CR/LF are ignored.
    ///
    /// - Throws: ``SDESError`` naming what is wrong.
    public init(parsing line: some StringProtocol) throws(SDESError) {
        var text = Substring(line).drop { $0.isWhitespace }
        while let last = text.last, last.isWhitespace { text = text.dropLast() }
        if text.hasPrefix("a=") { text = text.dropFirst(2) }
        guard text.hasPrefix("crypto:") else { throw .notACryptoAttribute }
        text = text.dropFirst("crypto:".count)
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard fields.count >= 3 else { throw .notACryptoAttribute }

        let tagText = fields[0]
        guard (1...9).contains(tagText.count), tagText.allSatisfy(\.isASCIIDigit), let tag = UInt32(tagText) else {
            throw .badTag(String(tagText))
        }
        guard let suite = SRTPCryptoSuite(rawValue: String(fields[1])) else {
            throw .unknownSuite(String(fields[1]))
        }
        var keys: [SDESKeyParameter] = []
        for keyParam in fields[2].split(separator: ";", omittingEmptySubsequences: false) {
            keys.append(try Self.parseKeyParameter(keyParam, suite: suite))
        }
        try Self.validateMKIs(keys)
        for param in fields.dropFirst(3) {
            guard param.allSatisfy({ $0.isASCII && !$0.isWhitespace && $0 != ";" }) else {
                throw .malformed("bad session parameter")
            }
        }
        self.init(tag: tag, suite: suite, keys: keys, sessionParameters: fields.dropFirst(3).map(String.init))
    }

    private static func parseKeyParameter(_ param: Substring, suite: SRTPCryptoSuite) throws(SDESError)
        -> SDESKeyParameter
    {
        guard param.hasPrefix("inline:") else { throw .missingInline }
        let info = param.dropFirst("inline:".count).split(separator: "|", omittingEmptySubsequences: false)
        guard info.count <= 3 else { throw .malformed("too many '|' fields in a key parameter") }
        guard let bytes = Base64.decode(info[0]) else { throw .badBase64 }
        guard bytes.count == suite.keyMaterialLength else {
            throw .wrongKeyLength(suite: suite, expected: suite.keyMaterialLength, actual: bytes.count)
        }
        var lifetime: UInt64?
        var mki: SDESMasterKeyIdentifier?
        for field in info.dropFirst() {
            if field.contains(":") {
                guard mki == nil else { throw .badMKI("more than one MKI") }
                mki = try parseMKI(field)
            } else {
                guard mki == nil else { throw .badLifetime("lifetime after MKI") }
                guard lifetime == nil else { throw .badLifetime("more than one lifetime") }
                lifetime = try parseLifetime(field, suite: suite)
            }
        }
        return SDESKeyParameter(key: SRTPMasterKey(bytes: bytes), lifetime: lifetime, mki: mki)
    }

    private static func parseLifetime(_ field: Substring, suite: SRTPCryptoSuite) throws(SDESError) -> UInt64 {
        let value: UInt64
        if field.hasPrefix("2^") {
            let exponentText = field.dropFirst(2)
            guard !exponentText.isEmpty, exponentText.count <= 3, exponentText.allSatisfy(\.isASCIIDigit),
                let exponent = Int(exponentText)
            else { throw .badLifetime("'\(field)' is not 2^n") }
            guard exponent <= 48 else { throw .badLifetime("'\(field)' exceeds 2^48") }
            value = 1 << UInt64(exponent)
        } else {
            guard !field.isEmpty, field.allSatisfy(\.isASCIIDigit) else {
                throw .badLifetime("'\(field)' is not a decimal number or 2^n")
            }
            guard let decimal = UInt64(field), decimal <= suite.maximumLifetime else {
                throw .badLifetime("'\(field)' exceeds 2^48")
            }
            value = decimal
        }
        guard value > 0 else { throw .badLifetime("lifetime 0") }
        return value
    }

    private static func parseMKI(_ field: Substring) throws(SDESError) -> SDESMasterKeyIdentifier {
        let parts = field.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, (1...128).contains(parts[0].count), (1...3).contains(parts[1].count),
            parts[0].allSatisfy(\.isASCIIDigit), parts[1].allSatisfy(\.isASCIIDigit)
        else { throw .badMKI("'\(field)' is not value:length") }
        guard let length = Int(parts[1]) else { throw .badMKI("'\(field)' is not value:length") }
        guard let value = UInt64(parts[0]) else { throw .badMKI("value \(parts[0]) is too large") }
        let mki = SDESMasterKeyIdentifier(value: value, length: length)
        try validate(mki)
        return mki
    }

    private static func validate(_ mki: SDESMasterKeyIdentifier) throws(SDESError) {
        guard (1...128).contains(mki.length) else { throw .badMKI("length \(mki.length) is outside 1…128") }
        if mki.length < 8, mki.value >> UInt64(8 * mki.length) != 0 {
            throw .badMKI("value \(mki.value) does not fit in \(mki.length) bytes")
        }
    }

    private static func validateMKIs(_ keys: [SDESKeyParameter]) throws(SDESError) {
        guard keys.count > 1 else { return }
        let mkis = keys.compactMap(\.mki)
        guard mkis.count == keys.count else { throw .badMKI("several keys need an MKI each") }
        guard Set(mkis.map(\.length)).count == 1 else { throw .badMKI("MKI lengths differ") }
        guard Set(mkis.map(\.value)).count == mkis.count else { throw .badMKI("MKI values repeat") }
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}

/// Strict RFC 4648 base64 (standard alphabet). Padding is optional on input, always written on output.
enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i < bytes.count {
            let b0 = bytes[i], b1 = i + 1 < bytes.count ? bytes[i + 1] : 0, b2 = i + 2 < bytes.count ? bytes[i + 2] : 0
            out.append(alphabet[Int(b0 >> 2)])
            out.append(alphabet[Int((b0 & 0x03) << 4 | b1 >> 4)])
            out.append(i + 1 < bytes.count ? alphabet[Int((b1 & 0x0F) << 2 | b2 >> 6)] : UInt8(ascii: "="))
            out.append(i + 2 < bytes.count ? alphabet[Int(b2 & 0x3F)] : UInt8(ascii: "="))
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// nil for any character outside the alphabet, misplaced or excess padding, or non-zero trailing bits.
    static func decode(_ text: Substring) -> [UInt8]? {
        var chars = Array(text.utf8)
        var padding = 0
        while chars.last == UInt8(ascii: "=") {
            chars.removeLast()
            padding += 1
        }
        guard padding <= 2, !chars.isEmpty else { return nil }
        if padding > 0 { guard (chars.count + padding) % 4 == 0 else { return nil } }
        guard chars.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for c in chars {
            let v: UInt32
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): v = UInt32(c - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): v = UInt32(c - UInt8(ascii: "a") + 26)
            case UInt8(ascii: "0")...UInt8(ascii: "9"): v = UInt32(c - UInt8(ascii: "0") + 52)
            case UInt8(ascii: "+"): v = 62
            case UInt8(ascii: "/"): v = 63
            default: return nil
            }
            accumulator = accumulator << 6 | v
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        guard accumulator == 0 else { return nil }  // leftover bits must be zero (canonical encoding)
        return out
    }
}
