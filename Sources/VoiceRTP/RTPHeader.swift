/// One RFC 8285 header extension element to send.
public struct RTPHeaderExtensionElement: Sendable, Hashable {
    /// 1...14 in the one-byte form, 1...255 in the two-byte form.
    public var id: UInt8
    /// 1...16 bytes in the one-byte form, 0...255 in the two-byte form.
    public var data: [UInt8]

    public init(id: UInt8, data: [UInt8]) {
        self.id = id
        self.data = data
    }
}

/// An RTP header extension as an owned value, for sending (RFC 3550 5.3.1, RFC 8285).
public enum RTPHeaderExtension: Sendable, Hashable {
    /// Profile 0xBEDE.
    case oneByte([RTPHeaderExtensionElement])
    /// Profile 0x1000 | appBits.
    case twoByte(appBits: UInt8, [RTPHeaderExtensionElement])
    /// Any profile with opaque data; the data is zero-padded to a multiple of 4 bytes when serialized.
    case raw(profile: UInt16, data: [UInt8])

    /// The 16-bit "defined by profile" field.
    public var profile: UInt16 {
        switch self {
        case .oneByte: 0xBEDE
        case .twoByte(let appBits, _): 0x1000 | UInt16(appBits & 0x0F)
        case .raw(let profile, _): profile
        }
    }

    /// Data bytes before padding to a 32-bit boundary.
    var unpaddedDataLength: Int {
        switch self {
        case .oneByte(let elements): elements.reduce(0) { $0 + 1 + $1.data.count }
        case .twoByte(_, let elements): elements.reduce(0) { $0 + 2 + $1.data.count }
        case .raw(_, let data): data.count
        }
    }

    /// Bytes on the wire: the 4-byte extension header plus data padded to 32 bits.
    public var serializedLength: Int { 4 + (unpaddedDataLength + 3) / 4 * 4 }

    /// Writes the extension at `offset`, returning the offset after it. Invalid IDs or lengths are preconditions.
    func write(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) -> Int {
        let dataLength = (unpaddedDataLength + 3) / 4 * 4
        precondition(dataLength / 4 <= 0xFFFF, "header extension longer than 65535 words")
        buffer.put16(profile, at: offset)
        buffer.put16(UInt16(dataLength / 4), at: offset + 2)
        var pos = offset + 4
        switch self {
        case .oneByte(let elements):
            for element in elements {
                precondition((1...14).contains(element.id), "one-byte extension id \(element.id) not in 1...14")
                precondition((1...16).contains(element.data.count), "one-byte extension data must be 1...16 bytes")
                buffer.put8(element.id << 4 | UInt8(element.data.count - 1), at: pos)
                pos = buffer.put(element.data, at: pos + 1)
            }
        case .twoByte(_, let elements):
            for element in elements {
                precondition(element.id != 0, "two-byte extension id 0 is reserved for padding")
                precondition(element.data.count <= 255, "two-byte extension data must be at most 255 bytes")
                buffer.put8(element.id, at: pos)
                buffer.put8(UInt8(element.data.count), at: pos + 1)
                pos = buffer.put(element.data, at: pos + 2)
            }
        case .raw(_, let data):
            pos = buffer.put(data, at: pos)
        }
        return buffer.zero(offset + 4 + dataLength - pos, at: pos)
    }
}

/// An RTP fixed header (RFC 3550 5.1) with CSRCs and extension, as an owned value: what a sender fills in and
/// serializes, or an owned copy of a parsed ``RTPPacketView``.
///
/// Serializing never allocates; a header without CSRCs or extension holds no heap storage at all.
public struct RTPHeader: Sendable, Hashable {
    public var marker: Bool
    /// 0...127.
    public var payloadType: UInt8
    public var sequenceNumber: UInt16
    public var timestamp: UInt32
    public var ssrc: UInt32
    /// At most 15.
    public var csrcs: [UInt32]
    public var headerExtension: RTPHeaderExtension?

    public init(
        marker: Bool = false, payloadType: UInt8, sequenceNumber: UInt16, timestamp: UInt32, ssrc: UInt32,
        csrcs: [UInt32] = [], headerExtension: RTPHeaderExtension? = nil
    ) {
        self.marker = marker
        self.payloadType = payloadType
        self.sequenceNumber = sequenceNumber
        self.timestamp = timestamp
        self.ssrc = ssrc
        self.csrcs = csrcs
        self.headerExtension = headerExtension
    }

    /// An owned copy of a parsed packet's header. Extensions in the RFC 8285 forms keep their elements;
    /// a one-byte extension cut short by ID 15 keeps the elements before it.
    public init(_ view: RTPPacketView) {
        var csrcs: [UInt32] = []
        csrcs.reserveCapacity(view.csrcCount)
        for i in 0..<view.csrcCount { csrcs.append(view.csrc(at: i)) }
        var headerExtension: RTPHeaderExtension?
        if let ext = view.headerExtension {
            let elements = ext.elements.map { RTPHeaderExtensionElement(id: $0.id, data: Array($0.data)) }
            switch ext.form {
            case .oneByte: headerExtension = .oneByte(elements)
            case .twoByte(let appBits): headerExtension = .twoByte(appBits: appBits, elements)
            case .other: headerExtension = .raw(profile: ext.profile, data: Array(ext.data))
            }
        }
        self.init(
            marker: view.marker, payloadType: view.payloadType, sequenceNumber: view.sequenceNumber,
            timestamp: view.timestamp, ssrc: view.ssrc, csrcs: csrcs, headerExtension: headerExtension)
    }

    /// Bytes the header occupies on the wire.
    public var serializedLength: Int { 12 + 4 * csrcs.count + (headerExtension?.serializedLength ?? 0) }

    /// Writes the header to the start of `buffer` and returns the bytes written.
    ///
    /// The P bit is left clear; use ``serialize(payload:paddingLength:into:)`` for padded packets.
    /// - Precondition: `buffer.count >= serializedLength`, at most 15 CSRCs, payload type below 128,
    ///   extension IDs and lengths valid for their form.
    /// - Complexity: O(header size); no allocation.
    @discardableResult
    public func serialize(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        writeHeader(into: buffer, padding: false)
    }

    /// Writes RFC 3550's 12-byte fixed header at the start of `buffer` (version 2; `flags`: the P, X and CC bits of
    /// the first octet). Shared by `serialize` and `RTPPacketizer.packetize`, which writes it per packet without
    /// building a header value.
    @inline(__always)
    static func writeFixedHeader(
        flags: UInt8, marker: Bool, payloadType: UInt8, sequenceNumber: UInt16, timestamp: UInt32, ssrc: UInt32,
        into buffer: UnsafeMutableRawBufferPointer
    ) {
        buffer.put8(0x80 | flags, at: 0)
        buffer.put8((marker ? 0x80 : 0) | payloadType, at: 1)
        buffer.put16(sequenceNumber, at: 2)
        buffer.put32(timestamp, at: 4)
        buffer.put32(ssrc, at: 8)
    }

    private func writeHeader(into buffer: UnsafeMutableRawBufferPointer, padding: Bool) -> Int {
        precondition(csrcs.count <= 15, "at most 15 CSRCs")
        precondition(payloadType < 128, "payload type \(payloadType) not in 0...127")
        let length = serializedLength
        precondition(buffer.count >= length, "buffer of \(buffer.count) bytes too small for a \(length)-byte header")
        var flags = UInt8(csrcs.count)
        if padding { flags |= 0x20 }
        if headerExtension != nil { flags |= 0x10 }
        Self.writeFixedHeader(
            flags: flags, marker: marker, payloadType: payloadType, sequenceNumber: sequenceNumber,
            timestamp: timestamp, ssrc: ssrc, into: buffer)
        var pos = 12
        for csrc in csrcs {
            buffer.put32(csrc, at: pos)
            pos += 4
        }
        if let headerExtension { pos = headerExtension.write(into: buffer, at: pos) }
        return pos
    }

    /// Writes a whole packet (header, payload, then `paddingLength` bytes of RFC 3550 padding whose last byte is
    /// the count) and returns its length.
    ///
    /// - Precondition: `paddingLength` in 0...255 and the buffer large enough.
    /// - Complexity: O(packet size); no allocation.
    public func serialize(
        payload: UnsafeRawBufferPointer, paddingLength: Int = 0, into buffer: UnsafeMutableRawBufferPointer
    ) -> Int {
        precondition((0...255).contains(paddingLength), "RTP padding must be 0...255 bytes")
        let total = serializedLength + payload.count + paddingLength
        precondition(buffer.count >= total, "buffer of \(buffer.count) bytes too small for a \(total)-byte packet")
        var pos = writeHeader(into: buffer, padding: paddingLength > 0)
        pos = buffer.put(payload, at: pos)
        if paddingLength > 0 {
            pos = buffer.zero(paddingLength - 1, at: pos)
            buffer.put8(UInt8(paddingLength), at: pos)
            pos += 1
        }
        return pos
    }

    /// The serialized header as a new array (allocates; for tests and the control plane).
    public func serialized() -> [UInt8] {
        makeBytes(serializedLength) { serialize(into: $0) }
    }

    /// A whole serialized packet as a new array (allocates; for tests and the control plane).
    public func serializedPacket(payload: [UInt8], paddingLength: Int = 0) -> [UInt8] {
        makeBytes(serializedLength + payload.count + paddingLength) { buffer in
            payload.withUnsafeBytes { serialize(payload: $0, paddingLength: paddingLength, into: buffer) }
        }
    }
}
