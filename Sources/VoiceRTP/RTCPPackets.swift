public import VoiceCore

/// One reception report block (RFC 3550 6.4.1): what a receiver tells a sender about one source.
public struct RTCPReportBlock: Sendable, Hashable {
    public static let size = 24

    public var ssrc: UInt32
    /// Fraction lost since the previous report, in 1/256.
    public var fractionLost: UInt8
    /// Cumulative packets lost, a 24-bit signed value (-0x800000...0x7FFFFF); may be negative with duplicates.
    public var cumulativeLost: Int32
    public var extendedHighestSequence: UInt32
    /// Interarrival jitter in timestamp units.
    public var jitter: UInt32
    /// LSR: middle 32 bits of the NTP timestamp of the last SR received from this source (0 if none).
    public var lastSenderReport: UInt32
    /// DLSR: delay since that SR, in 1/65536 s.
    public var delaySinceLastSenderReport: UInt32

    public init(
        ssrc: UInt32, fractionLost: UInt8, cumulativeLost: Int32, extendedHighestSequence: UInt32, jitter: UInt32,
        lastSenderReport: UInt32, delaySinceLastSenderReport: UInt32
    ) {
        self.ssrc = ssrc
        self.fractionLost = fractionLost
        self.cumulativeLost = cumulativeLost
        self.extendedHighestSequence = extendedHighestSequence
        self.jitter = jitter
        self.lastSenderReport = lastSenderReport
        self.delaySinceLastSenderReport = delaySinceLastSenderReport
    }

    init(_ b: UnsafeRawBufferPointer, at o: Int) {
        let lost24 = b.be24(o + 5)
        self.init(
            ssrc: b.be32(o), fractionLost: b[o + 4],
            cumulativeLost: Int32(bitPattern: lost24 << 8) >> 8,
            extendedHighestSequence: b.be32(o + 8), jitter: b.be32(o + 12), lastSenderReport: b.be32(o + 16),
            delaySinceLastSenderReport: b.be32(o + 20))
    }

    func write(into b: UnsafeMutableRawBufferPointer, at o: Int) {
        precondition((-0x80_0000...0x7F_FFFF).contains(cumulativeLost), "cumulative lost must fit 24 signed bits")
        b.put32(ssrc, at: o)
        b.put8(fractionLost, at: o + 4)
        b.put24(UInt32(bitPattern: cumulativeLost) & 0xFF_FFFF, at: o + 5)
        b.put32(extendedHighestSequence, at: o + 8)
        b.put32(jitter, at: o + 12)
        b.put32(lastSenderReport, at: o + 16)
        b.put32(delaySinceLastSenderReport, at: o + 20)
    }

    /// The RTT this block implies for the sender that receives it at `arrival` (nil without an SR reference).
    public func roundTripTime(arrival: NTPTimestamp) -> MediaTime? {
        RTCPRoundTrip.rtt(arrival: arrival, lsr: lastSenderReport, dlsr: delaySinceLastSenderReport)
    }
}

/// A sender report (PT 200).
public struct RTCPSenderReport: Sendable, Hashable {
    public var ssrc: UInt32
    public var ntpTimestamp: NTPTimestamp
    /// The RTP timestamp corresponding to `ntpTimestamp`.
    public var rtpTimestamp: UInt32
    public var packetCount: UInt32
    public var octetCount: UInt32
    /// At most 31.
    public var reportBlocks: [RTCPReportBlock]
    /// Profile-specific extension bytes after the blocks (a multiple of 4).
    public var profileExtension: [UInt8]

    public init(
        ssrc: UInt32, ntpTimestamp: NTPTimestamp, rtpTimestamp: UInt32, packetCount: UInt32, octetCount: UInt32,
        reportBlocks: [RTCPReportBlock] = [], profileExtension: [UInt8] = []
    ) {
        self.ssrc = ssrc
        self.ntpTimestamp = ntpTimestamp
        self.rtpTimestamp = rtpTimestamp
        self.packetCount = packetCount
        self.octetCount = octetCount
        self.reportBlocks = reportBlocks
        self.profileExtension = profileExtension
    }
}

/// A receiver report (PT 201).
public struct RTCPReceiverReport: Sendable, Hashable {
    public var ssrc: UInt32
    /// At most 31.
    public var reportBlocks: [RTCPReportBlock]
    public var profileExtension: [UInt8]

    public init(ssrc: UInt32, reportBlocks: [RTCPReportBlock] = [], profileExtension: [UInt8] = []) {
        self.ssrc = ssrc
        self.reportBlocks = reportBlocks
        self.profileExtension = profileExtension
    }
}

/// SDES item types (RFC 3550 6.5).
public enum RTCPSDESItemType {
    public static let end: UInt8 = 0
    public static let cname: UInt8 = 1
    public static let name: UInt8 = 2
    public static let email: UInt8 = 3
    public static let phone: UInt8 = 4
    public static let location: UInt8 = 5
    public static let tool: UInt8 = 6
    public static let note: UInt8 = 7
    public static let priv: UInt8 = 8
}

/// One SDES item; the value is kept as bytes (UTF-8 text for all but PRIV).
public struct RTCPSDESItem: Sendable, Hashable {
    public var type: UInt8
    /// At most 255 bytes.
    public var value: [UInt8]

    public init(type: UInt8, value: [UInt8]) {
        self.type = type
        self.value = value
    }

    public init(type: UInt8, text: String) { self.init(type: type, value: Array(text.utf8)) }

    /// The value as text (invalid UTF-8 is repaired).
    public var text: String { String(decoding: value, as: UTF8.self) }
}

/// One SDES chunk: a source and its items.
public struct RTCPSDESChunk: Sendable, Hashable {
    public var ssrc: UInt32
    public var items: [RTCPSDESItem]

    public init(ssrc: UInt32, items: [RTCPSDESItem]) {
        self.ssrc = ssrc
        self.items = items
    }

    /// The CNAME item, the one every participant must send (RFC 3550 6.5.1).
    public var cname: String? { items.first { $0.type == RTCPSDESItemType.cname }?.text }

    var serializedLength: Int { RTCPWire.sdesChunkLength(itemBytes: items.reduce(0) { $0 + 2 + $1.value.count }) }
}

/// A source description packet (PT 202).
public struct RTCPSourceDescription: Sendable, Hashable {
    /// At most 31.
    public var chunks: [RTCPSDESChunk]

    public init(chunks: [RTCPSDESChunk]) { self.chunks = chunks }

    /// The usual single-chunk SDES carrying only a CNAME.
    public init(ssrc: UInt32, cname: String) {
        chunks = [RTCPSDESChunk(ssrc: ssrc, items: [RTCPSDESItem(type: RTCPSDESItemType.cname, text: cname)])]
    }
}

/// A goodbye packet (PT 203).
public struct RTCPBye: Sendable, Hashable {
    /// At most 31.
    public var ssrcs: [UInt32]
    /// Optional reason, at most 255 UTF-8 bytes.
    public var reason: String?

    public init(ssrcs: [UInt32], reason: String? = nil) {
        self.ssrcs = ssrcs
        self.reason = reason
    }
}

/// An application-defined packet (PT 204).
public struct RTCPApp: Sendable, Hashable {
    /// 0...31.
    public var subtype: UInt8
    public var ssrc: UInt32
    /// Four ASCII bytes.
    public var name: (UInt8, UInt8, UInt8, UInt8)
    /// A multiple of 4 bytes.
    public var data: [UInt8]

    public init(subtype: UInt8, ssrc: UInt32, name: String, data: [UInt8]) {
        let bytes = Array(name.utf8)
        precondition(bytes.count == 4, "APP name must be 4 ASCII characters")
        self.init(subtype: subtype, ssrc: ssrc, nameBytes: (bytes[0], bytes[1], bytes[2], bytes[3]), data: data)
    }

    init(subtype: UInt8, ssrc: UInt32, nameBytes: (UInt8, UInt8, UInt8, UInt8), data: [UInt8]) {
        self.subtype = subtype
        self.ssrc = ssrc
        self.name = nameBytes
        self.data = data
    }

    public var nameString: String { String(decoding: [name.0, name.1, name.2, name.3], as: UTF8.self) }

    public static func == (a: RTCPApp, b: RTCPApp) -> Bool {
        a.subtype == b.subtype && a.ssrc == b.ssrc && a.name == b.name && a.data == b.data
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(subtype)
        hasher.combine(ssrc)
        hasher.combine(data)
    }
}

/// A decoded RTCP packet.
public enum RTCPPacket: Sendable, Hashable {
    case senderReport(RTCPSenderReport)
    case receiverReport(RTCPReceiverReport)
    case sourceDescription(RTCPSourceDescription)
    case bye(RTCPBye)
    case app(RTCPApp)
    case extendedReport(RTCPExtendedReport)
    /// Any other type (feedback 205/206, …), kept as its count field and body.
    case other(packetType: UInt8, count: UInt8, body: [UInt8])

    /// Decodes one packet of a validated compound.
    /// - Throws: ``RTCPParseError`` when counts or item lengths do not fit the packet.
    public init(_ view: RTCPPacketView) throws(RTCPParseError) {
        let body = view.body
        let count = view.count
        switch view.packetType {
        case RTCPPacketType.senderReport:
            guard body.count >= 24 else { throw .tooShort(offset: view.offset, length: view.bytes.count) }
            let blocks = try RTCPPacket.reportBlocks(body, from: 24, count: count)
            self = .senderReport(
                RTCPSenderReport(
                    ssrc: body.be32(0),
                    ntpTimestamp: NTPTimestamp(seconds: body.be32(4), fraction: body.be32(8)),
                    rtpTimestamp: body.be32(12), packetCount: body.be32(16), octetCount: body.be32(20),
                    reportBlocks: blocks, profileExtension: Array(body.sub(24 + 24 * count, body.count))))
        case RTCPPacketType.receiverReport:
            guard body.count >= 4 else { throw .tooShort(offset: view.offset, length: view.bytes.count) }
            let blocks = try RTCPPacket.reportBlocks(body, from: 4, count: count)
            self = .receiverReport(
                RTCPReceiverReport(
                    ssrc: body.be32(0), reportBlocks: blocks,
                    profileExtension: Array(body.sub(4 + 24 * count, body.count))))
        case RTCPPacketType.sourceDescription:
            self = .sourceDescription(try RTCPPacket.sourceDescription(body, count: count))
        case RTCPPacketType.bye:
            guard 4 * count <= body.count else { throw .byeOverrun(count: count, available: body.count) }
            var ssrcs: [UInt32] = []
            ssrcs.reserveCapacity(count)
            for i in 0..<count { ssrcs.append(body.be32(4 * i)) }
            var reason: String?
            let p = 4 * count
            if p < body.count {
                let length = Int(body[p])
                guard p + 1 + length <= body.count else {
                    throw .byeReasonOverrun(length: length, available: body.count - p - 1)
                }
                reason = Self.byeReason(body.sub(p + 1, p + 1 + length))
            }
            self = .bye(RTCPBye(ssrcs: ssrcs, reason: reason))
        case RTCPPacketType.app:
            guard body.count >= 8 else { throw .appTooShort(length: body.count) }
            self = .app(
                RTCPApp(
                    subtype: UInt8(count), ssrc: body.be32(0), nameBytes: (body[4], body[5], body[6], body[7]),
                    data: Array(body.sub(8, body.count))))
        case RTCPPacketType.extendedReport:
            self = .extendedReport(try RTCPExtendedReport(body: body, offset: view.offset))
        default:
            self = .other(packetType: view.packetType, count: UInt8(count), body: Array(body))
        }
    }

    /// A BYE reason as text. Valid UTF-8 is kept as is; otherwise each non-ASCII byte becomes "?" rather than
    /// U+FFFD, so the text stays as many bytes as the wire's (≤ 255) and the packet can be serialized again.
    static func byeReason(_ bytes: UnsafeRawBufferPointer) -> String {
        if let text = String(validating: bytes, as: UTF8.self) { return text }
        return String(decoding: bytes.map { $0 < 0x80 ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
    }

    static func reportBlocks(_ body: UnsafeRawBufferPointer, from start: Int, count: Int)
        throws(RTCPParseError) -> [RTCPReportBlock]
    {
        let available = body.count - start
        guard count * RTCPReportBlock.size <= available else {
            throw .reportBlocksOverrun(count: count, available: available)
        }
        var blocks: [RTCPReportBlock] = []
        blocks.reserveCapacity(count)
        for i in 0..<count { blocks.append(RTCPReportBlock(body, at: start + 24 * i)) }
        return blocks
    }

    static func sourceDescription(_ body: UnsafeRawBufferPointer, count: Int)
        throws(RTCPParseError) -> RTCPSourceDescription
    {
        var chunks: [RTCPSDESChunk] = []
        var pos = 0
        for chunkIndex in 0..<count {
            guard pos + 4 <= body.count else { throw .sdesOverrun(chunk: chunkIndex) }
            let ssrc = body.be32(pos)
            pos += 4
            var items: [RTCPSDESItem] = []
            while true {
                guard pos < body.count else { throw .sdesOverrun(chunk: chunkIndex) }
                let type = body[pos]
                if type == RTCPSDESItemType.end {
                    // Skip the null octets up to the next 32-bit boundary.
                    pos = min((pos + 1 + 3) / 4 * 4, body.count)
                    break
                }
                guard pos + 2 <= body.count else { throw .sdesOverrun(chunk: chunkIndex) }
                let length = Int(body[pos + 1])
                guard pos + 2 + length <= body.count else { throw .sdesOverrun(chunk: chunkIndex) }
                items.append(RTCPSDESItem(type: type, value: Array(body.sub(pos + 2, pos + 2 + length))))
                pos += 2 + length
            }
            chunks.append(RTCPSDESChunk(ssrc: ssrc, items: items))
        }
        return RTCPSourceDescription(chunks: chunks)
    }

    /// Decodes every packet of a compound packet after validating it (RFC 3550 A.2).
    public static func parseCompound(_ bytes: UnsafeRawBufferPointer, validation: RTCPValidation = .rfc3550)
        throws(RTCPParseError) -> [RTCPPacket]
    {
        let compound = try RTCPCompoundView(bytes, validation: validation)
        var packets: [RTCPPacket] = []
        packets.reserveCapacity(compound.packetCount)
        for view in compound { packets.append(try RTCPPacket(view)) }
        return packets
    }

    /// Decodes every packet of a compound packet held in an array.
    public static func parseCompound(_ bytes: [UInt8], validation: RTCPValidation = .rfc3550)
        throws(RTCPParseError) -> [RTCPPacket]
    {
        let result: Result<[RTCPPacket], RTCPParseError> = bytes.withUnsafeBytes { raw in
            do throws(RTCPParseError) {
                return .success(try parseCompound(raw, validation: validation))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Bytes this packet occupies on the wire.
    public var serializedLength: Int {
        switch self {
        case .senderReport(let sr): 28 + 24 * sr.reportBlocks.count + sr.profileExtension.count
        case .receiverReport(let rr): 8 + 24 * rr.reportBlocks.count + rr.profileExtension.count
        case .sourceDescription(let sdes): 4 + sdes.chunks.reduce(0) { $0 + $1.serializedLength }
        case .bye(let bye): 4 + 4 * bye.ssrcs.count + (bye.reason.map { ($0.utf8.count + 1 + 3) / 4 * 4 } ?? 0)
        case .app(let app): 12 + app.data.count
        case .extendedReport(let xr): xr.serializedLength
        case .other(_, _, let body): 4 + body.count
        }
    }

    /// Writes the packet at the start of `buffer` and returns its length.
    /// - Precondition: the buffer is at least ``serializedLength`` bytes; counts ≤ 31; variable parts
    ///   (profile extensions, APP data, `other` bodies) are multiples of 4 bytes; texts ≤ 255 bytes.
    /// - Complexity: O(packet size); no allocation.
    @discardableResult
    public func serialize(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let length = serializedLength
        precondition(length % 4 == 0, "RTCP packet length \(length) is not a multiple of 4")
        precondition(buffer.count >= length, "buffer of \(buffer.count) bytes too small for \(length)-byte RTCP")
        func header(_ count: Int, _ type: UInt8) {
            RTCPWire.header(buffer, at: 0, count: count, type: type, size: length)
        }
        var pos = 4
        switch self {
        case .senderReport(let sr):
            header(sr.reportBlocks.count, RTCPPacketType.senderReport)
            RTCPWire.senderInfo(
                buffer, at: 4, ssrc: sr.ssrc, ntpTimestamp: sr.ntpTimestamp, rtpTimestamp: sr.rtpTimestamp,
                packetCount: sr.packetCount, octetCount: sr.octetCount)
            pos = 28
            for block in sr.reportBlocks {
                block.write(into: buffer, at: pos)
                pos += 24
            }
            pos = buffer.put(sr.profileExtension, at: pos)
        case .receiverReport(let rr):
            header(rr.reportBlocks.count, RTCPPacketType.receiverReport)
            buffer.put32(rr.ssrc, at: 4)
            pos = 8
            for block in rr.reportBlocks {
                block.write(into: buffer, at: pos)
                pos += 24
            }
            pos = buffer.put(rr.profileExtension, at: pos)
        case .sourceDescription(let sdes):
            header(sdes.chunks.count, RTCPPacketType.sourceDescription)
            for chunk in sdes.chunks {
                let chunkEnd = pos + chunk.serializedLength
                buffer.put32(chunk.ssrc, at: pos)
                pos += 4
                for item in chunk.items {
                    pos = item.value.withUnsafeBytes { RTCPWire.sdesItem(buffer, at: pos, type: item.type, value: $0) }
                }
                pos = buffer.zero(chunkEnd - pos, at: pos)
            }
        case .bye(let bye):
            header(bye.ssrcs.count, RTCPPacketType.bye)
            for ssrc in bye.ssrcs {
                buffer.put32(ssrc, at: pos)
                pos += 4
            }
            if let reason = bye.reason {
                let text = Array(reason.utf8)
                precondition(text.count <= 255, "BYE reason longer than 255 bytes")
                buffer.put8(UInt8(text.count), at: pos)
                pos = buffer.put(text, at: pos + 1)
                pos = buffer.zero(length - pos, at: pos)
            }
        case .app(let app):
            header(Int(app.subtype), RTCPPacketType.app)
            buffer.put32(app.ssrc, at: 4)
            buffer.put8(app.name.0, at: 8)
            buffer.put8(app.name.1, at: 9)
            buffer.put8(app.name.2, at: 10)
            buffer.put8(app.name.3, at: 11)
            pos = buffer.put(app.data, at: 12)
        case .extendedReport(let xr):
            header(0, RTCPPacketType.extendedReport)
            pos = xr.writeBody(into: buffer, at: 4)
        case .other(let type, let count, let body):
            header(Int(count), type)
            pos = buffer.put(body, at: 4)
        }
        assert(pos == length, "RTCP serializer wrote \(pos) of \(length) bytes")
        return length
    }

    /// Writes a compound packet (the packets back to back) and returns its length.
    @discardableResult
    public static func serialize(compound packets: [RTCPPacket], into buffer: UnsafeMutableRawBufferPointer) -> Int {
        var pos = 0
        for packet in packets {
            pos += packet.serialize(into: UnsafeMutableRawBufferPointer(rebasing: buffer[pos...]))
        }
        return pos
    }

    /// The serialized packet as a new array.
    public func serialized() -> [UInt8] { makeBytes(serializedLength) { serialize(into: $0) } }

    /// A serialized compound packet as a new array.
    public static func serializedCompound(_ packets: [RTCPPacket]) -> [UInt8] {
        makeBytes(packets.reduce(0) { $0 + $1.serializedLength }) { serialize(compound: packets, into: $0) }
    }
}
