import Testing
import VoiceCore
import VoiceRTP

@Suite struct ReceiveStatisticsTests {
    /// Feeds packets `seqs` (20 ms of 8 kHz each, relative to `firstSeq`) arriving exactly on time.
    func feed(_ stats: inout ReceiveStatistics, firstSeq: UInt16, offsets: [Int]) {
        for k in offsets {
            let seq = firstSeq &+ UInt16(truncatingIfNeeded: k)
            let ts = UInt32(truncatingIfNeeded: k * 160)
            stats.update(sequenceNumber: seq, rtpTimestamp: ts, arrivalTicks: ts &+ 5000)
        }
    }

    @Test func sourceIsOnProbationUntilTwoSequentialPackets() {
        var stats = ReceiveStatistics(clockRate: 8000)
        #expect(stats.update(sequenceNumber: 100, rtpTimestamp: 0, arrivalTicks: 0) == .probation)
        #expect(!stats.isValid)
        #expect(stats.update(sequenceNumber: 500, rtpTimestamp: 0, arrivalTicks: 0) == .probation)  // not sequential
        #expect(!stats.isValid)
        #expect(stats.update(sequenceNumber: 501, rtpTimestamp: 160, arrivalTicks: 160) == .accepted)
        #expect(stats.isValid)
        #expect(stats.received == 1)
        #expect(stats.expected == 1)
        #expect(stats.extendedHighestSequence == 501)
        #expect(stats.packetsSeen == 3)
    }

    @Test func probationCompletesAcrossTheWrap() {
        var stats = ReceiveStatistics(clockRate: 8000)
        #expect(stats.update(sequenceNumber: 65535, rtpTimestamp: 0, arrivalTicks: 0) == .probation)
        #expect(stats.update(sequenceNumber: 0, rtpTimestamp: 160, arrivalTicks: 160) == .accepted)
        #expect(stats.isValid)
    }

    @Test func countsLossAndFractionLostByTheRFCFormula() {
        var stats = ReceiveStatistics(clockRate: 8000)
        let dropped: Set<Int> = [10, 11, 40, 77, 90]
        // 100 packets starting just before the wrap; packet 0 is consumed by probation.
        feed(&stats, firstSeq: 65500, offsets: (0..<100).filter { !dropped.contains($0) })
        // Independently: after probation the base is packet 1, so 99 expected, 94 received.
        let expected = 99
        let received = 99 - dropped.count
        #expect(stats.expected == UInt32(expected))
        #expect(stats.received == UInt32(received))
        #expect(stats.cumulativeLost == Int32(expected - received))
        #expect(stats.extendedHighestSequence == 65536 + UInt32((65500 + 99) - 65536))
        #expect(stats.cycles == 65536)
        let fraction = stats.takeFractionLost()
        #expect(Int(fraction) == (expected - received) * 256 / expected)  // 1280 / 99 = 12
        #expect(fraction == 12)

        // Second interval: 50 more packets, 3 dropped.
        feed(&stats, firstSeq: 65500, offsets: (100..<150).filter { ![110, 120, 149].contains($0) })
        // Packet 149 is lost at the end so the highest is 148: 49 expected this interval, 47 received.
        #expect(Int(stats.takeFractionLost()) == 2 * 256 / 49)
        #expect(stats.cumulativeLost == 7)
        #expect(stats.takeFractionLost() == 0)  // nothing new
    }

    @Test func jitterFollowsRFC3550A8OnASyntheticPattern() {
        var stats = ReceiveStatistics(clockRate: 8000)
        // Transit delays per packet (timestamp units); packet 0 is on probation and not measured.
        let delays = [99, 0, 10, 0, 30, 20]
        for (k, delay) in delays.enumerated() {
            let ts = UInt32(k * 160)
            stats.update(sequenceNumber: UInt16(k), rtpTimestamp: ts, arrivalTicks: ts + 1000 + UInt32(delay))
        }
        // By hand: |D| = 10, 10, 30, 10 and J += (|D| - J) / 16 starting at 0.
        var j = 0.0
        for d in [10.0, 10, 30, 10] { j += (d - j) / 16 }
        #expect(abs(j - 3.447113037109375) < 1e-12)
        #expect(abs(stats.jitter - 3.447113037109375) < 1e-9)
        #expect(stats.reportedJitter == 3)
    }

    @Test func jitterFromMediaTimeArrivalsUsesTheClockRate() {
        var stats = ReceiveStatistics(clockRate: 48_000)
        // 20 ms packets; every other packet arrives 5 ms late (240 ticks).
        for k in 0..<200 {
            let late = k % 2 == 1 ? MediaTime.milliseconds(5) : .zero
            stats.update(
                sequenceNumber: UInt16(k), rtpTimestamp: UInt32(k * 960),
                arrival: .milliseconds(Int64(k) * 20) + late)
        }
        // |D| is always 240, so J converges to 240.
        #expect(abs(stats.jitter - 240) < 0.01)
        #expect(stats.ticks(.seconds(1.5)) == 72_000)
    }

    @Test func duplicatesAreCountedAndReorderingIsNot() {
        var stats = ReceiveStatistics(clockRate: 8000)
        feed(&stats, firstSeq: 0, offsets: [0, 1, 2, 4, 3, 5, 5, 2, 6])
        #expect(stats.duplicates == 2)
        // RFC 3550 counts duplicates as received, so "lost" goes negative.
        #expect(stats.expected == 6)
        #expect(stats.received == 8)
        #expect(stats.cumulativeLost == -2)
    }

    @Test func largeJumpIsDroppedUntilConfirmedThenRestarts() {
        var stats = ReceiveStatistics(clockRate: 8000)
        feed(&stats, firstSeq: 1000, offsets: Array(0..<10))
        #expect(stats.received == 9)
        #expect(stats.update(sequenceNumber: 30_000, rtpTimestamp: 0, arrivalTicks: 0) == .badSequence)
        #expect(stats.received == 9)
        #expect(stats.update(sequenceNumber: 40_000, rtpTimestamp: 0, arrivalTicks: 0) == .badSequence)
        #expect(stats.update(sequenceNumber: 40_001, rtpTimestamp: 160, arrivalTicks: 160) == .restarted)
        #expect(stats.received == 1)
        #expect(stats.expected == 1)
        #expect(stats.extendedHighestSequence == 40_001)
    }

    @Test func lateReorderedPacketWithinMisorderIsCounted() {
        var stats = ReceiveStatistics(clockRate: 8000)
        feed(&stats, firstSeq: 0, offsets: Array(0..<50) + [20 - 0])
        #expect(stats.duplicates == 1)
        var other = ReceiveStatistics(clockRate: 8000)
        feed(&other, firstSeq: 0, offsets: Array(0..<50).filter { $0 != 20 } + [20])
        #expect(other.duplicates == 0)
        #expect(other.cumulativeLost == 0)
    }

    @Test func cumulativeLostIsClampedTo24BitsSigned() {
        var stats = ReceiveStatistics(clockRate: 8000)
        // Advance 0x800000+ sequence numbers in steps below MAX_DROPOUT, receiving one packet per step.
        var seq: UInt16 = 0
        stats.update(sequenceNumber: 0, rtpTimestamp: 0, arrivalTicks: 0)
        stats.update(sequenceNumber: 1, rtpTimestamp: 0, arrivalTicks: 0)
        seq = 1
        for _ in 0..<3000 {
            seq &+= 2999
            stats.update(sequenceNumber: seq, rtpTimestamp: 0, arrivalTicks: 0)
        }
        #expect(stats.expected > 0x80_0000)
        #expect(stats.cumulativeLost == 0x7F_FFFF)
    }

    @Test func reportBlockCarriesStatisticsAndDLSR() {
        var stats = ReceiveStatistics(clockRate: 8000)
        feed(&stats, firstSeq: 10, offsets: [0, 1, 2, 4, 5])
        let srNTP = NTPTimestamp(seconds: 0xB710, fraction: 0x8000_0000)
        stats.receivedSenderReport(ntp: srNTP, arrival: .seconds(10))
        let block = stats.makeReportBlock(ssrc: 77, now: .seconds(12.25))
        #expect(block.ssrc == 77)
        #expect(block.extendedHighestSequence == 15)
        #expect(block.cumulativeLost == 1)
        #expect(Int(block.fractionLost) == 1 * 256 / 5)
        #expect(block.lastSenderReport == 0xB710_8000)
        #expect(block.delaySinceLastSenderReport == 0x0002_4000)  // 2.25 s in 1/65536 s
    }
}

@Suite struct NTPAndRoundTripTests {
    /// RFC 3550 6.4.1, Figure 2: A = 0xb710:8000, LSR = 0xb705:2000, DLSR = 0x0005:4000 → RTT 0x0006:2000 (6.125 s).
    @Test func roundTripFromRFC3550Figure2() {
        let rtt = RTCPRoundTrip.rtt(arrivalMiddle32: 0xB710_8000, lsr: 0xB705_2000, dlsr: 0x0005_4000)
        #expect(rtt == 0x0006_2000)
        let arrival = NTPTimestamp(seconds: 0xB710, fraction: 0x8000_0000)
        #expect(RTCPRoundTrip.rtt(arrival: arrival, lsr: 0xB705_2000, dlsr: 0x0005_4000) == .milliseconds(6125))
    }

    @Test func roundTripAcrossTheMiddle32Wrap() {
        // LSR just before the 16-bit seconds wrap, arrival just after.
        #expect(RTCPRoundTrip.rtt(arrivalMiddle32: 0x0001_0000, lsr: 0xFFFF_0000, dlsr: 0x0000_8000) == 0x0001_8000)
    }

    @Test func roundTripIsNilWithoutSROrWhenNegative() {
        #expect(RTCPRoundTrip.rtt(arrivalMiddle32: 0x1000_0000, lsr: 0, dlsr: 0) == nil)
        #expect(RTCPRoundTrip.rtt(arrivalMiddle32: 0x0010_0000, lsr: 0x000F_0000, dlsr: 0x0002_0000) == nil)
        // 3 ms under zero: more than a peer's millisecond rounding of DLSR explains.
        #expect(RTCPRoundTrip.rtt(arrivalMiddle32: 0x0010_0000, lsr: 0x000F_0000, dlsr: 0x0001_00C5) == nil)
    }

    /// A loopback peer that counts DLSR in whole milliseconds (baresip) overstates it by up to 1 ms: an RTT just
    /// under zero is a round trip of about nothing, not a bogus report.
    @Test func roundTripJustUnderZeroFromAMillisecondDLSRIsZero() {
        // 0.1 ms of real round trip, DLSR overstated by 1 ms (66 units): 0.9 ms under zero.
        #expect(RTCPRoundTrip.rtt(arrivalMiddle32: 0x0010_0007, lsr: 0x000F_0000, dlsr: 0x0001_0042) == 0)
    }

    @Test func ntpConvertsFromUnixTime() {
        let epoch = NTPTimestamp(unixTime: .zero)
        #expect(epoch.seconds == 2_208_988_800)
        #expect(epoch.fraction == 0)
        let t = NTPTimestamp(unixTime: .seconds(1.5))
        #expect(t.seconds == 2_208_988_801)
        #expect(t.fraction == 0x8000_0000)
        #expect(t.middle32 == (2_208_988_801 & 0xFFFF) << 16 | 0x8000)
        let now = MediaTime(nanoseconds: 1_700_000_000_123_456_789)
        let back = NTPTimestamp(unixTime: now).unixTime
        #expect(abs(back.nanoseconds - now.nanoseconds) <= 1)
    }

    @Test func timeBaseMapsMediaTimeToNTPAndBack() {
        let base = NTPTimeBase(mediaTime: .seconds(100), ntp: NTPTimestamp(seconds: 3_900_000_000, fraction: 0))
        let ntp = base.ntp(at: .seconds(102.25))
        #expect(ntp == NTPTimestamp(seconds: 3_900_000_002, fraction: 0x4000_0000))
        #expect(base.mediaTime(of: ntp) == .seconds(102.25))
        #expect(base.ntp(at: .seconds(99.5)) == NTPTimestamp(seconds: 3_899_999_999, fraction: 0x8000_0000))
        #expect(NTPDuration.short(.milliseconds(5250)) == 0x0005_4000)
        #expect(NTPDuration.mediaTime(short: 0x0006_2000) == .milliseconds(6125))
    }

    @Test func senderMeasuresRTTFromItsOwnReportBlock() {
        // Sender sends an SR at media time 50 s, the receiver answers 0.5 s after receiving it, network delay 40 ms.
        let base = NTPTimeBase(mediaTime: .zero, ntp: NTPTimestamp(unixTime: .seconds(1_700_000_000)))
        let srSent = MediaTime.seconds(50)
        var stats = ReceiveStatistics(clockRate: 48_000)
        stats.update(sequenceNumber: 1, rtpTimestamp: 0, arrival: .zero)
        stats.update(sequenceNumber: 2, rtpTimestamp: 960, arrival: .milliseconds(20))
        stats.receivedSenderReport(ntp: base.ntp(at: srSent), arrival: srSent + .milliseconds(40))
        let block = stats.makeReportBlock(ssrc: 1, now: srSent + .milliseconds(540))
        let rrArrival = srSent + .milliseconds(580)
        let rtt = block.roundTripTime(arrival: base.ntp(at: rrArrival))!
        #expect(abs(rtt.milliseconds - 80) < 0.1)
    }
}
