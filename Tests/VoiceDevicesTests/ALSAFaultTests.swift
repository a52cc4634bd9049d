import Synchronization
import Testing
import VoiceCore

@testable import VoiceDevices
import VoiceTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Faults the null PCM cannot produce (xrun, suspend, device loss, busy): the pure code-to-fault mapping, and
/// the real audio loop (`PCMLoop`) driven by a scripted PCM that returns those codes.
@Suite(.tags(.live), .scheduledByTags) struct ALSAFaultTests {
    @Test func errnoCodesMapToFaultsAndInterruptions() {
        #expect(ALSAFault(code: -Int(EPIPE)) == .xrun)
        #expect(ALSAFault(code: -Int(EPIPE)).interruptionReason == nil)
        #expect(ALSAFault(code: -Int(ESTRPIPE)).interruptionReason == .suspended)
        #expect(!ALSAFault(code: -Int(ESTRPIPE)).isTerminal)
        for lost in [ENODEV, ENXIO, EBADFD, EIO, ESHUTDOWN] {
            #expect(ALSAFault(code: -Int(lost)).interruptionReason == .deviceLost)
            #expect(ALSAFault(code: -Int(lost)).isTerminal)
        }
        #expect(ALSAFault(code: -Int(EBUSY)).interruptionReason == .deviceBusy)
        #expect(ALSAFault(code: -Int(EAGAIN)) == .wouldBlock)
        #expect(ALSAFault(code: -Int(EINTR)) == .interrupted)
        #expect(ALSAFault(code: -Int(EINVAL)) == .other(code: -Int(EINVAL)))
    }

    @Test func busyAtOpenIsADeviceBusyInterruption() {
        let error = ALSAError.callFailed(
            call: "snd_pcm_open", device: "hw:0,0", code: -EBUSY, message: "Device or resource busy")
        #expect(error.interruptionReason == .deviceBusy)
        #expect(error.identifier == "alsa.deviceBusy")
        #expect(error.description.contains("another client"))
    }

    /// A PCM that replays a script of return codes for its transfers (positive = frames moved).
    final class ScriptedPCM: PCMIO {
        var transfers: [Int]
        var resumes: [Int32]
        var prepareResults: [Int32] = []
        var calls: [String] = []
        let wakeup: Wakeup?
        var sawWakeup = false
        let enteredWait = Atomic<Bool>(false)

        init(transfers: [Int], resumes: [Int32] = [], wakeup: Wakeup? = nil) {
            self.transfers = transfers
            self.resumes = resumes
            self.wakeup = wakeup
        }

        func transfer(_ samples: UnsafeMutablePointer<Int16>, frames: Int) -> Int {
            calls.append("transfer")
            guard !transfers.isEmpty else { return -Int(EAGAIN) }
            let next = transfers.removeFirst()
            if next > 0 {
                let n = min(next, frames)
                for i in 0..<n { samples[i] = Int16(truncatingIfNeeded: i + 1) }
                return n
            }
            return next
        }
        func prepare() -> Int32 {
            calls.append("prepare")
            return prepareResults.isEmpty ? 0 : prepareResults.removeFirst()
        }
        func start() -> Int32 {
            calls.append("start")
            return 0
        }
        func resume() -> Int32 {
            calls.append("resume")
            return resumes.isEmpty ? 0 : resumes.removeFirst()
        }
        /// A device that never becomes ready: blocks until the wakeup pipe is signalled (or a long timeout).
        func wait(timeoutMilliseconds: Int32) -> PCMWaitResult {
            calls.append("wait")
            guard let wakeup else { return .timeout }
            enteredWait.store(true, ordering: .releasing)
            var descriptor = pollfd(fd: wakeup.readDescriptor, events: Int16(POLLIN), revents: 0)
            if poll(&descriptor, 1, 60_000) > 0 {
                sawWakeup = true
                return .wakeup
            }
            return .timeout
        }
    }

    func makeLoop(_ pcm: ScriptedPCM, direction: AudioDirection = .capture, wakeup: Wakeup? = nil)
        throws -> (PCMLoop<ScriptedPCM>, DeviceCounters, DeviceEventChannel)
    {
        let counters = DeviceCounters()
        let channel = DeviceEventChannel()
        let loop = PCMLoop(
            io: pcm, direction: direction, periodFrames: 4, channels: 1, ring: SampleRing(capacity: 64),
            counters: counters, events: channel, wakeup: try wakeup ?? Wakeup(device: "scripted"), timerSchedule: nil)
        loop.running.store(true, ordering: .releasing)
        return (loop, counters, channel)
    }

    @Test func xrunIsRecoveredWithPrepareCountedAndReported() async throws {
        let lost = -Int(ENODEV)
        let pcm = ScriptedPCM(transfers: [4, 2, -Int(EPIPE), 2, 4, -Int(EPIPE), 4, lost])
        let (loop, counters, channel) = try makeLoop(pcm)
        #expect(loop.run() == .failed(.deviceLost))
        channel.finish()
        #expect(
            await collect(channel.stream) == [
                .xrun(count: 1), .xrun(count: 2), .interruptionBegan(reason: .deviceLost)
            ])
        #expect(counters.snapshot.xruns == 2)
        #expect(counters.snapshot.periods == 4)  // 4 | 2+2 | 4 | 4: partial periods carry over an xrun
        #expect(pcm.calls.filter { $0 == "prepare" }.count == 2)
        #expect(pcm.calls.filter { $0 == "start" }.count == 3)  // initial start, and after each prepare
        #expect(loop.ring.availableToRead == 16)
    }

    @Test func suspendIsAnInterruptionThatEndsAfterResume() async throws {
        let pcm = ScriptedPCM(
            transfers: [4, -Int(ESTRPIPE), 4, -Int(ENODEV)], resumes: [-EAGAIN, -EAGAIN, 0])
        let (loop, counters, channel) = try makeLoop(pcm, direction: .playout)
        #expect(loop.run() == .failed(.deviceLost))
        channel.finish()
        #expect(
            await collect(channel.stream) == [
                .interruptionBegan(reason: .suspended), .interruptionEnded, .interruptionBegan(reason: .deviceLost)
            ])
        #expect(counters.snapshot.suspends == 1)
        #expect(pcm.calls.filter { $0 == "resume" }.count == 3)
        #expect(!pcm.calls.contains("prepare"))
    }

    @Test func suspendThatCannotResumeIsPreparedAfresh() async throws {
        let pcm = ScriptedPCM(transfers: [-Int(ESTRPIPE), 4, -Int(EBUSY)], resumes: [-ENOSYS])
        let (loop, _, channel) = try makeLoop(pcm)
        #expect(loop.run() == .failed(.deviceBusy))
        channel.finish()
        #expect(
            await collect(channel.stream) == [
                .interruptionBegan(reason: .suspended), .interruptionEnded, .interruptionBegan(reason: .deviceBusy)
            ])
        #expect(pcm.calls.contains("prepare"))
    }

    @Test func repeatedUnknownErrorsCountAsDeviceLoss() async throws {
        let pcm = ScriptedPCM(transfers: Array(repeating: -Int(EINVAL), count: 10))
        let (loop, _, channel) = try makeLoop(pcm)
        #expect(loop.run() == .failed(.deviceLost))
        channel.finish()
        #expect(await collect(channel.stream) == [.interruptionBegan(reason: .deviceLost)])
        #expect(pcm.calls.filter { $0 == "transfer" }.count == 4)
    }

    @Test func deviceLostWhileRecoveringFromXrunEndsTheLoop() async throws {
        let pcm = ScriptedPCM(transfers: [-Int(EPIPE)])
        pcm.prepareResults = [-ENODEV]
        let (loop, _, channel) = try makeLoop(pcm, direction: .playout)
        #expect(loop.run() == .failed(.deviceLost))
        channel.finish()
        #expect(await collect(channel.stream) == [.xrun(count: 1), .interruptionBegan(reason: .deviceLost)])
    }

    @Test func stopWakesAThreadBlockedWaitingForTheDevice() throws {
        let wakeup = try Wakeup(device: "scripted")
        let pcm = ScriptedPCM(transfers: [], wakeup: wakeup)  // never ready: every transfer is -EAGAIN
        let (loop, counters, _) = try makeLoop(pcm, wakeup: wakeup)
        let thread = try AudioThread(
            device: "scripted", threadName: "scripted", realtimePriority: nil, counters: counters
        ) {
            _ = loop.run()
        }
        #expect(waitUntil { pcm.enteredWait.load(ordering: .acquiring) })
        loop.running.store(false, ordering: .releasing)
        wakeup.signal()
        thread.join()
        #expect(pcm.sawWakeup)
        #expect(counters.snapshot.periods == 0)
    }
}
