import Synchronization
import VoiceCore

#if canImport(Glibc)
import Glibc
#endif

/// What waiting for a PCM to become ready ended with.
enum PCMWaitResult: Equatable {
    case ready
    case wakeup
    case timeout
    case error(code: Int)
}

/// The PCM operations the audio loop uses, as ALSA return codes (frames ≥ 0 or a negative errno). The ALSA
/// handle implements it; tests implement it with scripted faults to drive the real recovery code.
protocol PCMIO: AnyObject {
    /// `snd_pcm_readi` (capture) or `snd_pcm_writei` (playout) of up to `frames` interleaved frames.
    func transfer(_ samples: UnsafeMutablePointer<Int16>, frames: Int) -> Int
    func prepare() -> Int32
    func start() -> Int32
    func resume() -> Int32
    /// Waits until the PCM can transfer, the wakeup is signalled, or the timeout passes.
    func wait(timeoutMilliseconds: Int32) -> PCMWaitResult
}

/// Why the loop returned.
enum PCMLoopExit: Equatable {
    /// The control plane stopped it.
    case stopped
    /// A fault it cannot recover from; the interruption event has been sent.
    case failed(InterruptionReason)
}

/// The audio thread's loop for an ALSA device: moves whole periods between the PCM and the ring through a
/// preallocated buffer, recovers from xruns and suspends, and reports faults as events. Generic over the PCM
/// so tests drive the same code with injected faults.
///
/// Allocation-free per period: the buffer is allocated once; ring, counters and the PCM calls do not allocate.
/// Events (faults only) go through the event channel.
final class PCMLoop<IO: PCMIO>: @unchecked Sendable {
    // @unchecked Sendable: everything but `running` is touched only by the one thread running `run()`, which
    // the owning device starts after setting the loop up and joins before touching it again.
    let io: IO
    let direction: AudioDirection
    let periodFrames: Int
    let channels: Int
    let ring: SampleRing
    let counters: DeviceCounters
    let events: DeviceEventChannel
    let wakeup: Wakeup
    /// Non-nil: the PCM does not pace itself (the null PCM), so the loop waits for each period's deadline.
    let timerSchedule: PeriodSchedule?
    let running = Atomic<Bool>(false)
    /// Runs on this thread after each complete period (``PeriodDrivingDevice``); set only while no thread runs.
    var periodHandler: (@Sendable () -> Void)?
    /// Faults other than the known ones tolerated in a row before the device counts as lost.
    let maximumConsecutiveFailures = 3
    /// Bounded waits: even a PCM that never becomes ready lets the loop look at `running` this often.
    let waitTimeoutMilliseconds: Int32 = 500

    private let buffer: UnsafeMutableBufferPointer<Int16>
    private var consecutiveFailures = 0

    init(
        io: IO, direction: AudioDirection, periodFrames: Int, channels: Int, ring: SampleRing,
        counters: DeviceCounters, events: DeviceEventChannel, wakeup: Wakeup, timerSchedule: PeriodSchedule?
    ) {
        self.io = io
        self.direction = direction
        self.periodFrames = periodFrames
        self.channels = channels
        self.ring = ring
        self.counters = counters
        self.events = events
        self.wakeup = wakeup
        self.timerSchedule = timerSchedule
        buffer = .allocate(capacity: periodFrames * channels)
        buffer.initialize(repeating: 0)
    }

    deinit { buffer.deallocate() }

    private enum Step {
        case proceed
        case exit(PCMLoopExit)
    }

    /// Runs until stopped or a terminal fault. The PCM must have been prepared.
    func run() -> PCMLoopExit {
        consecutiveFailures = 0
        var filled = 0
        if direction == .playout { refillFromRing() }
        if direction == .capture {
            let rc = io.start()
            if rc < 0, case .exit(let exit) = recover(fromSecondary: Int(rc)) { return exit }
        }
        let start = monotonicNanoseconds()
        var periodIndex: Int64 = 0
        while running.load(ordering: .acquiring) {
            if let schedule = timerSchedule, filled == 0 {
                guard wakeup.sleep(untilMonotonic: start + schedule.endOfPeriod(periodIndex)) else { break }
                guard running.load(ordering: .acquiring) else { break }
            }
            let result = io.transfer(buffer.baseAddress! + filled * channels, frames: periodFrames - filled)
            if result > 0 {
                consecutiveFailures = 0
                filled += result
                if filled == periodFrames {
                    completePeriod()
                    filled = 0
                    periodIndex += 1
                }
                continue
            }
            let step = result == 0 ? waitForDevice() : recover(from: result)
            if case .exit(let exit) = step { return exit }
        }
        return .stopped
    }

    private func completePeriod() {
        let count = buffer.count
        switch direction {
        case .capture:
            let written = ring.write(UnsafeBufferPointer(buffer))
            if written < count { counters.ringOverflowSamples.add(Int64(count - written), ordering: .relaxed) }
            counters.recordPeriod(frameCount: periodFrames, at: MediaTime(nanoseconds: monotonicNanoseconds()))
            periodHandler?()
        case .playout:
            counters.recordPeriod(frameCount: periodFrames, at: MediaTime(nanoseconds: monotonicNanoseconds()))
            periodHandler?()
            refillFromRing()
        }
    }

    private func refillFromRing() {
        let read = ring.read(into: buffer)
        if read < buffer.count {
            UnsafeMutableBufferPointer(rebasing: buffer[read...]).update(repeating: 0)
            counters.ringUnderflowSamples.add(Int64(buffer.count - read), ordering: .relaxed)
        }
    }

    private func waitForDevice() -> Step {
        switch io.wait(timeoutMilliseconds: waitTimeoutMilliseconds) {
        case .ready, .timeout, .wakeup: return .proceed  // the loop re-checks `running`
        case .error(let code): return recover(fromSecondary: code)
        }
    }

    /// The recovery for a failed transfer.
    private func recover(from code: Int) -> Step {
        let fault = ALSAFault(code: code)
        switch fault {
        case .wouldBlock:
            return waitForDevice()
        case .interrupted:
            return .proceed
        case .xrun:
            let total = counters.xruns.add(1, ordering: .relaxed).newValue
            events.send(.xrun(count: total))
            return restart()
        case .suspended:
            counters.suspends.add(1, ordering: .relaxed)
            events.send(.interruptionBegan(reason: .suspended))
            var rc = io.resume()
            while rc == -EAGAIN {
                // Resume is still in progress in the driver; look again in 100 ms, or leave when stopped.
                let next = monotonicNanoseconds() + 100_000_000
                guard wakeup.sleep(untilMonotonic: next), running.load(ordering: .acquiring) else {
                    return .exit(.stopped)
                }
                rc = io.resume()
            }
            if rc < 0 {
                // The device cannot resume where it was: start it afresh.
                if case .exit(let exit) = restart() { return .exit(exit) }
            } else if direction == .capture {
                let started = io.start()
                if started < 0, case .exit(let exit) = recover(fromSecondary: Int(started)) { return .exit(exit) }
            }
            events.send(.interruptionEnded)
            return .proceed
        case .deviceLost, .deviceBusy:
            return fail(fault.interruptionReason!)
        case .other:
            consecutiveFailures += 1
            if consecutiveFailures > maximumConsecutiveFailures { return fail(.deviceLost) }
            return restart()
        }
    }

    /// `snd_pcm_prepare` (and `snd_pcm_start` for capture) after an xrun or an unknown error.
    private func restart() -> Step {
        let prepared = io.prepare()
        if prepared < 0 { return recover(fromSecondary: Int(prepared)) }
        if direction == .capture {
            let started = io.start()
            if started < 0 { return recover(fromSecondary: Int(started)) }
        }
        return .proceed
    }

    /// A failure of a recovery call itself: terminal faults end the loop, others count towards the limit.
    private func recover(fromSecondary code: Int) -> Step {
        let fault = ALSAFault(code: code)
        if let reason = fault.interruptionReason, fault.isTerminal { return fail(reason) }
        consecutiveFailures += 1
        if consecutiveFailures > maximumConsecutiveFailures { return fail(.deviceLost) }
        return .proceed
    }

    private func fail(_ reason: InterruptionReason) -> Step {
        events.send(.interruptionBegan(reason: reason))
        return .exit(.failed(reason))
    }
}
