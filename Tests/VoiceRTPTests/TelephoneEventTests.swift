import Testing
import VoiceRTP
import VoiceTestSupport

@Suite struct TelephoneEventTests {
    // MARK: Digits

    @Test func digitsMapToRFC4733EventCodes() throws {
        let digits = try DTMFDigit.parse("0123456789*#ABCD")
        #expect(digits.map(\.event) == Array(0...15))
        #expect(digits.map(\.description).joined() == "0123456789*#ABCD")
        #expect(DTMFDigit("d")?.event == 15)
        #expect(DTMFDigit(event: 16) == nil)
    }

    @Test func invalidKeysAreATypedErrorNamingThePosition() {
        #expect(throws: DTMFDigitError.invalidKey("x", offset: 2)) { try DTMFDigit.parse("12x#") }
        #expect(throws: DTMFDigitError.empty) { try DTMFDigit.parse("") }
        #expect(DTMFDigitError.invalidKey("E", offset: 0).description.contains("not a DTMF key"))
    }

    // MARK: Payload

    @Test func payloadRoundTripsTheRFC4733Layout() throws {
        let payload = TelephoneEventPayload(event: 11, isEnd: true, volume: 10, duration: 0x0320)
        #expect(payload.bytes == [11, 0x8A, 0x03, 0x20])
        #expect(try TelephoneEventPayload(parsing: payload.bytes) == payload)
        // The reserved bit is ignored, volume keeps 6 bits.
        let withReserved = try TelephoneEventPayload(parsing: [5, 0x40 | 0x3F, 0, 160])
        #expect(withReserved == TelephoneEventPayload(event: 5, isEnd: false, volume: 63, duration: 160))
    }

    @Test func shortPayloadIsRefused() {
        #expect(throws: TelephoneEventParseError.tooShort(length: 3)) {
            try TelephoneEventPayload(parsing: [1, 2, 3])
        }
    }

    /// Random and mutated payloads never trap; whatever parses writes back to its first 4 bytes (reserved bit off).
    @Test func fuzzedPayloadsNeverCrash() {
        var random = SplitMix64(seed: 4733)
        var receiver = TelephoneEventReceiver()
        for _ in 0..<20_000 {
            let count = Int.random(in: 0...12, using: &random)
            let bytes = (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &random) }
            guard let payload = try? TelephoneEventPayload(parsing: bytes) else {
                #expect(count < 4)
                continue
            }
            var expected = Array(bytes[0..<4])
            expected[1] &= 0xBF
            #expect(payload.bytes == expected)
            _ = receiver.receive(
                payload, timestamp: UInt32.random(in: .min ... .max, using: &random),
                marker: Bool.random(using: &random))
        }
    }

    // MARK: Sender

    /// 20 ms at 8 kHz, 100 ms tones: durations grow 160 per packet, one timestamp for the event, the marker on its
    /// first packet, the end packet three times, then audio for the gap before the next digit.
    @Test func senderFollowsRFC4733Timing() throws {
        var sender = TelephoneEventSender(
            clockRate: 8000, packetMilliseconds: 20, toneMilliseconds: 100, gapMilliseconds: 60)
        #expect(sender.nextPacket(audioTimestamp: 0) == nil)
        for digit in try DTMFDigit.parse("1#") {
            let queued = sender.enqueue(digit)
            #expect(queued)
        }
        var timestamp: UInt32 = 1000
        var slots: [TelephoneEventPacket?] = []
        for _ in 0..<20 {
            slots.append(sender.nextPacket(audioTimestamp: timestamp))
            timestamp &+= 160
        }
        let first = slots[0..<7].compactMap { $0 }
        #expect(first.count == 7)
        #expect(first.map(\.payload.duration) == [160, 320, 480, 640, 800, 800, 800])
        #expect(first.map(\.payload.isEnd) == [false, false, false, false, true, true, true])
        #expect(first.map(\.marker) == [true, false, false, false, false, false, false])
        #expect(Set(first.map(\.timestamp)) == [1000])
        #expect(first.allSatisfy { $0.payload.event == 1 && $0.payload.volume == 10 })
        #expect(slots[7..<10].allSatisfy { $0 == nil })  // 60 ms gap: audio
        let second = slots[10..<17].compactMap { $0 }
        #expect(second.count == 7)
        let secondStart = try #require(second.first).timestamp
        #expect(secondStart == UInt32(1000 + 10 * 160))
        #expect(second.first?.marker == true)
        #expect(second.allSatisfy { $0.payload.event == 11 })
        #expect(slots[17...].allSatisfy { $0 == nil })
        #expect(!sender.isActive)
    }

    @Test func senderKeepsATonesDurationInOneSegmentAt48kHz() {
        let sender = TelephoneEventSender(clockRate: 48_000, packetMilliseconds: 20, toneMilliseconds: 5000)
        #expect(sender.toneTicks <= UInt32(UInt16.max))
        #expect(sender.toneTicks % 960 == 0)
    }

    @Test func senderQueueIsBounded() throws {
        var sender = TelephoneEventSender(clockRate: 8000, packetMilliseconds: 20)
        let digit = try #require(DTMFDigit("5"))
        for _ in 0..<TelephoneEventSender.capacity {
            let queued = sender.enqueue(digit)
            #expect(queued)
        }
        let overflow = sender.enqueue(digit)
        #expect(!overflow)
        sender.cancel()
        #expect(sender.pendingCount == 0)
        #expect(sender.nextPacket(audioTimestamp: 0) == nil)
    }

    // MARK: Receiver

    /// Everything a sender emits for "159#" decodes to those digits once each.
    @Test func receiverReportsEachDigitOnceDespiteEndRetransmissions() throws {
        var sender = TelephoneEventSender(clockRate: 48_000, packetMilliseconds: 20)
        for digit in try DTMFDigit.parse("1559#") { sender.enqueue(digit) }
        var receiver = TelephoneEventReceiver()
        var heard = ""
        var timestamp: UInt32 = 0xFFFF_F000  // wraps during the sequence
        for _ in 0..<100 {
            if let packet = sender.nextPacket(audioTimestamp: timestamp),
                let digit = receiver.receive(packet.payload, timestamp: packet.timestamp, marker: packet.marker)
            {
                heard.append(digit.character)
            }
            timestamp &+= 960
        }
        #expect(heard == "1559#")
        #expect(receiver.eventsStarted == 5)
        #expect(receiver.packetsOfKnownEvents == 5 * 6)
    }

    @Test func lostStartAndLostEndPacketsStillGiveEachDigitOnce() {
        var receiver = TelephoneEventReceiver()
        func packet(_ event: UInt8, _ duration: UInt16, end: Bool = false) -> TelephoneEventPayload {
            TelephoneEventPayload(event: event, isEnd: end, volume: 10, duration: duration)
        }
        func feed(_ payload: TelephoneEventPayload, _ timestamp: UInt32, marker: Bool) -> String? {
            receiver.receive(payload, timestamp: timestamp, marker: marker)?.description
        }
        // "7": the marker packet lost; no end packet arrives at all.
        let first = feed(packet(7, 320), 1000, marker: false)
        let growing = feed(packet(7, 480), 1000, marker: false)
        // "7" again, pressed twice: a new timestamp with the marker.
        let second = feed(packet(7, 160), 3000, marker: true)
        // A late end retransmission of the first "7" is stale.
        let late = feed(packet(7, 800, end: true), 1000, marker: false)
        // "8" whose marker packet was lost: a new event code at a new timestamp.
        let third = feed(packet(8, 320), 5000, marker: false)
        #expect([first, growing, second, late, third] == ["7", nil, "7", nil, "8"])
        #expect(receiver.stalePackets == 1)
    }

    /// A 3 s "5" at 48 kHz spans three 16-bit segments (§2.5.1.3): one digit.
    @Test func longEventSegmentsAreOneDigit() {
        var receiver = TelephoneEventReceiver()
        var heard: [DTMFDigit] = []
        var segmentStart: UInt32 = 500
        var remaining = 3 * 48_000
        var first = true
        while remaining > 0 {
            let segment = min(remaining, Int(UInt16.max))
            var duration = 960
            while duration <= segment {
                let payload = TelephoneEventPayload(
                    event: 5, isEnd: remaining == segment && duration == segment, volume: 10,
                    duration: UInt16(duration))
                if let d = receiver.receive(payload, timestamp: segmentStart, marker: first) { heard.append(d) }
                first = false
                duration = duration + 960 > segment && duration < segment ? segment : duration + 960
            }
            segmentStart &+= UInt32(segment)
            remaining -= segment
        }
        #expect(heard == [DTMFDigit("5")])
        #expect(receiver.eventsStarted == 1)
    }
}
