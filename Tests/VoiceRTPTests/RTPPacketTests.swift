import Testing
import VoiceRTP
import VoiceTestSupport

@Suite struct RTPPacketTests {
    /// V=2, PT=111, seq 0x1234, ts 960, SSRC 0xDEADBEEF, 3-byte payload.
    let simple: [UInt8] = [0x80, 0x6F, 0x12, 0x34, 0x00, 0x00, 0x03, 0xC0, 0xDE, 0xAD, 0xBE, 0xEF, 0xFC, 0xFF, 0xFE]

    @Test func parsesHandCraftedFixedHeader() throws {
        let p = try parseRTP(simple)
        #expect(p.header.payloadType == 111)
        #expect(p.header.sequenceNumber == 0x1234)
        #expect(p.header.timestamp == 960)
        #expect(p.header.ssrc == 0xDEAD_BEEF)
        #expect(p.header.marker == false)
        #expect(p.header.csrcs.isEmpty)
        #expect(p.header.headerExtension == nil)
        #expect(p.payload == [0xFC, 0xFF, 0xFE])
        #expect(p.paddingLength == 0)
        simple.withUnsafeBytes { raw in
            let view = try! RTPPacketView(raw)
            #expect(view.version == 2)
            #expect(!view.hasPadding && !view.hasExtension)
            #expect(view.headerLength == 12)
            #expect(view.payloadRange == 12..<15)
        }
    }

    @Test func serializesToTheSameBytes() {
        let header = RTPHeader(payloadType: 111, sequenceNumber: 0x1234, timestamp: 960, ssrc: 0xDEAD_BEEF)
        #expect(header.serializedPacket(payload: [0xFC, 0xFF, 0xFE]) == simple)
    }

    @Test func markerBitSurvivesRoundTrip() throws {
        var bytes = simple
        bytes[1] |= 0x80
        let p = try parseRTP(bytes)
        #expect(p.header.marker)
        #expect(p.header.payloadType == 111)
        #expect(p.header.serializedPacket(payload: p.payload) == bytes)
    }

    @Test func parsesCSRCList() throws {
        let header = RTPHeader(
            payloadType: 0, sequenceNumber: 1, timestamp: 2, ssrc: 3, csrcs: [0x1111_1111, 0x2222_2222, 0xABCD_EF01])
        let bytes = header.serializedPacket(payload: [1, 2, 3, 4])
        #expect(bytes[0] == 0x83)
        #expect(bytes.count == 12 + 12 + 4)
        let p = try parseRTP(bytes)
        #expect(p.header.csrcs == [0x1111_1111, 0x2222_2222, 0xABCD_EF01])
        #expect(p.payload == [1, 2, 3, 4])
        bytes.withUnsafeBytes { raw in
            let view = try! RTPPacketView(raw)
            #expect(view.csrcCount == 3)
            #expect(view.csrc(at: 2) == 0xABCD_EF01)
        }
    }

    @Test func paddingIsExcludedFromPayload() throws {
        let header = RTPHeader(payloadType: 96, sequenceNumber: 7, timestamp: 8, ssrc: 9)
        let bytes = header.serializedPacket(payload: [0xAA, 0xBB, 0xCC], paddingLength: 5)
        #expect(bytes[0] & 0x20 != 0)
        #expect(bytes.last == 5)
        #expect(Array(bytes.suffix(5)) == [0, 0, 0, 0, 5])
        let p = try parseRTP(bytes)
        #expect(p.payload == [0xAA, 0xBB, 0xCC])
        #expect(p.paddingLength == 5)
    }

    @Test func paddingMayCoverTheWholePayload() throws {
        let bytes = RTPHeader(payloadType: 96, sequenceNumber: 7, timestamp: 8, ssrc: 9)
            .serializedPacket(payload: [], paddingLength: 4)
        let p = try parseRTP(bytes)
        #expect(p.payload.isEmpty)
        #expect(p.paddingLength == 4)
    }

    /// RFC 8285 4.2 figure: elements ID 1 (1 byte), ID 2 (2 bytes), two padding bytes, ID 3 (4 bytes).
    @Test func parsesRFC8285OneByteExample() throws {
        var bytes: [UInt8] = [0x90, 0x60, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3]
        bytes += [0xBE, 0xDE, 0x00, 0x03, 0x10, 0xAA, 0x21, 0xBB, 0xBB, 0x00, 0x00, 0x33, 0xCC, 0xCC, 0xCC, 0xCC]
        bytes += [0x42]
        let p = try parseRTP(bytes)
        #expect(p.extensionProfile == 0xBEDE)
        #expect(
            p.elements == [
                RTPHeaderExtensionElement(id: 1, data: [0xAA]),
                RTPHeaderExtensionElement(id: 2, data: [0xBB, 0xBB]),
                RTPHeaderExtensionElement(id: 3, data: [0xCC, 0xCC, 0xCC, 0xCC])
            ])
        #expect(p.payload == [0x42])
        bytes.withUnsafeBytes { raw in
            let ext = try! RTPPacketView(raw).headerExtension!
            #expect(ext.form == .oneByte)
            #expect(ext.element(id: 2).map(Array.init) == [0xBB, 0xBB])
            #expect(ext.element(id: 9) == nil)
        }
    }

    /// RFC 8285 4.3 figure: ID 1 empty, ID 2 (1 byte), padding, ID 3 (4 bytes).
    @Test func parsesRFC8285TwoByteExample() throws {
        var bytes: [UInt8] = [0x90, 0x60, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3]
        bytes += [0x10, 0x00, 0x00, 0x03, 0x01, 0x00, 0x02, 0x01, 0xBB, 0x00, 0x03, 0x04, 0xCC, 0xCC, 0xCC, 0xCC]
        let p = try parseRTP(bytes)
        #expect(p.extensionProfile == 0x1000)
        #expect(
            p.elements == [
                RTPHeaderExtensionElement(id: 1, data: []),
                RTPHeaderExtensionElement(id: 2, data: [0xBB]),
                RTPHeaderExtensionElement(id: 3, data: [0xCC, 0xCC, 0xCC, 0xCC])
            ])
        #expect(p.payload.isEmpty)
    }

    @Test func oneByteExtensionRoundTrips() throws {
        let elements = [
            RTPHeaderExtensionElement(id: 1, data: [0x80]),  // e.g. audio level
            RTPHeaderExtensionElement(id: 14, data: Array(0..<16))
        ]
        let header = RTPHeader(
            marker: true, payloadType: 111, sequenceNumber: 65535, timestamp: .max, ssrc: 42,
            headerExtension: .oneByte(elements))
        let bytes = header.serializedPacket(payload: [9, 9])
        #expect((bytes.count - 12 - 2) % 4 == 0)
        let p = try parseRTP(bytes)
        #expect(p.header == header)
        #expect(p.payload == [9, 9])
    }

    @Test func twoByteExtensionRoundTripsWithAppBitsAndLongElements() throws {
        let elements = [
            RTPHeaderExtensionElement(id: 200, data: Array(repeating: 7, count: 255)),
            RTPHeaderExtensionElement(id: 3, data: [])
        ]
        let header = RTPHeader(
            payloadType: 96, sequenceNumber: 1, timestamp: 2, ssrc: 3, csrcs: [5],
            headerExtension: .twoByte(appBits: 0x5, elements))
        let p = try parseRTP(header.serializedPacket(payload: [1]))
        #expect(p.extensionProfile == 0x1005)
        #expect(p.header == header)
    }

    @Test func rawExtensionIsPaddedToWords() throws {
        let header = RTPHeader(
            payloadType: 96, sequenceNumber: 1, timestamp: 2, ssrc: 3,
            headerExtension: .raw(profile: 0xABAC, data: [1, 2, 3, 4, 5]))
        let bytes = header.serializedPacket(payload: [])
        #expect(bytes.count == 12 + 4 + 8)
        let p = try parseRTP(bytes)
        #expect(p.header.headerExtension == .raw(profile: 0xABAC, data: [1, 2, 3, 4, 5, 0, 0, 0]))
    }

    @Test func reservedOneByteIDStopsProcessingOrIsRejectedWhenStrict() throws {
        var bytes: [UInt8] = [0x90, 0x60, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3]
        bytes += [0xBE, 0xDE, 0x00, 0x01, 0x10, 0xAA, 0xF0, 0x55]
        let p = try parseRTP(bytes)
        #expect(p.elements == [RTPHeaderExtensionElement(id: 1, data: [0xAA])])
        #expect(rtpError(bytes, options: RTPParseOptions(rejectReservedExtensionID: true)) == .reservedExtensionID(15))
    }

    @Test func serializeIntoCallerBufferWritesOnlyTheHeader() {
        let header = RTPHeader(payloadType: 8, sequenceNumber: 100, timestamp: 200, ssrc: 300, csrcs: [1])
        var buffer = [UInt8](repeating: 0xEE, count: 64)
        let n = buffer.withUnsafeMutableBytes { header.serialize(into: $0) }
        #expect(n == 16)
        #expect(n == header.serializedLength)
        #expect(buffer[16] == 0xEE)
        #expect(Array(buffer[0..<n]) == header.serialized())
    }

    // MARK: every rejection reason

    @Test func rejectsTooShort() {
        #expect(rtpError(Array(simple.prefix(11))) == .tooShort(length: 11))
        #expect(rtpError([]) == .tooShort(length: 0))
    }

    @Test func rejectsBadVersion() {
        var bytes = simple
        bytes[0] = 0x40
        #expect(rtpError(bytes) == .badVersion(1))
        bytes[0] = 0x00
        #expect(rtpError(bytes) == .badVersion(0))
    }

    @Test func rejectsCSRCOverrun() {
        var bytes = simple
        bytes[0] = 0x82  // two CSRCs need 20 bytes, packet has 15
        #expect(rtpError(bytes) == .csrcOverrun(count: 2, length: 15))
    }

    @Test func rejectsExtensionOverrun() {
        var bytes = simple
        bytes[0] |= 0x10  // X set but only 3 bytes follow the header
        #expect(rtpError(bytes) == .extensionOverrun(declaredBytes: 4, available: 3))
        var longer: [UInt8] = Array(simple.prefix(12)) + [0xBE, 0xDE, 0x00, 0x05, 0x10, 0xAA, 0, 0]
        longer[0] |= 0x10
        #expect(rtpError(longer) == .extensionOverrun(declaredBytes: 24, available: 8))
    }

    @Test func rejectsExtensionElementOverrun() {
        var bytes: [UInt8] = [0x90, 0x60, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3]
        bytes += [0xBE, 0xDE, 0x00, 0x01, 0x10, 0xAA, 0x23, 0xBB]  // ID 2 claims 4 bytes, 1 left
        #expect(rtpError(bytes) == .extensionElementOverrun(id: 2, offset: 2))
        var two: [UInt8] = [0x90, 0x60, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3]
        two += [0x10, 0x00, 0x00, 0x01, 0x01, 0x00, 0x00, 0x07]  // ID 7 at the last byte has no length byte
        #expect(rtpError(two) == .extensionElementOverrun(id: 7, offset: 3))
    }

    @Test func rejectsBadPadding() {
        var bytes = simple
        bytes[0] |= 0x20
        bytes[14] = 4  // 4 bytes of padding but only 3 after the header
        #expect(rtpError(bytes) == .badPadding(count: 4, available: 3))
        var headerOnly = Array(simple.prefix(12))
        headerOnly[0] |= 0x20
        #expect(rtpError(headerOnly) == .badPadding(count: 0, available: 0))
    }

    @Test func rejectsEmptyPaddingCount() {
        var bytes = simple
        bytes[0] |= 0x20
        bytes[14] = 0
        #expect(rtpError(bytes) == .emptyPaddingCount)
    }

    @Test func errorsDescribeThemselves() {
        let errors: [RTPParseError] = [
            .tooShort(length: 3), .badVersion(1), .csrcOverrun(count: 2, length: 15),
            .extensionOverrun(declaredBytes: 8, available: 2), .badPadding(count: 9, available: 3),
            .emptyPaddingCount, .extensionElementOverrun(id: 2, offset: 4), .reservedExtensionID(15)
        ]
        let descriptions = Set(errors.map(\.description))
        #expect(descriptions.count == errors.count)
        #expect(RTPParseError.badVersion(1).description.contains("version 1"))
    }

    @Test func randomMutationsOnlyThrowOrParse() {
        var rng = SplitMix64(seed: 7)
        let seeds: [[UInt8]] = [
            simple,
            RTPHeader(
                payloadType: 96, sequenceNumber: 1, timestamp: 2, ssrc: 3, csrcs: [1, 2],
                headerExtension: .oneByte([RTPHeaderExtensionElement(id: 3, data: [1, 2, 3])])
            ).serializedPacket(payload: [1, 2, 3, 4, 5], paddingLength: 3),
            RTPHeader(
                payloadType: 96, sequenceNumber: 1, timestamp: 2, ssrc: 3,
                headerExtension: .twoByte(appBits: 0, [RTPHeaderExtensionElement(id: 30, data: [1, 2, 3])])
            ).serializedPacket(payload: [1])
        ]
        var parsed = 0
        var rejected = 0
        for i in 0..<5000 {
            var bytes = seeds[i % seeds.count]
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                bytes[Int.random(in: 0..<bytes.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
            }
            if Bool.random(using: &rng) { bytes.removeLast(Int.random(in: 0..<bytes.count, using: &rng)) }
            do {
                let p = try parseRTP(bytes)
                #expect(p.payload.count + p.paddingLength <= bytes.count)
                parsed += 1
            } catch {
                #expect(error is RTPParseError)
                rejected += 1
            }
        }
        #expect(parsed > 0 && rejected > 0)
    }
}
