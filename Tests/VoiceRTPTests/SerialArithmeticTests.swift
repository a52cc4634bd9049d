import Testing
import VoiceRTP
import VoiceTestSupport

@Suite struct SerialArithmeticTests {
    @Test func sequenceNumbersCompareAcrossTheWrap() {
        #expect(isNewer(UInt16(0), than: 65535))
        #expect(!isNewer(UInt16(65535), than: 0))
        #expect(isNewer(UInt16(100), than: 65000))
        #expect(isNewer(UInt16(2), than: 1))
        #expect(!isNewer(UInt16(1), than: 2))
        #expect(!isNewer(UInt16(5), than: 5))
        // 32767 ahead is newer, 32769 ahead is older.
        #expect(isNewer(UInt16(32767), than: 0))
        #expect(!isNewer(UInt16(32769), than: 0))
    }

    @Test func exactHalfDistanceIsAntisymmetric() {
        #expect(isNewer(UInt16(0x8000), than: 0) != isNewer(UInt16(0), than: 0x8000))
        #expect(isNewer(UInt32(0x8000_0000), than: 0) != isNewer(UInt32(0), than: 0x8000_0000))
    }

    @Test func timestampsCompareAcrossTheWrap() {
        #expect(isNewer(UInt32(10), than: 0xFFFF_FF00))
        #expect(!isNewer(UInt32(0xFFFF_FF00), than: 10))
        #expect(serialDistance(from: UInt32(0xFFFF_FF00), to: UInt32(10)) == 266)
        #expect(serialDistance(from: UInt16(3), to: UInt16(65534)) == -5)
    }

    @Test func isNewerMatchesSignedDistanceForAllSixteenBitPairsFromSamples() {
        var rng = SplitMix64(seed: 1)
        for _ in 0..<2000 {
            let a = UInt16.random(in: 0...65535, using: &rng)
            let b = UInt16.random(in: 0...65535, using: &rng)
            #expect(isNewer(a, than: b) == (serialDistance(from: b, to: a) > 0))
            #expect((Int64(b) + serialDistance(from: b, to: a)) & 0xFFFF == Int64(a))
        }
    }

    @Test func unwrapsSequenceNumbersAcrossTheWrap() {
        var unwrapper = SequenceUnwrapper()
        let input: [UInt16] = [65533, 65534, 65535, 0, 1, 2]
        #expect(input.map { unwrapper.unwrap($0) } == [65533, 65534, 65535, 65536, 65537, 65538])
    }

    @Test func unwrapsReorderedPacketsAroundTheWrap() {
        var unwrapper = SequenceUnwrapper()
        let input: [UInt16] = [65534, 0, 65535, 2, 1, 65533, 3]
        #expect(input.map { unwrapper.unwrap($0) } == [65534, 65536, 65535, 65538, 65537, 65533, 65539])
    }

    @Test func unwrapsManyCycles() {
        var unwrapper = SequenceUnwrapper()
        var last: Int64 = 0
        for i in 0..<(3 * 65536 + 17) {
            last = unwrapper.unwrap(UInt16(truncatingIfNeeded: 1000 + i * 1))
        }
        #expect(last == 1000 + Int64(3 * 65536 + 16))
        #expect(unwrapper.peek(UInt16(truncatingIfNeeded: 1000 + 3 * 65536 + 10)) == last - 6)
    }

    @Test func unwrapsTimestampsAcrossTheWrapWithReordering() {
        var unwrapper = TimestampUnwrapper()
        let base: UInt32 = 0xFFFF_F000
        let input = [base, base &+ 960 * 3, base &+ 960, base &+ 960 * 5, base &+ 960 * 4]
        let out = input.map { unwrapper.unwrap($0) }
        let b = Int64(base)
        #expect(out == [b, b + 2880, b + 960, b + 4800, b + 3840])
        unwrapper.reset()
        #expect(unwrapper.unwrap(5) == 5)
    }
}

@Suite struct OpusPacketizationTests {
    @Test func rtpClockIs48kHzWhateverTheCodingRate() {
        #expect(OpusRTP.ticks(samples: 320, codingRate: 16_000) == 960)  // 20 ms at 16 kHz
        #expect(OpusRTP.ticks(samples: 160, codingRate: 8_000) == 960)
        #expect(OpusRTP.ticks(samples: 960, codingRate: 48_000) == 960)
        #expect(OpusRTP.ticks(samples: 120, codingRate: 12_000) == 480)  // 10 ms
        #expect(OpusRTP.samples(ticks: 960, codingRate: 16_000) == 320)
        #expect(OpusRTP.samples(ticks: 2880, codingRate: 24_000) == 1440)
        #expect(OpusRTP.ticks(microseconds: 2500) == 120)
        #expect(OpusRTP.ticks(microseconds: 60_000) == 2880)
    }

    @Test func seededPacketizersAreReproducibleAndRandomized() {
        var a = SplitMix64(seed: 42)
        var b = SplitMix64(seed: 42)
        var c = SplitMix64(seed: 43)
        let p1 = RTPPacketizer(payloadType: 111, using: &a)
        let p2 = RTPPacketizer(payloadType: 111, using: &b)
        let p3 = RTPPacketizer(payloadType: 111, using: &c)
        #expect(p1.ssrc == p2.ssrc && p1.nextSequenceNumber == p2.nextSequenceNumber)
        #expect(p1.nextTimestamp == p2.nextTimestamp)
        #expect(p1.ssrc != p3.ssrc || p1.nextSequenceNumber != p3.nextSequenceNumber)
    }

    @Test func stampsSequenceTimestampAndMarkerAcrossDTX() throws {
        var packetizer = RTPPacketizer(
            payloadType: 111, ssrc: 0x1234_5678, initialSequenceNumber: 65534, initialTimestamp: 0xFFFF_FC40)
        let ticks = OpusRTP.ticks(samples: 320, codingRate: 16_000)
        var buffer = [UInt8](repeating: 0, count: 1500)
        let payload: [UInt8] = [0x78, 1, 2, 3]
        var headers: [RTPHeader] = []
        func send() throws {
            let n = buffer.withUnsafeMutableBytes { out in
                payload.withUnsafeBytes { packetizer.packetize(payload: $0, ticks: ticks, into: out) }
            }
            let p = try parseRTP(Array(buffer[0..<n]))
            #expect(p.payload == payload)
            headers.append(p.header)
        }
        try send()
        try send()
        try send()
        packetizer.skip(ticks: ticks)  // DTX: one frame not sent
        packetizer.skip(ticks: ticks)
        try send()
        try send()
        #expect(headers.map(\.sequenceNumber) == [65534, 65535, 0, 1, 2])
        #expect(headers.map(\.timestamp) == [0xFFFF_FC40, 0, 960, 3840, 4800])  // frames 0, 1, 2, 5, 6
        #expect(headers.map(\.marker) == [true, false, false, true, false])
        #expect(headers.allSatisfy { $0.ssrc == 0x1234_5678 && $0.payloadType == 111 })
        #expect(packetizer.packetCount == 5)
        #expect(packetizer.octetCount == 20)
        packetizer.changeSSRC(99)
        #expect(packetizer.ssrc == 99 && packetizer.packetCount == 0)
    }
}
