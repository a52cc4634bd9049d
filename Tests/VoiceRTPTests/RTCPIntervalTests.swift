import Testing
import VoiceCore
import VoiceRTP
import VoiceTestSupport

@Suite struct RTCPIntervalTests {
    @Test func smallSessionUsesTheMinimumHalvedInitially() {
        // 64 kb/s session → 400 octets/s of RTCP; two members, 100-octet packets → 0.5 s < 5 s.
        let td = RTCPInterval.deterministic(
            members: 2, senders: 1, rtcpBandwidth: 400, weSent: true, averagePacketSize: 100, initial: false)
        #expect(td == 5)
        let initial = RTCPInterval.deterministic(
            members: 2, senders: 1, rtcpBandwidth: 400, weSent: true, averagePacketSize: 100, initial: true)
        #expect(initial == 2.5)
    }

    @Test func largeSessionSplitsBandwidthBetweenSendersAndReceivers() {
        // 1000 members, 10 senders (≤ 25 %): receivers share 75 % among 990, senders 25 % among 10.
        let receiver = RTCPInterval.deterministic(
            members: 1000, senders: 10, rtcpBandwidth: 400, weSent: false, averagePacketSize: 120, initial: false)
        #expect(abs(receiver - 120.0 * 990 / (400 * 0.75)) < 1e-9)
        let sender = RTCPInterval.deterministic(
            members: 1000, senders: 10, rtcpBandwidth: 400, weSent: true, averagePacketSize: 120, initial: false)
        #expect(abs(sender - 120.0 * 10 / (400 * 0.25)) < 1e-9)  // 12 s
        // More than a quarter senders: everyone shares the whole bandwidth among all members.
        let many = RTCPInterval.deterministic(
            members: 1000, senders: 600, rtcpBandwidth: 400, weSent: true, averagePacketSize: 120, initial: false)
        #expect(abs(many - 120.0 * 1000 / 400) < 1e-9)
    }

    @Test func reducedMinimumScalesWithBandwidth() {
        #expect(RTCPInterval.reducedMinimum(sessionBandwidth: 360_000) == 1)
        let td = RTCPInterval.deterministic(
            members: 2, senders: 1, rtcpBandwidth: 2250, weSent: true, averagePacketSize: 100, initial: false,
            minimum: RTCPInterval.reducedMinimum(sessionBandwidth: 360_000))
        #expect(td == 1)
    }

    @Test func randomizedIntervalsStayInRangeAndAverageToCompensatedTd() {
        var rng = SplitMix64(seed: 99)
        let td = 5.0
        var sum = 0.0
        let n = 20_000
        for _ in 0..<n {
            let t = RTCPInterval.randomized(deterministic: td, using: &rng)
            #expect(t >= 0.5 * td / RTCPInterval.compensation && t < 1.5 * td / RTCPInterval.compensation)
            sum += t
        }
        let mean = sum / Double(n)
        let expected = td / RTCPInterval.compensation  // E[U(0.5,1.5)] = 1
        #expect(abs(mean - expected) / expected < 0.01)
        #expect(abs(RTCPInterval.compensation - 1.21828) < 1e-5)
    }

    @Test func schedulerSendsAfterReconsiderationAndAveragesPacketSize() {
        var rng = SplitMix64(seed: 5)
        var scheduler = RTCPScheduler(sessionBandwidth: 64_000, firstPacketSize: 72, now: .zero, using: &rng)
        #expect(scheduler.initial)
        #expect(scheduler.deterministicInterval == 2.5)
        // First report is due between 2.5 × 0.5 / 1.218 and 2.5 × 1.5 / 1.218 s.
        let first = scheduler.nextScheduled.seconds
        #expect(first >= 1.02 && first <= 3.08)
        // Fire far enough in the future: reconsideration must say send.
        #expect(scheduler.timerExpired(now: .seconds(10), using: &rng) == .send)
        let next = scheduler.sent(size: 72, now: .seconds(10), using: &rng)
        #expect(!scheduler.initial)
        #expect(scheduler.deterministicInterval == 5)
        #expect(next.seconds >= 10 + 2.05 && next.seconds <= 10 + 6.16)
        // Fired too early (just after sending): reconsideration reschedules.
        if case .wait(let until) = scheduler.timerExpired(now: .seconds(10.1), using: &rng) {
            #expect(until > .seconds(10.1))
        } else {
            Issue.record("expected reschedule")
        }
        let before = scheduler.averagePacketSize
        scheduler.receivedPacket(size: 1000)
        #expect(abs(scheduler.averagePacketSize - (before * 15 + 1028) / 16) < 1e-9)
    }

    @Test func reverseReconsiderationPullsTheTimerIn() {
        var rng = SplitMix64(seed: 6)
        var scheduler = RTCPScheduler(sessionBandwidth: 64_000, firstPacketSize: 72, now: .zero, using: &rng)
        scheduler.members = 100
        _ = scheduler.timerExpired(now: .zero, using: &rng)  // records pmembers = 100
        scheduler.sent(size: 72, now: .zero, using: &rng)
        let scheduledBefore = scheduler.nextScheduled
        scheduler.members = 50
        scheduler.membersLeft(now: .seconds(1))
        let expected = 1 + (scheduledBefore.seconds - 1) * 0.5
        #expect(abs(scheduler.nextScheduled.seconds - expected) < 1e-6)
    }
}

@Suite struct SSRCTableTests {
    typealias Table = SSRCTable<String>

    @Test func newSourceIsValidatedAfterProbationAndBecomesActive() {
        var table = Table(localSSRC: 1, clockRate: 48_000)
        #expect(
            table.receivedRTP(ssrc: 500, sequenceNumber: 10, rtpTimestamp: 0, arrival: .zero, from: "a")
                == .newSource(ssrc: 500))
        #expect(table.activeSSRC == nil)
        #expect(
            table.receivedRTP(ssrc: 500, sequenceNumber: 11, rtpTimestamp: 960, arrival: .milliseconds(20), from: "a")
                == .sourceValidated(ssrc: 500))
        #expect(table.activeSSRC == 500)
        #expect(
            table.receivedRTP(ssrc: 500, sequenceNumber: 12, rtpTimestamp: 1920, arrival: .milliseconds(40), from: "a")
                == .known(ssrc: 500, .accepted))
        #expect(table.statistics(of: 500)?.received == 2)
    }

    @Test func changedRemoteSSRCResetsStatisticsOnlyAfterProbation() {
        var table = Table(localSSRC: 1, clockRate: 48_000)
        for k in 0..<50 {
            _ = table.receivedRTP(
                ssrc: 500, sequenceNumber: UInt16(k), rtpTimestamp: UInt32(k * 960),
                arrival: .milliseconds(Int64(k) * 20), from: "a")
        }
        #expect(table.activeSSRC == 500)
        // The peer restarts with a new SSRC and sequence space: one stray packet does not switch.
        #expect(
            table.receivedRTP(ssrc: 900, sequenceNumber: 40_000, rtpTimestamp: 7, arrival: .seconds(1), from: "a")
                == .newSource(ssrc: 900))
        #expect(table.activeSSRC == 500)
        #expect(
            table.receivedRTP(ssrc: 900, sequenceNumber: 40_001, rtpTimestamp: 967, arrival: .seconds(1.02), from: "a")
                == .sourceValidated(ssrc: 900))
        #expect(table.activeSSRC == 900)
        let fresh = table.statistics(of: 900)!
        #expect(fresh.received == 1 && fresh.expected == 1 && fresh.cumulativeLost == 0)
        #expect(fresh.extendedHighestSequence == 40_001)
        table.receivedBye(ssrc: 500)
        #expect(table.statistics(of: 500) == nil)
        #expect(table.makeReportBlocks(now: .seconds(2)).map(\.ssrc) == [900])
    }

    @Test func remoteUsingOurSSRCIsACollisionResolvedWithANewSSRCAndBye() {
        var table = Table(localSSRC: 0x1234, clockRate: 48_000)
        _ = table.receivedRTP(ssrc: 77, sequenceNumber: 1, rtpTimestamp: 0, arrival: .zero, from: "b")
        #expect(
            table.receivedRTP(ssrc: 0x1234, sequenceNumber: 1, rtpTimestamp: 0, arrival: .zero, from: "c")
                == .collision(ssrc: 0x1234))
        #expect(table.receivedRTCP(senderSSRC: 0x1234, from: "c") == .collision(ssrc: 0x1234))
        var rng = SplitMix64(seed: 3)
        let change = table.resolveCollision(using: &rng)
        #expect(change.old == 0x1234)
        #expect(change.new != 0x1234 && change.new != 77)
        #expect(table.localSSRC == change.new)
        #expect(change.byePacket.ssrcs == [0x1234])
        // The BYE serializes into a valid RTCP packet.
        let bytes = RTCPPacket.serializedCompound([
            .receiverReport(RTCPReceiverReport(ssrc: change.new)), .bye(change.byePacket)
        ])
        #expect((try? RTCPPacket.parseCompound(bytes))?.count == 2)
        // Our old SSRC is now an ordinary remote source.
        #expect(
            table.receivedRTP(ssrc: 0x1234, sequenceNumber: 2, rtpTimestamp: 0, arrival: .zero, from: "c")
                == .newSource(ssrc: 0x1234))
    }

    @Test func knownSSRCFromAnotherAddressIsAConflictAndDropped() {
        var table = Table(localSSRC: 1, clockRate: 8000)
        _ = table.receivedRTP(ssrc: 5, sequenceNumber: 1, rtpTimestamp: 0, arrival: .zero, from: "a")
        #expect(
            table.receivedRTP(ssrc: 5, sequenceNumber: 2, rtpTimestamp: 0, arrival: .zero, from: "evil")
                == .addressConflict(ssrc: 5))
        #expect(table.statistics(of: 5)?.packetsSeen == 1)
        #expect(table.receivedRTCP(senderSSRC: 5, from: "evil") == .addressConflict(ssrc: 5))
        #expect(table.receivedRTCP(senderSSRC: 5, from: "a") == nil)
    }

    @Test func ssrcFloodIsBoundedByCapacity() {
        var table = Table(localSSRC: 1, clockRate: 8000, capacity: 4)
        var events: [SSRCEvent] = []
        for ssrc: UInt32 in 10..<20 {
            events.append(table.receivedRTP(ssrc: ssrc, sequenceNumber: 0, rtpTimestamp: 0, arrival: .zero, from: "x"))
        }
        #expect(table.sources.count == 4)
        #expect(events.filter { if case .tableFull = $0 { true } else { false } }.count == 6)
    }
}
