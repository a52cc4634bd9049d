import Synchronization
import VoiceCore

/// The counters a device's audio thread updates and the control plane reads: all plain atomics, so the audio
/// thread never locks or allocates to update them. Each counter has a single writer (the audio thread, or
/// the caller of `tick()` for a manually clocked device).
final class DeviceCounters: Sendable {
    let periods = Atomic<Int64>(0)
    let frames = Atomic<Int64>(0)
    let xruns = Atomic<Int>(0)
    let suspends = Atomic<Int>(0)
    let ringOverflowSamples = Atomic<Int64>(0)
    let ringUnderflowSamples = Atomic<Int64>(0)
    /// 0 not requested, >0 granted priority, <0 denied with -errno.
    let realtime = Atomic<Int32>(0)

    // Seqlock for the latest clock observation: odd sequence = being written.
    private let observationSequence = Atomic<UInt64>(0)
    private let observationTime = Atomic<Int64>(0)
    private let observationFrames = Atomic<Int64>(0)

    /// Audio thread: one period of `frameCount` frames completed at `time`.
    @inline(__always)
    func recordPeriod(frameCount: Int, at time: MediaTime) {
        periods.add(1, ordering: .relaxed)
        let total = frames.add(Int64(frameCount), ordering: .relaxed).newValue
        let sequence = observationSequence.load(ordering: .relaxed)
        observationSequence.store(sequence &+ 1, ordering: .relaxed)
        atomicMemoryFence(ordering: .releasing)
        observationTime.store(time.nanoseconds, ordering: .relaxed)
        observationFrames.store(total, ordering: .relaxed)
        observationSequence.store(sequence &+ 2, ordering: .releasing)
    }

    /// Any thread: the latest observation, consistent (time and frames of the same period).
    var latestObservation: ClockObservation? {
        while true {
            let before = observationSequence.load(ordering: .acquiring)
            if before == 0 { return nil }
            if before & 1 == 1 { continue }
            let time = observationTime.load(ordering: .relaxed)
            let frames = observationFrames.load(ordering: .relaxed)
            atomicMemoryFence(ordering: .acquiring)
            if observationSequence.load(ordering: .relaxed) == before {
                return ClockObservation(time: MediaTime(nanoseconds: time), frames: frames)
            }
        }
    }

    func recordRealtime(_ scheduling: RealtimeScheduling) {
        switch scheduling {
        case .notRequested: realtime.store(0, ordering: .relaxed)
        case .granted(let priority): realtime.store(max(priority, 1), ordering: .relaxed)
        case .denied(let code): realtime.store(-max(code, 1), ordering: .relaxed)
        }
    }

    var snapshot: DeviceStatistics {
        var s = DeviceStatistics()
        s.periods = periods.load(ordering: .relaxed)
        s.frames = frames.load(ordering: .relaxed)
        s.xruns = xruns.load(ordering: .relaxed)
        s.suspends = suspends.load(ordering: .relaxed)
        s.ringOverflowSamples = ringOverflowSamples.load(ordering: .relaxed)
        s.ringUnderflowSamples = ringUnderflowSamples.load(ordering: .relaxed)
        let rt = realtime.load(ordering: .relaxed)
        s.realtime = rt == 0 ? .notRequested : rt > 0 ? .granted(priority: rt) : .denied(errno: -rt)
        return s
    }
}

/// The device's event stream. Yielding happens on the audio thread only for faults and the end of a file,
/// never per period, so the continuation's internal lock and buffer are off the steady-state path.
final class DeviceEventChannel: Sendable {
    let stream: AsyncStream<DeviceEvent>
    private let continuation: AsyncStream<DeviceEvent>.Continuation

    init() {
        (stream, continuation) = AsyncStream.makeStream(of: DeviceEvent.self, bufferingPolicy: .bufferingNewest(256))
    }

    func send(_ event: DeviceEvent) { continuation.yield(event) }
    func finish() { continuation.finish() }
}

/// The device's state, shared by the control plane and the audio thread.
final class DeviceStateCell: Sendable {
    private let raw = Atomic<UInt8>(0)
    var value: DeviceState {
        switch raw.load(ordering: .acquiring) {
        case 0: .stopped
        case 1: .running
        case 2: .failed
        default: .closed
        }
    }

    func set(_ state: DeviceState) {
        let code: UInt8 =
            switch state {
            case .stopped: 0
            case .running: 1
            case .failed: 2
            case .closed: 3
            }
        raw.store(code, ordering: .releasing)
    }
}
