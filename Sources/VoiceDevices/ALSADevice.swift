internal import CALSA
import Synchronization
import VoiceCore

/// A capture or playout device through alsa-lib: any PCM name ALSA knows (`default`, `hw:0,0`, `plughw:1,0`,
/// `null`, `pulse`, `pipewire`, …), interleaved S16_LE, one dedicated audio thread.
///
/// The thread uses non-blocking I/O and `poll` on the PCM's descriptors plus a wakeup pipe, so `stop()` and
/// `close()` return promptly even while the device is not delivering. Faults are recovered or reported:
/// `-EPIPE` (xrun) → `snd_pcm_prepare`, counted, ``DeviceEvent/xrun(count:)``; `-ESTRPIPE` (suspend) →
/// ``DeviceEvent/interruptionBegan(reason:)`` `.suspended`, `snd_pcm_resume` (or prepare), then
/// ``DeviceEvent/interruptionEnded``; `-ENODEV` and friends → `.deviceLost`, the thread exits and the state
/// becomes ``DeviceState/failed``; `-EBUSY` at open → ``ALSAError`` whose ``ALSAError/interruptionReason`` is
/// `.deviceBusy`.
public final class ALSADevice: PeriodDrivingDevice, @unchecked Sendable {
    // @unchecked Sendable: the PCM handle is used by the control plane only under `control` and while no
    // audio thread runs (open, prepare before the thread starts, drop after it is joined), and by the audio
    // thread only between those points; counters, state and the events are Sendable.

    /// How the audio thread is paced.
    public enum Pacing: Sendable, Hashable {
        /// By the device, except for PCMs that complete transfers at once (ALSA's `null` plugin): by a timer.
        case automatic
        /// By the device only (a `null` PCM then runs as fast as the CPU allows).
        case device
        /// By a monotonic timer at the negotiated rate, plus the device.
        case timer
    }

    /// What to ask of the device.
    public struct Configuration: Sendable, Hashable {
        /// Period length; 10 ms, the engine's block, by default.
        public var periodMilliseconds: Int = 10
        /// Device buffer in periods (near value).
        public var bufferPeriods: Int = 4
        /// SCHED_FIFO priority for the audio thread; nil for normal scheduling. Refusal is not an error.
        public var realtimePriority: Int32? = 10
        /// Let alsa-lib resample when the hardware lacks the rate (`snd_pcm_hw_params_set_rate_resample`).
        public var allowResampling: Bool = true
        public var pacing: Pacing = .automatic
        /// Capacity of the ring the device creates, in periods.
        public var ringPeriods: Int = 32
        /// PCM definitions in asoundrc syntax to look `name` up in instead of the system configuration.
        public var alsaConfiguration: String? = nil

        public init() {}
    }

    public let name: String
    public let direction: AudioDirection
    public let format: AudioFormat
    public let periodFrames: Int
    public let ring: SampleRing
    /// What the device settled on.
    public let negotiated: ALSANegotiatedParameters
    /// True when a timer paces the thread (see ``Pacing``).
    public let isTimerPaced: Bool
    public let configuration: Configuration

    private let pcm: ALSAPCM
    private let loop: PCMLoop<ALSAPCM>
    private let counters = DeviceCounters()
    private let channel = DeviceEventChannel()
    private let stateCell = DeviceStateCell()
    private let wakeup: Wakeup
    private let control = Mutex<AudioThread?>(nil)

    /// Opens and configures the PCM `name` (the device is stopped until ``start()``).
    /// - Parameters:
    ///   - format: the rate and channels wanted; the nearest the device offers is taken (see ``format``).
    ///   - ring: the ring to use; by default one of `configuration.ringPeriods` periods.
    /// - Throws: ``ALSAError``: `snd_pcm_open` failing (no such device, busy), or
    ///   ``ALSAError/unsupportedConfiguration(device:constraint:supported:)`` listing what the device supports.
    public init(
        name: String, direction: AudioDirection, format: AudioFormat, configuration: Configuration = Configuration(),
        ring: SampleRing? = nil
    ) throws(ALSAError) {
        precondition(configuration.periodMilliseconds > 0, "a period must be positive")
        self.name = name
        self.direction = direction
        self.configuration = configuration
        do { wakeup = try Wakeup(device: name) } catch {
            throw .callFailed(call: "pipe", device: name, code: -errnoOf(error), message: error.description)
        }
        pcm = try ALSAPCM(
            name: name, direction: direction, localConfiguration: configuration.alsaConfiguration, wakeup: wakeup)
        negotiated = try pcm.negotiate(
            sampleRate: format.sampleRate, channels: format.channels,
            periodMilliseconds: configuration.periodMilliseconds,
            bufferPeriods: configuration.bufferPeriods, allowResampling: configuration.allowResampling)
        self.format = AudioFormat(sampleRate: negotiated.sampleRate, channels: negotiated.channels)
        periodFrames = negotiated.periodFrames
        self.ring = ring ?? SampleRing(capacity: periodFrames * negotiated.channels * max(2, configuration.ringPeriods))
        isTimerPaced =
            switch configuration.pacing {
            case .automatic: !pcm.pacesItself
            case .device: false
            case .timer: true
            }
        loop = PCMLoop(
            io: pcm, direction: direction, periodFrames: periodFrames, channels: negotiated.channels, ring: self.ring,
            counters: counters, events: channel, wakeup: wakeup,
            timerSchedule: isTimerPaced
                ? PeriodSchedule(sampleRate: negotiated.sampleRate, periodFrames: periodFrames) : nil)
    }

    deinit { close() }

    public var events: AsyncStream<DeviceEvent> { channel.stream }
    public var statistics: DeviceStatistics { counters.snapshot }
    public var state: DeviceState { stateCell.value }
    public var latestClockObservation: ClockObservation? { counters.latestObservation }

    /// Prepares the PCM and starts the audio thread.
    /// - Throws: ``ALSAError`` from `snd_pcm_prepare`, or when the device is closed or has failed
    ///   (`call` "start"), or the thread cannot be created (`call` "pthread_create").
    public func start() throws(ALSAError) {
        try control.withLock { (thread: inout AudioThread?) throws(ALSAError) in
            switch stateCell.value {
            case .running: return
            case .closed:
                throw .callFailed(call: "start", device: name, code: -EBADFD, message: "the device is closed")
            case .failed:
                throw .callFailed(call: "start", device: name, code: -ENODEV, message: "the device failed; reopen it")
            case .stopped: break
            }
            try pcm.prepareForStart()
            wakeup.drain()
            loop.running.store(true, ordering: .releasing)
            let loop = self.loop
            let stateCell = self.stateCell
            do throws(AudioDeviceError) {
                thread = try AudioThread(
                    device: name, threadName: "alsa-\(direction)", realtimePriority: configuration.realtimePriority,
                    counters: counters
                ) {
                    if case .failed = loop.run() { stateCell.set(.failed) }
                }
            } catch {
                loop.running.store(false, ordering: .releasing)
                throw .callFailed(
                    call: "pthread_create", device: name, code: -errnoOf(error), message: error.description)
            }
            stateCell.set(.running)
        }
    }

    /// Runs `handler` on the audio thread after each period (see ``PeriodDrivingDevice``). Ignored while the
    /// thread runs: the loop reads the handler without a lock, so it may change only while no thread exists.
    public func setPeriodHandler(_ handler: (@Sendable () -> Void)?) {
        control.withLock { thread in
            guard thread == nil else { return }
            loop.periodHandler = handler
        }
    }

    /// Stops the audio thread (waking it if it waits for the device) and drops pending frames.
    public func stop() {
        control.withLock { thread in
            guard let running = thread else { return }
            loop.running.store(false, ordering: .releasing)
            wakeup.signal()
            running.join()
            thread = nil
            pcm.dropPending()
            if stateCell.value == .running { stateCell.set(.stopped) }
        }
    }

    /// Stops the thread and closes the PCM handle (the device is free for other clients at once).
    public func close() {
        stop()
        let first = control.withLock { _ -> Bool in
            guard stateCell.value != .closed else { return false }
            stateCell.set(.closed)
            return true
        }
        if first {
            control.withLock { _ in pcm.closeHandle() }
            channel.finish()
        }
    }
}

private func errnoOf(_ error: AudioDeviceError) -> Int32 {
    switch error {
    case .threadCreationFailed(_, let code): code
    case .wakeupUnavailable(_, let code): code
    default: EIO
    }
}
