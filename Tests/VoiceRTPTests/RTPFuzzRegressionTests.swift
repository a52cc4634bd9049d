import Testing
import VoiceRTP

/// Inputs libFuzzer found (Fuzz/run.sh rtp), kept as regression tests. Each must parse or fail with an error, and an
/// accepted packet's owned header must serialize and parse back unchanged.
@Suite struct RTPFuzzRegressionTests {
    /// fuzz-rtp crash 6b1650ff: a one-byte extension (0xBEDE) holding the byte 0x02, i.e. ID 0 with a length field of
    /// 2. ID 0 is reserved for padding (RFC 8285 4.2), yet the parser yielded it as an element; `RTPHeader(view)` kept
    /// it and serializing that header trapped on its "id in 1...14" precondition.
    static let reservedIDZeroWithLength: [UInt8] = [
        0x90, 0x6F, 0x00, 0x01, 0x00, 0x00, 0x03, 0xC0, 0x11, 0x22, 0x33, 0x44,
        0xBE, 0xDE, 0x00, 0x02, 0x10, 0x7F, 0x02, 0x01, 0x21, 0xF0, 0x00, 0x00,
        0xFC, 0xFF, 0xFE
    ]

    @Test func oneByteIDZeroWithLengthEndsExtensionProcessingLikeID15() throws {
        let p = try parseRTP(Self.reservedIDZeroWithLength)
        // The element before the reserved byte counts; nothing after it is read as an element.
        #expect(p.elements == [RTPHeaderExtensionElement(id: 1, data: [0x7F])])
        #expect(p.header.headerExtension == .oneByte([RTPHeaderExtensionElement(id: 1, data: [0x7F])]))
        #expect(p.payload == [0xFC, 0xFF, 0xFE])
    }

    @Test func oneByteIDZeroWithLengthIsRejectedWhenStrict() {
        let strict = RTPParseOptions(rejectReservedExtensionID: true)
        #expect(rtpError(Self.reservedIDZeroWithLength, options: strict) == .reservedExtensionID(0))
    }

    @Test func headerWithReservedIDZeroRoundTripsThroughSerialization() throws {
        let p = try parseRTP(Self.reservedIDZeroWithLength)
        let again = try parseRTP(p.header.serializedPacket(payload: p.payload))
        #expect(again.header == p.header)
        #expect(again.payload == p.payload)
    }

    @Test func zeroBytesAreStillPaddingBetweenOneByteElements() throws {
        var bytes: [UInt8] = [0x90, 0x60, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3]
        bytes += [0xBE, 0xDE, 0x00, 0x02, 0x10, 0xAA, 0x00, 0x00, 0x21, 0xBB, 0xCC, 0x00]
        let p = try parseRTP(bytes, options: RTPParseOptions(rejectReservedExtensionID: true))
        #expect(
            p.elements == [
                RTPHeaderExtensionElement(id: 1, data: [0xAA]), RTPHeaderExtensionElement(id: 2, data: [0xBB, 0xCC])
            ])
    }
}
