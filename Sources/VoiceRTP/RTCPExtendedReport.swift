/// The VoIP Metrics report block of RTCP-XR (RFC 3611 4.7, block type 7): call-quality figures a receiver sends
/// about one source. Field units follow the RFC (rates in 1/256, delays in ms, levels in dBm, MOS × 10); 127 for
/// the levels and RERL and 127/0 for R factors and MOS mean "unavailable" as the RFC says.
public struct RTCPVoIPMetrics: Sendable, Hashable {
    public static let blockType: UInt8 = 7
    /// Block length in 32-bit words after the 4-byte block header.
    public static let blockLength = 8

    public var ssrc: UInt32
    public var lossRate: UInt8
    public var discardRate: UInt8
    public var burstDensity: UInt8
    public var gapDensity: UInt8
    public var burstDuration: UInt16
    public var gapDuration: UInt16
    public var roundTripDelay: UInt16
    public var endSystemDelay: UInt16
    /// Signed dBm.
    public var signalLevel: Int8
    public var noiseLevel: Int8
    public var residualEchoReturnLoss: UInt8
    public var gmin: UInt8
    public var rFactor: UInt8
    public var externalRFactor: UInt8
    public var mosLQ: UInt8
    public var mosCQ: UInt8
    /// PLC (2 bits), JBA (2 bits), JB rate (4 bits).
    public var receiverConfiguration: UInt8
    public var jitterBufferNominal: UInt16
    public var jitterBufferMaximum: UInt16
    public var jitterBufferAbsoluteMaximum: UInt16

    public init(
        ssrc: UInt32, lossRate: UInt8 = 0, discardRate: UInt8 = 0, burstDensity: UInt8 = 0, gapDensity: UInt8 = 0,
        burstDuration: UInt16 = 0, gapDuration: UInt16 = 0, roundTripDelay: UInt16 = 0, endSystemDelay: UInt16 = 0,
        signalLevel: Int8 = 127, noiseLevel: Int8 = 127, residualEchoReturnLoss: UInt8 = 127, gmin: UInt8 = 16,
        rFactor: UInt8 = 127, externalRFactor: UInt8 = 127, mosLQ: UInt8 = 127, mosCQ: UInt8 = 127,
        receiverConfiguration: UInt8 = 0, jitterBufferNominal: UInt16 = 0, jitterBufferMaximum: UInt16 = 0,
        jitterBufferAbsoluteMaximum: UInt16 = 0
    ) {
        self.ssrc = ssrc
        self.lossRate = lossRate
        self.discardRate = discardRate
        self.burstDensity = burstDensity
        self.gapDensity = gapDensity
        self.burstDuration = burstDuration
        self.gapDuration = gapDuration
        self.roundTripDelay = roundTripDelay
        self.endSystemDelay = endSystemDelay
        self.signalLevel = signalLevel
        self.noiseLevel = noiseLevel
        self.residualEchoReturnLoss = residualEchoReturnLoss
        self.gmin = gmin
        self.rFactor = rFactor
        self.externalRFactor = externalRFactor
        self.mosLQ = mosLQ
        self.mosCQ = mosCQ
        self.receiverConfiguration = receiverConfiguration
        self.jitterBufferNominal = jitterBufferNominal
        self.jitterBufferMaximum = jitterBufferMaximum
        self.jitterBufferAbsoluteMaximum = jitterBufferAbsoluteMaximum
    }

    /// Reads the 32 bytes after the block header.
    init(_ b: UnsafeRawBufferPointer, at o: Int) {
        self.init(
            ssrc: b.be32(o), lossRate: b[o + 4], discardRate: b[o + 5], burstDensity: b[o + 6], gapDensity: b[o + 7],
            burstDuration: b.be16(o + 8), gapDuration: b.be16(o + 10), roundTripDelay: b.be16(o + 12),
            endSystemDelay: b.be16(o + 14), signalLevel: Int8(bitPattern: b[o + 16]),
            noiseLevel: Int8(bitPattern: b[o + 17]), residualEchoReturnLoss: b[o + 18], gmin: b[o + 19],
            rFactor: b[o + 20], externalRFactor: b[o + 21], mosLQ: b[o + 22], mosCQ: b[o + 23],
            receiverConfiguration: b[o + 24], jitterBufferNominal: b.be16(o + 26), jitterBufferMaximum: b.be16(o + 28),
            jitterBufferAbsoluteMaximum: b.be16(o + 30))
    }

    func write(into b: UnsafeMutableRawBufferPointer, at o: Int) {
        b.put32(ssrc, at: o)
        b.put8(lossRate, at: o + 4)
        b.put8(discardRate, at: o + 5)
        b.put8(burstDensity, at: o + 6)
        b.put8(gapDensity, at: o + 7)
        b.put16(burstDuration, at: o + 8)
        b.put16(gapDuration, at: o + 10)
        b.put16(roundTripDelay, at: o + 12)
        b.put16(endSystemDelay, at: o + 14)
        b.put8(UInt8(bitPattern: signalLevel), at: o + 16)
        b.put8(UInt8(bitPattern: noiseLevel), at: o + 17)
        b.put8(residualEchoReturnLoss, at: o + 18)
        b.put8(gmin, at: o + 19)
        b.put8(rFactor, at: o + 20)
        b.put8(externalRFactor, at: o + 21)
        b.put8(mosLQ, at: o + 22)
        b.put8(mosCQ, at: o + 23)
        b.put8(receiverConfiguration, at: o + 24)
        b.put8(0, at: o + 25)
        b.put16(jitterBufferNominal, at: o + 26)
        b.put16(jitterBufferMaximum, at: o + 28)
        b.put16(jitterBufferAbsoluteMaximum, at: o + 30)
    }
}

/// One RTCP-XR report block.
public enum RTCPXRBlock: Sendable, Hashable {
    case voipMetrics(RTCPVoIPMetrics)
    /// Any other block type, kept as its type-specific byte and data (a multiple of 4 bytes).
    case other(blockType: UInt8, typeSpecific: UInt8, data: [UInt8])

    var serializedLength: Int {
        switch self {
        case .voipMetrics: 4 + 4 * RTCPVoIPMetrics.blockLength
        case .other(_, _, let data): 4 + data.count
        }
    }
}

/// An extended report packet (RTCP-XR, PT 207, RFC 3611).
public struct RTCPExtendedReport: Sendable, Hashable {
    public var ssrc: UInt32
    public var blocks: [RTCPXRBlock]

    public init(ssrc: UInt32, blocks: [RTCPXRBlock]) {
        self.ssrc = ssrc
        self.blocks = blocks
    }

    /// Parses the body after the RTCP header.
    init(body: UnsafeRawBufferPointer, offset: Int) throws(RTCPParseError) {
        guard body.count >= 4 else { throw .tooShort(offset: offset, length: body.count + 4) }
        ssrc = body.be32(0)
        blocks = []
        var pos = 4
        while pos < body.count {
            guard pos + 4 <= body.count else { throw .xrBlockOverrun(blockType: body[pos], offset: offset + 4 + pos) }
            let blockType = body[pos]
            let words = Int(body.be16(pos + 2))
            let end = pos + 4 + 4 * words
            guard end <= body.count else { throw .xrBlockOverrun(blockType: blockType, offset: offset + 4 + pos) }
            if blockType == RTCPVoIPMetrics.blockType {
                guard words == RTCPVoIPMetrics.blockLength else { throw .voipMetricsBadLength(words) }
                blocks.append(.voipMetrics(RTCPVoIPMetrics(body, at: pos + 4)))
            } else {
                blocks.append(
                    .other(blockType: blockType, typeSpecific: body[pos + 1], data: Array(body.sub(pos + 4, end))))
            }
            pos = end
        }
    }

    var serializedLength: Int { 8 + blocks.reduce(0) { $0 + $1.serializedLength } }

    func writeBody(into b: UnsafeMutableRawBufferPointer, at offset: Int) -> Int {
        b.put32(ssrc, at: offset)
        var pos = offset + 4
        for block in blocks {
            switch block {
            case .voipMetrics(let metrics):
                b.put8(RTCPVoIPMetrics.blockType, at: pos)
                b.put8(0, at: pos + 1)
                b.put16(UInt16(RTCPVoIPMetrics.blockLength), at: pos + 2)
                metrics.write(into: b, at: pos + 4)
                pos += 4 + 4 * RTCPVoIPMetrics.blockLength
            case .other(let blockType, let typeSpecific, let data):
                precondition(data.count % 4 == 0 && data.count / 4 <= 0xFFFF, "XR block data must be whole words")
                b.put8(blockType, at: pos)
                b.put8(typeSpecific, at: pos + 1)
                b.put16(UInt16(data.count / 4), at: pos + 2)
                pos = b.put(data, at: pos + 4)
            }
        }
        return pos
    }

    /// The VoIP Metrics blocks of this report.
    public var voipMetrics: [RTCPVoIPMetrics] {
        blocks.compactMap { if case .voipMetrics(let m) = $0 { m } else { nil } }
    }
}
