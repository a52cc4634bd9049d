import Testing
import VoiceRTP

/// Inputs libFuzzer found (Fuzz/run.sh rtcp), kept as regression tests. A compound the parser accepts must decode to
/// packets that serialize (no precondition trips) and decode again to the same packets.
@Suite struct RTCPFuzzRegressionTests {
    /// fuzz-rtcp crash 8c8b9bcf: one 8-byte packet (type 0, reduced-size validation) with the P bit and a padding
    /// count of 1. The body left after the padding was 3 bytes, so `.other` held a body that is not whole 32-bit
    /// words and serializing it trapped ("RTCP packet length 7 is not a multiple of 4").
    static let paddingCountOne: [UInt8] = [0xA1, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01]

    @Test func paddingCountThatIsNotAMultipleOfFourIsRejected() {
        #expect(rtcpError(Self.paddingCountOne, validation: .reducedSize) == .badPadding(count: 1, available: 4))
        #expect(RTCPParseError.badPadding(count: 1, available: 4).description.contains("multiple of 4"))
    }

    @Test(arguments: [1, 2, 3, 5, 6, 7])
    func receiverReportWithUnalignedPaddingIsRejected(padding: Int) {
        // RR with 8 bytes of room after the SSRC; the last byte claims `padding` bytes.
        var bytes: [UInt8] = [0xA0, 201, 0x00, 0x03, 0x11, 0x22, 0x33, 0x44, 0, 0, 0, 0, 0, 0, 0, 0]
        bytes[bytes.count - 1] = UInt8(padding)
        #expect(rtcpError(bytes) == .badPadding(count: padding, available: 12))
    }

    @Test(arguments: [4, 8])
    func alignedPaddingStillDecodesAndRoundTrips(padding: Int) throws {
        var bytes: [UInt8] = [0xA0, 201, 0x00, 0x03, 0x11, 0x22, 0x33, 0x44, 0, 0, 0, 0, 0, 0, 0, 0]
        bytes[bytes.count - 1] = UInt8(padding)
        let packets = try RTCPPacket.parseCompound(bytes)
        guard case .receiverReport(let rr) = packets.first else {
            Issue.record("expected a receiver report, got \(packets)")
            return
        }
        #expect(rr.ssrc == 0x1122_3344)
        #expect(rr.profileExtension.count == 8 - padding)
        #expect(try RTCPPacket.parseCompound(RTCPPacket.serializedCompound(packets)) == packets)
    }

    /// fuzz-rtcp crash 7e92096e: a BYE whose 128-byte reason was not UTF-8. Decoding replaced each bad byte with
    /// U+FFFD (3 bytes), the reason grew past 255 bytes and serializing the packet trapped ("BYE reason longer than
    /// 255 bytes").
    @Test func byeReasonThatIsNotUTF8StaysWithin255BytesAndRoundTrips() throws {
        let reason = [UInt8](repeating: 0xFF, count: 200) + Array("end".utf8)
        var bye: [UInt8] = [0x81, 203, 0, 0, 0x11, 0x22, 0x33, 0x44, UInt8(reason.count)] + reason
        while bye.count % 4 != 0 { bye.append(0) }
        bye[3] = UInt8(bye.count / 4 - 1)
        let rr: [UInt8] = [0x80, 201, 0x00, 0x01, 0x11, 0x22, 0x33, 0x44]
        let packets = try RTCPPacket.parseCompound(rr + bye)
        #expect(packets.last == .bye(RTCPBye(ssrcs: [0x1122_3344], reason: String(repeating: "?", count: 200) + "end")))
        #expect(try RTCPPacket.parseCompound(RTCPPacket.serializedCompound(packets)) == packets)
    }

    @Test func byeReasonInValidUTF8IsKeptExactly() throws {
        let packets = [
            RTCPPacket.receiverReport(RTCPReceiverReport(ssrc: 1)),
            .bye(RTCPBye(ssrcs: [1], reason: "appel terminé — 通話終了"))
        ]
        #expect(try RTCPPacket.parseCompound(RTCPPacket.serializedCompound(packets)) == packets)
    }
}
