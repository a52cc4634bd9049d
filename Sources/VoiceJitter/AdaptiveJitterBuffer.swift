import VoiceCodec
import VoiceCore
import VoiceRTP

/// The adaptive jitter buffer for Opus, split as NetEq is: a fixed-capacity ``PacketBuffer`` ordered by extended
/// sequence number, a ``DelayEstimator`` (relative arrival delay quantile), the pure ``PlayoutDecision`` per
/// chunk, and the ``PlayoutOperations`` (decode, Opus PLC expand, FEC recovery, merge, WSOLA accelerate and
/// slow-down via ``TimeStretcher``, comfort noise for DTX gaps) on the ``SyncBuffer``. This type holds them
/// together: it takes packets in, keeps the playout clock and the delay target, and each tick asks the decision
/// what to do next until the sync buffer holds a block.
///
/// Each 10 ms tick outputs exactly one block. All storage is allocated in `init`; `insert` and `playoutTick`
/// never allocate. Mono output.
///
/// Why playout stays on the tick grid: packets are only looked at once per 10 ms tick, so a frame that starts
/// playing a fraction of a tick after a tick boundary needed its packet by that boundary all the same — the
/// fraction is pure added delay. Decoding, concealment and FEC all produce whole 10/20 ms, so frames start on
/// tick boundaries; accelerate and slow-down keep it so by removing or adding exactly one tick of audio (a WSOLA
/// splice at the best-matching point, ``TimeStretcher/accelerate(_:count:removing:)``), not one pitch period. The
/// playout delay therefore moves in whole ticks, as speexdsp's moves in whole frames.
///
/// Why the playout position is *held* while the buffer is empty: when nothing at all is buffered the missing
/// packet is more likely late than lost (a delay step, an outage, a DTX pause), so playout conceals in place and
/// plays the packet when it comes, instead of declaring it lost. When a later packet is already buffered the
/// missing one is lost: the position advances, and FEC from that later packet is used if it has any.
public final class AdaptiveJitterBuffer: JitterBufferStrategy {
    public let configuration: Configuration
    public let format: AudioFormat
    // The mutable state below is `@exclusivity(unchecked)`: the buffer is used from one thread and its methods never
    // re-enter it, so the run-time exclusivity checks (most of its state is touched inside `withUnsafe…` closures,
    // where the compiler cannot prove accesses apart) only cost time on every packet and tick: about 0.3 % of a
    // 50-participant conference tick (`voice-bench conference`). Static exclusivity checking is unchanged.
    @exclusivity(unchecked) public private(set) var statistics = JitterBufferStatistics()
    /// The operation that produced the most recent chunk.
    @exclusivity(unchecked) public private(set) var lastOperation: PlayoutOperation = .buffering

    private let playout: PlayoutOperations
    @exclusivity(unchecked) private var packets: PacketBuffer
    @exclusivity(unchecked) private var estimator: DelayEstimator
    private let block: Int
    private let tsPerSample: Int64
    private let tsPerMs: Double
    /// Ticks played so far, and the receiver time of tick 0: together they give "now" at every tick. Without a
    /// clock it is learnt from arrivals (a packet inserted before tick n arrived no later than tick n's time: the
    /// largest such bound, slowly decaying). That bound assumes every tick ran on time: a tick that ran late —
    /// the thread stalled, then caught up — lets packets that came during the stall raise it by the stall, and at
    /// 0.01 ms a packet it took minutes to come back down, while the buffer steered its real delay that far
    /// below target (late packets, holds, accelerating again: 5-7 % concealed for the rest of a call after one
    /// 40 ms stall). So a caller with a clock gives each tick's scheduled time
    /// (``playoutTick(into:scheduledAt:)``) and the origin is taken from it, never from arrivals; as NetEq
    /// measures arrivals on its own playout tick counter, a late local tick then never reads as network delay.
    @exclusivity(unchecked) private var tickCount: Int64 = 0
    @exclusivity(unchecked) private var tickZeroMilliseconds: Double?
    /// Time (ms) the ticks so far have played: each tick is one block.
    private var tickedMilliseconds: Double { milliseconds(samples: Int(tickCount) * block) }
    /// Whether the caller gives tick times (then arrivals no longer move `tickZeroMilliseconds`).
    @exclusivity(unchecked) private var clocked = false
    /// How far (ms) behind the playout position the newest packet must lie to count as a new timestamp base.
    static let timelineJumpMilliseconds: Int64 = 2_000
    @exclusivity(unchecked) private var packetTimestamps: Int64 = 960
    @exclusivity(unchecked) private var arrivals = PacketArrivals()
    @exclusivity(unchecked) private var newestEnd: Int64 = .min
    @exclusivity(unchecked) private var lookAhead: FECLookAheadState
    /// The playout-delay target chosen by ``Configuration/Target/cost`` (ms above the fastest recent packet).
    @exclusivity(unchecked) private var costTarget = 0.0
    /// Delay (ms) a released start-of-call look-ahead (``Configuration/FECLookAhead/holdsFromCallStart``) has left
    /// to shed.
    @exclusivity(unchecked) private var releasedLookAheadMilliseconds = 0.0

    /// Creates a buffer and its decoder (``Configuration/codec``).
    /// - Throws: `OpusError` when the decoder cannot be created for `configuration.sampleRate`.
    public init(configuration: Configuration = Configuration()) throws(OpusError) {
        precondition(
            configuration.rtpClockRate % configuration.sampleRate == 0, "RTP clock must be a multiple of the rate")
        self.configuration = configuration
        format = AudioFormat(sampleRate: configuration.sampleRate, channels: 1)
        playout = try PlayoutOperations(configuration: configuration)
        packets = PacketBuffer(capacity: configuration.packetCapacity, maxPayloadBytes: configuration.maxPayloadBytes)
        estimator = DelayEstimator(configuration: configuration.estimator)
        // The target by cost prices the look-ahead itself: nothing holds from the start there.
        var lookAheadSettings = configuration.fecLookAhead
        if configuration.target.cost != nil { lookAheadSettings.holdsFromCallStart = false }
        lookAhead = FECLookAheadState(settings: lookAheadSettings)
        block = format.samplesPerBlock
        tsPerSample = Int64(configuration.rtpClockRate / configuration.sampleRate)
        tsPerMs = Double(configuration.rtpClockRate) / 1000
        packetTimestamps = Int64(configuration.rtpClockRate / 50)
    }

    public var playoutTimestamp: Int64? { playout.timeline.everStarted ? playout.playingTimestamp : nil }

    /// One packet (ms) while the frames FEC could recover are worth the delay, else 0 (see
    /// ``Configuration/FECLookAhead``): the delay that lets a lost frame be recovered from the next packet
    /// instead of concealed. Always 0 with ``Configuration/Target/cost``: that cost prices the look-ahead into the
    /// target itself.
    public var fecLookAheadMilliseconds: Double {
        guard lookAhead.isOn else { return 0 }
        return isJittery ? configuration.fecLookAhead.jitteryLookAheadMilliseconds : Double(packetTimestamps) / tsPerMs
    }

    /// The current target buffer level (ms): estimator quantile plus one packet (plus the FEC look-ahead), within
    /// the configured bounds.
    public var targetLevelMilliseconds: Double {
        let base = configuration.target.cost == nil ? estimator.targetMilliseconds : costTarget
        let raw = base + Double(packetTimestamps) / tsPerMs + fecLookAheadMilliseconds
        return min(configuration.target.maximumMilliseconds, max(configuration.target.minimumMilliseconds, raw))
    }

    /// Now minus the transit of the fastest packet of the estimator's window (ms), or nil while either is unknown.
    private var delayReference: Double? {
        guard let zero = tickZeroMilliseconds, let fastest = estimator.minimumTransitMilliseconds else { return nil }
        return zero + tickedMilliseconds - fastest
    }

    /// How late (ms) the audio playing now is, compared with the fastest packet of the estimator's window: now −
    /// minimum transit − playout timestamp. A packet whose relative arrival delay exceeds this arrives after its
    /// playout time, so this is the quantity the buffer steers to its target (the oracle floor's own measure, up to
    /// the constant transit of the fastest packet). nil before playout starts.
    public var playoutDelayMilliseconds: Double? { playout.playoutDelay(reference: delayReference) }

    /// The playout delay the buffer steers towards (ms): the estimator's quantile of relative arrival delay plus
    /// `playoutMarginMilliseconds` and the FEC look-ahead.
    public var targetPlayoutDelayMilliseconds: Double {
        let target = configuration.target
        if target.cost != nil { return costTarget + target.playoutMarginMilliseconds }
        return estimator.targetMilliseconds + target.playoutMarginMilliseconds + fecLookAheadMilliseconds
    }

    /// Buffered audio (ms): packet durations at or after the playout position plus decoded samples waiting.
    public var bufferLevelMilliseconds: Double {
        let timeline = playout.timeline
        var ts: Int64 = 0
        for p in 0..<packets.count {
            let e = packets.entry(at: p)
            if e.timestamp >= timeline.position || !timeline.started { ts += e.duration }
        }
        return Double(ts) / tsPerMs + milliseconds(samples: playout.sync.count)
    }

    /// How far (ms) above its target the playout delay may go before accelerating (see
    /// ``Configuration/Stretching/jitteryExtraAccelerateMilliseconds``).
    private var accelerateAboveMilliseconds: Double {
        let stretching = configuration.stretching
        return stretching.accelerateAboveMilliseconds + (isJittery ? stretching.jitteryExtraAccelerateMilliseconds : 0)
    }

    /// Whether the path's jitter spans several ticks (the estimator's target is at least
    /// ``Configuration/Target/jitteryMilliseconds``): then the delay wobbles by itself and stretching costs more
    /// than it buys.
    private var isJittery: Bool { estimator.targetMilliseconds >= configuration.target.jitteryMilliseconds }

    /// Whether the path's jitter stays under one tick (the estimator's target below the minimum target): there a
    /// lost frame's FEC copy comes a whole packet after its playout time unless the buffer looks ahead.
    private var isCalm: Bool { estimator.targetMilliseconds < configuration.target.minimumMilliseconds }

    // MARK: Insert

    public func insert(
        payload: UnsafeBufferPointer<UInt8>, sequenceNumber: UInt16, rtpTimestamp: UInt32, arrival: MediaTime
    ) {
        // Duration and FEC flag from one opus_packet_parse (the C loop of `voice-bench conference` reads neither).
        guard !payload.isEmpty, payload.count <= configuration.maxPayloadBytes,
            case let (samples, hasFEC)? = playout.decoder.durationAndFEC(of: payload),
            samples > 0
        else {
            statistics.invalidPackets += 1
            return
        }
        guard
            let admitted = arrivals.admit(
                sequenceNumber: sequenceNumber, rtpTimestamp: rtpTimestamp, statistics: &statistics)
        else { return }
        let (sequence, timestamp) = (admitted.sequence, admitted.timestamp)
        let timeline = playout.timeline
        if timeline.started && admitted.isNewest
            && timestamp + Self.timelineJumpMilliseconds * Int64(tsPerMs) < timeline.position
        {
            // The newest packet by sequence number lies seconds behind the playout position: the sender restarted
            // its timestamp base (a backward step, or a forward one of about 2^31 that serial arithmetic reads as
            // backward). Start a new timeline, as NetEq does on such jumps; treated as late, every later packet
            // would be dropped and the call would stay silent.
            flush(keepingLevel: 0)
            newestEnd = .min
            estimator.reset()
            costTarget = 0
            statistics.timelineResets += 1
        }

        let duration = Int64(samples) * tsPerSample
        packetTimestamps = duration
        if admitted.isNewest { lookAhead.addNewest(sequence: sequence, hasFEC: hasFEC) }
        // Slow decay (0.01 ms per packet, 500 ppm at 20 ms packets) lets a playout clock that runs fast against
        // the arrival clock pull the estimate down; a slow one pushes it up through the max.
        if !clocked {
            let zero = arrival.milliseconds - tickedMilliseconds
            tickZeroMilliseconds = max(zero, (tickZeroMilliseconds ?? zero) - 0.01)
        }
        estimator.update(arrivalMilliseconds: arrival.milliseconds, timestampMilliseconds: Double(timestamp) / tsPerMs)
        let plainTarget = estimator.targetMilliseconds + configuration.target.playoutMarginMilliseconds
        lookAhead.inTimeShare = estimator.fraction(atOrBelow: plainTarget - Double(duration) / tsPerMs)
        if let weights = configuration.target.cost {
            let situation = PlayoutTargetCost.Situation(
                lossShare: lookAhead.recentGapRate,
                fecPacketMilliseconds: lookAhead.carriesFEC ? Double(duration) / tsPerMs : nil)
            costTarget = estimator.cheapestTarget(weights, situation: situation, current: costTarget)
        } else {
            let lookAheadBefore = fecLookAheadMilliseconds
            if lookAhead.update(calm: isCalm, callMilliseconds: tickedMilliseconds), playout.timeline.started {
                releasedLookAheadMilliseconds = lookAheadBefore
            }
            if lookAhead.isOn { releasedLookAheadMilliseconds = 0 }
        }
        if playout.timeline.started && timestamp < playout.timeline.position {
            statistics.latePackets += 1
            return
        }
        let entry = PacketBuffer.Entry(
            sequence: sequence, timestamp: timestamp, duration: duration, arrivalNanoseconds: arrival.nanoseconds,
            payloadLength: payload.count, hasFEC: hasFEC)
        var result = packets.insert(entry, payload: payload)
        if result == .full {
            flush(keepingLevel: 0)
            result = packets.insert(entry, payload: payload)
        }
        if result == .inserted { newestEnd = max(newestEnd, timestamp + duration) }
        updateDelayStatistics()
    }

    // MARK: Playout

    /// One tick at its scheduled time on the arrivals' clock (the deadline the tick was due at, not when a late
    /// thread got to run it): the playout delay is measured from it, so a tick run late and the ticks caught up
    /// after it read as the schedule says, and a schedule moved on past skipped ticks is followed at once.
    @discardableResult
    public func playoutTick(into output: UnsafeMutableBufferPointer<Int16>, scheduledAt time: MediaTime)
        -> PlayoutOperation
    {
        clocked = true
        tickZeroMilliseconds = time.milliseconds - tickedMilliseconds
        return playoutTick(into: output)
    }

    @discardableResult
    public func playoutTick(into output: UnsafeMutableBufferPointer<Int16>) -> PlayoutOperation {
        precondition(output.count == block, "playoutTick needs exactly one 10 ms block (\(block) samples)")
        var guardCount = 0
        while playout.sync.count < block {
            produceChunk()
            guardCount += 1
            precondition(guardCount < 1_000, "jitter buffer made no progress")
        }
        playout.play(into: output)
        tickCount += 1
        if playout.timeline.everStarted {
            statistics.ticks += 1
            statistics.playedSamples += block
            updateDelayStatistics()
            statistics.delaySumMilliseconds += statistics.currentDelayMilliseconds
        }
        return lastOperation
    }

    /// Duration (ms) of `samples` at the buffer's rate.
    private func milliseconds(samples: Int) -> Double { Double(samples) * 1000 / Double(format.sampleRate) }

    private func updateDelayStatistics() {
        let timeline = playout.timeline
        let waiting = milliseconds(samples: playout.sync.count)
        let ahead = newestEnd == .min || !timeline.started ? 0 : max(0, Double(newestEnd - timeline.position) / tsPerMs)
        statistics.currentDelayMilliseconds = ahead + waiting
        statistics.playoutDelayMilliseconds = playoutDelayMilliseconds
        statistics.targetPlayoutDelayMilliseconds = timeline.started ? targetPlayoutDelayMilliseconds : nil
        // While playing, the target is the buffer level that would put the playout delay on its target.
        if timeline.started, let delay = playoutDelayMilliseconds {
            statistics.targetDelayMilliseconds = max(0, ahead + waiting + targetPlayoutDelayMilliseconds - delay)
        } else {
            statistics.targetDelayMilliseconds = targetLevelMilliseconds
        }
    }

    /// Drops buffered packets the playout position has passed: they came too late to be played.
    private func discardStale() {
        while !packets.isEmpty, packets.entry(at: 0).timestamp < playout.timeline.position {
            packets.remove(at: 0)
            statistics.latePackets += 1
        }
    }

    private func flush(keepingLevel levelMs: Double) {
        var removed = 0
        if levelMs <= 0 {
            removed = packets.removeAll()
            playout.timeline.started = false
        } else {
            // Keep the newest packets worth `levelMs`, drop the rest, and jump the position to the oldest kept.
            var keep: Int64 = 0
            var firstKept = packets.count
            while firstKept > 0 && Double(keep) / tsPerMs < levelMs {
                firstKept -= 1
                keep += packets.entry(at: firstKept).duration
            }
            for _ in 0..<firstKept { packets.remove(at: 0) }
            removed = firstKept
            if let first = packets.isEmpty ? nil : packets.entry(at: 0) {
                playout.timeline.position = first.timestamp
            }
        }
        statistics.flushes += 1
        statistics.flushedPackets += removed
    }

    private func classify() -> PlayoutDecision.NextPacket {
        guard !packets.isEmpty else { return .none }
        let timeline = playout.timeline
        let first = packets.entry(at: 0)
        if !timeline.started || first.timestamp == timeline.position { return .due }
        let gap = first.timestamp - timeline.position
        let contiguous = timeline.lastDecodedSequence.map { first.sequence == $0 + 1 } ?? false
        return .future(
            gapTimestamps: gap, isSequenceContiguous: contiguous, hasFEC: first.hasFEC,
            gapIsOneFrame: gap == first.duration)
    }

    /// Decides the next operation and has ``PlayoutOperations`` carry it out.
    private func produceChunk() {
        let started = playout.timeline.started
        if started { discardStale() }
        let target = targetLevelMilliseconds
        if started && bufferLevelMilliseconds > target + configuration.target.flushExcessMilliseconds {
            flush(keepingLevel: target)
            lastOperation = .expand  // the next packet is merged in, hiding the jump
        }
        // Before playout starts, the buffer fills to the target level. Once playing, it steers the playout delay
        // (how late the audio playing now is against the fastest recent packet) to the estimator's quantile: that
        // is the quantity that decides whether a packet is late, so steering it (rather than the packet-sized
        // sawtooth of the buffer level) keeps the delay as close to the oracle floor as the quantile allows.
        var level = bufferLevelMilliseconds
        var goal = target
        if playout.timeline.started, let delay = playoutDelayMilliseconds {
            level = delay
            goal = targetPlayoutDelayMilliseconds
        }
        let stretching = configuration.stretching
        let accelerateAbove = accelerateAboveMilliseconds
        // A released look-ahead is shed in one splice of the whole ticks of it that lie above the goal (the band
        // alone would keep one tick of a 20 ms packet, and two splices are two delay changes), in a pause.
        let tick = milliseconds(samples: block)
        var shedTicks = 0
        if releasedLookAheadMilliseconds > 0 {
            shedTicks = min(Int(releasedLookAheadMilliseconds / tick), max(0, Int((level - goal) / tick)))
            if shedTicks == 0 { releasedLookAheadMilliseconds = 0 }
        }
        let sheddingAbove = shedTicks > 0 ? Double(shedTicks) * tick : accelerateAbove
        let input = PlayoutDecision.Input(
            hasStarted: playout.timeline.started, next: classify(), bufferLevelMilliseconds: level,
            targetLevelMilliseconds: goal, previous: lastOperation, isHolding: playout.timeline.holding,
            slowDownBelowMilliseconds: stretching.slowDownBelowMilliseconds,
            accelerateAboveMilliseconds: sheddingAbove)
        let context = PlayoutContext(
            delayReference: delayReference, goal: goal, targetPlayoutDelay: targetPlayoutDelayMilliseconds,
            isJittery: isJittery, isCalm: isCalm,
            accelerateIsUrgent: level >= goal + releasedLookAheadMilliseconds + accelerateAbove
                + stretching.urgentMilliseconds,
            slowDownIsUrgent: level < goal - stretching.slowDownBelowMilliseconds - stretching.urgentMilliseconds,
            accelerateTicks: max(1, shedTicks), shedsLookAhead: shedTicks > 0)
        let acceleratedBefore = statistics.acceleratedSamples
        lastOperation = playout.perform(
            PlayoutDecision.decide(input), context: context, packets: &packets, statistics: &statistics)
        if statistics.acceleratedSamples > acceleratedBefore {
            let shed = milliseconds(samples: statistics.acceleratedSamples - acceleratedBefore)
            releasedLookAheadMilliseconds = max(0, releasedLookAheadMilliseconds - shed)
        }
        // A long hold re-times playout after a delay step, so the estimator forgets the faster path before it. On a
        // jittery path in the call's first transit window, while the estimate still learns the jitter, a hold that
        // long is the jitter's own tail: forgetting the fastest packet there made the next, slower packets the
        // reference, so the playout delay read up to the jitter's spread too low, and the buffer slowed down and
        // then accelerated back into the first words (noisy speech under 30 ms jitter, Benchmarks/README.md section
        // 7). Later, the re-timing brings the delay back down after a jitter spike (`FieldComplaintTests`).
        if playout.holdEndedLong {
            let learning = tickedMilliseconds < estimator.configuration.windowMilliseconds
            if !(isJittery && learning) { estimator.rebaseline() }
            playout.acknowledgeHoldEnded()
        }
    }
}
