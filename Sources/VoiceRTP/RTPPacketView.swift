/// A parsed RTP packet (RFC 3550 5.1) that reads straight from the caller's buffer: no allocation, no copy.
///
/// The view is only valid while the buffer it was made from is alive and unchanged (use it inside the
/// `withUnsafeBytes` scope that produced the pointer). Everything it exposes has been validated by `init`, so the
/// accessors cannot fail or read out of bounds. Use ``RTPHeader/init(_:)`` to keep an owned copy of the header.
public struct RTPPacketView {
    /// The whole packet.
    public let bytes: UnsafeRawBufferPointer
    /// Where the payload lies in ``bytes``: after the header, CSRCs and extension, before any padding.
    public let payloadRange: Range<Int>
    /// Bytes of padding at the end of the packet, including the count byte (0 when the P bit is clear).
    public let paddingLength: Int
    /// Offset of the extension's 4-byte header (profile and length), or -1 when there is none.
    @usableFromInline let extensionOffset: Int
    /// Extension data length in bytes (after its 4-byte header).
    @usableFromInline let extensionLength: Int
    /// Where a one-byte extension element with ID 15 stopped processing (RFC 8285 4.2), relative to the data.
    @usableFromInline let extensionEnd: Int

    /// Parses and validates an RTP packet.
    ///
    /// - Throws: ``RTPParseError`` naming the first problem found.
    /// - Complexity: O(header size); no allocation.
    public init(_ bytes: UnsafeRawBufferPointer, options: RTPParseOptions = RTPParseOptions()) throws(RTPParseError) {
        let length = bytes.count
        guard length >= 12 else { throw .tooShort(length: length) }
        let b0 = bytes[0]
        let version = b0 >> 6
        guard version == 2 else { throw .badVersion(version) }
        let csrcCount = Int(b0 & 0x0F)
        var offset = 12 + 4 * csrcCount
        guard offset <= length else { throw .csrcOverrun(count: csrcCount, length: length) }

        var extOffset = -1
        var extLength = 0
        var extEnd = 0
        if b0 & 0x10 != 0 {
            guard offset + 4 <= length else {
                throw .extensionOverrun(declaredBytes: 4, available: length - offset)
            }
            extLength = Int(bytes.be16(offset + 2)) * 4
            guard offset + 4 + extLength <= length else {
                throw .extensionOverrun(declaredBytes: 4 + extLength, available: length - offset)
            }
            extOffset = offset
            let profile = bytes.be16(offset)
            let data = bytes.sub(offset + 4, offset + 4 + extLength)
            extEnd = try RTPPacketView.validateElements(profile: profile, data: data, options: options)
            offset += 4 + extLength
        }

        var padding = 0
        if b0 & 0x20 != 0 {
            // The header alone cannot carry padding: the count byte must lie after the header.
            guard length > offset else { throw .badPadding(count: 0, available: 0) }
            padding = Int(bytes[length - 1])
            guard padding != 0 else { throw .emptyPaddingCount }
            guard padding <= length - offset else { throw .badPadding(count: padding, available: length - offset) }
        }
        self.bytes = bytes
        self.payloadRange = offset..<(length - padding)
        self.paddingLength = padding
        self.extensionOffset = extOffset
        self.extensionLength = extLength
        self.extensionEnd = extEnd
    }

    /// Checks RFC 8285 elements; returns the byte where element processing ends (ID 15 stops it early).
    static func validateElements(
        profile: UInt16, data: UnsafeRawBufferPointer, options: RTPParseOptions
    ) throws(RTPParseError) -> Int {
        switch RTPExtensionForm(profile: profile) {
        case .oneByte:
            var pos = 0
            while pos < data.count {
                let b = data[pos]
                if b == 0 {
                    pos += 1
                    continue
                }
                let id = b >> 4
                // ID 15 ends processing (RFC 8285 4.2). ID 0 is reserved for padding, which is the byte 0 only: an
                // ID 0 with a non-zero length field is not an element either, so it ends processing too (as
                // libwebrtc does); it must not become an element RTPHeader would keep and could not serialize.
                if id == 15 || id == 0 {
                    if options.rejectReservedExtensionID { throw .reservedExtensionID(id) }
                    return pos
                }
                let len = Int(b & 0x0F) + 1
                guard pos + 1 + len <= data.count else { throw .extensionElementOverrun(id: id, offset: pos) }
                pos += 1 + len
            }
            return data.count
        case .twoByte:
            var pos = 0
            while pos < data.count {
                let id = data[pos]
                if id == 0 {
                    pos += 1
                    continue
                }
                guard pos + 2 <= data.count else { throw .extensionElementOverrun(id: id, offset: pos) }
                let len = Int(data[pos + 1])
                guard pos + 2 + len <= data.count else { throw .extensionElementOverrun(id: id, offset: pos) }
                pos += 2 + len
            }
            return data.count
        case .other:
            return data.count
        }
    }

    /// Always 2 (anything else is rejected).
    @inlinable public var version: UInt8 { bytes[0] >> 6 }
    /// The P bit.
    @inlinable public var hasPadding: Bool { bytes[0] & 0x20 != 0 }
    /// The X bit.
    @inlinable public var hasExtension: Bool { bytes[0] & 0x10 != 0 }
    /// The M bit; for audio the first packet of a talkspurt (RFC 3551 4.1).
    @inlinable public var marker: Bool { bytes[1] & 0x80 != 0 }
    @inlinable public var payloadType: UInt8 { bytes[1] & 0x7F }
    @inlinable public var sequenceNumber: UInt16 { bytes.be16(2) }
    @inlinable public var timestamp: UInt32 { bytes.be32(4) }
    @inlinable public var ssrc: UInt32 { bytes.be32(8) }
    @inlinable public var csrcCount: Int { Int(bytes[0] & 0x0F) }

    /// The `index`th contributing source; `index` must be below ``csrcCount``.
    @inlinable
    public func csrc(at index: Int) -> UInt32 {
        precondition(index >= 0 && index < csrcCount, "CSRC index \(index) out of 0..<\(csrcCount)")
        return bytes.be32(12 + 4 * index)
    }

    /// Header bytes: fixed header, CSRCs and extension.
    @inlinable public var headerLength: Int { payloadRange.lowerBound }

    /// The payload without padding, as a view into ``bytes``.
    @inlinable public var payload: UnsafeRawBufferPointer {
        bytes.sub(payloadRange.lowerBound, payloadRange.upperBound)
    }

    /// The header extension, when the X bit is set.
    public var headerExtension: RTPHeaderExtensionView? {
        guard extensionOffset >= 0 else { return nil }
        let start = extensionOffset + 4
        return RTPHeaderExtensionView(
            profile: bytes.be16(extensionOffset),
            data: bytes.sub(start, start + extensionLength),
            elementsEnd: extensionEnd)
    }
}

/// Which RFC 8285 form a header extension uses, decided by its 16-bit profile field.
public enum RTPExtensionForm: Sendable, Hashable {
    /// Profile 0xBEDE: elements with a 4-bit ID and 4-bit length-minus-one.
    case oneByte
    /// Profile 0x100X: elements with 8-bit ID and 8-bit length; X is the 4 "appbits".
    case twoByte(appBits: UInt8)
    /// Any other profile: opaque data (RFC 3550 5.3.1).
    case other

    public init(profile: UInt16) {
        if profile == 0xBEDE {
            self = .oneByte
        } else if profile & 0xFFF0 == 0x1000 {
            self = .twoByte(appBits: UInt8(profile & 0x0F))
        } else {
            self = .other
        }
    }
}

/// The header extension of an ``RTPPacketView``: valid as long as the view's buffer.
public struct RTPHeaderExtensionView {
    /// The "defined by profile" field (0xBEDE, 0x100X or anything else).
    public let profile: UInt16
    /// The extension data after its 4-byte header (a multiple of 4 bytes).
    public let data: UnsafeRawBufferPointer
    let elementsEnd: Int

    public var form: RTPExtensionForm { RTPExtensionForm(profile: profile) }

    /// The RFC 8285 elements, in order (empty for the `.other` form). Validated at parse time.
    public var elements: RTPExtensionElements {
        RTPExtensionElements(data: data, end: elementsEnd, form: form)
    }

    /// The data of the first element with `id`, if present.
    public func element(id: UInt8) -> UnsafeRawBufferPointer? {
        for element in elements where element.id == id { return element.data }
        return nil
    }
}

/// One RFC 8285 header extension element, viewed in place.
public struct RTPExtensionElementView {
    public let id: UInt8
    public let data: UnsafeRawBufferPointer
}

/// The RFC 8285 elements of a header extension, iterated without allocation; padding bytes are skipped.
public struct RTPExtensionElements: Sequence {
    let data: UnsafeRawBufferPointer
    let end: Int
    let form: RTPExtensionForm

    public struct Iterator: IteratorProtocol {
        let data: UnsafeRawBufferPointer
        let end: Int
        let twoByte: Bool
        var pos: Int

        public mutating func next() -> RTPExtensionElementView? {
            while pos < end {
                let b = data[pos]
                if b == 0 {
                    pos += 1
                    continue
                }
                if twoByte {
                    let len = Int(data[pos + 1])
                    defer { pos += 2 + len }
                    return RTPExtensionElementView(id: b, data: data.sub(pos + 2, pos + 2 + len))
                } else {
                    let len = Int(b & 0x0F) + 1
                    defer { pos += 1 + len }
                    return RTPExtensionElementView(id: b >> 4, data: data.sub(pos + 1, pos + 1 + len))
                }
            }
            return nil
        }
    }

    public func makeIterator() -> Iterator {
        switch form {
        case .oneByte: Iterator(data: data, end: end, twoByte: false, pos: 0)
        case .twoByte: Iterator(data: data, end: end, twoByte: true, pos: 0)
        case .other: Iterator(data: data, end: 0, twoByte: false, pos: 0)
        }
    }
}
