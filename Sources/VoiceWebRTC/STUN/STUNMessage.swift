internal import CDTLS
import VoiceCrypto

/// A STUN method (RFC 8489 §18.2; TURN's from RFC 8656 §17).
public struct STUNMethod: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue & 0x0FFF }
    public static let binding = STUNMethod(rawValue: 0x001)
    public static let allocate = STUNMethod(rawValue: 0x003)
    public static let refresh = STUNMethod(rawValue: 0x004)
    public static let send = STUNMethod(rawValue: 0x006)
    public static let data = STUNMethod(rawValue: 0x007)
    public static let createPermission = STUNMethod(rawValue: 0x008)
    public static let channelBind = STUNMethod(rawValue: 0x009)
    public var description: String {
        switch self {
        case .binding: "Binding"
        case .allocate: "Allocate"
        case .refresh: "Refresh"
        case .send: "Send"
        case .data: "Data"
        case .createPermission: "CreatePermission"
        case .channelBind: "ChannelBind"
        default: "method 0x\(String(rawValue, radix: 16))"
        }
    }
}

/// The class bits of a STUN message type.
public enum STUNClass: UInt8, Sendable {
    case request = 0, indication = 1, successResponse = 2, errorResponse = 3
}

/// One STUN message (RFC 8489): header, transaction ID and attributes, parsed from or serialized to a datagram.
///
/// Attributes are kept raw (type and value) in order; typed readers (``xorAddress(_:)``, ``errorCode``…) decode
/// them on demand and throw ``STUNError/malformedAttribute(type:reason:)`` for bad contents. A parsed message
/// keeps its bytes so ``verifyIntegrity(key:)`` can check MESSAGE-INTEGRITY over exactly what arrived.
public struct STUNMessage: Equatable, Sendable {
    public static let magicCookie: UInt32 = 0x2112_A442
    public static let headerLength = 20
    /// XORed into FINGERPRINT's CRC-32 so a STUN CRC never matches another protocol's (RFC 8489 §14.7).
    static let fingerprintXOR: UInt32 = 0x5354_554E

    public var method: STUNMethod
    public var messageClass: STUNClass
    /// 12 bytes that pair a response with its request.
    public var transactionID: [UInt8]
    /// The attributes before MESSAGE-INTEGRITY/FINGERPRINT (those two are computed by ``serialize(integrityKey:fingerprint:)``).
    public var attributes: [STUNAttribute]

    /// For a parsed message: its bytes, and where MESSAGE-INTEGRITY starts (nil when absent).
    public private(set) var received: [UInt8]?
    public private(set) var integrityOffset: Int?
    /// Whether a parsed message carried a (valid) FINGERPRINT.
    public private(set) var hadFingerprint = false

    public init(
        method: STUNMethod, messageClass: STUNClass, transactionID: [UInt8] = STUNMessage.newTransactionID(),
        attributes: [STUNAttribute] = []
    ) {
        precondition(transactionID.count == 12, "a STUN transaction ID is 12 bytes")
        self.method = method
        self.messageClass = messageClass
        self.transactionID = transactionID
        self.attributes = attributes
    }

    /// 96 random bits from the system CSPRNG (RFC 8489 §6: uniformly random, unpredictable).
    public static func newTransactionID() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<12).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    /// Whether `bytes` starts like a STUN message (RFC 7983 byte range and the magic cookie); cheap, for demultiplexing.
    public static func looksLikeSTUN(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count >= headerLength, bytes[0] < 4 else { return false }
        return bytes[4] == 0x21 && bytes[5] == 0x12 && bytes[6] == 0xA4 && bytes[7] == 0x42
    }

    // MARK: Parsing

    /// Parses one datagram. Checks the header, every attribute's bounds, and FINGERPRINT when present; attributes
    /// after MESSAGE-INTEGRITY other than FINGERPRINT are ignored (RFC 8489 §14.5).
    public init(parsing bytes: [UInt8]) throws(STUNError) {
        guard bytes.count >= Self.headerLength else { throw .truncated(length: bytes.count) }
        guard bytes[0] & 0xC0 == 0, Self.read32(bytes, 4) == Self.magicCookie else { throw .notSTUN }
        let length = Int(Self.read16(bytes, 2))
        guard length % 4 == 0 else { throw .misalignedLength(length) }
        guard Self.headerLength + length == bytes.count else { throw .truncated(length: bytes.count) }
        let type = Self.read16(bytes, 0)
        let method = (type & 0x000F) | ((type & 0x00E0) >> 1) | ((type & 0x3E00) >> 2)
        let cls = UInt8(((type >> 4) & 1) | ((type >> 7) & 2))
        self.method = STUNMethod(rawValue: method)
        self.messageClass = STUNClass(rawValue: cls)!
        self.transactionID = Array(bytes[8..<20])
        self.attributes = []
        self.received = bytes

        var offset = Self.headerLength
        var afterIntegrity = false
        while offset < bytes.count {
            guard offset + 4 <= bytes.count else { throw .attributeOverrun(type: 0) }
            let attrType = Self.read16(bytes, offset)
            let attrLength = Int(Self.read16(bytes, offset + 2))
            let valueStart = offset + 4
            let padded = (attrLength + 3) & ~3
            guard valueStart + padded <= bytes.count else { throw .attributeOverrun(type: attrType) }
            let value = Array(bytes[valueStart..<valueStart + attrLength])
            switch attrType {
            case STUNAttribute.Kind.fingerprint:
                guard attrLength == 4, valueStart + 4 == bytes.count else { throw .badFingerprint }
                let expected = CRC32.checksum(bytes[0..<offset]) ^ Self.fingerprintXOR
                guard Self.read32(bytes, valueStart) == expected else { throw .badFingerprint }
                hadFingerprint = true
            case STUNAttribute.Kind.messageIntegrity:
                guard attrLength == 20 else {
                    throw .malformedAttribute(
                        type: attrType, reason: "MESSAGE-INTEGRITY is \(attrLength) bytes, not 20")
                }
                if integrityOffset == nil { integrityOffset = offset }
                afterIntegrity = true
            default:
                if !afterIntegrity { attributes.append(STUNAttribute(type: attrType, value: value)) }
            }
            offset = valueStart + padded
        }
    }

    /// Checks MESSAGE-INTEGRITY (HMAC-SHA1 over the message up to it, with the length field counting through it).
    /// False when the message was not parsed, has no MESSAGE-INTEGRITY, or the HMAC differs.
    public func verifyIntegrity(key: [UInt8]) -> Bool {
        guard let received, let integrityOffset else { return false }
        var prefix = Array(received[0..<integrityOffset])
        Self.write16(&prefix, 2, UInt16(integrityOffset + 24 - Self.headerLength))
        let mac = Self.hmacSHA1(key: key, data: prefix)
        let sent = received[integrityOffset + 4..<integrityOffset + 24]
        // Constant time: a timing difference must not reveal how many leading bytes matched.
        var difference: UInt8 = 0
        for (a, b) in zip(mac, sent) { difference |= a ^ b }
        return difference == 0
    }

    // MARK: Serializing

    /// The datagram: attributes in order, then MESSAGE-INTEGRITY when `integrityKey` is given, then FINGERPRINT.
    public func serialize(integrityKey: [UInt8]? = nil, fingerprint: Bool = false) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Self.headerLength)
        let m = method.rawValue
        let c = UInt16(messageClass.rawValue)
        let type = (m & 0x000F) | ((m & 0x0070) << 1) | ((m & 0x0F80) << 2) | ((c & 1) << 4) | ((c & 2) << 7)
        Self.write16(&out, 0, type)
        Self.write32(&out, 4, Self.magicCookie)
        out.replaceSubrange(8..<20, with: transactionID)
        for attribute in attributes { attribute.append(to: &out) }
        if let integrityKey {
            Self.write16(&out, 2, UInt16(out.count + 24 - Self.headerLength))
            let mac = Self.hmacSHA1(key: integrityKey, data: out)
            STUNAttribute(type: STUNAttribute.Kind.messageIntegrity, value: mac).append(to: &out)
        }
        if fingerprint {
            Self.write16(&out, 2, UInt16(out.count + 8 - Self.headerLength))
            let crc = CRC32.checksum(out) ^ Self.fingerprintXOR
            STUNAttribute(type: STUNAttribute.Kind.fingerprint, value: STUNAttribute.bytes32(crc)).append(to: &out)
        }
        Self.write16(&out, 2, UInt16(out.count - Self.headerLength))
        return out
    }

    // MARK: Keys

    /// The short-term credential key (ICE): the password's UTF-8 bytes (RFC 8489 §9.1.1; ICE passwords are ASCII,
    /// so OpaqueString processing leaves them unchanged).
    public static func shortTermKey(password: String) -> [UInt8] { Array(password.utf8) }

    /// The long-term credential key for MESSAGE-INTEGRITY: MD5(username ":" realm ":" password) (RFC 8489 §9.2.2).
    public static func longTermKey(username: String, realm: String, password: String) -> [UInt8] {
        HashAlgorithm.md5.digest(Array("\(username):\(realm):\(password)".utf8))
    }

    static func hmacSHA1(key: [UInt8], data: [UInt8]) -> [UInt8] { HashAlgorithm.sha1.hmac(key: key, message: data) }

    // MARK: Byte order

    static func read16(_ b: [UInt8], _ o: Int) -> UInt16 { UInt16(b[o]) << 8 | UInt16(b[o + 1]) }
    static func read32(_ b: [UInt8], _ o: Int) -> UInt32 {
        UInt32(b[o]) << 24 | UInt32(b[o + 1]) << 16 | UInt32(b[o + 2]) << 8 | UInt32(b[o + 3])
    }
    static func write16(_ b: inout [UInt8], _ o: Int, _ v: UInt16) {
        b[o] = UInt8(v >> 8)
        b[o + 1] = UInt8(v & 0xFF)
    }
    static func write32(_ b: inout [UInt8], _ o: Int, _ v: UInt32) {
        for i in 0..<4 { b[o + i] = UInt8((v >> (24 - 8 * UInt32(i))) & 0xFF) }
    }
}

// MARK: - Typed attribute access

extension STUNMessage {
    /// The first attribute of `type`, raw.
    public func attribute(_ type: UInt16) -> STUNAttribute? { attributes.first(where: { $0.type == type }) }

    /// An XOR-encoded address attribute (XOR-MAPPED-ADDRESS, XOR-PEER-ADDRESS, XOR-RELAYED-ADDRESS); nil if absent.
    public func xorAddress(_ type: UInt16 = STUNAttribute.Kind.xorMappedAddress) throws(STUNError) -> TransportAddress?
    {
        guard let attribute = attribute(type) else { return nil }
        return try attribute.decodeAddress(xorWith: transactionID)
    }

    /// MAPPED-ADDRESS (RFC 5389 servers may still send it); nil if absent.
    public func mappedAddress() throws(STUNError) -> TransportAddress? {
        guard let attribute = attribute(STUNAttribute.Kind.mappedAddress) else { return nil }
        return try attribute.decodeAddress(xorWith: nil)
    }

    /// ERROR-CODE as (300…699, reason phrase); nil if absent.
    public func errorCode() throws(STUNError) -> (code: Int, reason: String)? {
        guard let a = attribute(STUNAttribute.Kind.errorCode) else { return nil }
        guard a.value.count >= 4 else {
            throw .malformedAttribute(type: a.type, reason: "ERROR-CODE shorter than 4 bytes")
        }
        let code = Int(a.value[2] & 0x07) * 100 + Int(a.value[3])
        guard (300...699).contains(code), a.value[3] < 100 else {
            throw .malformedAttribute(
                type: a.type, reason: "error code \(a.value[2] & 0x07)/\(a.value[3]) out of range")
        }
        return (code, String(decoding: a.value[4...], as: UTF8.self))
    }

    /// A UTF-8 attribute (USERNAME, REALM, NONCE, SOFTWARE); nil if absent.
    public func string(_ type: UInt16) -> String? { attribute(type).map { String(decoding: $0.value, as: UTF8.self) } }

    /// A 32-bit attribute (PRIORITY, LIFETIME); nil if absent.
    public func uint32(_ type: UInt16) throws(STUNError) -> UInt32? {
        guard let a = attribute(type) else { return nil }
        guard a.value.count == 4 else { throw .malformedAttribute(type: type, reason: "\(a.value.count) bytes, not 4") }
        return STUNMessage.read32(a.value, 0)
    }

    /// A 64-bit attribute (ICE-CONTROLLING / ICE-CONTROLLED tie-breakers); nil if absent.
    public func uint64(_ type: UInt16) throws(STUNError) -> UInt64? {
        guard let a = attribute(type) else { return nil }
        guard a.value.count == 8 else { throw .malformedAttribute(type: type, reason: "\(a.value.count) bytes, not 8") }
        return UInt64(STUNMessage.read32(a.value, 0)) << 32 | UInt64(STUNMessage.read32(a.value, 4))
    }

    /// Whether the message has an attribute of `type` (USE-CANDIDATE is empty).
    public func has(_ type: UInt16) -> Bool { attribute(type) != nil }
}

/// One attribute as it is on the wire: type and unpadded value.
public struct STUNAttribute: Equatable, Sendable {
    public var type: UInt16
    public var value: [UInt8]

    public init(type: UInt16, value: [UInt8]) {
        self.type = type
        self.value = value
    }

    /// Attribute type codes (RFC 8489 §18.3, RFC 8445 §16.1, RFC 8656 §18).
    public enum Kind {
        public static let mappedAddress: UInt16 = 0x0001
        public static let username: UInt16 = 0x0006
        public static let messageIntegrity: UInt16 = 0x0008
        public static let errorCode: UInt16 = 0x0009
        public static let unknownAttributes: UInt16 = 0x000A
        public static let channelNumber: UInt16 = 0x000C
        public static let lifetime: UInt16 = 0x000D
        public static let xorPeerAddress: UInt16 = 0x0012
        public static let data: UInt16 = 0x0013
        public static let realm: UInt16 = 0x0014
        public static let nonce: UInt16 = 0x0015
        public static let xorRelayedAddress: UInt16 = 0x0016
        public static let requestedTransport: UInt16 = 0x0019
        public static let xorMappedAddress: UInt16 = 0x0020
        public static let priority: UInt16 = 0x0024
        public static let useCandidate: UInt16 = 0x0025
        public static let software: UInt16 = 0x8022
        public static let fingerprint: UInt16 = 0x8028
        public static let iceControlled: UInt16 = 0x8029
        public static let iceControlling: UInt16 = 0x802A
    }

    // MARK: Builders

    public static func string(_ type: UInt16, _ text: String) -> STUNAttribute {
        .init(type: type, value: Array(text.utf8))
    }
    public static func uint32(_ type: UInt16, _ v: UInt32) -> STUNAttribute { .init(type: type, value: bytes32(v)) }
    public static func uint64(_ type: UInt16, _ v: UInt64) -> STUNAttribute {
        .init(type: type, value: bytes32(UInt32(v >> 32)) + bytes32(UInt32(v & 0xFFFF_FFFF)))
    }
    public static func flag(_ type: UInt16) -> STUNAttribute { .init(type: type, value: []) }

    /// ERROR-CODE: class (hundreds) and number, then the reason phrase.
    public static func errorCode(_ code: Int, reason: String) -> STUNAttribute {
        precondition((300...699).contains(code), "STUN error codes are 300…699")
        return .init(type: Kind.errorCode, value: [0, 0, UInt8(code / 100), UInt8(code % 100)] + Array(reason.utf8))
    }

    /// An address attribute; XOR-encoded with the magic cookie (and for IPv6 the transaction ID) when `transactionID`
    /// is given (XOR-MAPPED-ADDRESS and its TURN siblings), plain otherwise (MAPPED-ADDRESS).
    public static func address(_ type: UInt16, _ address: TransportAddress, transactionID: [UInt8]?) -> STUNAttribute {
        var value: [UInt8] = [0, address.family.rawValue, 0, 0] + address.addressBytes
        var port = address.port
        if let transactionID {
            port ^= UInt16(STUNMessage.magicCookie >> 16)
            let mask = bytes32(STUNMessage.magicCookie) + transactionID
            for i in 4..<value.count { value[i] ^= mask[i - 4] }
        }
        value[2] = UInt8(port >> 8)
        value[3] = UInt8(port & 0xFF)
        return .init(type: type, value: value)
    }

    func decodeAddress(xorWith transactionID: [UInt8]?) throws(STUNError) -> TransportAddress {
        guard value.count >= 4 else { throw .malformedAttribute(type: type, reason: "address shorter than 4 bytes") }
        let count: Int
        switch value[1] {
        case 1: count = 4
        case 2: count = 16
        default: throw .malformedAttribute(type: type, reason: "unknown address family \(value[1])")
        }
        guard value.count == 4 + count else {
            throw .malformedAttribute(type: type, reason: "\(value.count) bytes for family \(value[1])")
        }
        var port = STUNMessage.read16(value, 2)
        var bytes = Array(value[4...])
        if let transactionID {
            port ^= UInt16(STUNMessage.magicCookie >> 16)
            let mask = STUNAttribute.bytes32(STUNMessage.magicCookie) + transactionID
            for i in 0..<count { bytes[i] ^= mask[i] }
        }
        return TransportAddress(addressBytes: bytes, port: port)!
    }

    static func bytes32(_ v: UInt32) -> [UInt8] {
        [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)]
    }

    /// Appends type, length, value and zero padding to a 4-byte boundary.
    func append(to out: inout [UInt8]) {
        out += [UInt8(type >> 8), UInt8(type & 0xFF), UInt8(value.count >> 8), UInt8(value.count & 0xFF)]
        out += value
        out += [UInt8](repeating: 0, count: (4 - value.count % 4) % 4)
    }
}
