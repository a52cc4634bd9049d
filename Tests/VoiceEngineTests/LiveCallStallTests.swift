import Foundation
import Testing
import VoiceEngine
import VoiceLab
import VoiceTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// A stall of the media thread — both ends of a call on it, so the senders and the receivers stop together — must
/// cost at most the audio that truly missed its deadline, not a rebuild of the jitter buffer's delay for the rest
/// of the call, and must leave the send latency where it was: the microphone's ring back at its pre-stall level.
/// Nested in ``LiveCallTests`` so it is serialised with the other live calls.
///
/// The stall is real: every `voice-media` thread of this process is pinned to CPU 0 and a thread at a higher
/// SCHED_FIFO priority than theirs (10) spins there, as another real-time workload on the same core would. 40 ms
/// is within `LiveCallOptions.maximumLagTicks` (the ticker then runs the missed ticks back to back); 80 ms is past
/// it (the ticker skips them).
extension LiveCallTests {
    @Suite(.tags(.live, .root), .scheduledByTags) struct Stall {
        @Test(
            .enabled(
                if: FileManager.default.fileExists(atPath: LiveCallTests.speech),
                "TestVectors/speech_like_16k.wav missing"),
            .enabled(
                if: geteuid() == 0, "needs root: the stall is a SCHED_FIFO thread above the media thread's priority"),
            .timeLimit(.minutes(1)),
            arguments: [40, 80])
        func aStallOfBothEndsConcealsNoMoreThanItself(milliseconds: Int) async throws {
            let format = LiveCallTests.format
            let (keysA, keysB) = StreamTestSupport.srtpPair()
            let polled = UDPMediaTransport.Configuration(receive: .consumerPolls)
            let transportA = try await UDPMediaTransport.bind(host: "127.0.0.1", port: 0, configuration: polled)
            let transportB = try await UDPMediaTransport.bind(
                host: "127.0.0.1", port: 0, remote: transportA.localEndpoint, configuration: polled)
            func call(_ name: String, _ keys: MediaStreamSRTP, _ transport: UDPMediaTransport) throws -> LiveCall {
                // As `voice-engine call` opens file and null devices: clocked by the media thread, which then
                // stalls the devices too.
                let clocking = DeviceClocking.manual(MonotonicClock())
                return try LiveCall(
                    callID: CallID(name),
                    configuration: StreamTestSupport.configuration(seed: name == "a" ? 11 : 22, srtp: keys),
                    transport: transport,
                    capture: try FileCaptureDevice(
                        path: LiveCallTests.speech, format: format, clocking: clocking, endOfFile: .loop),
                    playout: try NullAudioDevice(direction: .playout, format: format, clocking: clocking))
            }
            let a = try call("a", keysA, transportA), b = try call("b", keysB, transportB)
            try a.start()
            try b.start()
            // Settle first (the buffers' delay and histogram learnt), then stall, then run on long enough for a
            // buffer that rebuilds its delay to show it (main's code: 460-530 ms concealed after one 40 ms stall).
            try await Task.sleep(for: .milliseconds(1_300))
            // What the capture rings hold after each tick's read (the microphone's share of the send latency),
            // sampled every 10 ms for 200 ms: before the stall, and from 1 s after it.
            func backlogs() async throws -> [(a: Int, b: Int)] {
                var seen: [(a: Int, b: Int)] = []
                for _ in 0..<20 {
                    seen.append((a.statistics.captureBacklogSamples, b.statistics.captureBacklogSamples))
                    try await Task.sleep(for: .milliseconds(10))
                }
                return seen
            }
            let before = try await backlogs()
            let stall = MediaThreadStall.run(milliseconds: milliseconds)
            try await Task.sleep(for: .milliseconds(1_000))
            let after = try await backlogs()
            try await Task.sleep(for: .milliseconds(1_600))
            async let endA = a.stop()
            async let endB = b.stop()
            let (resultA, resultB) = await (endA, endB)

            #expect(stall.mediaThreads > 0, "no voice-media thread to stall")
            #expect(stall.realtime, "the spinner was refused SCHED_FIFO: no stall")
            let block = format.samplesPerBlock
            for (name, result, backlogBefore, backlogAfter) in [
                ("A", resultA, before.map(\.a), after.map(\.a)), ("B", resultB, before.map(\.b), after.map(\.b))
            ] {
                let r = result.report
                let s = result.statistics
                let concealedMilliseconds = Double(r.jitterBuffer.concealedSamples) * 1000 / Double(format.sampleRate)
                print(
                    "stall \(milliseconds) ms (spun \(stall.spunMilliseconds) ms on \(stall.mediaThreads) thread(s)), "
                        + "\(name): ticks begun a tick late \(s.delayedTicks), skipped \(s.lateTicks), received "
                        + "\(r.rtp.received)/\(r.rtp.expected), concealed \(concealedMilliseconds) ms "
                        + "(\(r.jitterBuffer.concealmentRatio)), late packets \(r.jitterBuffer.latePackets), "
                        + "accelerated \(r.jitterBuffer.acceleratedSamples), slowed \(r.jitterBuffer.slowedDownSamples); "
                        + "capture backlog before \(backlogBefore.min()!)-\(backlogBefore.max()!), 1 s after "
                        + "\(backlogAfter.min()!)-\(backlogAfter.max()!) samples, discarded \(s.captureDiscardedSamples), "
                        + "catch-ups \(s.captureCatchUps)")
                #expect(result.wasEstablished, "\(name) never saw media both ways")
                // The stall reached this call: a tick began a whole tick late, or ticks were skipped.
                #expect(s.delayedTicks + s.lateTicks > 0, "\(name)'s media thread was not stalled")
                #expect(r.rtp.lost == 0, "\(name) lost \(r.rtp.lost) packets on loopback")
                // At most the stall itself and a tick: what truly missed its deadline. Taking the late wake-up as
                // delay gained concealed 460 and 530 ms here after one 40 ms stall, steering the delay too low for
                // the rest of the call (Benchmarks/README.md §6).
                #expect(
                    concealedMilliseconds <= Double(milliseconds + 10),
                    "\(name) concealed \(concealedMilliseconds) ms after a \(milliseconds) ms stall")
                // The send latency recovers: a second after the stall the capture ring holds no more than it did
                // before it (at least once in 200 ms; a late tick may catch the ring between a period and its
                // read). Main's code left an 80 ms stall's capture queued for good: 6-7 blocks where 1 was.
                #expect(
                    backlogAfter.min()! <= max(backlogBefore.max()!, block),
                    "\(name)'s capture ring holds \(backlogAfter.min()!) samples 1 s after the stall, \(backlogBefore.max()!) before"
                )
                // Skipped ticks' capture is dropped (and counted), never sent late.
                if s.lateTicks > 0 {
                    #expect(
                        s.captureDiscardedSamples > 0, "\(name) skipped \(s.lateTicks) ticks and dropped no capture")
                }
            }
        }
    }
}

/// A real stall of this process's media threads: they are pinned to CPU 0, where a thread at SCHED_FIFO 50 spins
/// for the given time, then they get their CPUs back. Other threads keep the other cores.
enum MediaThreadStall {
    struct Outcome {
        var mediaThreads = 0
        var realtime = false
        var spunMilliseconds = 0.0
    }

    private typealias SetAffinity = @convention(c) (pid_t, Int, UnsafeRawPointer) -> Int32
    private typealias GetAffinity = @convention(c) (pid_t, Int, UnsafeMutableRawPointer) -> Int32

    /// `sched_setaffinity` / `sched_getaffinity` (tid 0: the calling thread). Not in Swift's Glibc module (a
    /// _GNU_SOURCE declaration): looked up by name.
    private static func setAffinity(_ tid: pid_t, _ mask: cpu_set_t) -> Int32 {
        guard let f = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "sched_setaffinity") else { return -1 }
        return withUnsafeBytes(of: mask) { unsafeBitCast(f, to: SetAffinity.self)(tid, $0.count, $0.baseAddress!) }
    }

    private static func affinity(of tid: pid_t) -> cpu_set_t? {
        guard let f = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "sched_getaffinity") else { return nil }
        var mask = cpu_set_t()
        let rc = withUnsafeMutableBytes(of: &mask) {
            unsafeBitCast(f, to: GetAffinity.self)(tid, $0.count, $0.baseAddress!)
        }
        return rc == 0 ? mask : nil
    }

    private static var firstCPU: cpu_set_t {
        var mask = cpu_set_t()
        withUnsafeMutableBytes(of: &mask.__bits) { $0.storeBytes(of: UInt64(1), as: UInt64.self) }
        return mask
    }

    static func run(milliseconds: Int) -> Outcome {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        var pinned: [(pid_t, cpu_set_t)] = []
        for task in tasks {
            guard let tid = pid_t(task),
                let name = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8),
                name.trimmingCharacters(in: .whitespacesAndNewlines) == "voice-media"
            else { continue }
            guard let old = affinity(of: tid), setAffinity(tid, firstCPU) == 0 else { continue }
            pinned.append((tid, old))
        }
        defer { for (tid, old) in pinned { _ = setAffinity(tid, old) } }

        let result = SpinResult()
        let done = DispatchSemaphore(value: 0)
        let spinner = Thread {
            _ = setAffinity(0, firstCPU)
            var parameters = sched_param()
            parameters.sched_priority = 50
            result.realtime = pthread_setschedparam(pthread_self(), SCHED_FIFO, &parameters) == 0
            let start = MonotonicClock().now.nanoseconds
            var now = start
            while now - start < Int64(milliseconds) * 1_000_000 { now = MonotonicClock().now.nanoseconds }
            result.spunMilliseconds = Double(now - start) / 1e6
            done.signal()
        }
        spinner.start()
        done.wait()
        return Outcome(mediaThreads: pinned.count, realtime: result.realtime, spunMilliseconds: result.spunMilliseconds)
    }

    /// Written by the spinner before it signals, read after the wait.
    private final class SpinResult: @unchecked Sendable {
        var realtime = false
        var spunMilliseconds = 0.0
    }
}
