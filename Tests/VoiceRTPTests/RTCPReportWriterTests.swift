import Testing
import VoiceRTP

/// The allocation-free report writer must produce exactly the bytes the general serializer does for the same
/// content, and refuse what does not fit instead of writing past the buffer.
@Suite struct RTCPReportWriterTests {
    static let block = RTCPReportBlock(
        ssrc: 0xCAFE_BABE, fractionLost: 25, cumulativeLost: -3, extendedHighestSequence: 0x1_0203,
        jitter: 77, lastSenderReport: 0x1234_5678, delaySinceLastSenderReport: 0x9ABC)

    private func written(_ capacity: Int = 512, _ body: (inout RTCPReportWriter) -> Bool) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0xEE, count: capacity)
        return bytes.withUnsafeMutableBytes { raw -> [UInt8]? in
            var writer = RTCPReportWriter(raw)
            guard body(&writer) else { return nil }
            return Array(raw[0..<writer.length])
        }
    }

    @Test(arguments: [0, 1, 5, 6, 7, 8, 21, 255])
    func senderReportWithCNAMEAndByeMatchesTheSerializer(cnameLength: Int) throws {
        let cname = String(repeating: "a", count: cnameLength)
        let ntp = NTPTimestamp(seconds: 0xE000_0001, fraction: 0x8000_0000)
        let bytes = try #require(
            written { w in
                Array(cname.utf8).withUnsafeBytes { c in
                    w.senderReport(
                        ssrc: 7, ntpTimestamp: ntp, rtpTimestamp: 960, packetCount: 50, octetCount: 3_000,
                        block: Self.block) && w.sourceDescription(ssrc: 7, cname: c) && w.bye(ssrc: 7)
                }
            })
        let expected = RTCPPacket.serializedCompound([
            .senderReport(
                RTCPSenderReport(
                    ssrc: 7, ntpTimestamp: ntp, rtpTimestamp: 960, packetCount: 50, octetCount: 3_000,
                    reportBlocks: [Self.block])),
            .sourceDescription(RTCPSourceDescription(ssrc: 7, cname: cname)), .bye(RTCPBye(ssrcs: [7]))
        ])
        #expect(bytes == expected)
        #expect(
            bytes.count == RTCPReportWriter.compoundLength(sender: true, blocks: 1, cnameLength: cnameLength, bye: true)
        )
        // And it parses back to the same packets.
        #expect(try RTCPPacket.parseCompound(bytes) == RTCPPacket.parseCompound(expected))
    }

    @Test func receiverReportWithAndWithoutBlockMatchesTheSerializer() throws {
        for block in [nil, Self.block] {
            let bytes = try #require(
                written { w in
                    Array("host@example".utf8).withUnsafeBytes { c in
                        w.receiverReport(ssrc: 9, block: block) && w.sourceDescription(ssrc: 9, cname: c)
                    }
                })
            let expected = RTCPPacket.serializedCompound([
                .receiverReport(RTCPReceiverReport(ssrc: 9, reportBlocks: block.map { [$0] } ?? [])),
                .sourceDescription(RTCPSourceDescription(ssrc: 9, cname: "host@example"))
            ])
            #expect(bytes == expected)
        }
    }

    @Test func whatDoesNotFitIsRefusedAndNothingIsWritten() {
        // 60 bytes: the SR with a block (52) fits, then its SDES (12 bytes for a 1-byte CNAME) does not, a BYE
        // (8) does, and a second BYE does not.
        var bytes = [UInt8](repeating: 0xEE, count: 60)
        bytes.withUnsafeMutableBytes { raw in
            var w = RTCPReportWriter(raw)
            let report = w.senderReport(
                ssrc: 1, ntpTimestamp: NTPTimestamp(seconds: 1, fraction: 0), rtpTimestamp: 0, packetCount: 0,
                octetCount: 0, block: Self.block)
            #expect(report)
            #expect(w.length == 52)
            let fits = [UInt8(ascii: "x")].withUnsafeBytes { w.sourceDescription(ssrc: 1, cname: $0) }
            #expect(!fits)
            #expect(w.length == 52)
            let bye = w.bye(ssrc: 1)
            let secondBye = w.bye(ssrc: 1)
            #expect(bye && !secondBye)
        }
        #expect(bytes[52] == 0x81 && bytes[53] == 203)
        // A CNAME longer than 255 bytes cannot be encoded.
        #expect(
            written(1_024) { w in
                [UInt8](repeating: 0x61, count: 256).withUnsafeBytes { w.sourceDescription(ssrc: 1, cname: $0) }
            } == nil)
    }
}
