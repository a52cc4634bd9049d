import Testing
import VoiceRTP
import VoiceTestSupport

@Suite struct RTCPTests {
    let block = RTCPReportBlock(
        ssrc: 0x0102_0304, fractionLost: 12, cumulativeLost: -3, extendedHighestSequence: 0x0001_0005,
        jitter: 37, lastSenderReport: 0xB705_2000, delaySinceLastSenderReport: 0x0005_4000)

    var senderReport: RTCPPacket {
        .senderReport(
            RTCPSenderReport(
                ssrc: 0xAABB_CCDD, ntpTimestamp: NTPTimestamp(seconds: 0xE000_0001, fraction: 0x8000_0000),
                rtpTimestamp: 123_456, packetCount: 1000, octetCount: 160_000, reportBlocks: [block]))
    }

    var compound: [RTCPPacket] {
        [
            senderReport,
            .sourceDescription(
                RTCPSourceDescription(chunks: [
                    RTCPSDESChunk(
                        ssrc: 0xAABB_CCDD,
                        items: [
                            RTCPSDESItem(type: RTCPSDESItemType.cname, text: "user@host.example"),
                            RTCPSDESItem(type: RTCPSDESItemType.tool, text: "VoiceEngine")
                        ]),
                    RTCPSDESChunk(ssrc: 7, items: [])
                ])),
            .extendedReport(
                RTCPExtendedReport(
                    ssrc: 0xAABB_CCDD,
                    blocks: [
                        .voipMetrics(
                            RTCPVoIPMetrics(
                                ssrc: 0x0102_0304, lossRate: 5, discardRate: 2, burstDensity: 40, gapDensity: 3,
                                burstDuration: 120, gapDuration: 3000, roundTripDelay: 80, endSystemDelay: 60,
                                signalLevel: -20, noiseLevel: -60, residualEchoReturnLoss: 40, gmin: 16, rFactor: 85,
                                externalRFactor: 127, mosLQ: 41, mosCQ: 40, receiverConfiguration: 0b1010_0100,
                                jitterBufferNominal: 60, jitterBufferMaximum: 120, jitterBufferAbsoluteMaximum: 500)),
                        .other(blockType: 4, typeSpecific: 0, data: [0, 0, 0, 1, 0, 0, 0, 2])
                    ])),
            .app(RTCPApp(subtype: 3, ssrc: 0xAABB_CCDD, name: "VOIC", data: [1, 2, 3, 4])),
            .other(packetType: RTCPPacketType.transportFeedback, count: 1, body: [0, 0, 0, 1, 0, 0, 0, 2]),
            .bye(RTCPBye(ssrcs: [0xAABB_CCDD, 5], reason: "call ended"))
        ]
    }

    /// A receiver report written out by hand from RFC 3550 6.4.2.
    @Test func parsesHandCraftedReceiverReport() throws {
        let bytes: [UInt8] = [
            0x81, 0xC9, 0x00, 0x07,  // V=2 RC=1 PT=201 length=7
            0x11, 0x22, 0x33, 0x44,  // sender SSRC
            0x01, 0x02, 0x03, 0x04,  // source SSRC
            0x0C, 0xFF, 0xFF, 0xFD,  // fraction 12, cumulative lost -3
            0x00, 0x01, 0x00, 0x05,  // extended highest 65541
            0x00, 0x00, 0x00, 0x25,  // jitter 37
            0xB7, 0x05, 0x20, 0x00,  // LSR
            0x00, 0x05, 0x40, 0x00  // DLSR
        ]
        let packets = try RTCPPacket.parseCompound(bytes)
        #expect(packets == [.receiverReport(RTCPReceiverReport(ssrc: 0x1122_3344, reportBlocks: [block]))])
        #expect(packets[0].serialized() == bytes)
    }

    @Test func parsesHandCraftedSenderReportWithCNAME() throws {
        let bytes: [UInt8] = [
            0x80, 0xC8, 0x00, 0x06, 0x00, 0x00, 0x00, 0x2A,  // SR, SSRC 42
            0xE0, 0x00, 0x00, 0x01, 0x80, 0x00, 0x00, 0x00,  // NTP
            0x00, 0x01, 0xE2, 0x40, 0x00, 0x00, 0x03, 0xE8,  // RTP ts 123456, 1000 packets
            0x00, 0x02, 0x71, 0x00,  // 160000 octets
            0x81, 0xCA, 0x00, 0x03, 0x00, 0x00, 0x00, 0x2A,  // SDES SC=1 length 3, SSRC 42
            0x01, 0x03, 0x61, 0x40, 0x62, 0x00, 0x00, 0x00  // CNAME "a@b", end, pad
        ]
        let packets = try RTCPPacket.parseCompound(bytes)
        #expect(packets.count == 2)
        guard case .senderReport(let sr) = packets[0], case .sourceDescription(let sdes) = packets[1] else {
            Issue.record("unexpected packets \(packets)")
            return
        }
        #expect(sr.ssrc == 42 && sr.rtpTimestamp == 123_456 && sr.packetCount == 1000 && sr.octetCount == 160_000)
        #expect(sr.ntpTimestamp.middle32 == 0x0001_8000)
        #expect(sdes.chunks.first?.cname == "a@b")
        #expect(RTCPPacket.serializedCompound(packets) == bytes)
    }

    @Test func compoundRoundTripsEveryPacketType() throws {
        let bytes = RTCPPacket.serializedCompound(compound)
        #expect(bytes.count % 4 == 0)
        let parsed = try RTCPPacket.parseCompound(bytes)
        #expect(parsed == compound)
        guard case .extendedReport(let xr) = parsed[2] else {
            Issue.record("expected XR")
            return
        }
        #expect(xr.voipMetrics.first?.signalLevel == -20)
        guard case .bye(let bye) = parsed[5], case .app(let app) = parsed[3] else {
            Issue.record("expected BYE and APP")
            return
        }
        #expect(bye.reason == "call ended")
        #expect(app.nameString == "VOIC" && app.subtype == 3)
    }

    @Test func voipMetricsBlockHasTheRFC3611Layout() throws {
        let xr = RTCPPacket.extendedReport(
            RTCPExtendedReport(ssrc: 1, blocks: [.voipMetrics(RTCPVoIPMetrics(ssrc: 2, lossRate: 0x11, mosLQ: 42))]))
        let bytes = xr.serialized()
        #expect(bytes.count == 8 + 36)
        #expect(Array(bytes[0..<4]) == [0x80, 207, 0x00, 0x0A])
        #expect(Array(bytes[8..<12]) == [7, 0, 0x00, 0x08])  // BT=7, block length 8
        #expect(bytes[16] == 0x11)  // loss rate follows the source SSRC
        #expect(bytes[8 + 4 + 22] == 42)  // MOS-LQ at byte 22 of the block body
        let parsed = try RTCPPacket.parseCompound(bytes, validation: .reducedSize)
        #expect(parsed == [xr])
    }

    @Test func sdesSkipsOtherItemsAndHandlesEmptyChunks() throws {
        let sdes = RTCPPacket.sourceDescription(
            RTCPSourceDescription(chunks: [
                RTCPSDESChunk(
                    ssrc: 1,
                    items: [
                        RTCPSDESItem(type: RTCPSDESItemType.note, text: "on the phone"),
                        RTCPSDESItem(type: RTCPSDESItemType.cname, text: "x"),
                        RTCPSDESItem(type: RTCPSDESItemType.priv, value: [3, 0x61, 0x62, 0x63, 0x01])
                    ])
            ]))
        let packets: [RTCPPacket] = [.receiverReport(RTCPReceiverReport(ssrc: 1)), sdes]
        let parsed = try RTCPPacket.parseCompound(RTCPPacket.serializedCompound(packets))
        #expect(parsed == packets)
        guard case .sourceDescription(let d) = parsed[1] else { return }
        #expect(d.chunks[0].cname == "x")
    }

    @Test func byeWithoutReasonAndEmptyReceiverReport() throws {
        let packets: [RTCPPacket] = [.receiverReport(RTCPReceiverReport(ssrc: 9)), .bye(RTCPBye(ssrcs: [9]))]
        let bytes = RTCPPacket.serializedCompound(packets)
        #expect(bytes.count == 8 + 8)
        #expect(try RTCPPacket.parseCompound(bytes) == packets)
    }

    @Test func paddingOnTheLastPacketIsAccepted() throws {
        var bytes = RTCPPacket.serializedCompound([
            .receiverReport(RTCPReceiverReport(ssrc: 9)), .bye(RTCPBye(ssrcs: [9]))
        ])
        // Pad the BYE with 4 bytes: set P, extend length, append padding.
        bytes[8] |= 0x20
        bytes[11] += 1
        bytes += [0, 0, 0, 4]
        #expect(
            try RTCPPacket.parseCompound(bytes) == [
                .receiverReport(RTCPReceiverReport(ssrc: 9)), .bye(RTCPBye(ssrcs: [9]))
            ])
    }

    // MARK: rejection reasons

    var validRR: [UInt8] { RTCPPacket.serializedCompound([.receiverReport(RTCPReceiverReport(ssrc: 9))]) }

    @Test func rejectsTooShortAndBadVersion() {
        #expect(rtcpError([0x80, 0xC9]) == .tooShort(offset: 0, length: 2))
        var bytes = validRR
        bytes[0] = 0x40
        #expect(rtcpError(bytes) == .badVersion(1, offset: 0))
        #expect(rtcpError(validRR + [0x80, 0xCB]) == .tooShort(offset: 8, length: 2))
    }

    @Test func rejectsLyingLengthField() {
        var bytes = validRR
        bytes[3] = 9
        #expect(rtcpError(bytes) == .lengthOverrun(offset: 0, declaredBytes: 40, available: 8))
    }

    @Test func rejectsCompoundNotStartingWithReport() {
        let bye = RTCPPacket.bye(RTCPBye(ssrcs: [1])).serialized()
        #expect(rtcpError(bye) == .firstPacketNotReport(packetType: 203))
        #expect(rtcpError(bye, validation: .reducedSize) == nil)
    }

    @Test func rejectsPaddingExceptOnLastPacket() {
        var bytes = validRR + RTCPPacket.bye(RTCPBye(ssrcs: [1])).serialized()
        bytes[0] |= 0x20
        #expect(rtcpError(bytes) == .paddingNotLast(offset: 0))
    }

    @Test func rejectsBadAndEmptyPadding() {
        var bytes = validRR
        bytes[0] |= 0x20
        bytes[7] = 0
        #expect(rtcpError(bytes) == .emptyPaddingCount)
        bytes[7] = 9
        #expect(rtcpError(bytes) == .badPadding(count: 9, available: 4))
    }

    @Test func rejectsReportBlockOverrun() {
        var bytes = validRR
        bytes[0] = 0x82  // claims two report blocks in an 8-byte packet
        #expect(rtcpError(bytes) == .reportBlocksOverrun(count: 2, available: 0))
        var sr = RTCPPacket.serializedCompound([senderReport])
        sr[0] = 0x83
        #expect(rtcpError(sr) == .reportBlocksOverrun(count: 3, available: 24))
    }

    @Test func rejectsTruncatedSenderReport() {
        // SR header with length 1: only 4 bytes of body.
        let bytes: [UInt8] = [0x80, 0xC8, 0x00, 0x01, 0, 0, 0, 1]
        #expect(rtcpError(bytes) == .tooShort(offset: 0, length: 8))
    }

    @Test func rejectsSDESOverrun() {
        // SDES claims 2 chunks; one chunk with an item whose length runs past the packet.
        let bad: [UInt8] = validRR + [0x81, 0xCA, 0x00, 0x02, 0, 0, 0, 1, 0x01, 0x09, 0x61, 0x62]
        #expect(rtcpError(bad) == .sdesOverrun(chunk: 0))
        // Chunk without a terminating null.
        let unterminated: [UInt8] = validRR + [0x81, 0xCA, 0x00, 0x02, 0, 0, 0, 1, 0x01, 0x02, 0x61, 0x62]
        #expect(rtcpError(unterminated) == .sdesOverrun(chunk: 0))
        let missingChunk: [UInt8] = validRR + [0x82, 0xCA, 0x00, 0x02, 0, 0, 0, 1, 0x01, 0x01, 0x61, 0x00]
        #expect(rtcpError(missingChunk) == .sdesOverrun(chunk: 1))
    }

    @Test func rejectsByeOverruns() {
        let count: [UInt8] = validRR + [0x83, 0xCB, 0x00, 0x01, 0, 0, 0, 1]
        #expect(rtcpError(count) == .byeOverrun(count: 3, available: 4))
        let reason: [UInt8] = validRR + [0x81, 0xCB, 0x00, 0x02, 0, 0, 0, 1, 0x09, 0x61, 0x62, 0x63]
        #expect(rtcpError(reason) == .byeReasonOverrun(length: 9, available: 3))
    }

    @Test func rejectsShortApp() {
        let app: [UInt8] = validRR + [0x80, 0xCC, 0x00, 0x01, 0, 0, 0, 1]
        #expect(rtcpError(app) == .appTooShort(length: 4))
    }

    @Test func rejectsXROverrunsAndBadVoIPMetricsLength() {
        let overrun: [UInt8] = validRR + [0x80, 0xCF, 0x00, 0x02, 0, 0, 0, 1, 0x04, 0x00, 0x00, 0x03]
        #expect(rtcpError(overrun) == .xrBlockOverrun(blockType: 4, offset: 16))
        let badLength: [UInt8] = validRR + [0x80, 0xCF, 0x00, 0x03, 0, 0, 0, 1, 0x07, 0x00, 0x00, 0x01, 0, 0, 0, 0]
        #expect(rtcpError(badLength) == .voipMetricsBadLength(1))
        let noSSRC: [UInt8] = validRR + [0x80, 0xCF, 0x00, 0x00]
        #expect(rtcpError(noSSRC) == .tooShort(offset: 8, length: 4))
    }

    @Test func errorsDescribeThemselves() {
        let errors: [RTCPParseError] = [
            .tooShort(offset: 0, length: 2), .badVersion(1, offset: 0),
            .lengthOverrun(offset: 0, declaredBytes: 40, available: 8), .firstPacketNotReport(packetType: 203),
            .paddingNotLast(offset: 0), .badPadding(count: 9, available: 4), .emptyPaddingCount,
            .reportBlocksOverrun(count: 2, available: 0),
            .sdesOverrun(chunk: 1), .byeOverrun(count: 3, available: 4), .byeReasonOverrun(length: 9, available: 3),
            .appTooShort(length: 4), .xrBlockOverrun(blockType: 4, offset: 16), .voipMetricsBadLength(1)
        ]
        #expect(Set(errors.map(\.description)).count == errors.count)
    }

    @Test func compoundIteratesWithoutDecoding() throws {
        let bytes = RTCPPacket.serializedCompound(compound)
        try bytes.withUnsafeBytes { raw in
            let view = try RTCPCompoundView(raw)
            #expect(view.packetCount == 6)
            #expect(view.map(\.packetType) == [200, 202, 207, 204, 205, 203])
            #expect(view.reduce(0) { $0 + $1.bytes.count } == bytes.count)
        }
    }

    /// Mutated valid compounds (random bytes, lying lengths and counts, truncation) must only throw or parse.
    @Test func fuzzedCompoundPacketsNeverCrash() {
        var rng = SplitMix64(seed: 2024)
        let seed = RTCPPacket.serializedCompound(compound)
        var parsed = 0
        var rejected = 0
        for _ in 0..<5000 {
            var bytes = seed
            for _ in 0..<Int.random(in: 1...6, using: &rng) {
                let i = Int.random(in: 0..<bytes.count, using: &rng)
                // Bias toward header bytes (counts and lengths) where lies are most dangerous.
                let target = Bool.random(using: &rng) ? i : (i / 4) * 4 + Int.random(in: 0...3, using: &rng)
                bytes[min(target, bytes.count - 1)] = UInt8.random(in: 0...255, using: &rng)
            }
            if Int.random(in: 0..<4, using: &rng) == 0 {
                bytes.removeLast(Int.random(in: 0..<bytes.count, using: &rng))
            }
            do throws(RTCPParseError) {
                let packets = try RTCPPacket.parseCompound(bytes, validation: .reducedSize)
                #expect(!packets.isEmpty)
                parsed += 1
            } catch {
                #expect(!error.description.isEmpty)
                rejected += 1
            }
        }
        #expect(parsed > 0)
        #expect(rejected > 0)
    }
}
