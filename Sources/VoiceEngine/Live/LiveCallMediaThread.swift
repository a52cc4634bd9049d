import Foundation
import Synchronization
import VoiceCore
import VoiceDevices
import VoiceSession

#if canImport(Glibc)
import Glibc
#endif

/// Flags and counters shared between the control plane and the media thread: atomics only, so neither side
/// ever waits for the other.
/// A re-INVITE's outcome for the media thread: new keys (nil: unchanged) and whether we send RTP.
struct LiveCallMediaUpdate: Sendable {
    var rekey: MediaStreamRekey?
    var sends: Bool
}

final class LiveCallShared: Sendable {
    /// Cleared by the control plane to make the thread exit after its current tick.
    let running = Atomic<Bool>(false)
    /// Set while an interruption pauses the call's audio.
    let paused = Atomic<Bool>(false)
    /// Whether the microphone's audio is sent (silence is sent while it is closed).
    let microphoneOpen = Atomic<Bool>(true)
    /// Incremented by the control plane to ask for a flush of stale buffered audio (after an interruption).
    let flushRequests = Atomic<Int>(0)
    /// Incremented by the control plane when `pendingUpdate` holds a mid-call change (re-INVITE); the media
    /// thread takes it the next tick (the lock only then, never in steady state).
    let updateRequests = Atomic<Int>(0)
    let pendingUpdate = Mutex<LiveCallMediaUpdate?>(nil)
    /// Set once by the media thread when media flows both ways.
    let established = Atomic<Bool>(false)
    /// Set once by the media thread when the peer's RTCP BYE arrived (it hung up).
    let remoteSentBye = Atomic<Bool>(false)
    /// Monotonic nanoseconds of the last RTP packet the stream accepted (0: none yet).
    let lastMediaNanoseconds = Atomic<Int64>(0)

    let ticks = Atomic<Int>(0), lateTicks = Atomic<Int>(0), delayedTicks = Atomic<Int>(0)
    /// Counts a tick that begins a whole tick or more after its deadline (``LiveCallStatistics/delayedTicks``).
    func countIfDelayed(tickStart: MediaTime, deadline: Int64) {
        if tickStart.nanoseconds - deadline >= LiveCallMediaLoop.tickNanoseconds {
            delayedTicks.wrappingAdd(1, ordering: .relaxed)
        }
    }
    let captureBlocks = Atomic<Int>(0), captureUnderruns = Atomic<Int>(0), captureCatchUps = Atomic<Int>(0)
    let captureDiscardedSamples = Atomic<Int>(0), captureBacklogSamples = Atomic<Int>(0)
    let playoutBlocks = Atomic<Int>(0), playoutOverflows = Atomic<Int>(0)
    let datagramsSent = Atomic<Int>(0), datagramsNoRemote = Atomic<Int>(0), datagramsFailed = Atomic<Int>(0)
    let datagramsReceived = Atomic<Int>(0), datagramsDiscarded = Atomic<Int>(0)
    let realtime = Atomic<Bool>(false)
    let drivenByDevice = Atomic<Bool>(false)
    /// DTMF keys from ``LiveCall/sendDTMF(_:)`` to the media thread (the control side pushes under
    /// `dtmfProducer`, so several tasks may send; the media thread pops without waiting).
    let dtmfToSend = SPSCQueue<DTMFDigit>(capacity: 64)
    let dtmfProducer = Mutex(())

    var snapshot: LiveCallStatistics {
        var s = LiveCallStatistics()
        s.ticks = ticks.load(ordering: .relaxed)
        s.lateTicks = lateTicks.load(ordering: .relaxed)
        s.delayedTicks = delayedTicks.load(ordering: .relaxed)
        s.captureBlocks = captureBlocks.load(ordering: .relaxed)
        s.captureUnderruns = captureUnderruns.load(ordering: .relaxed)
        s.captureCatchUps = captureCatchUps.load(ordering: .relaxed)
        s.captureDiscardedSamples = captureDiscardedSamples.load(ordering: .relaxed)
        s.captureBacklogSamples = captureBacklogSamples.load(ordering: .relaxed)
        s.playoutBlocks = playoutBlocks.load(ordering: .relaxed)
        s.playoutOverflows = playoutOverflows.load(ordering: .relaxed)
        s.datagramsSent = datagramsSent.load(ordering: .relaxed)
        s.datagramsNoRemote = datagramsNoRemote.load(ordering: .relaxed)
        s.datagramsFailed = datagramsFailed.load(ordering: .relaxed)
        s.datagramsReceived = datagramsReceived.load(ordering: .relaxed)
        s.datagramsDiscarded = datagramsDiscarded.load(ordering: .relaxed)
        s.realtime = realtime.load(ordering: .relaxed)
        s.drivenByDevice = drivenByDevice.load(ordering: .relaxed)
        return s
    }
}

/// What the media thread tells the control plane, the tick it happens (each at most once, except latching).
enum LiveCallSignal: Sendable {
    /// The transport now sends to this source of authenticated packets.
    case remoteLatched(UDPEndpoint)
    /// Media flows both ways.
    case established
    /// The peer's authenticated RTCP BYE arrived.
    case remoteBye
    /// No RTP accepted for ``LiveCallOptions/mediaTimeoutSeconds`` after the call was established.
    case mediaTimedOut
    /// The peer sent a DTMF key as an RFC 4733 telephone-event (reported once per key).
    case dtmfReceived(DTMFDigit)
}

/// The stream's sink: every datagram goes out through the transport's non-blocking `sendto`, counted by outcome.
/// Called only on the thread that drives the stream (the media thread, then the control plane for the final BYE
/// after that thread has exited).
final class TransportPacketSink: MediaPacketSink {
    let transport: UDPMediaTransport
    let shared: LiveCallShared

    init(transport: UDPMediaTransport, shared: LiveCallShared) {
        self.transport = transport
        self.shared = shared
    }

    func send(_ datagram: UnsafeRawBufferPointer, kind: MediaPacketKind, now: MediaTime) {
        switch transport.send(datagram, kind: kind) {
        case .sent: shared.datagramsSent.wrappingAdd(1, ordering: .relaxed)
        case .noRemote: shared.datagramsNoRemote.wrappingAdd(1, ordering: .relaxed)
        case .wouldBlock, .closed, .failed: shared.datagramsFailed.wrappingAdd(1, ordering: .relaxed)
        }
    }
}

/// The media thread's own state and its 10 ms tick. Everything here is touched only by that thread, between
/// ``LiveCall/start()`` starting it and the control plane seeing it exit.
final class LiveCallMediaLoop: @unchecked Sendable {
    // @unchecked Sendable: handed to the media thread at its start (Thread.start orders the hand-over) and used
    // by no other thread until that thread has exited and signalled the semaphore the control plane waits on.
    let stream: MediaStream
    let transport: UDPMediaTransport
    let capture: any AudioDevice
    let playout: any AudioDevice
    /// Tones mixed over the call's audio (early media, call waiting); mixing never allocates or waits.
    let tones: AudioController?
    /// Manually clocked file/null devices (clocking `.manual`) that this thread drives on its own tick, so one
    /// wake-up per 10 ms serves the call and both devices instead of three.
    let drivenCapture: ClockedAudioDevice?
    let drivenPlayout: ClockedAudioDevice?
    /// A microphone whose own thread wakes per period (ALSA, blocking in `poll` on the PCM): the call's tick runs
    /// on that wake-up (``deviceTick()``) instead of on a media thread with a clock of its own.
    let drivingDevice: (any PeriodDrivingDevice)?
    private var deviceThreadSeen = false
    let shared: LiveCallShared
    let options: LiveCallOptions
    /// Rare transitions only (never in steady state): yielding takes the stream's lock and may allocate.
    let signals: AsyncStream<LiveCallSignal>.Continuation
    let block: Int
    var captureFrame: AudioFrame
    var playFrame: AudioFrame
    var captureArmed = false
    var flushesSeen = 0
    var updatesSeen = 0
    var latched: UDPEndpoint?
    var established = false
    var remoteSentBye = false
    var announcedRemote: UDPEndpoint?
    var mediaTimedOut = false
    let mediaTimeoutNanoseconds: Int64?
    static let tickNanoseconds: Int64 = 10_000_000

    init(
        stream: MediaStream, transport: UDPMediaTransport, capture: any AudioDevice, playout: any AudioDevice,
        shared: LiveCallShared, options: LiveCallOptions, signals: AsyncStream<LiveCallSignal>.Continuation,
        tones: AudioController? = nil
    ) {
        self.signals = signals
        self.tones = tones
        mediaTimeoutNanoseconds = options.mediaTimeoutSeconds.map { Int64(min($0, 1e9) * 1e9) }
        self.stream = stream
        self.transport = transport
        self.capture = capture
        self.playout = playout
        drivenCapture = Self.manuallyClocked(capture)
        drivenPlayout = Self.manuallyClocked(playout)
        drivingDevice = capture as? any PeriodDrivingDevice
        self.shared = shared
        self.options = options
        let format = stream.configuration.deviceFormat
        block = format.samplesPerBlock
        captureFrame = AudioFrame(format: format)
        playFrame = AudioFrame(format: format)
    }

    private static func manuallyClocked(_ device: any AudioDevice) -> ClockedAudioDevice? {
        guard let clocked = device as? ClockedAudioDevice, case .manual = clocked.clocking else { return nil }
        return clocked
    }

    /// Before the thread starts: a cushion of silence for the speaker.
    func primePlayout() {
        playFrame.silence()
        for _ in 0..<options.playoutPrimeBlocks where playout.ring.availableToWrite >= block {
            _ = playFrame.withUnsafeSamples { playout.ring.write($0) }
        }
    }

    /// The thread body: ticks on absolute monotonic deadlines until ``LiveCallShared/running`` is cleared.
    func run() {
        if Self.becomeMediaThread(options: options) { shared.realtime.store(true, ordering: .relaxed) }
        var deadline = MonotonicClock().now.nanoseconds
        while shared.running.load(ordering: .acquiring) {
            let missed = Self.sleepToNextTick(&deadline, maximumLagTicks: options.maximumLagTicks)
            if missed > 0 { shared.lateTicks.wrappingAdd(missed, ordering: .relaxed) }
            let now = MonotonicClock().now
            shared.countIfDelayed(tickStart: now, deadline: deadline)
            tick(now: now, scheduled: MediaTime(nanoseconds: deadline), skipped: missed)
        }
    }

    /// The microphone's period handler: one tick on the device's thread, right after its period reached the
    /// capture ring, while the call runs. That thread's real-time grant is the call's.
    func deviceTick() {
        guard shared.running.load(ordering: .acquiring) else { return }
        if !deviceThreadSeen {
            deviceThreadSeen = true
            shared.drivenByDevice.store(true, ordering: .relaxed)
            if case .granted = capture.statistics.realtime { shared.realtime.store(true, ordering: .relaxed) }
        }
        // No schedule: the device's clock sets when a period is played, not when this thread woke. A wake-up time
        // as the schedule made the buffer read every late wake-up (a loaded machine, no real-time grant) as delay
        // gained and steer against it (LiveCallTests.alsaMicrophonesCarryTheirCallsTicksOnTheirOwnWakeUps failed
        // 2 of ~20 runs beside busy loops); the origin inferred from arrivals absorbs wake-up jitter.
        tick(now: MonotonicClock().now, scheduled: nil)
    }

    /// Names the calling thread `voice-media` and asks for SCHED_FIFO at `options.realtimePriority`, as every media
    /// thread does (one per call, or the shared ticker's); returns whether the priority was granted.
    static func becomeMediaThread(options: LiveCallOptions) -> Bool {
        setCurrentThreadName("voice-media")
        guard let priority = options.realtimePriority,
            case .granted = RealtimeScheduling.requestForCurrentThread(priority: priority)
        else { return false }
        return true
    }

    /// Advances `deadline` by one tick and sleeps until it. After a stall longer than `maximumLagTicks` (the
    /// machine was suspended, the thread starved) it moves the deadline past the missed ticks, so the caller
    /// runs this tick now instead of bursting through them; returns how many were missed.
    static func sleepToNextTick(_ deadline: inout Int64, maximumLagTicks: Int) -> Int {
        deadline += tickNanoseconds
        sleep(untilMonotonic: deadline)
        let lag = MonotonicClock().now.nanoseconds - deadline
        guard lag > Int64(maximumLagTicks) * tickNanoseconds else { return 0 }
        let missed = Int(lag / tickNanoseconds)
        deadline += Int64(missed) * tickNanoseconds
        return missed
    }

    /// One 10 ms tick: network → stream, microphone → stream, stream → speaker, RTCP. `scheduled` is the deadline
    /// the tick was due at (`now` is when it ran): the jitter buffer measures its playout delay from the schedule,
    /// so a tick run late after a stall, and the ticks caught up after it, are not read as packets come early —
    /// it would otherwise steer its delay too low for the rest of the call (``AdaptiveJitterBuffer``). `skipped`:
    /// ticks the schedule moved past just before this one (``sleepToNextTick(_:maximumLagTicks:)``).
    func tick(now: MediaTime, scheduled: MediaTime?, skipped: Int = 0) {
        shared.ticks.wrappingAdd(1, ordering: .relaxed)
        let paused = shared.paused.load(ordering: .acquiring)
        let flushes = shared.flushRequests.load(ordering: .acquiring)
        if flushes != flushesSeen {
            flushesSeen = flushes
            flush()
        }
        let updates = shared.updateRequests.load(ordering: .acquiring)
        if updates != updatesSeen {
            updatesSeen = updates
            if let update = shared.pendingUpdate.withLock({ $0.take() }) {
                if let rekey = update.rekey { stream.rekey(rekey, now: now) }
                stream.isOnHold = !update.sends
            }
        }
        receive(paused: paused)
        moveDTMFToStream()
        drivenCapture?.tick()
        captureTick(paused: paused, now: now, skipped: skipped)
        playoutTick(paused: paused, now: now, scheduled: scheduled)
        drivenPlayout?.tick()
        stream.pollRTCP(now: now)
        signalChanges(now: now)
    }

    /// Tells the control plane what changed this tick: a new latched remote, establishment, the peer's BYE,
    /// the media timeout. Costs a few atomic loads when nothing did.
    private func signalChanges(now: MediaTime) {
        if transport.isLatched, let remote = transport.remote, remote != announcedRemote {
            announcedRemote = remote
            signals.yield(.remoteLatched(remote))
        }
        if !established && stream.stats.packetsReceived > 0 && shared.datagramsSent.load(ordering: .relaxed) > 0 {
            established = true
            shared.established.store(true, ordering: .releasing)
            signals.yield(.established)
        }
        if !remoteSentBye && stream.stats.remoteSentBye {
            remoteSentBye = true
            shared.remoteSentBye.store(true, ordering: .releasing)
            signals.yield(.remoteBye)
        }
        if established, !mediaTimedOut, let timeout = mediaTimeoutNanoseconds,
            now.nanoseconds - shared.lastMediaNanoseconds.load(ordering: .relaxed) > timeout
        {
            mediaTimedOut = true
            signals.yield(.mediaTimedOut)
        }
        while let digit = stream.takeReceivedDTMF() { signals.yield(.dtmfReceived(digit)) }
    }

    /// Drops stale audio after an interruption: what the microphone captured and the packets queued meanwhile.
    func flush() {
        _ = capture.ring.discardAll()
        captureArmed = false
        let dropped = transport.discardPending(.rtp)
        shared.datagramsDiscarded.wrappingAdd(dropped, ordering: .relaxed)
    }

    /// Reads the socket when the transport leaves that to its consumer (no event-loop wake-up per packet), then
    /// drains both transport queues into the stream; latches the remote on packets the stream accepted.
    func receive(paused: Bool) {
        transport.receiveFromSocket()
        while transport.withNextPacket(
            .rtp,
            { (packet: ReceivedPacket) -> Void in
                if paused {
                    shared.datagramsDiscarded.wrappingAdd(1, ordering: .relaxed)
                    return
                }
                shared.datagramsReceived.wrappingAdd(1, ordering: .relaxed)
                let before = stream.stats.packetsReceived
                stream.receiveDatagram(packet.bytes, arrival: packet.arrival)
                if stream.stats.packetsReceived != before {
                    shared.lastMediaNanoseconds.store(packet.arrival.nanoseconds, ordering: .relaxed)
                    latch(packet.source)
                }
            }) != nil
        {}
        while transport.withNextPacket(
            .rtcp,
            { (packet: ReceivedPacket) -> Void in
                shared.datagramsReceived.wrappingAdd(1, ordering: .relaxed)
                let before = stream.stats.rtcpReceived
                stream.receiveDatagram(packet.bytes, arrival: packet.arrival)
                if stream.stats.rtcpReceived != before { latchRTCP(packet.source) }
            }) != nil
        {}
    }

    /// Authenticated RTCP: with RTCP on the RTP port it latches that port as RTP does; on a port of its own it
    /// latches the RTCP destination only (the peer's RTCP port is not where its RTP goes).
    func latchRTCP(_ source: UDPEndpoint) {
        if transport.remoteRTCP == nil { latch(source) } else { transport.latchRemote(to: source, for: .rtcp) }
    }

    /// Symmetric RTP: send to where authenticated packets come from.
    func latch(_ source: UDPEndpoint) {
        guard source != latched else { return }
        latched = source
        transport.latchRemote(to: source)
    }

    /// Hands the stream exactly one 10 ms block per tick (two when catching up), so its send clock stays regular.
    ///
    /// After `skipped` ticks were skipped (a stall past ``LiveCallOptions/maximumLagTicks``) the microphone kept
    /// capturing while no tick read it: up to `skipped` blocks above the cushion are dropped unsent (counted in
    /// ``LiveCallStatistics/captureDiscardedSamples``). Their deadline has passed — the stream's timeline paused
    /// with the thread, and a receiver that kept running has concealed that time already — and sending them
    /// would keep the call's send latency the stall higher for good: the one-extra-block catch-up only starts at
    /// the high-water mark, so a ring left below it never drains (an 80 ms stall left 60–70 ms). Dropping the
    /// input a stall overran is what ALSA (an overrun stops the PCM; `snd_pcm_prepare` restarts it empty) and
    /// PortAudio (`paInputOverflow`: input discarded, unless `paNeverDropInput` is asked for) do as well. A
    /// catch-up of missed ticks (a shorter stall) drops nothing: those ticks run and send their blocks.
    func captureTick(paused: Bool, now: MediaTime, skipped: Int = 0) {
        let ring = capture.ring
        if paused {
            _ = ring.discardAll()
            captureArmed = false
            shared.captureBacklogSamples.store(0, ordering: .relaxed)
            return
        }
        if !shared.microphoneOpen.load(ordering: .relaxed) {
            _ = ring.discardAll()
            captureArmed = false
            shared.captureBacklogSamples.store(0, ordering: .relaxed)
            sendSilence(now: now)
            return
        }
        if skipped > 0 {
            let aboveCushion = ring.availableToRead - options.captureCushionBlocks * block
            if aboveCushion > 0 {
                let dropped = ring.discard(upTo: min(aboveCushion, skipped * block))
                shared.captureDiscardedSamples.wrappingAdd(dropped, ordering: .relaxed)
            }
        }
        defer { shared.captureBacklogSamples.store(ring.availableToRead, ordering: .relaxed) }
        if !captureArmed {
            guard ring.availableToRead >= options.captureCushionBlocks * block else {
                sendSilence(now: now)
                return
            }
            captureArmed = true
        }
        readAndSend(now: now)
        if ring.availableToRead >= options.captureHighWaterBlocks * block {
            shared.captureCatchUps.wrappingAdd(1, ordering: .relaxed)
            readAndSend(now: now)
        }
    }

    private func readAndSend(now: MediaTime) {
        let ring = capture.ring
        let got = captureFrame.withUnsafeMutableSamples { samples in
            let got = ring.read(into: samples)
            if got < samples.count { UnsafeMutableBufferPointer(rebasing: samples[got...]).update(repeating: 0) }
            return got
        }
        if got < block { shared.captureUnderruns.wrappingAdd(1, ordering: .relaxed) }
        stream.processCapture(captureFrame, now: now)
        shared.captureBlocks.wrappingAdd(1, ordering: .relaxed)
    }

    /// One block of silence into the send chain (the microphone closed or short). Also called outside the tick:
    /// shifts this call's 20 ms frames by one tick (`LiveCallTicker` balances the encodes of the calls it ticks over
    /// even and odd ticks with it).
    func sendSilence(now: MediaTime) {
        captureFrame.silence()
        stream.processCapture(captureFrame, now: now)
        shared.captureBlocks.wrappingAdd(1, ordering: .relaxed)
    }

    /// Renders one block from the receive chain and queues it for the speaker.
    func playoutTick(paused: Bool, now: MediaTime, scheduled: MediaTime?) {
        guard !paused else { return }
        stream.renderPlayout(into: &playFrame, now: now, scheduledAt: scheduled)
        if let tones { playFrame.withUnsafeMutableSamples { tones.mix(into: $0) } }
        let ring = playout.ring
        if ring.availableToWrite >= block && ring.availableToRead < options.playoutHighWaterBlocks * block {
            _ = playFrame.withUnsafeSamples { ring.write($0) }
            shared.playoutBlocks.wrappingAdd(1, ordering: .relaxed)
        } else {
            shared.playoutOverflows.wrappingAdd(1, ordering: .relaxed)
        }
    }

    /// Sleeps until the absolute `CLOCK_MONOTONIC` time `deadline` (ns); absolute deadlines accumulate no drift.
    static func sleep(untilMonotonic deadline: Int64) {
        var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
    }
}
