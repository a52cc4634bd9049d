import Testing
import VoiceEngine
import VoiceRTP

/// RFC 4733 telephone-events between two streams driven in fast time: what goes on the wire, what the peer
/// reports, and that the audio keeps flowing around the events.
@Suite struct DTMFStreamTests {
    static let eventType: UInt8 = 101

    /// Two streams over SRTP that negotiated telephone-events; `link` carries A's datagrams to B (return false
    /// to lose one). Runs `milliseconds` of 10 ms ticks with speech-like audio into A.
    struct Pair {
        let a: MediaStream
        let b: MediaStream
        let sinkA = CollectingSink()
        let sinkB = CollectingSink()
        var now = MediaTime.zero
        var heardAtB = ""

        /// `srtp`: protected (the crossing tests) or plain (the tests that read the events on the wire).
        init(telephoneEventsAtB: Bool = true, srtp: Bool = true) throws {
            let (srtpA, srtpB) = StreamTestSupport.srtpPair()
            var configA = StreamTestSupport.configuration(seed: 70, srtp: srtp ? srtpA : nil)
            configA.telephoneEventPayloadType = DTMFStreamTests.eventType
            var configB = StreamTestSupport.configuration(seed: 71, srtp: srtp ? srtpB : nil)
            if telephoneEventsAtB { configB.telephoneEventPayloadType = DTMFStreamTests.eventType }
            a = try MediaStream(configuration: configA, sink: sinkA)
            b = try MediaStream(configuration: configB, sink: sinkB)
        }

        mutating func run(milliseconds: Int, link: (RTPPacketView) -> Bool = { _ in true }) {
            let speech = StreamTestSupport.speech(seconds: Double(milliseconds) / 1000 + 0.02, seed: 7)
            var out = AudioFrame(format: .mono16k)
            for tick in 0..<(milliseconds / 10) {
                a.processCapture(
                    AudioFrame(format: .mono16k, samples: Array(speech[(tick * 160)..<(tick * 160 + 160)])), now: now)
                for packet in sinkA.packets where packet.kind == .rtp {
                    let deliver = packet.bytes.withUnsafeBytes { raw in
                        // SRTP leaves the header in the clear: the test reads it to choose what to lose.
                        (try? RTPPacketView(raw)).map(link) ?? true
                    }
                    if deliver { b.receiveDatagram(packet.bytes, arrival: now) }
                }
                sinkA.packets.removeAll()
                b.renderPlayout(into: &out, now: now)
                while let digit = b.takeReceivedDTMF() { heardAtB.append(digit.character) }
                now += .milliseconds(10)
            }
        }
    }

    @Test func digitsCrossOverSRTPOnceEachWithAudioAroundThem() throws {
        var pair = try Pair()
        pair.run(milliseconds: 200)
        for digit in try DTMFDigit.parse("147*#0D") { #expect(pair.a.sendDTMF(digit)) }
        #expect(pair.a.pendingDTMFCount == 7)
        pair.run(milliseconds: 2000)
        #expect(pair.heardAtB == "147*#0D")
        let a = pair.a.statistics
        let b = pair.b.statistics
        #expect(a.dtmfDigitsSent == 7)
        #expect(a.telephoneEventPacketsSent == 7 * 7)  // 5 growing packets + 2 end retransmissions per digit
        #expect(b.dtmfDigitsReceived == 7)
        #expect(b.drops.total == 0)
        #expect(b.lostPackets == 0)
        #expect(pair.a.pendingDTMFCount == 0)
        // Audio went on around the keys: of 110 packet slots, 49 were events and the rest audio.
        #expect(b.packetsReceived - 7 * 7 == 110 - 49)
    }

    /// The wire format: the audio's SSRC, consecutive sequence numbers, the marker only on each event's first
    /// packet, one timestamp per event equal to the audio timestamp of its slot, durations in 20 ms steps at
    /// 48 kHz, three end packets.
    @Test func eventPacketsShareTheAudioSequenceAndFollowRFC4733() throws {
        var pair = try Pair(srtp: false)
        var seen:
            [(
                type: UInt8, sequence: UInt16, timestamp: UInt32, marker: Bool, ssrc: UInt32,
                event: TelephoneEventPayload?
            )] = []
        func record(_ packet: RTPPacketView) -> Bool {
            let event =
                packet.payloadType == DTMFStreamTests.eventType
                ? try? TelephoneEventPayload(parsing: packet.payload) : nil
            seen.append(
                (packet.payloadType, packet.sequenceNumber, packet.timestamp, packet.marker, packet.ssrc, event))
            return true
        }
        pair.run(milliseconds: 100, link: record)
        pair.a.sendDTMF(try #require(DTMFDigit("9")))
        pair.run(milliseconds: 400, link: record)
        #expect(Set(seen.map(\.ssrc)) == [pair.a.ssrc])
        for (previous, next) in zip(seen, seen.dropFirst()) { #expect(next.sequence == previous.sequence &+ 1) }
        let events = seen.filter { $0.type == DTMFStreamTests.eventType }
        try #require(events.count == 7)
        #expect(events.map(\.marker) == [true] + Array(repeating: false, count: 6))
        #expect(Set(events.map(\.timestamp)).count == 1)
        #expect(events.compactMap(\.event?.duration) == [960, 1920, 2880, 3840, 4800, 4800, 4800])
        #expect(events.compactMap(\.event?.isEnd) == [false, false, false, false, true, true, true])
        #expect(events.allSatisfy { $0.event?.event == 9 })
        // The event starts where the audio would have been, and audio resumes 7 packet times later.
        let firstEvent = try #require(seen.firstIndex { $0.type == DTMFStreamTests.eventType })
        let before = seen[firstEvent - 1]
        #expect(events[0].timestamp == before.timestamp &+ 960)
        let after = seen[firstEvent + 7]
        #expect(after.type == 111)
        #expect(after.timestamp == events[0].timestamp &+ 7 * 960)
    }

    @Test func lostFirstAndLastPacketsStillReportEachDigitOnce() throws {
        var pair = try Pair()
        pair.run(milliseconds: 100)
        for digit in try DTMFDigit.parse("55") { pair.a.sendDTMF(digit) }
        var eventPackets = 0
        pair.run(milliseconds: 800) { packet in
            guard packet.payloadType == DTMFStreamTests.eventType else { return true }
            eventPackets += 1
            // First digit: its marker packet and all three end packets are lost. Second (the same key pressed
            // again): its marker packet is lost.
            return ![1, 5, 6, 7, 8].contains(eventPackets)
        }
        #expect(eventPackets == 14)
        #expect(pair.heardAtB == "55")
    }

    @Test func withoutNegotiationNothingIsQueuedAndEventsAreDropped() throws {
        var plain = try Pair(telephoneEventsAtB: false)
        #expect(!plain.b.sendDTMF(try #require(DTMFDigit("1"))))
        plain.a.sendDTMF(try #require(DTMFDigit("1")))
        plain.run(milliseconds: 400)
        #expect(plain.heardAtB == "")
        #expect(plain.b.statistics.drops.wrongPayloadType == 7)
    }

    @Test func malformedEventIsCountedAndDropped() throws {
        var config = StreamTestSupport.configuration(seed: 72)
        config.telephoneEventPayloadType = DTMFStreamTests.eventType
        let stream = try MediaStream(configuration: config)
        // A 2-byte telephone-event payload.
        let packet: [UInt8] = [0x80, 0x80 | DTMFStreamTests.eventType, 0, 1, 0, 0, 0, 9, 0, 0, 0, 42, 3, 0]
        stream.receiveDatagram(packet, arrival: .zero)
        #expect(stream.statistics.drops.malformedTelephoneEvent == 1)
        #expect(stream.takeReceivedDTMF() == nil)
    }

    @Test func telephoneEventTypeMustDifferFromTheAudiosType() {
        var config = StreamTestSupport.configuration(seed: 73)
        config.telephoneEventPayloadType = config.payloadType
        #expect(throws: MediaStreamError.self) { try config.validate() }
        config.telephoneEventPayloadType = 72
        #expect(throws: MediaStreamError.self) { try config.validate() }
    }
}

extension DTMFStreamTests {
    /// Events at 8000 Hz beside Opus (baresip, Asterisk): durations in 8 kHz units (160 per 20 ms), timestamps the
    /// audio's 48 kHz ones.
    @Test func eventsAt8kHzCountDurationsAt8kHz() throws {
        let pair = try Pair(srtp: false)
        var config = pair.a.configuration
        config.telephoneEventClockRate = 8_000
        let a = try MediaStream(configuration: config, sink: pair.sinkA)
        a.sendDTMF(try #require(DTMFDigit("3")))
        var durations: [UInt16] = []
        var timestamps: Set<UInt32> = []
        for tick in 0..<30 {
            a.processCapture(AudioFrame(format: .mono16k), now: .milliseconds(Int64(tick) * 10))
        }
        for packet in pair.sinkA.packets where packet.kind == .rtp {
            try packet.bytes.withUnsafeBytes { raw in
                let view = try RTPPacketView(raw)
                guard view.payloadType == DTMFStreamTests.eventType else { return }
                durations.append(try TelephoneEventPayload(parsing: view.payload).duration)
                timestamps.insert(view.timestamp)
            }
        }
        #expect(durations == [160, 320, 480, 640, 800, 800, 800])
        #expect(timestamps.count == 1)
    }
}
