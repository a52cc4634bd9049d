import Foundation
import Testing
import VoiceEngine
import VoiceLab
import VoiceTestSupport

/// Soak: a long two-way call in fast time while the network cycles through profiles (clean, 3 % bursty loss with
/// jitter, a delay step, an outage, sender clock drift), checking memory, latency creep and counters.
///
/// Duration: `VOICEENGINE_SOAK_MINUTES` simulated minutes (default 2 in the normal suite). The full hour:
///
///     VOICEENGINE_SOAK_MINUTES=60 swift test -c release --filter SoakTests
///
/// The call is split into cycles (at least 3, one per 10 simulated minutes), each cycle into five equal
/// segments, one per profile, in the same order and with the same seeds in every cycle. Creep is judged between the
/// second and the last cycle: both see identical networks *and* the same history before each segment (the jitter
/// buffer remembers about 10 s of delays, so the first cycle's clean segment, with no history, is faster by
/// design), so any difference in buffer delay between them is creep, not conditions.
@Suite(.tags(.slow), .scheduledByTags, .serialized) struct SoakTests {
    static var minutes: Double {
        ProcessInfo.processInfo.environment["VOICEENGINE_SOAK_MINUTES"].flatMap(Double.init) ?? 2
    }

    enum Profile: Int, CaseIterable, CustomStringConvertible {
        case clean, burstyLoss, delayStep, outage, drift
        var description: String { ["clean", "bursty-loss", "delay-step", "outage", "drift"][rawValue] }

        /// Conditions with times relative to the segment's start; the seed depends only on profile and direction.
        func conditions(segment: MediaTime, direction: CallSide) -> NetworkConditions {
            let seed = UInt64(rawValue * 2 + (direction == .a ? 1 : 2))
            switch self {
            case .clean:
                return NetworkConditions(baseDelayMilliseconds: 30, seed: seed)
            case .burstyLoss:  // 3 % loss in bursts of 3 packets, 20 ms normal jitter over 30 ms
                return DemoNetworkProfile(
                    name: "soak", baseDelayMilliseconds: 30, jitterMilliseconds: 20, lossPercent: 3,
                    meanBurstPackets: 3
                ).conditions(seed: seed)
            case .delayStep:  // 30 → 150 → 30 ms
                let third = segment.nanoseconds / 3
                return NetworkConditions(
                    baseDelayMilliseconds: 30,
                    phases: [
                        DelayPhase(start: MediaTime(nanoseconds: third), baseDelayMilliseconds: 150),
                        DelayPhase(start: MediaTime(nanoseconds: 2 * third), baseDelayMilliseconds: 30)
                    ], seed: seed)
            case .outage:  // a dead link for min(10 s, half the segment), from a quarter in
                let duration = min(10_000_000_000, segment.nanoseconds / 2)
                return NetworkConditions(
                    baseDelayMilliseconds: 30, jitter: .normal(meanMilliseconds: 5, standardDeviationMilliseconds: 5),
                    outages: [
                        Outage(
                            start: MediaTime(nanoseconds: segment.nanoseconds / 4),
                            duration: MediaTime(nanoseconds: duration))
                    ], seed: seed)
            case .drift:  // the sender's clock runs 0.05 % fast
                return NetworkConditions(
                    baseDelayMilliseconds: 30, jitter: .normal(meanMilliseconds: 5, standardDeviationMilliseconds: 5),
                    senderClockSkewPPM: 500, seed: seed)
            }
        }
    }

    /// A call path whose conditions change every segment: a fresh `NetworkSimulator` per segment and direction
    /// (times relative to the segment start). RTCP goes with a fixed 30 ms and no loss. Keeps counters only (no
    /// per-packet history), so the harness itself does not grow with the call.
    final class CyclingPath: CallPacketPath {
        struct Counters {
            var rtpSent = 0, rtpLost = 0, rtpDelivered = 0, rtcpSent = 0, rtcpDelivered = 0
        }
        struct InFlight {
            var arrival: MediaTime
            var order: Int
            var bytes: [UInt8]
        }
        let segment: MediaTime
        private var simulators: [CallSide: NetworkSimulator] = [:]
        private var segmentIndex: [CallSide: Int] = [:]
        private var inFlight: [CallSide: [InFlight]] = [.a: [], .b: []]  // keyed by the receiving side
        private var order = 0
        /// By sending side.
        var counters: [CallSide: Counters] = [.a: Counters(), .b: Counters()]

        init(segment: MediaTime) { self.segment = segment }

        func profile(at time: MediaTime) -> Profile {
            Profile(rawValue: Int(time.nanoseconds / segment.nanoseconds) % Profile.allCases.count)!
        }

        func send(_ datagram: UnsafeRawBufferPointer, kind: MediaPacketKind, from side: CallSide, now: MediaTime) {
            order += 1
            switch kind {
            case .rtcp:
                counters[side]!.rtcpSent += 1
                inFlight[side.peer]!.append(
                    InFlight(arrival: now + .milliseconds(30), order: order, bytes: Array(datagram)))
            case .rtp:
                counters[side]!.rtpSent += 1
                let index = Int(now.nanoseconds / segment.nanoseconds)
                let start = MediaTime(nanoseconds: Int64(index) * segment.nanoseconds)
                if segmentIndex[side] != index {
                    segmentIndex[side] = index
                    simulators[side] = try! NetworkSimulator(
                        conditions: profile(at: now).conditions(segment: segment, direction: side))
                }
                let fate = simulators[side]!.nextFate(nominalSendTime: now - start)
                guard let arrival = fate.arrival else {
                    counters[side]!.rtpLost += 1
                    return
                }
                inFlight[side.peer]!.append(InFlight(arrival: arrival + start, order: order, bytes: Array(datagram)))
            }
        }

        func deliver(to side: CallSide, until now: MediaTime, _ body: (UnsafeRawBufferPointer, MediaTime) -> Void) {
            var due = inFlight[side]!.filter { $0.arrival <= now }
            guard !due.isEmpty else { return }
            inFlight[side]!.removeAll { $0.arrival <= now }
            due.sort { ($0.arrival, $0.order) < ($1.arrival, $1.order) }
            for d in due {
                let isRTCP = d.bytes.count >= 2 && (192...223).contains(d.bytes[1])
                if isRTCP { counters[side.peer]!.rtcpDelivered += 1 } else { counters[side.peer]!.rtpDelivered += 1 }
                d.bytes.withUnsafeBytes { body($0, d.arrival) }
            }
        }
    }

    /// Per (cycle, profile) figures of one side's receive chain.
    struct SegmentFigures {
        var delaySum = 0.0, targetSum = 0.0, samples = 0
        var playedEnergy = 0.0, playedCount = 0
        var meanDelay: Double { samples == 0 ? 0 : delaySum / Double(samples) }
        var meanTarget: Double { samples == 0 ? 0 : targetSum / Double(samples) }
        var levelDBFS: Double {
            10 * log10(max(playedEnergy / Double(max(playedCount, 1)) / (32768.0 * 32768.0) * 2, 1e-20))
        }
    }

    @Test func longCallUnderCyclingNetworkHasNoMemoryGrowthNoLatencyCreepAndConsistentCounters() throws {
        let minutes = Self.minutes
        let totalTicks = Int(minutes * 6_000)
        let cycles = max(3, Int(minutes / 10))
        let cycleTicks = totalTicks / cycles
        let segmentTicks = cycleTicks / Profile.allCases.count
        let path = CyclingPath(segment: .milliseconds(Int64(segmentTicks) * 10))
        let clock = ManualClock()
        var configA = StreamTestSupport.configuration(seed: 2_001)
        var configB = StreamTestSupport.configuration(seed: 2_002)
        configA.voiceProcessing = true
        configB.voiceProcessing = true
        final class Sink: MediaPacketSink {
            let path: CyclingPath
            let side: CallSide
            init(_ path: CyclingPath, _ side: CallSide) {
                self.path = path
                self.side = side
            }
            func send(_ d: UnsafeRawBufferPointer, kind: MediaPacketKind, now: MediaTime) {
                path.send(d, kind: kind, from: side, now: now)
            }
        }
        let a = try MediaStream(configuration: configA, sink: Sink(path, .a), now: clock.now)
        let b = try MediaStream(configuration: configB, sink: Sink(path, .b), now: clock.now)
        // 20 s of speech per side, looped.
        let clipA = StreamTestSupport.speech(seconds: 20, seed: 2_003)
        let clipB = StreamTestSupport.speech(seconds: 20, seed: 2_004)
        var frameA = AudioFrame(format: .mono16k)
        var frameB = AudioFrame(format: .mono16k)
        var micA = AudioFrame(format: .mono16k)
        var micB = AudioFrame(format: .mono16k)
        var figures: [CallSide: [[SegmentFigures]]] = [
            .a: Array(repeating: Array(repeating: SegmentFigures(), count: 5), count: cycles),
            .b: Array(repeating: Array(repeating: SegmentFigures(), count: 5), count: cycles)
        ]
        var rss: [(seconds: Double, megabytes: Double)] = []
        let rssEvery = max(100, totalTicks / 60)
        let drainTicks = 200
        let started = Date()

        for tick in 0..<(totalTicks + drainTicks) {
            let now = clock.now
            path.deliver(to: .a, until: now) { a.receiveDatagram($0, arrival: $1) }
            path.deliver(to: .b, until: now) { b.receiveDatagram($0, arrival: $1) }
            a.renderPlayout(into: &frameA, now: now)
            b.renderPlayout(into: &frameB, now: now)
            if tick < totalTicks {
                let k = (tick * 160) % (clipA.count - 160)
                micA.withUnsafeMutableSamples { m in for i in 0..<160 { m[i] = clipA[k + i] } }
                micB.withUnsafeMutableSamples { m in for i in 0..<160 { m[i] = clipB[k + i] } }
                a.processCapture(micA, now: now)
                b.processCapture(micB, now: now)

                let cycle = min(tick / cycleTicks, cycles - 1)
                let segment = (tick % cycleTicks) / segmentTicks
                if segment < 5 {
                    for (side, stream, frame) in [(CallSide.a, a, frameA), (.b, b, frameB)] {
                        let j = stream.statistics.jitterBuffer
                        var f = figures[side]![cycle][segment]
                        f.delaySum += j.currentDelayMilliseconds
                        f.targetSum += j.targetDelayMilliseconds
                        f.samples += 1
                        frame.withUnsafeSamples { s in for v in s { f.playedEnergy += Double(v) * Double(v) } }
                        f.playedCount += 160
                        figures[side]![cycle][segment] = f
                    }
                }
            }
            a.pollRTCP(now: now)
            b.pollRTCP(now: now)
            if tick % rssEvery == 0, let m = HostileSupport.residentMegabytes() { rss.append((now.seconds, m)) }
            clock.advance(by: .milliseconds(10))
        }
        let wall = Date().timeIntervalSince(started)

        // Counters, per direction: sent = received + lost (RFC 3550), lost = what the network dropped, every
        // datagram that arrived accepted (no drop of any reason), RTCP all delivered and parsed.
        for (from, to) in [(a, b), (b, a)] {
            let side: CallSide = from === a ? .a : .b
            let c = path.counters[side]!
            let s = to.statistics
            let sent = from.statistics.packetsSent
            print(
                "soak \(side)→\(side.peer): sent \(sent), received \(s.receivedPackets), lost \(s.lostPackets) "
                    + "(network dropped \(c.rtpLost)), drops \(s.drops.total), late \(s.jitterBuffer.latePackets), "
                    + "flushes \(s.jitterBuffer.flushes), concealment \(s.jitterBuffer.concealmentRatio), "
                    + "RTCP \(from.statistics.rtcpSent)/\(s.rtcpReceived)")
            #expect(c.rtpSent == sent)
            // Accepted + lost = sent (RFC 3550's expected/received start after the first, probation packet).
            #expect(sent == s.packetsReceived + s.lostPackets)
            #expect(s.expectedPackets == sent - (s.packetsReceived - s.receivedPackets))
            #expect(s.packetsReceived - s.receivedPackets <= 1)
            #expect(s.lostPackets == c.rtpLost)
            #expect(s.packetsReceived == c.rtpDelivered)
            #expect(s.drops.total == 0)
            #expect(s.duplicatePackets == 0)
            #expect(s.jitterBuffer.invalidPackets == 0)
            #expect(s.jitterBuffer.packetsReceived <= s.packetsReceived)
            #expect(from.statistics.rtcpSent == c.rtcpSent)
            #expect(s.rtcpReceived == c.rtcpDelivered)
            #expect(c.rtcpDelivered == c.rtcpSent)
            #expect(s.processingErrors == 0)
        }

        // Latency creep: the same profile in the second and the last cycle gives the same buffer delay.
        for side in CallSide.allCases {
            for profile in Profile.allCases {
                let earlier = figures[side]![1][profile.rawValue]
                let last = figures[side]![cycles - 1][profile.rawValue]
                print(
                    "soak \(side) \(profile): delay \(String(format: "%.1f", earlier.meanDelay)) → "
                        + "\(String(format: "%.1f", last.meanDelay)) ms, target \(String(format: "%.1f", earlier.meanTarget))"
                        + " → \(String(format: "%.1f", last.meanTarget)) ms, level \(String(format: "%.1f", earlier.levelDBFS))"
                        + " → \(String(format: "%.1f", last.levelDBFS)) dBFS")
                #expect(abs(last.meanDelay - earlier.meanDelay) < 20, "\(side) \(profile)")
                // Audio keeps playing in every segment of the last cycle (the outage segment included: it is
                // mostly outside the outage).
                #expect(last.levelDBFS > -40, "\(side) \(profile)")
            }
        }

        // Memory: flat after the first cycle. Baseline: the highest sample in the first half after warm-up;
        // end: the lowest of the last three (robust against another suite's transient allocation).
        let warmUpEnd = Double(cycleTicks) / 100
        let afterWarmUp = rss.filter { $0.seconds >= warmUpEnd }
        let baseline = afterWarmUp.prefix(max(1, afterWarmUp.count / 2)).map(\.megabytes).max() ?? 0
        let end = rss.suffix(3).map(\.megabytes).min() ?? 0
        print(
            "soak: \(minutes) simulated min in \(String(format: "%.1f", wall)) s wall, \(cycles) cycles; RSS "
                + "first \(rss.first?.megabytes ?? -1) MiB, after warm-up \(baseline) MiB, end \(end) MiB, "
                + "growth \(end - baseline) MiB; samples \(rss.map { Int($0.megabytes) })")
        #expect(end - baseline < 8)
    }
}
