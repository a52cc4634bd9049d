import Foundation
import Testing
import VoiceEngine

@testable import VoiceDevices
import VoiceLab
import VoiceTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Faults: a device disappearing mid-call (interruptions shorter and longer than the 30 s timeout), xrun storms,
/// and a 10 s network outage. All in fast time (a ``ManualClock``), bounded in ticks.
///
/// Run: `swift test --filter FaultTests`.
///
/// How the interruption tests are wired: `LiveCall` takes its device events from the devices' own `events`
/// streams (the `DeviceEventChannel` inside VoiceDevices is internal) and runs in real time, so a 30 s timeout
/// would take 30 s of wall clock. These tests therefore drive the same pieces LiveCall drives, in fast time: the
/// real `AudioSession` actor on a `ManualClock`, fed the synthetic `DeviceEvent` through `AudioSession.handle(_:)`
/// (which applies `AudioSessionMachine.sessionEvent(for:)`, the mapping LiveCall uses), and two real
/// `MediaStream`s over a `SimulatedPacketPath`. The session's effects are carried out the way
/// `LiveCallMediaLoop` does: while interrupted the local side neither captures nor plays and discards every
/// datagram that arrives; `flushBuffers` discards what is queued (the transport's pending packets).
@Suite(.tags(.slow), .scheduledByTags, .serialized) struct FaultTests {
    /// What the interrupted side (B) went through.
    struct InterruptionRun {
        var playedB: [Int16] = []
        var inputA: [Int16] = []
        var beganEffects: [SessionEffect] = []
        var endedEffects: [SessionEffect] = []
        var endCause: CallEndCause?
        var endedAtSeconds: Double?
        var report: CallStatisticsReport?
        var discardedAtB = 0
        var statisticsA = MediaStreamStatistics()
        var statisticsB = MediaStreamStatistics()
        /// Buffer delay and target at A and B, once per 100 ms: (seconds, delay, target).
        var delayA: [(Double, Double, Double)] = []
        var delayB: [(Double, Double, Double)] = []
    }

    /// A two-way call where B's device is lost at `lossAt` seconds and comes back `backAfter` seconds later (nil:
    /// never), for `seconds` of call or until the session ends it.
    static func interruptedCall(
        seconds: Double, lossAt: Double, backAfter: Double?, reason: InterruptionReason = .deviceLost
    ) async throws -> InterruptionRun {
        let clock = ManualClock()
        let session = AudioSession(clock: clock)
        await session.startEngine()
        try await session.callEstablished("call")
        let path = try SimulatedPacketPath(
            aToB: .clean(delayMilliseconds: 30), bToA: .clean(delayMilliseconds: 30))
        let a = try MediaStream(configuration: StreamTestSupport.configuration(seed: 1_001), now: clock.now)
        let b = try MediaStream(configuration: StreamTestSupport.configuration(seed: 1_002), now: clock.now)
        final class Sink: MediaPacketSink {
            let path: SimulatedPacketPath
            let side: CallSide
            init(_ path: SimulatedPacketPath, _ side: CallSide) {
                self.path = path
                self.side = side
            }
            func send(_ d: UnsafeRawBufferPointer, kind: MediaPacketKind, now: MediaTime) {
                path.send(d, kind: kind, from: side, now: now)
            }
        }
        a.sink = Sink(path, .a)
        b.sink = Sink(path, .b)
        let inputA = StreamTestSupport.speech(seconds: seconds, seed: 1_003)
        let inputB = StreamTestSupport.speech(seconds: seconds, seed: 1_004)
        var run = InterruptionRun()
        run.inputA = inputA
        var frameA = AudioFrame(format: .mono16k)
        var frameB = AudioFrame(format: .mono16k)
        var paused = false
        let ticks = Int(seconds * 100)
        let lossTick = Int(lossAt * 100)
        let backTick = backAfter.map { lossTick + Int($0 * 100) }
        for tick in 0..<ticks {
            let now = clock.now
            func noteEnd(_ effects: [SessionEffect]) {
                for case .endCall(_, let cause) in effects {
                    run.endCause = cause
                    run.endedAtSeconds = now.seconds
                }
            }
            if tick == lossTick {
                run.beganEffects = await session.handle(.interruptionBegan(reason: reason))
                noteEnd(run.beganEffects)
                if run.beganEffects.contains(.stopCapture) { paused = true }
            }
            if tick == backTick {
                run.endedEffects = await session.handle(.interruptionEnded)
                noteEnd(run.endedEffects)
                if run.endedEffects.contains(.flushBuffers) {
                    // The transport's queue: nothing is queued between ticks in this harness (paused ticks
                    // discarded their datagrams already), so the flush has nothing stale left to drop.
                    paused = false
                }
            }
            if tick % 100 == 0 { noteEnd(await session.tick()) }
            if run.endCause != nil { break }
            path.deliver(to: .a, until: now) { a.receiveDatagram($0, arrival: $1) }
            path.deliver(to: .b, until: now) { bytes, arrival in
                if paused { run.discardedAtB += 1 } else { b.receiveDatagram(bytes, arrival: arrival) }
            }
            a.renderPlayout(into: &frameA, now: now)
            if paused {
                run.playedB += [Int16](repeating: 0, count: 160)
            } else {
                b.renderPlayout(into: &frameB, now: now)
                run.playedB += frameB.samples
            }
            a.processCapture(
                AudioFrame(format: .mono16k, samples: Array(inputA[(tick * 160)..<((tick + 1) * 160)])), now: now)
            if !paused {
                b.processCapture(
                    AudioFrame(format: .mono16k, samples: Array(inputB[(tick * 160)..<((tick + 1) * 160)])), now: now)
            }
            a.pollRTCP(now: now)
            b.pollRTCP(now: now)
            if tick % 10 == 0 {
                let ja = a.statistics.jitterBuffer
                let jb = b.statistics.jitterBuffer
                run.delayA.append((now.seconds, ja.currentDelayMilliseconds, ja.targetDelayMilliseconds))
                run.delayB.append((now.seconds, jb.currentDelayMilliseconds, jb.targetDelayMilliseconds))
            }
            clock.advance(by: .milliseconds(10))
        }
        run.report = await session.lastReport
        if run.endCause == nil { run.report = try await session.callEnded("call", cause: .localHangup) }
        run.statisticsA = a.statistics
        run.statisticsB = b.statistics
        return run
    }

    /// Seconds after `from` until the buffer delay is within `tolerance` ms of the target and stays there for
    /// 1 s; nil if never.
    static func settleTime(_ series: [(Double, Double, Double)], from: Double, tolerance: (Double) -> Double)
        -> Double?
    {
        let after = series.filter { $0.0 >= from }
        for (i, sample) in after.enumerated() {
            let window = after[i...].prefix(10)
            // A buffer with audio in it (an empty one is not "at target", however small the target).
            if window.count == 10 && window.allSatisfy({ $0.1 > 0 && abs($0.1 - $0.2) <= tolerance($0.2) }) {
                return sample.0 - from
            }
        }
        return nil
    }

    @Test(arguments: [5.0, 29.5])
    func deviceLostShorterThanTheTimeoutPausesThenResumesWithoutStaleAudio(outage: Double) async throws {
        let lossAt = 4.0
        let seconds = lossAt + outage + 6
        let run = try await Self.interruptedCall(seconds: seconds, lossAt: lossAt, backAfter: outage)
        #expect(run.beganEffects.contains(.stopCapture) && run.beganEffects.contains(.stopPlayout))
        #expect(run.beganEffects.contains(.deactivateSession))
        #expect(
            run.endedEffects == [
                .activateSession, .setVoiceProcessing(true), .flushBuffers, .startPlayout, .startCapture
            ])
        #expect(run.endCause == nil)
        #expect(run.report?.endCause == .localHangup)
        #expect(run.report?.interruptionCount == 1)
        #expect(abs((run.report?.interruptedDuration ?? 0) - outage) < 0.011)
        // Every datagram that reached B while it was paused was discarded (50 RTP/s from A, plus RTCP).
        #expect(run.discardedAtB >= Int(outage * 50) - 2)
        // Resumed: A's speech plays again within a second, and it is A's speech of now (no stale audio):
        // the best alignment of B's playout with A's input is the path delay plus the buffer, well under 0.5 s.
        let resume = Int((lossAt + outage) * 16_000)
        for second in 1..<5 {
            let level = StreamTestSupport.level(
                run.playedB[(resume + second * 16_000)..<(resume + (second + 1) * 16_000)])
            #expect(level > -40, "second \(second) after resuming: \(level) dBFS")
        }
        let window = resume + 16_000
        let lag = StreamTestSupport.lag(
            reference: Array(run.inputA[window..<(window + 48_000)]),
            test: Array(run.playedB[window..<(window + 56_000)]), maxLag: 8_000)
        let r = HostileSupport.correlation(
            run.inputA[window..<(window + 48_000)], run.playedB[(window + lag)..<(window + lag + 48_000)])
        let settleB = Self.settleTime(run.delayB, from: lossAt + outage) { max(20, 0.25 * $0) }
        let settleA = Self.settleTime(run.delayA, from: lossAt + outage) { max(20, 0.25 * $0) }
        let lastA = run.delayA.last!
        print(
            "interruption \(outage) s: discarded \(run.discardedAtB), lag after resume \(Double(lag) / 16) ms, "
                + "correlation \(r), B settles in \(settleB ?? -1) s, A settles in \(settleA ?? -1) s, "
                + "A delay/target at end \(lastA.1)/\(lastA.2) ms")
        #expect(Double(lag) / 16 < 500)
        #expect(r > 0.5)
        #expect((settleB ?? 99) <= 2)
        // The other side (A) saw B's media stop and restart: its buffer is back at target too.
        #expect((settleA ?? 99) <= 2)
        #expect(lastA.1 < 250)
    }

    @Test(arguments: [30.0, 45.0])
    func deviceLostLongerThanTheTimeoutEndsTheCallWithInterruptionTimeout(outage: Double) async throws {
        let lossAt = 3.0
        let run = try await Self.interruptedCall(seconds: lossAt + outage + 3, lossAt: lossAt, backAfter: outage)
        #expect(run.endCause == .interruptionTimeout)
        #expect(run.report?.endCause == .interruptionTimeout)
        #expect(run.report?.interruptedDuration == 30)
        #expect(run.report?.endedAt == lossAt + 30)
        // The session is ticked once a (simulated) second: the call ends at the first tick at or after the deadline.
        #expect(run.endedAtSeconds == lossAt + 30)
        // Coming back at or after the deadline resumes nothing: no flush, no microphone.
        #expect(!run.endedEffects.contains(.flushBuffers) && !run.endedEffects.contains(.startCapture))
    }

    @Test func deviceReturningAfterTheCallTimedOutChangesNothing() async throws {
        let clock = ManualClock()
        let session = AudioSession(clock: clock)
        await session.startEngine()
        try await session.callEstablished("call")
        #expect(await session.handle(.interruptionBegan(reason: .deviceLost)).contains(.stopCapture))
        clock.advance(by: .milliseconds(29_999))
        #expect(await session.tick().isEmpty)
        clock.advance(by: .milliseconds(1))
        let effects = await session.tick()
        #expect(effects.contains(.endCall("call", cause: .interruptionTimeout)))
        clock.advance(by: .milliseconds(5_000))
        let back = await session.handle(.interruptionEnded)
        #expect(!back.contains(.flushBuffers) && !back.contains(.startCapture))
        await #expect(throws: AudioSessionError.self) { try await session.callEnded("call", cause: .localHangup) }
        #expect(await session.lastReport?.endCause == .interruptionTimeout)
    }

    /// A PCM that transfers full periods with an `-EPIPE` after every other one, then disappears (`-ENODEV`).
    final class StormPCM: PCMIO {
        var script: [Int]
        init(script: [Int]) { self.script = script }
        func transfer(_ samples: UnsafeMutablePointer<Int16>, frames: Int) -> Int {
            guard !script.isEmpty else { return -Int(ENODEV) }
            let next = script.removeFirst()
            if next > 0 { for i in 0..<min(next, frames) { samples[i] = Int16(truncatingIfNeeded: i) } }
            return next > 0 ? min(next, frames) : next
        }
        func prepare() -> Int32 { 0 }
        func start() -> Int32 { 0 }
        func resume() -> Int32 { 0 }
        func wait(timeoutMilliseconds: Int32) -> PCMWaitResult { .ready }
    }

    /// 1 000 xruns in 2 000 periods through the real audio loop (capture and playout), with the events going to
    /// an audio session that holds an established call: every xrun is recovered and counted, every period still
    /// moves, the session ignores xruns (no interruption, call untouched), and the final device loss interrupts.
    @Test(arguments: [AudioDirection.capture, .playout])
    func xrunStormIsRecoveredAndCountedWithoutInterruptingTheCall(direction: AudioDirection) async throws {
        let periods = 2_000
        let period = 160
        var script: [Int] = []
        for i in 0..<periods {
            script.append(period)
            if i % 2 == 1 { script.append(-Int(EPIPE)) }
        }
        script.append(-Int(ENODEV))
        let pcm = StormPCM(script: script)
        let counters = DeviceCounters()
        let channel = DeviceEventChannel()
        let ring = SampleRing(capacity: periods * period + 64)
        if direction == .playout { _ = ring.write(contentsOf: [Int16](repeating: 7, count: periods * period)) }
        let loop = PCMLoop(
            io: pcm, direction: direction, periodFrames: period, channels: 1, ring: ring, counters: counters,
            events: channel, wakeup: try Wakeup(device: "storm"), timerSchedule: nil)
        loop.running.store(true, ordering: .releasing)

        let clock = ManualClock()
        let session = AudioSession(clock: clock)
        await session.startEngine()
        try await session.callEstablished("call")
        // The session consumes the events while the loop runs on its own thread, as `monitor(_:)` would.
        let consumer = Task { () -> [DeviceEvent] in
            var seen: [DeviceEvent] = []
            for await event in channel.stream {
                seen.append(event)
                if case .xrun = event {
                    // An xrun maps to no session event: the call stays established and uninterrupted.
                    #expect(await session.handle(event).isEmpty)
                    #expect(await session.state.isCaptureRunning)
                } else {
                    await session.handle(event)
                }
            }
            return seen
        }
        let exit = await withCheckedContinuation { (c: CheckedContinuation<PCMLoopExit, Never>) in
            Thread {
                let result = loop.run()
                channel.finish()
                c.resume(returning: result)
            }.start()
        }
        let events = await consumer.value
        #expect(exit == .failed(.deviceLost))
        #expect(counters.snapshot.xruns == periods / 2)
        #expect(counters.snapshot.periods == Int64(periods))
        if direction == .capture { #expect(ring.availableToRead == periods * period) }
        // Events are bounded (the newest 256 are kept if the consumer falls behind); the counter is exact, and
        // the xrun events seen are in order and the last carries the total.
        let xrunCounts = events.compactMap { if case .xrun(let n) = $0 { n } else { nil } }
        #expect(xrunCounts == xrunCounts.sorted())
        #expect(xrunCounts.last == periods / 2)
        #expect(events.last == .interruptionBegan(reason: .deviceLost))
        let state = await session.state
        #expect(state.isInterrupted)
        #expect(state.phase.isEstablished)
        print("xrun storm (\(direction)): \(counters.snapshot.xruns) xruns, \(events.count) events seen")
    }

    /// A 10 s network outage in the middle of a 30 s call (both directions; packets sent during it are lost, then
    /// held and released at once): the buffer delay is back at its target within 2 s of the end.
    @Test(arguments: [Outage.Behaviour.drop, .hold])
    func tenSecondOutageRecoversBufferDelayWithinTwoSeconds(behaviour: Outage.Behaviour) throws {
        let outage = Outage(start: .milliseconds(10_000), duration: .milliseconds(10_000), behaviour: behaviour)
        func network(seed: UInt64) -> CallNetwork {
            .conditions(
                NetworkConditions(
                    baseDelayMilliseconds: 40, jitter: .normal(meanMilliseconds: 5, standardDeviationMilliseconds: 5),
                    outages: [outage], seed: seed))
        }
        let path = try SimulatedPacketPath(aToB: network(seed: 3), bToA: network(seed: 4))
        let sim = try CallSimulation(
            configuration: .init(
                streamA: StreamTestSupport.configuration(seed: 1_101),
                streamB: StreamTestSupport.configuration(seed: 1_102),
                inputA: StreamTestSupport.speech(seconds: 30, seed: 1_103),
                inputB: StreamTestSupport.speech(seconds: 30, seed: 1_104), durationMilliseconds: 30_000),
            path: path)
        let result = sim.run()
        let lostAtB = path.fates(from: .a).filter(\.isLost).count
        for side in CallSide.allCases {
            let series = result.timeline.filter { $0.side == side }.map {
                ($0.timeSeconds, $0.bufferDelayMilliseconds, $0.targetDelayMilliseconds)
            }
            let before = series.filter { (5..<10).contains($0.0) }
            let targetBefore = before.map(\.2).reduce(0, +) / Double(before.count)
            // The outage ends at 20 s for packets sent then; they arrive a path delay later.
            let settle = Self.settleTime(series, from: 20.05) { max(10, 0.3 * $0) }
            let after = series.filter { (25..<30).contains($0.0) }
            let targetAfter = after.map(\.2).reduce(0, +) / Double(after.count)
            let delayAfter = after.map(\.1).reduce(0, +) / Double(after.count)
            print(
                "outage \(behaviour) side \(side): target before \(targetBefore) ms, settles in \(settle ?? -1) s, "
                    + "target after \(targetAfter) ms, delay after \(delayAfter) ms")
            #expect((settle ?? 99) <= 2, "side \(side) took \(settle ?? -1) s")
            #expect(delayAfter < targetBefore + 60)
        }
        let b = result.statisticsB
        // Counters: what the network dropped is what B counts lost (no duplicates configured).
        #expect(b.lostPackets == lostAtB)
        #expect(b.drops.total == 0)
        // sent = accepted + lost + still in flight (RFC 3550's own received/expected start after the probation packet).
        #expect(result.statisticsA.packetsSent == b.packetsReceived + b.lostPackets + path.inFlight(from: .a))
        // Speech plays again right after the outage, with little concealment.
        let resumed = StreamTestSupport.level(result.playedB[(16_000 * 21)..<(16_000 * 23)])
        #expect(resumed > -40)
        #expect(b.jitterBuffer.flushes <= 2)
    }
}
