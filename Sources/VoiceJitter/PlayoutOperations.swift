import VoiceCodec

/// Where playout stands on the sender's timeline.
struct PlayoutTimeline {
    /// Extended RTP timestamp at the end of the sync buffer.
    var position: Int64 = 0
    /// Whether playout is running (false before the first packet and after a flush to empty).
    var started = false
    /// Whether playout has ever started.
    var everStarted = false
    /// True while playout conceals in place, the position held, waiting for a packet that may only be late.
    var holding = false
    /// Samples concealed while holding.
    var heldSamples = 0
    var lastDecodedSequence: Int64?
    /// Where the last decoded packet ended (timestamp units), and the concealment counted up to then: what the
    /// next gap's concealment is weighed against (``PlayoutOperations/settleGapConcealment(before:_:)``).
    var lastDecodedEnd: Int64?
    var concealedAtLastDecode = 0
}

/// What the playout operations need from the buffer's clock and targets for one chunk.
struct PlayoutContext {
    /// Now minus the fastest recent transit (ms): the playout delay is this minus the playing timestamp (ms);
    /// nil while either is unknown.
    var delayReference: Double?
    /// The playout delay (or, before playout starts, the buffer level) steered to (ms).
    var goal: Double
    /// The playout-delay target (ms), where a restart resumes with ``JitterBufferRole/conference(restartsAtTargetDelay:)``.
    var targetPlayoutDelay: Double
    /// Whether the path is jittery (``AdaptiveJitterBuffer/Configuration/Target/jitteryMilliseconds``).
    var isJittery: Bool
    /// Whether the path's jitter stays under one tick (``AdaptiveJitterBuffer``'s `isCalm`).
    var isCalm: Bool
    /// Whether the delay is so far beyond the accelerate (slow-down) threshold that the stretch should not wait
    /// for a quiet moment.
    var accelerateIsUrgent: Bool
    var slowDownIsUrgent: Bool
    /// Ticks an accelerate removes in one splice: one, or a released look-ahead's packet at once (one delay change
    /// instead of two).
    var accelerateTicks = 1
    /// Whether the accelerate sheds a released look-ahead: then it waits for a pause (``isPause``), never urgent.
    var shedsLookAhead = false
}

/// The playout operations of the adaptive jitter buffer (NetEq's normal, accelerate, preemptive expand, merge,
/// expand, comfort noise and FEC recovery): each carries out one ``PlayoutDecision/Action`` on the packet buffer,
/// the Opus decoder and the ``SyncBuffer``, and moves the ``PlayoutTimeline`` on.
///
/// Playout stays on the tick grid: decoding, concealment and FEC all produce whole 10/20 ms, and accelerate and
/// slow-down remove or add exactly one tick (a WSOLA splice at the best-matching point,
/// ``TimeStretcher/accelerate(_:count:removing:)``), so frames start on tick boundaries (see
/// ``AdaptiveJitterBuffer``). All storage is allocated in `init`; nothing allocates after.
final class PlayoutOperations {
    // Mutable state is `@exclusivity(unchecked)` for the reason given on ``AdaptiveJitterBuffer``'s.
    @exclusivity(unchecked) var timeline = PlayoutTimeline()
    @exclusivity(unchecked) private(set) var sync: SyncBuffer
    /// Set when a decode ends a long hold: the buffer then rebaselines its delay estimator
    /// (``DelayEstimator/rebaseline()``), so later packets are measured against the delay playout now has.
    @exclusivity(unchecked) private(set) var holdEndedLong = false
    /// Recent speech power (mean square) of the played audio, for ``stretchIsTimely(urgent:)``.
    @exclusivity(unchecked) private var speechPower = 0.0
    static let speechLevelDecayPerTick = 0.986
    /// The background's power (mean square) in the played audio: the quietest recent tick, rising 3 dB a second so
    /// that it follows a louder background. What a pause is measured against (``isPause``).
    @exclusivity(unchecked) private var backgroundPower = Double.greatestFiniteMagnitude
    static let backgroundRisePerTick = 1.007
    /// Ticks played in a row at the background's level (``isPause``).
    @exclusivity(unchecked) private var backgroundTicks = 0
    /// A pause is this many ticks (100 ms) of background already played: a splice at a pause's first tick lies
    /// right after the word before it.
    static let pauseTicks = 10
    @exclusivity(unchecked) private var tail: [Int16]
    /// The stream's decoder (the buffer also reads packet durations through it).
    let decoder: AudioDecoder
    private let stretcher: TimeStretcher
    private let role: JitterBufferRole
    private let maximumDTXGapMilliseconds: Double
    private let skipLateHoldMilliseconds: Double
    private let slowDownBelowMilliseconds: Double
    private let quietRatio: Double
    private let sampleRate: Int
    private let block: Int
    private let tsPerSample: Int64
    private let tsPerMs: Double
    /// 2.5 ms, the smallest Opus concealment step.
    private let mergeSamples: Int
    /// A hold at least this long (40 ms) before a decode rebaselines the delay estimator.
    private let rebaselineSamples: Int

    init(configuration: AdaptiveJitterBuffer.Configuration) throws(OpusError) {
        let rate = configuration.sampleRate
        decoder = try AudioDecoder(codec: configuration.codec, sampleRate: rate)
        var stretcher = TimeStretcher(sampleRate: rate)
        stretcher.spliceCorrelationThreshold = configuration.stretching.spliceCorrelationThreshold
        stretcher.overlapRatio = configuration.stretching.spliceOverlapRatio
        self.stretcher = stretcher
        role = configuration.role
        maximumDTXGapMilliseconds = configuration.maximumDTXGapMilliseconds
        skipLateHoldMilliseconds = configuration.skipLateHoldMilliseconds
        slowDownBelowMilliseconds = configuration.stretching.slowDownBelowMilliseconds
        quietRatio = configuration.stretching.quietRatio
        sampleRate = rate
        block = rate / 100
        tsPerSample = Int64(configuration.rtpClockRate / rate)
        tsPerMs = Double(configuration.rtpClockRate) / 1000
        mergeSamples = rate / 400
        rebaselineSamples = rate * 40 / 1000
        let maxFrame = rate * 120 / 1000
        sync = SyncBuffer(capacity: 4 * maxFrame)
        tail = [Int16](repeating: 0, count: maxFrame)
    }

    /// Extended RTP timestamp of the next sample to be played.
    var playingTimestamp: Int64 { timeline.position - Int64(sync.count) * tsPerSample }

    /// How late (ms) the audio playing now is against the fastest recent packet, given `reference` (now minus the
    /// fastest transit); nil before playout starts.
    func playoutDelay(reference: Double?) -> Double? {
        guard timeline.everStarted, let reference else { return nil }
        return reference - Double(playingTimestamp) / tsPerMs
    }

    /// Clears ``holdEndedLong`` once the buffer has acted on it.
    func acknowledgeHoldEnded() {
        holdEndedLong = false
    }

    /// Plays one tick from the sync buffer into `output` and follows the speech level with it: a peak follower
    /// that falls about 6 dB a second (0.25 in power over 100 ticks).
    func play(into output: UnsafeMutableBufferPointer<Int16>) {
        let energy = sync.take(into: output)
        speechPower = max(energy / Double(block), speechPower * Self.speechLevelDecayPerTick)
        let power = energy / Double(block)
        backgroundPower = min(max(power, 1), backgroundPower * Self.backgroundRisePerTick)
        backgroundTicks = isBackground(power) ? backgroundTicks + 1 : 0
    }

    /// Whether `power` (mean square) is within 6 dB of the background or under the stretcher's silence level.
    private func isBackground(_ power: Double) -> Bool {
        power < max(4 * backgroundPower, stretcher.silenceRMS * stretcher.silenceRMS)
    }

    /// Carries out `action` and returns the operation that produced the chunk.
    func perform(
        _ action: PlayoutDecision.Action, context: PlayoutContext, packets: inout PacketBuffer,
        statistics: inout JitterBufferStatistics
    ) -> PlayoutOperation {
        switch action {
        case .buffer:
            sync.appendSilence(block)
            if timeline.everStarted { statistics.concealedSamples += block }
            return .buffering
        case .start:
            timeline.position = packets.entry(at: 0).timestamp
            timeline.started = true
            timeline.everStarted = true
            decodeDue(&packets, &statistics)
            return .normal
        case .normal:
            decodeDue(&packets, &statistics)
            return .normal
        case .accelerate:
            let amount = block * context.accelerateTicks
            decodeDue(&packets, &statistics)
            decodeAheadForSplice(&packets, &statistics, amount: amount)
            // Whole ticks, so playout stays on the tick grid; where least audible.
            let removed: Int
            if context.shedsLookAhead {
                // In a pause any point will do: splice at its quietest (a correlated point in a noisy pause may lie
                // at the next word's onset).
                removed = isPause ? -stretch(adding: -amount, silenceRMS: sync.meanSquare.squareRoot() + 1) : 0
            } else {
                removed = stretchIsTimely(urgent: context.accelerateIsUrgent) ? -stretch(adding: -amount) : 0
            }
            statistics.acceleratedSamples += removed
            return removed > 0 ? .accelerate : .normal
        case .slowDown:
            decodeDue(&packets, &statistics)
            decodeAheadForSplice(&packets, &statistics)
            let added = stretchIsTimely(urgent: context.slowDownIsUrgent) ? stretch(adding: block) : 0
            statistics.slowedDownSamples += added
            return added > 0 ? .slowDown : .normal
        case .merge:
            // Playout concealed in place waiting for this very packet: it came after its playout time. It is
            // played (late) rather than dropped, but it is a late packet all the same.
            let late = timeline.holding && timeline.heldSamples > 0
            if late { statistics.latePackets += 1 }
            let skipped = late && lateWaitIsSurplus(context) ? timeline.heldSamples : 0
            if skipped > 0 {
                // The wait is dropped, not kept: playout returns to the delay it had, which is no delay step to
                // re-time the estimator for.
                timeline.holding = false
                timeline.heldSamples = 0
            }
            merge(skipping: skipped, &packets, &statistics)
            return .merge
        case .jumpAndMerge:
            return jumpToNextPacket(context, &packets, &statistics)
        case .expand(let advance):
            return expand(advance: advance, &statistics)
        case .fecRecover:
            return recoverFromFEC(context, &packets, &statistics)
        case .comfortNoise:
            return comfortNoise(context, &packets, &statistics)
        }
    }
}

extension PlayoutOperations {
    /// Adds (`amount` > 0) or removes (< 0) exactly `|amount|` samples by a splice in the sync buffer; returns the
    /// change, 0 where no splice fits.
    /// `silenceRMS` raises the stretcher's silence level (below it any splice point will do) for this splice.
    private func stretch(adding amount: Int, silenceRMS: Double = 0) -> Int {
        var stretcher = stretcher
        stretcher.silenceRMS = max(stretcher.silenceRMS, silenceRMS)
        return sync.stretch { s, count in
            if amount > 0 { return stretcher.slowDown(s, count: count, adding: amount) ? amount : 0 }
            return stretcher.accelerate(s, count: count, removing: -amount) ? amount : 0
        }
    }

    /// Whether to stretch the audio now in the sync buffer: where a listener hears it least — when it is quiet
    /// against the recent speech level (a pause, a soft unvoiced stretch) — or when the delay is so far from its
    /// goal that waiting for a pause costs more (late packets, or needless latency) than an audible splice.
    private func stretchIsTimely(urgent: Bool) -> Bool {
        sync.meanSquare < speechPower * quietRatio || urgent
    }

    /// Whether playout is in a pause: the last ``pauseTicks`` played and the audio now in the sync buffer within
    /// 6 dB of the background (or under the stretcher's silence level), and quiet against the recent speech level
    /// — not a soft stretch of a word, which is quiet against the speech but louder than the room. A splice there
    /// changes the delay where no speech is heard.
    private var isPause: Bool {
        let level = sync.meanSquare
        return backgroundTicks >= Self.pauseTicks && level < speechPower * quietRatio && isBackground(level)
    }

    /// Decodes the packets that follow the one just decoded, while they are buffered and contiguous, until the
    /// sync buffer holds two ticks (and at least what a splice of `amount`, one tick by default, needs,
    /// ``TimeStretcher/spliceSpan(removingOrAdding:)``). A 20 ms packet gives that by itself; a 10 ms packet
    /// (a peer's `ptime` 10) gives one tick, where no splice fits, so without this the buffer never stretched at
    /// all at 10 ms packets: its delay only rose (late holds) and never came back down.
    private func decodeAheadForSplice(
        _ packets: inout PacketBuffer, _ statistics: inout JitterBufferStatistics, amount: Int? = nil
    ) {
        let wanted = max(2 * block, stretcher.spliceSpan(removingOrAdding: amount ?? block))
        while sync.count < wanted, !packets.isEmpty, packets.entry(at: 0).timestamp == timeline.position,
            sync.count + Int(packets.entry(at: 0).duration / tsPerSample) <= sync.capacity / 2
        {
            decodeDue(&packets, &statistics)
        }
    }

    /// Conceals: with `advance`, a lost frame (the position moves on); without, in place while waiting for a packet
    /// that may be only just late — just what this tick still needs (in Opus's 2.5 ms steps), so waiting for it
    /// adds as little delay as possible.
    private func expand(advance: Bool, _ statistics: inout JitterBufferStatistics) -> PlayoutOperation {
        let needed = (max(block - sync.count, mergeSamples) + mergeSamples - 1) / mergeSamples * mergeSamples
        let n = conceal(samples: advance ? block : needed)
        statistics.concealedSamples += n
        if advance {
            timeline.position += Int64(n) * tsPerSample
        } else {
            timeline.holding = true
            timeline.heldSamples += n
        }
        return .expand
    }

    /// Decodes the lost frame at the playout position from the next packet's FEC (concealment if that fails).
    private func recoverFromFEC(
        _ context: PlayoutContext, _ packets: inout PacketBuffer, _ statistics: inout JitterBufferStatistics
    ) -> PlayoutOperation {
        let first = packets.entry(at: 0)
        let samples = Int(first.duration / tsPerSample)
        // While playout held for this frame, concealment already played its first `covered` samples: keep only the
        // rest of the recovered frame, crossfaded from the concealment, so recovery leaves no surplus to
        // time-compress later — except the whole ticks of it the goal wants as delay (the FEC look-ahead just
        // switched on, on a calm path): that concealment is then the look-ahead's delay, gained at the loss where
        // it is least heard, and the frame is recovered whole instead of being concealed while a slow-down waits.
        let held = timeline.holding ? min(timeline.heldSamples, samples) : 0
        let covered = held - min(held, wantedDelaySamples(context, held: held))
        let tailCount = held > 0 ? concealTail() : 0
        let start = sync.count
        let decoder = decoder
        let n = packets.withPayload(at: 0) { payload in
            sync.withSpace(samples) { space in
                (try? decoder.decodeFEC(from: payload, frameSamples: samples, into: space)) ?? 0
            }
        }
        let operation: PlayoutOperation
        if n > 0 {
            let kept = max(0, n - covered)
            sync.commit(n)
            if held > 0 {
                sync.remove(n - kept, at: start)
                crossfadeFromTail(at: start, tailCount: tailCount, available: kept)
            }
            timeline.position += Int64(n) * tsPerSample
            // Concealment already stood in for the frame's start: it is a concealed frame whose rest FEC filled.
            // Concealment kept as delay stood in for nothing: the frame is recovered whole.
            if covered == 0 { statistics.fecRecoveredFrames += 1 }
            statistics.fecRecoveredSamples += kept
            operation = .fecRecover
        } else {
            let c = conceal(samples: samples)
            statistics.concealedSamples += c
            timeline.position += Int64(c) * tsPerSample
            operation = .expand
        }
        timeline.holding = false
        timeline.heldSamples = 0
        return operation
    }

    /// How much (samples, whole ticks, at most `held`) of the concealment played while holding the goal wants kept
    /// as added playout delay: on a calm path, what the delay before the hold lacked of the goal. With jitter the
    /// delay wobbles by itself, and the held time is cut.
    private func wantedDelaySamples(_ context: PlayoutContext, held: Int) -> Int {
        guard held > 0, context.isCalm, let delay = playoutDelay(reference: context.delayReference) else {
            return 0
        }
        let before = delay - Double(timeline.heldSamples) * 1000 / Double(sampleRate)
        let lacking = Int((context.goal - before) * Double(sampleRate) / 1000)
        return max(0, lacking) / block * block
    }

    /// After holding through a loss (an outage, or a loss while the buffer ran dry), moves the playout position to
    /// the next buffered packet — but no closer than the playout-delay goal: playing that packet at once would put
    /// playout as late as that one packet's transit, below the target, and the next packets would come late.
    /// Instead the position lands whole ticks before the packet, so the ticks up to it are concealed (or recovered
    /// from its FEC) and playout resumes at the target delay, on the tick grid, as it was before the loss.
    private func jumpToNextPacket(
        _ context: PlayoutContext, _ packets: inout PacketBuffer, _ statistics: inout JitterBufferStatistics
    ) -> PlayoutOperation {
        let first = packets.entry(at: 0)
        timeline.position = first.timestamp
        timeline.holding = false
        timeline.heldSamples = 0
        guard let delay = playoutDelay(reference: context.delayReference), delay < context.goal else {
            merge(skipping: 0, &packets, &statistics)
            return .merge
        }
        let ticks = Int64(((context.goal - delay) / 10).rounded(.up))
        timeline.position -= ticks * Int64(block) * tsPerSample
        // Landed exactly on the frame before the packet (two frames lost in a row): its FEC copy fills it next
        // (`fecRecover`), instead of concealment.
        if first.hasFEC && timeline.position == first.timestamp - first.duration { return .expand }
        let n = conceal(samples: block)
        statistics.concealedSamples += n
        timeline.position += Int64(n) * tsPerSample
        return .expand
    }

    /// With ``JitterBufferRole/conference(restartsAtTargetDelay:)``: how far (timestamp units, whole 2.5 ms steps)
    /// before a restarting packet playout resumes so that the packet plays at the target playout delay; that time
    /// is played as comfort noise, and stays below the restart gap so it is not taken for another restart.
    private func restartLead(before timestamp: Int64, _ context: PlayoutContext) -> Int64 {
        guard role.restartsAtTargetDelay, let reference = context.delayReference else { return 0 }
        let delayIfPlayedNow = reference - Double(timestamp) / tsPerMs
        let lead = min(max(0, context.targetPlayoutDelay - delayIfPlayedNow), 0.9 * maximumDTXGapMilliseconds)
        let step = Double(sampleRate / 400)
        return Int64((lead * Double(sampleRate) / 1000 / step).rounded(.down)) * Int64(step) * tsPerSample
    }

    /// Plays a DTX gap up to the next packet as comfort noise (the decoder's concealment, which fades to its
    /// comfort noise), or restarts playout at that packet when the gap is longer than a pause.
    private func comfortNoise(
        _ context: PlayoutContext, _ packets: inout PacketBuffer, _ statistics: inout JitterBufferStatistics
    ) -> PlayoutOperation {
        let first = packets.entry(at: 0)
        var gap = first.timestamp - timeline.position
        // The next packet follows the last one decoded (sequence-contiguous, or `.comfortNoise` would not have
        // been decided): nothing was lost, so what playout concealed in place while waiting for it was the
        // sender's silence (DTX, or a room's dormant participant), not loss.
        if timeline.holding {
            statistics.concealedSamples -= timeline.heldSamples
            statistics.comfortNoiseSamples += timeline.heldSamples
        }
        if Double(gap) / tsPerMs > maximumDTXGapMilliseconds {
            timeline.position = first.timestamp - restartLead(before: first.timestamp, context)  // a restart: jump
            timeline.holding = false
            timeline.heldSamples = 0
            return role.mergesAfterRestart ? .expand : .comfortNoise
        }
        if timeline.holding {
            // The pause concealed in place was the sender's DTX: it was silence, and time moved on.
            timeline.position += min(gap, Int64(timeline.heldSamples) * tsPerSample)
            timeline.holding = false
            timeline.heldSamples = 0
            gap = first.timestamp - timeline.position
            if gap == 0 { return .comfortNoise }
        }
        let chunk = Int(min(gap / tsPerSample, Int64(block)))
        let n: Int
        if chunk % mergeSamples == 0 {
            n = conceal(samples: chunk)
        } else {
            sync.appendSilence(chunk)
            n = chunk
        }
        statistics.comfortNoiseSamples += n
        timeline.position += Int64(n) * tsPerSample
        return .comfortNoise
    }

    /// Decodes the due packet after concealment: continues the concealment for 2.5 ms (not played) and
    /// crossfades it into the decoded audio, leaving out the first `skipped` samples (those the concealment already
    /// stood in for while playout waited for this late packet). A wait longer than the packet (a queueing spike,
    /// the packets behind it come with it) covered the packets after it too: while they are buffered, in sequence,
    /// they are decoded (the decoder's state runs on) and left out the same way.
    private func merge(skipping skipped: Int, _ packets: inout PacketBuffer, _ statistics: inout JitterBufferStatistics)
    {
        let tailCount = concealTail()
        let start = sync.count
        var remaining = skipped
        repeat {
            decodeDue(&packets, &statistics)
            let dropped = min(remaining, sync.count - start)
            if dropped > 0 {
                sync.remove(dropped, at: start)
                statistics.lateSkippedSamples += dropped
                remaining -= dropped
            }
        } while remaining > 0 && sync.count == start && !packets.isEmpty
            && packets.entry(at: 0).timestamp == timeline.position
        crossfadeFromTail(at: start, tailCount: tailCount, available: sync.count - start)
    }

    /// Whether the wait for the late packet now due is surplus delay: short
    /// (``AdaptiveJitterBuffer/Configuration/skipLateHoldMilliseconds``, so jitter rather than a delay step), on a
    /// jittery path (the target spans several ticks: the late packet is the jitter's tail, and the wait would be
    /// compressed away later), and on top of a playout delay that already met the goal before it. On a calm path a
    /// late packet says the delay is too low, and keeping the wait is the cheapest way up: skipping there raised
    /// late loss on the outage and DTX scenarios from 0.30 % and 0.5 % to 2.1 % and 2.0 %, while under 30 ms
    /// jitter it cut stretching from 5–6 k to 1–1.8 k samples a minute (PESQ-WB +0.08 to +0.14, seeds 1–2, 65 s
    /// of the speech set).
    private func lateWaitIsSurplus(_ context: PlayoutContext) -> Bool {
        let heldMilliseconds = Double(timeline.heldSamples) * 1000 / Double(sampleRate)
        guard heldMilliseconds < skipLateHoldMilliseconds, context.isJittery,
            let delay = playoutDelay(reference: context.delayReference)
        else {
            return false
        }
        return delay - heldMilliseconds >= context.goal - slowDownBelowMilliseconds
    }

    /// Continues the concealment for 2.5 ms into `tail` (not played), for
    /// ``crossfadeFromTail(at:tailCount:available:)``.
    private func concealTail() -> Int {
        let decoder = decoder
        let mergeSamples = mergeSamples
        return tail.withUnsafeMutableBufferPointer { t in
            (try? decoder.conceal(frameSamples: mergeSamples, into: t)) ?? 0
        }
    }

    /// Fades from the concealment tail into the `available` decoded samples at `start` of the sync buffer.
    private func crossfadeFromTail(at start: Int, tailCount: Int, available: Int) {
        tail.withUnsafeBufferPointer { t in
            sync.crossfade(from: UnsafeBufferPointer(rebasing: t[0..<tailCount]), at: start, available: available)
        }
    }

    /// Decodes the packet at the playout position into the sync buffer and removes it.
    private func decodeDue(_ packets: inout PacketBuffer, _ statistics: inout JitterBufferStatistics) {
        let first = packets.entry(at: 0)
        let decoder = decoder
        let space = sync.free
        let n = packets.withPayload(at: 0) { payload in
            sync.withSpace(space) { s in (try? decoder.decode(payload, into: s)) ?? -1 }
        }
        packets.remove(at: 0)
        settleGapConcealment(before: first, &statistics)
        timeline.lastDecodedSequence = first.sequence
        if timeline.holding && timeline.heldSamples >= rebaselineSamples { holdEndedLong = true }
        timeline.holding = false
        timeline.heldSamples = 0
        if n > 0 {
            sync.commit(n)
        } else {
            statistics.invalidPackets += 1
            let c = conceal(samples: Int(first.duration / tsPerSample))
            statistics.concealedSamples += c
        }
        timeline.position = first.timestamp + first.duration
        timeline.lastDecodedEnd = timeline.position
        timeline.concealedAtLastDecode = statistics.concealedSamples
    }

    /// Concealment since the last decoded packet beyond the audio the sender lost (the frames whose sequence
    /// numbers `first` skipped) stood in for the sender's silence — a DTX pause with a packet lost at its edge, a
    /// room's dormant participant — as far as the timestamps show a pause: comfort noise, not loss concealment.
    /// A late packet without a pause (timestamps contiguous but for the lost frames) keeps all of it as
    /// concealment.
    private func settleGapConcealment(before first: PacketBuffer.Entry, _ statistics: inout JitterBufferStatistics) {
        guard let last = timeline.lastDecodedSequence, let lastEnd = timeline.lastDecodedEnd, first.sequence > last
        else { return }
        let lostSamples = Int(first.sequence - last - 1) * Int(first.duration / tsPerSample)
        let senderPause = Int((first.timestamp - lastEnd) / tsPerSample) - lostSamples
        let silence = min(statistics.concealedSamples - timeline.concealedAtLastDecode - lostSamples, senderPause)
        guard silence > 0 else { return }
        statistics.concealedSamples -= silence
        statistics.comfortNoiseSamples += silence
    }

    /// Appends `samples` of the decoder's concealment (silence if it fails); returns how many were appended.
    private func conceal(samples: Int) -> Int {
        let decoder = decoder
        let length = min(sync.free, samples)
        let n = sync.withSpace(length) { s in (try? decoder.conceal(frameSamples: samples, into: s)) ?? 0 }
        if n > 0 {
            sync.commit(n)
            return n
        }
        sync.appendSilence(samples)
        return samples
    }
}
