import Synchronization
import VoiceCore

/// How a file-backed or null device keeps time.
public enum DeviceClocking: Sendable {
    /// A dedicated thread wakes at absolute `CLOCK_MONOTONIC` deadlines (start + k periods), so no drift
    /// accumulates; after a stall longer than the device buffer it skips ahead and counts an xrun, like a device.
    case realTime
    /// Fast time: nothing runs by itself; each ``ClockedAudioDevice/tick()`` transfers exactly the periods
    /// that are due by `clock.now` since `start()`. Deterministic, for tests and the network simulator.
    case manual(any MediaClock)
}

/// What a clocked device does with each period (internal: file, null).
protocol PeriodPort: AnyObject {
    /// Capture: fills `buffer` (all of it). Returns true the first time the input has run out.
    func fill(_ buffer: UnsafeMutableBufferPointer<Int16>) -> Bool
    /// Playout: takes `buffer` (what is played).
    func consume(_ buffer: UnsafeBufferPointer<Int16>)
    /// Control plane, on close: release or finalise. Called once, with no period in flight.
    func finish()
}

/// The shared engine of the file-backed and null devices: a period loop on a real-time timer thread or
/// driven by a `MediaClock`, moving whole periods between a port (the file, silence) and the ring.
///
/// Not instantiated directly: use ``FileCaptureDevice``, ``FilePlayoutDevice`` or ``NullAudioDevice``.
/// A running real-time device keeps itself alive until it is stopped or closed.
public class ClockedAudioDevice: AudioDevice, @unchecked Sendable {
    // @unchecked Sendable: the control state (`control`) is behind a Mutex; counters, state and the running
    // flag are atomics; the period buffer, the port and `manualPeriodsDone`/`startNanoseconds` are touched
    // only by the audio side — the device thread (real time), whose start and join order it against the
    // control plane, or the single caller of `tick()`/`transferOnePeriod()` (manual), as documented there.

    public let name: String
    public let direction: AudioDirection
    public let format: AudioFormat
    public let periodFrames: Int
    public let ring: SampleRing
    public let clocking: DeviceClocking
    /// SCHED_FIFO priority asked for the real-time thread, or nil for normal scheduling.
    public let realtimePriority: Int32?
    /// How many periods late a real-time device may fall before it skips ahead and counts an xrun.
    public let maximumLagPeriods: Int

    let port: PeriodPort
    private let schedule: PeriodSchedule
    private let counters = DeviceCounters()
    private let channel = DeviceEventChannel()
    private let stateCell = DeviceStateCell()
    private let running = Atomic<Bool>(false)
    private let wakeup: Wakeup
    private let buffer: UnsafeMutableBufferPointer<Int16>
    private let control = Mutex<AudioThread?>(nil)
    private var startNanoseconds: Int64 = 0
    private var periodsDone: Int64 = 0

    init(
        name: String, direction: AudioDirection, format: AudioFormat, periodMilliseconds: Int,
        clocking: DeviceClocking, ring: SampleRing?, realtimePriority: Int32?, port: PeriodPort
    ) throws(AudioDeviceError) {
        guard periodMilliseconds > 0, (format.sampleRate * periodMilliseconds) % 1000 == 0 else {
            throw .invalidPeriod(milliseconds: periodMilliseconds, format: format)
        }
        self.name = name
        self.direction = direction
        self.format = format
        self.periodFrames = format.samplesPerChannel(milliseconds: periodMilliseconds)
        self.clocking = clocking
        self.realtimePriority = realtimePriority
        self.maximumLagPeriods = 4
        self.port = port
        self.ring = ring ?? SampleRing(capacity: periodFrames * format.channels * 32)
        self.schedule = PeriodSchedule(sampleRate: format.sampleRate, periodFrames: periodFrames)
        self.wakeup = try Wakeup(device: name)
        self.buffer = .allocate(capacity: periodFrames * format.channels)
        buffer.initialize(repeating: 0)
    }

    deinit {
        close()
        buffer.deallocate()
    }

    public var events: AsyncStream<DeviceEvent> { channel.stream }
    public var statistics: DeviceStatistics { counters.snapshot }
    public var state: DeviceState { stateCell.value }
    public var latestClockObservation: ClockObservation? { counters.latestObservation }

    /// Starts the period clock: a real-time device starts its thread; a manual device takes `clock.now` as the
    /// start, so the first `tick()` at or after one period later transfers the first period.
    /// - Throws: ``AudioDeviceError/closed(device:)``, ``AudioDeviceError/threadCreationFailed(device:code:)``.
    public func start() throws(AudioDeviceError) {
        try control.withLock { (thread: inout AudioThread?) throws(AudioDeviceError) in
            switch stateCell.value {
            case .running: return
            case .closed: throw .closed(device: name)
            case .failed: throw .failed(device: name)
            case .stopped: break
            }
            periodsDone = 0
            switch clocking {
            case .manual(let clock):
                startNanoseconds = clock.now.nanoseconds
                running.store(true, ordering: .releasing)
                stateCell.set(.running)
            case .realTime:
                wakeup.drain()
                startNanoseconds = monotonicNanoseconds()
                running.store(true, ordering: .releasing)
                do throws(AudioDeviceError) {
                    thread = try AudioThread(
                        device: name, threadName: "voice-\(direction)", realtimePriority: realtimePriority,
                        counters: counters
                    ) { self.runRealTime() }
                } catch {
                    running.store(false, ordering: .releasing)
                    throw error
                }
                stateCell.set(.running)
            }
        }
    }

    public func stop() {
        control.withLock { thread in
            guard stateCell.value == .running else { return }
            running.store(false, ordering: .releasing)
            wakeup.signal()
            thread?.join()
            thread = nil
            stateCell.set(.stopped)
        }
    }

    public func close() {
        stop()
        let finish = control.withLock { _ -> Bool in
            guard stateCell.value != .closed else { return false }
            stateCell.set(.closed)
            return true
        }
        if finish {
            port.finish()
            channel.finish()
        }
    }

    /// Manual clocking: transfers every period due by the clock's `now` (none when stopped), each stamped with
    /// its nominal end time. Returns how many periods that was.
    ///
    /// Call it from one thread at a time: that thread is the device's audio side (the ring's producer for a
    /// capture device, its consumer for a playout device). Allocates nothing.
    @discardableResult
    public func tick() -> Int {
        guard case .manual(let clock) = clocking else {
            preconditionFailure("tick() drives manually clocked devices; \(name) runs on its own real-time thread")
        }
        guard running.load(ordering: .acquiring) else { return 0 }
        let due = schedule.periodsDue(elapsedNanoseconds: clock.now.nanoseconds - startNanoseconds)
        var count = 0
        while periodsDone < due {
            transferOnePeriod(at: MediaTime(nanoseconds: startNanoseconds + schedule.endOfPeriod(periodsDone)))
            periodsDone += 1
            count += 1
        }
        return count
    }

    /// Moves exactly one period between the port and the ring now, whatever the clock says: the device's
    /// whole per-period work (port → preallocated buffer → ring, or ring → buffer → port), for benchmarks
    /// that count allocations. Same threading rule as ``tick()``; do not call it while a real-time thread runs.
    /// - Complexity: O(period), no allocation, no locks (for the null device and file devices in loop mode).
    package func transferOnePeriod() {
        transferOnePeriod(at: MediaTime(nanoseconds: monotonicNanoseconds()))
    }

    @inline(__always)
    private func transferOnePeriod(at time: MediaTime) {
        let count = buffer.count
        switch direction {
        case .capture:
            let ended = port.fill(buffer)
            let written = ring.write(UnsafeBufferPointer(buffer))
            if written < count {
                counters.ringOverflowSamples.add(Int64(count - written), ordering: .relaxed)
            }
            if ended { channel.send(.endOfInput) }
        case .playout:
            let read = ring.read(into: buffer)
            if read < count {
                UnsafeMutableBufferPointer(rebasing: buffer[read...]).update(repeating: 0)
                counters.ringUnderflowSamples.add(Int64(count - read), ordering: .relaxed)
            }
            port.consume(UnsafeBufferPointer(buffer))
        }
        counters.recordPeriod(frameCount: periodFrames, at: time)
    }

    /// The real-time thread: sleep to the next absolute deadline, transfer what is due, repeat.
    private func runRealTime() {
        let start = startNanoseconds
        var done: Int64 = 0
        while running.load(ordering: .acquiring) {
            guard wakeup.sleep(untilMonotonic: start + schedule.endOfPeriod(done)) else { break }
            guard running.load(ordering: .acquiring) else { break }
            let now = monotonicNanoseconds()
            let due = schedule.periodsDue(elapsedNanoseconds: now - start)
            if due - done > Int64(maximumLagPeriods) {
                let total = counters.xruns.add(1, ordering: .relaxed).newValue
                channel.send(.xrun(count: total))
                done = due - 1
            }
            while done < due {
                transferOnePeriod(at: MediaTime(nanoseconds: now))
                done += 1
            }
        }
    }
}
