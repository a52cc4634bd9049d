import Foundation
import Synchronization
import VoiceCore
import VoiceDevices
import VoiceRTP
import VoiceSession

#if canImport(Glibc)
import Glibc
#endif

/// One real-time call: a ``MediaStream`` between two audio devices and a ``UDPMediaTransport``, driven by one
/// media thread.
///
/// **Media plane.** One thread (not a Swift concurrency task) runs the call's 10 ms tick: with an ALSA
/// microphone, the microphone's own thread, right after each period it read (``VoiceDevices/PeriodDrivingDevice``
/// — one wake-up, from `poll` on the PCM, for the device and the call); otherwise a media thread shared by the
/// process's calls (``LiveCallOptions/sharedMediaThread``, the default) or one of the call's own, waking every
/// 10 ms on absolute `CLOCK_MONOTONIC` deadlines. A tick, in order: reads the socket when the transport leaves
/// that to its consumer (``UDPMediaTransport/ReceiveMode/consumerPolls``, as `voice-engine call` binds it), drains the transport's RTP and RTCP queues into the stream (latching the remote to
/// the source of packets that passed SRTP — symmetric RTP), reads 10 ms from the microphone's ring into the
/// send chain (padding with silence and counting an underrun when the ring is short), renders 10 ms from the
/// receive chain into the speaker's ring, and polls RTCP. The stream's packets go out through the transport's
/// non-blocking `sendto` on the same thread. The stream is touched by no other thread while the call runs; the
/// thread allocates, locks and logs nothing in steady state (shared state is atomics only).
///
/// **Control plane.** ``start()``, ``stop(cause:)``, ``events`` and ``statistics`` may be used from any task.
/// The media thread signals what changed (remote latched, established, the peer's authenticated RTCP BYE, the
/// optional media timeout) the tick it happens; a monitor task turns those signals into events, feeds device
/// events (interruptions) to the call and to the attached `AudioSession` (VoiceSession), carries out the session's effects
/// (open the microphone when established, flush after an interruption, end the call after an interruption
/// timeout) and ends the call as `CallEndCause.remoteHangup` on the peer's BYE. Nothing polls: the
/// control plane wakes only when something happened. Its tasks run on `LiveCallControlExecutor` (a thread of its own),
/// so a busy cooperative pool cannot keep the microphone closed or the call from ending.
///
/// **Ownership.** The call owns the devices and the transport it is given: it starts them, and stops and closes
/// them when it ends. It consumes the devices' `events` streams (single consumer). A started call keeps itself
/// alive until it is stopped: always end it with ``stop(cause:)``.
///
/// **Established** means authenticated media both ways as this side can see it: the transport sent our RTP, and
/// RTP from the peer passed SRTP authentication (or plain parsing without SRTP).
public final class LiveCall: @unchecked Sendable {
    // @unchecked Sendable: `stream` and `loop` are used only by the media thread between start() and the
    // control plane seeing it exit (a semaphore orders the two), and by the control plane before start and
    // after that exit; all other mutable state is in `control` (a Mutex) or `shared` (atomics).

    /// The identifier the audio session knows the call by.
    public let callID: CallID
    /// What happens to the call, in order; finished after ``LiveCallEvent/ended(_:)``. Single consumer.
    public let events: AsyncStream<LiveCallEvent>
    public let transport: UDPMediaTransport
    public let capture: any AudioDevice
    public let playout: any AudioDevice
    /// The audio session the call reports to, if any.
    public let session: AudioSession?
    public let options: LiveCallOptions
    /// The stream's configuration (device format taken from the devices, NTP time base from the wall clock).
    public let configuration: MediaStreamConfiguration

    let stream: MediaStream
    let shared: LiveCallShared
    let loop: LiveCallMediaLoop
    private let continuation: AsyncStream<LiveCallEvent>.Continuation
    private let signals: AsyncStream<LiveCallSignal>
    private let mediaExit = Mutex(MediaExit())
    private let control = Mutex(Control())

    /// Whether the media thread has exited, and who waits for it.
    private struct MediaExit {
        var exited = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private struct Control {
        enum Phase { case created, running, ending }
        var phase = Phase.created
        var threadStarted = false
        var startedAt: MediaTime?
        var stopTask: Task<LiveCallResult, Never>?
        var interruptedDevices: Set<AudioDirection> = []
        var sessionEstablished = false
        var sessionTicking = false
        /// The keys the media runs with (the configuration's, then the last re-key's).
        var currentSRTP: MediaStreamSRTP?
    }

    /// Creates the call and everything its media path needs (the stream's buffers, codecs and SRTP contexts).
    ///
    /// - Parameters:
    ///   - callID: the call's identifier in the audio session.
    ///   - configuration: the stream's settings; its `deviceFormat` is replaced by the devices' format, its
    ///     `ntpAtZero` by the wall clock's NTP time at monotonic zero (for RTCP sender reports).
    ///   - transport: bound, with the peer's address set when known (the caller side); latching follows the
    ///     peer's authenticated packets either way.
    ///   - capture: the microphone; playout: the speaker. Both mono, in the same format. A file or null device
    ///     clocked `.manual` (on the monotonic clock) has no thread: the media thread transfers its due periods
    ///     each tick, one wake-up for the call and both devices.
    ///   - session: when given, the call reports `callEstablished`/`callEnded` and device events to it and follows
    ///     its effects; the microphone then stays closed (silence is sent) until the session opens it on
    ///     establishment. The engine must have been started on it (`startEngine()`).
    ///   - tones: an ``AudioController`` in the speaker's format whose voices (ringback as early media, a
    ///     call-waiting ringtone) are mixed over the call's audio each block; no other thread may mix it while
    ///     the call runs (stop a ``TonePlayout`` first).
    /// - Throws: ``LiveCallError/deviceMismatch(_:)`` or ``LiveCallError/stream(_:)``.
    public init(
        callID: CallID = "call", configuration: MediaStreamConfiguration, transport: UDPMediaTransport,
        capture: any AudioDevice, playout: any AudioDevice, session: AudioSession? = nil,
        options: LiveCallOptions = LiveCallOptions(), tones: AudioController? = nil
    ) throws(LiveCallError) {
        guard capture.direction == .capture, playout.direction == .playout else {
            throw .deviceMismatch("the microphone must be a capture device and the speaker a playout device")
        }
        guard capture.format.channels == 1, playout.format.channels == 1 else {
            throw .deviceMismatch(
                "only mono devices are supported (microphone \(capture.format), speaker \(playout.format))")
        }
        guard capture.format == playout.format else {
            throw .deviceMismatch(
                "microphone \(capture.name) runs at \(capture.format) but speaker \(playout.name) at "
                    + "\(playout.format); open both at one rate")
        }
        if let tones, tones.deviceFormat != playout.format {
            throw .deviceMismatch("the tone controller runs at \(tones.deviceFormat), the speaker at \(playout.format)")
        }
        guard options.captureCushionBlocks >= 0, options.captureHighWaterBlocks > options.captureCushionBlocks,
            options.playoutPrimeBlocks >= 0, options.playoutHighWaterBlocks > options.playoutPrimeBlocks,
            options.maximumLagTicks > 0
        else {
            throw .deviceMismatch("invalid live-call options \(options)")
        }
        var configuration = configuration
        configuration.deviceFormat = capture.format
        configuration.ntpAtZero = Self.ntpAtMonotonicZero()
        self.configuration = configuration
        control.withLock { $0.currentSRTP = configuration.srtp }
        self.callID = callID
        self.transport = transport
        self.capture = capture
        self.playout = playout
        self.session = session
        self.options = options
        let shared = LiveCallShared()
        shared.microphoneOpen.store(session == nil, ordering: .relaxed)
        self.shared = shared
        do {
            stream = try MediaStream(
                configuration: configuration, sink: TransportPacketSink(transport: transport, shared: shared),
                now: MonotonicClock().now)
        } catch {
            throw .stream(error)
        }
        let (signals, signalContinuation) = AsyncStream.makeStream(
            of: LiveCallSignal.self, bufferingPolicy: .unbounded)
        self.signals = signals
        loop = LiveCallMediaLoop(
            stream: stream, transport: transport, capture: capture, playout: playout, shared: shared,
            options: options, signals: signalContinuation, tones: tones)
        (events, continuation) = AsyncStream.makeStream(of: LiveCallEvent.self, bufferingPolicy: .unbounded)
    }

    /// The media thread's counters now.
    public var statistics: LiveCallStatistics { shared.snapshot }

    /// What the call has received so far (loss, jitter, RTT, concealment, arrivals), as of the media thread's
    /// latest tick.
    public var reception: LiveCallReception { shared.reception }

    /// Whether media has flowed both ways.
    public var isEstablished: Bool { shared.established.load(ordering: .acquiring) }

    /// Our SSRC (for logs and signalling).
    public var ssrc: UInt32 { stream.ssrc }

    /// Applies a re-negotiation to the running call — a re-INVITE that holds, resumes or re-keys (VoiceSIP's
    /// `SIPCall` reports it as `.mediaUpdated`). New SRTP keys (different from the current ones) take over at our
    /// next packet, and the peer's old key stays accepted until its first packet under the new one. A direction
    /// that does not send (`recvonly`, `inactive`) stops our RTP at the next frame, RTCP going on; one that sends
    /// (`sendrecv`, `sendonly`) restarts it. Takes effect on the media thread's next tick (before `start()`: its
    /// first).
    ///
    /// - Throws: ``LiveCallError/stream(_:)`` when libsrtp refuses the new keys.
    public func updateMedia(srtp: MediaStreamSRTP?, direction: MediaDirection) throws(LiveCallError) {
        let rekey: MediaStreamRekey?
        let current = control.withLock { $0.currentSRTP }
        if let srtp, srtp != current, configuration.srtp != nil {
            do {
                rekey = try MediaStreamRekey(srtp, packetCapacity: configuration.maximumDatagramBytes)
            } catch {
                throw .stream(.componentFailed(component: "SRTP (re-key)", reason: "\(error)"))
            }
        } else {
            rekey = nil
        }
        control.withLock { if let rekey { $0.currentSRTP = rekey.keys } }
        let sends = direction == .sendrecv || direction == .sendonly
        shared.pendingUpdate.withLock { pending in
            // A second update before the tick took the first: keys from the newest that has any.
            pending = LiveCallMediaUpdate(rekey: rekey ?? pending?.rekey, sends: sends)
        }
        shared.updateRequests.wrappingAdd(1, ordering: .releasing)
    }

    /// ``updateMedia(srtp:direction:)`` with what SIP negotiated (`NegotiatedAudio.srtp` and `.direction`).
    public func updateMedia(_ negotiated: NegotiatedAudio) throws(LiveCallError) {
        try updateMedia(
            srtp: negotiated.srtp.map {
                MediaStreamSRTP(suite: $0.suite, localKey: $0.localKey, remoteKey: $0.remoteKey)
            },
            direction: negotiated.direction)
    }

    /// Starts the devices, then the media thread (`voice-media`) and the monitor (on `voice-control`).
    /// - Throws: ``LiveCallError/invalidState(_:)`` when already started or ended,
    ///   ``LiveCallError/deviceStartFailed(device:reason:)`` (both devices are stopped again).
    public func start() throws(LiveCallError) {
        try control.withLock { (c: inout Control) throws(LiveCallError) in
            guard c.phase == .created else { throw .invalidState("the call was already started") }
            c.phase = .running
        }
        // An ALSA microphone carries the call's tick on its own wake-up: no media thread, no second clock.
        loop.drivingDevice?.setPeriodHandler { [loop] in loop.deviceTick() }
        for device in [playout, capture] {
            do { try device.start() } catch {
                playout.stop()
                capture.stop()
                loop.drivingDevice?.setPeriodHandler(nil)
                control.withLock { $0.phase = .created }
                throw .deviceStartFailed(device: device.name, reason: "\(error)")
            }
        }
        loop.primePlayout()
        shared.running.store(true, ordering: .releasing)
        control.withLock {
            $0.threadStarted = true
            $0.startedAt = MonotonicClock().now
        }
        if loop.drivingDevice != nil {
            // Ticked by the microphone's thread from now on (the handler looked at `running`).
        } else if options.sharedMediaThread {
            LiveCallTicker.place().add(loop) { self.mediaThreadExited() }
        } else {
            let thread = Thread {
                self.loop.run()
                self.mediaThreadExited()
            }
            thread.qualityOfService = .userInteractive
            thread.stackSize = 1 << 20
            thread.start()
        }
        continuation.yield(.started(local: transport.localEndpoint))
        let executor = LiveCallControlExecutor.shared
        Task(executorPreference: executor) { [signals] in await self.monitor(signals) }
        for device in [capture, playout] {
            let events = device.events
            Task(executorPreference: executor) {
                for await event in events { await self.handle(event, from: device.direction) }
            }
        }
    }

    /// Ends the call: stops the media thread, sends an RTCP BYE, stops and closes the devices (finalising a
    /// speaker file) and the transport, tells the session, and returns the report. Idempotent: every caller gets
    /// the result of the first stop (also when the call ended by itself, e.g. on an interruption timeout).
    @discardableResult
    public func stop(cause: CallEndCause = .localHangup) async -> LiveCallResult {
        await stop(cause: cause, handingOver: false)
    }

    /// Stops the media thread and the devices like ``stop(cause:)``, but leaves the transport open and sends no
    /// RTCP BYE: the call goes on in another `LiveCall` on the same transport and keys (other devices, or none
    /// while the call is on hold). The peer sees a new SSRC.
    @discardableResult
    public func handOver() async -> LiveCallResult {
        await stop(cause: .localHangup, handingOver: true)
    }

    private func stop(cause: CallEndCause, handingOver: Bool) async -> LiveCallResult {
        let task = control.withLock { (c: inout Control) -> Task<LiveCallResult, Never> in
            if let task = c.stopTask { return task }
            c.phase = .ending
            let task = Task(executorPreference: LiveCallControlExecutor.shared) {
                await self.finish(cause: cause, handingOver: handingOver)
            }
            c.stopTask = task
            return task
        }
        return await task.value
    }

    /// On the media thread, last: wakes ``finish(cause:)`` if it already waits for the thread.
    private func mediaThreadExited() {
        let waiter = mediaExit.withLock { (exit: inout MediaExit) -> CheckedContinuation<Void, Never>? in
            exit.exited = true
            defer { exit.waiter = nil }
            return exit.waiter
        }
        waiter?.resume()
    }

    // MARK: Control plane

    private var isRunning: Bool { control.withLock { $0.phase == .running } }

    /// Turns the media thread's signals into events and session calls, until the call ends.
    private func monitor(_ signals: AsyncStream<LiveCallSignal>) async {
        for await signal in signals {
            guard isRunning else { return }
            switch signal {
            case .remoteLatched(let remote):
                continuation.yield(.remoteLatched(remote))
            case .established:
                continuation.yield(.established)
                guard let session else { continue }
                do {
                    let effects = try await session.callEstablished(callID)
                    control.withLock { $0.sessionEstablished = true }
                    apply(effects)
                } catch {
                    // The session refuses the call's audio (category cannot record, another call holds it).
                    endSoon(.failure)
                    return
                }
            case .remoteBye:
                endSoon(.remoteHangup)
                return
            case .mediaTimedOut:
                endSoon(.timeout)
                return
            case .dtmfReceived(let digit):
                continuation.yield(.dtmfReceived(digit))
            }
        }
    }

    /// While the session has an interruption deadline, ticks it at that deadline (at least once a second), so
    /// an interruption that lasts too long ends the call. Runs only during an interruption.
    private func tickSessionWhileInterrupted(_ session: AudioSession) async {
        while isRunning, let deadline = await session.interruptionDeadline {
            let remaining = (deadline - MonotonicClock().now).seconds
            try? await Task.sleep(for: .milliseconds(Int((min(max(remaining, 0), 1) * 1000).rounded(.up)) + 1))
            guard isRunning else { return }
            apply(await session.tick())
        }
    }

    private func handle(_ event: DeviceEvent, from direction: AudioDirection) async {
        guard isRunning else { return }
        switch event {
        case .interruptionBegan(let reason):
            let first = control.withLock {
                $0.interruptedDevices.insert(direction).inserted && $0.interruptedDevices.count == 1
            }
            shared.paused.store(true, ordering: .releasing)
            if first { continuation.yield(.interruptionBegan(reason)) }
        case .interruptionEnded:
            let last = control.withLock {
                $0.interruptedDevices.remove(direction) != nil && $0.interruptedDevices.isEmpty
            }
            if last {
                shared.flushRequests.wrappingAdd(1, ordering: .releasing)
                shared.paused.store(false, ordering: .releasing)
                continuation.yield(.interruptionEnded)
            }
        case .endOfInput:
            continuation.yield(.microphoneEnded)
        case .xrun:
            break  // counted by the device
        }
        guard let session else { return }
        apply(await session.handle(event))
        guard case .interruptionBegan = event, await session.interruptionDeadline != nil else { return }
        let startTicking = control.withLock { (c: inout Control) -> Bool in
            defer { c.sessionTicking = true }
            return !c.sessionTicking
        }
        guard startTicking else { return }
        Task(executorPreference: LiveCallControlExecutor.shared) {
            await self.tickSessionWhileInterrupted(session)
            self.control.withLock { $0.sessionTicking = false }
        }
    }

    /// Carries out what the audio session asks of the engine.
    private func apply(_ effects: [SessionEffect]) {
        for effect in effects {
            switch effect {
            case .startCapture: shared.microphoneOpen.store(true, ordering: .releasing)
            case .stopCapture: shared.microphoneOpen.store(false, ordering: .releasing)
            case .flushBuffers: shared.flushRequests.wrappingAdd(1, ordering: .releasing)
            case .endCall(let id, let cause) where id == callID: endSoon(cause)
            default: break  // category, mode, activation and playout: the devices already run for the call
            }
        }
    }

    private func endSoon(_ cause: CallEndCause) {
        Task(executorPreference: LiveCallControlExecutor.shared) { await self.stop(cause: cause) }
    }

    private func finish(cause: CallEndCause, handingOver: Bool = false) async -> LiveCallResult {
        let (threadStarted, startedAt) = control.withLock { ($0.threadStarted, $0.startedAt) }
        shared.running.store(false, ordering: .releasing)
        if threadStarted, let driver = loop.drivingDevice {
            // Joining the microphone's thread ends its ticks; the handler (which holds the loop) goes with it.
            capture.stop()
            driver.setPeriodHandler(nil)
        } else if threadStarted {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let exited = mediaExit.withLock { (exit: inout MediaExit) -> Bool in
                    if !exit.exited { exit.waiter = c }
                    return exit.exited
                }
                if exited { c.resume() }
            }
        }
        loop.signals.finish()
        // The media thread has exited: the stream is the control plane's now.
        let now = MonotonicClock().now
        if threadStarted, !handingOver { stream.sendBye(now: now) }
        capture.stop()
        playout.stop()
        var writeError: String?
        if let file = playout as? FilePlayoutDevice {
            do { try file.finalize() } catch { writeError = error.description }
        } else {
            playout.close()
        }
        capture.close()
        if !handingOver { await transport.close() }

        var sessionReport: CallStatisticsReport?
        if let session, control.withLock({ $0.sessionEstablished }) {
            do { sessionReport = try await session.callEnded(callID, cause: cause) } catch {
                sessionReport = await session.lastReport  // the session ended it already (interruption timeout)
            }
        }
        let duration = startedAt.map { (now - $0).seconds } ?? 0
        let result = LiveCallResult(
            cause: sessionReport?.endCause ?? cause,
            report: CallReport(stream: stream, durationSeconds: duration, session: sessionReport),
            statistics: shared.snapshot, transport: transport.counters, capture: capture.statistics,
            playout: playout.statistics, wasEstablished: shared.established.load(ordering: .acquiring),
            playoutWriteError: writeError)
        continuation.yield(.ended(result.cause))
        continuation.finish()
        return result
    }

    /// NTP time at monotonic time zero: the wall clock now minus the monotonic clock now.
    static func ntpAtMonotonicZero() -> NTPTimestamp {
        var wall = timespec()
        clock_gettime(CLOCK_REALTIME, &wall)
        let monotonic = MonotonicClock().now.nanoseconds
        let wallNanoseconds = Int64(wall.tv_sec) * 1_000_000_000 + Int64(wall.tv_nsec)
        return NTPTimestamp(unixTime: MediaTime(nanoseconds: wallNanoseconds - monotonic))
    }
}
