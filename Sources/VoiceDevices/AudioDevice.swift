// VoiceDevices: audio capture and playout devices (ALSA, file-backed, null) behind one interface.
import VoiceCore

#if canImport(Glibc)
import Glibc
#endif

/// Which way audio flows through a device.
public enum AudioDirection: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The device produces samples (a microphone); its periods are written into the device's ring.
    case capture
    /// The device consumes samples (a speaker); its periods are read from the device's ring.
    case playout

    public var description: String { rawValue }
}

/// Why the audio of a call was taken away from the engine (ARCHITECTURE.md §4, the audio-session rules).
public enum InterruptionReason: String, Sendable, Hashable, CustomStringConvertible {
    /// The system suspended the device (ALSA `-ESTRPIPE`); it normally comes back on resume.
    case suspended
    /// The device disappeared (ALSA `-ENODEV`, a USB headset unplugged); the device's thread has exited.
    case deviceLost
    /// Another client holds the device (ALSA `-EBUSY`).
    case deviceBusy

    public var description: String { rawValue }
}

/// Something the audio session must know about, reported by a device from its audio thread.
public enum DeviceEvent: Sendable, Hashable, CustomStringConvertible {
    /// The device stopped delivering audio for `reason`.
    case interruptionBegan(reason: InterruptionReason)
    /// The device delivers audio again after an interruption (a resume after a suspend).
    case interruptionEnded
    /// An overrun (capture) or underrun (playout) happened and was recovered; `count` is the device's total.
    case xrun(count: Int)
    /// A file-backed microphone reached the end of its file and now delivers silence.
    case endOfInput

    public var description: String {
        switch self {
        case .interruptionBegan(let reason): "interruption began (\(reason))"
        case .interruptionEnded: "interruption ended"
        case .xrun(let count): "xrun (total \(count))"
        case .endOfInput: "end of input"
        }
    }
}

/// Where a device is in its life.
public enum DeviceState: String, Sendable, Hashable, CustomStringConvertible {
    /// Opened and negotiated, not running.
    case stopped
    /// Periods are flowing (or, for a manually clocked device, flow on each `tick()`).
    case running
    /// The device's audio thread exited after a fault it cannot recover from (device lost, busy); see the events.
    case failed
    /// Closed; the device cannot be started again.
    case closed

    public var description: String { rawValue }
}

/// Whether the device's audio thread runs with real-time (SCHED_FIFO) scheduling.
public enum RealtimeScheduling: Sendable, Hashable, CustomStringConvertible {
    /// Not asked for (manually clocked devices, or a configuration without a priority), or not started yet.
    case notRequested
    /// SCHED_FIFO at `priority` was granted.
    case granted(priority: Int32)
    /// `pthread_setschedparam` refused (`errno`, usually EPERM without CAP_SYS_NICE/RLIMIT_RTPRIO); the thread
    /// runs with normal scheduling and works the same, with more jitter under load.
    case denied(errno: Int32)

    /// Asks for SCHED_FIFO at `priority` for the calling thread (a device's audio thread, a call's media
    /// thread); the answer says whether it was granted. Refusal leaves the thread as it was.
    public static func requestForCurrentThread(priority: Int32) -> RealtimeScheduling {
        var parameters = sched_param()
        parameters.sched_priority = priority
        let rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &parameters)
        return rc == 0 ? .granted(priority: priority) : .denied(errno: rc)
    }

    public var description: String {
        switch self {
        case .notRequested: "not requested"
        case .granted(let priority): "SCHED_FIFO priority \(priority)"
        case .denied(let code): "denied (errno \(code))"
        }
    }
}

/// A snapshot of a device's counters. Cheap to read from any thread while the device runs.
public struct DeviceStatistics: Sendable, Hashable {
    /// Whole periods transferred since the device was opened.
    public var periods: Int64 = 0
    /// Frames (samples per channel) transferred since the device was opened.
    public var frames: Int64 = 0
    /// Overruns/underruns at the device (ALSA `-EPIPE`, or a real-time file/null device that fell behind).
    public var xruns: Int = 0
    /// System suspends survived (ALSA `-ESTRPIPE`).
    public var suspends: Int = 0
    /// Capture only: samples dropped because the ring was full (the consumer fell behind).
    public var ringOverflowSamples: Int64 = 0
    /// Playout only: samples of silence played because the ring was empty (the producer fell behind).
    public var ringUnderflowSamples: Int64 = 0
    /// Scheduling of the audio thread.
    public var realtime: RealtimeScheduling = .notRequested

    public init() {}
}

/// One observation of a device's clock: how many frames it had transferred at a point in monotonic time.
/// Feed a series of these to ``ClockRateEstimator`` to measure the device's actual rate.
public struct ClockObservation: Sendable, Hashable {
    /// When the transfer completed (monotonic clock for real-time devices, the media clock for manual ones).
    public var time: MediaTime
    /// Frames transferred up to and including that period.
    public var frames: Int64

    public init(time: MediaTime, frames: Int64) {
        self.time = time
        self.frames = frames
    }
}

/// The interface shared by ALSA, file-backed and null devices, so every chain runs against real hardware or
/// headless in tests with the same code.
///
/// A device is opened (by its initializer) with a requested format and period, and reports what it actually
/// negotiated in ``format`` and ``periodFrames``. Audio crosses between the device and the processing chain
/// through ``ring``: a capture device is the ring's only producer, a playout device its only consumer, so the
/// chain is the other side (consumer of a capture ring, producer of a playout ring). A playout device plays
/// silence when its ring runs dry and counts it; a capture device drops what does not fit and counts it.
///
/// The control plane (`start`, `stop`, `close`, `statistics`, `events`) may be used from any thread or task.
/// The audio itself moves on a dedicated thread with blocking or timed I/O, never on a Swift concurrency task.
public protocol AudioDevice: AnyObject, Sendable {
    /// The name it was opened with (an ALSA PCM name, a file path, `"null"`).
    var name: String { get }
    /// Capture or playout.
    var direction: AudioDirection { get }
    /// The negotiated format (may differ from the requested one; the chain resamples).
    var format: AudioFormat { get }
    /// Frames (samples per channel) per device period.
    var periodFrames: Int { get }
    /// The ring between the device and the chain (interleaved samples of ``format``).
    var ring: SampleRing { get }
    /// Faults and interruptions, in order. Single consumer; finished when the device is closed.
    var events: AsyncStream<DeviceEvent> { get }
    /// Current counters.
    var statistics: DeviceStatistics { get }
    /// Current state.
    var state: DeviceState { get }
    /// The latest (time, frames) pair, for ``ClockRateEstimator``; nil before the first period.
    var latestClockObservation: ClockObservation? { get }

    /// Starts the flow of periods. Starting a running device does nothing.
    /// - Throws: when the device is closed or failed, or the start itself fails (ALSA).
    func start() throws
    /// Stops the flow of periods and waits for the audio thread to finish; returns promptly even when the
    /// thread is blocked in I/O. Stopping a stopped device does nothing.
    func stop()
    /// Stops and releases the device (finalises files, closes ALSA handles). Also done on deinit.
    func close()
}

/// A device whose own thread can carry the media work: after each period it moved it calls a handler on that
/// thread, so a call driven by it needs no clock of its own — one wake-up per period, from the device (ALSA's
/// `poll` on the PCM), does the device's transfer and the call's 10 ms of work.
public protocol PeriodDrivingDevice: AudioDevice {
    /// Installs (or with nil removes) the handler; only while the device is stopped. It runs on the device's
    /// thread after each complete period (a capture period is in the ring by then; a playout device calls it
    /// before taking the next period from the ring), and must not block, allocate or lock.
    func setPeriodHandler(_ handler: (@Sendable () -> Void)?)
}
