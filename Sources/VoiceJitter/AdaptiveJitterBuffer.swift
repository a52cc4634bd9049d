import VoiceCodec
import VoiceCore
import VoiceRTP

/// The adaptive jitter buffer for Opus, split as NetEq is: a fixed-capacity ``PacketBuffer`` ordered by extended
/// sequence number, a ``DelayEstimator`` (relative arrival delay quantile), the pure ``PlayoutDecision`` per
/// chunk, and the playout operations (decode, Opus PLC expand, FEC recovery, merge, WSOLA accelerate and slow-down
/// via ``TimeStretcher``, comfort noise for DTX gaps).
///
/// Each 10 ms tick outputs exactly one block. Decoded audio waits in a small sync buffer; when it runs short the
/// decision function picks the next operation. All storage is allocated in `init`; `insert` and `playoutTick`
/// never allocate. Mono output.
///
/// Why the playout position is *held* while the buffer is empty: when nothing at all is buffered the missing
/// packet is more likely late than lost (a delay step, an outage, a DTX pause), so playout conceals in place and
/// plays the packet when it comes, instead of declaring it lost. When a later packet is already buffered the
/// missing one is lost: the position advances, and FEC from that later packet is used if it has any.
public final class AdaptiveJitterBuffer: JitterBufferStrategy {
    public struct Configuration: Sendable, Hashable {
        /// Output (and decoding) sample rate.
        public var sampleRate: Int = 16_000
        /// RTP clock rate of the timestamps (48 kHz for Opus, RFC 7587).
        public var rtpClockRate: Int = 48_000
        /// Packets the buffer can hold; when full it is flushed.
        public var packetCapacity: Int = 250
        public var maxPayloadBytes: Int = 1_500
        public var estimator = DelayEstimator.Configuration()
        /// Target delay bounds (ms), applied to estimator target + one packet.
        public var minimumTargetMilliseconds: Double = 20
        public var maximumTargetMilliseconds: Double = 1_000
        /// When the buffer level exceeds the target by more than this (ms), old packets are flushed down to the
        /// target instead of being accelerated away one pitch period at a time.
        public var flushExcessMilliseconds: Double = 400
        /// DTX gaps longer than this are treated as a stream restart (jump) rather than played as comfort noise.
        public var maximumDTXGapMilliseconds: Double = 10_000

        public init() {}
    }

    public let configuration: Configuration
    public let format: AudioFormat
    public private(set) var statistics = JitterBufferStatistics()
    /// The operation that produced the most recent chunk.
    public private(set) var lastOperation: PlayoutOperation = .buffering

    private let decoder: OpusDecoder
    private let stretcher: TimeStretcher
    private var packets: PacketBuffer
    private var estimator: DelayEstimator
    private let block: Int
    private let tsPerSample: Int64
    private let tsPerMs: Double
    private let mergeSamples: Int
    private let rebaselineSamples: Int
    private var filteredLevel: Double?

    private var sync: [Int16]
    private var syncCount = 0
    private var scratch: [Int16]
    private var tail: [Int16]

    private var position: Int64 = 0  // extended RTP timestamp at the end of the sync buffer
    private var started = false
    private var everStarted = false
    private var holding = false
    private var heldSamples = 0
    private var lastDecodedSequence: Int64?
    private var packetTimestamps: Int64 = 960
    private var sequenceUnwrapper = SequenceUnwrapper()
    private var timestampUnwrapper = TimestampUnwrapper()
    private var seen: [Int64]
    private var firstSequence: Int64?
    private var highestSequence: Int64 = .min
    private var newestEnd: Int64 = .min

    /// Creates a buffer and its Opus decoder.
    /// - Throws: `OpusError` when the decoder cannot be created for `configuration.sampleRate`.
    public init(configuration: Configuration = Configuration()) throws(OpusError) {
        precondition(configuration.rtpClockRate % configuration.sampleRate == 0, "RTP clock must be a multiple of the rate")
        self.configuration = configuration
        format = AudioFormat(sampleRate: configuration.sampleRate, channels: 1)
        decoder = try OpusDecoder(sampleRate: configuration.sampleRate, channels: 1)
        stretcher = TimeStretcher(sampleRate: configuration.sampleRate)
        packets = PacketBuffer(capacity: configuration.packetCapacity, maxPayloadBytes: configuration.maxPayloadBytes)
        estimator = DelayEstimator(configuration: configuration.estimator)
        block = format.samplesPerBlock
        tsPerSample = Int64(configuration.rtpClockRate / configuration.sampleRate)
        tsPerMs = Double(configuration.rtpClockRate) / 1000
        mergeSamples = configuration.sampleRate / 400  // 2.5 ms, the smallest Opus concealment step
        rebaselineSamples = configuration.sampleRate * 40 / 1000
        let maxFrame = configuration.sampleRate * 120 / 1000
        sync = [Int16](repeating: 0, count: 4 * maxFrame)
        scratch = [Int16](repeating: 0, count: maxFrame)
        tail = [Int16](repeating: 0, count: maxFrame)
        seen = [Int64](repeating: -1, count: 4096)
    }

    public var playoutTimestamp: Int64? { everStarted ? position - Int64(syncCount) * tsPerSample : nil }

    /// The current target buffer level (ms): estimator quantile plus one packet, within the configured bounds.
    public var targetLevelMilliseconds: Double {
        let raw = estimator.targetMilliseconds + Double(packetTimestamps) / tsPerMs
        return min(configuration.maximumTargetMilliseconds, max(configuration.minimumTargetMilliseconds, raw))
    }

    /// Buffered audio (ms): packet durations at or after the playout position plus decoded samples waiting.
    public var bufferLevelMilliseconds: Double {
        var ts: Int64 = 0
        for p in 0..<packets.count {
            let e = packets.entry(at: p)
            if e.timestamp >= position || !started { ts += e.duration }
        }
        return Double(ts) / tsPerMs + Double(syncCount) * 1000 / Double(format.sampleRate)
    }

    // MARK: Insert

    public func insert(payload: UnsafeBufferPointer<UInt8>, sequenceNumber: UInt16, rtpTimestamp: UInt32, arrival: MediaTime) {
        guard !payload.isEmpty, payload.count <= configuration.maxPayloadBytes,
            let samples = try? OpusPacket.samplesPerChannel(in: payload, sampleRate: format.sampleRate), samples > 0
        else {
            statistics.invalidPackets += 1
            return
        }
        let sequence = sequenceUnwrapper.unwrap(sequenceNumber)
        let timestamp = timestampUnwrapper.unwrap(rtpTimestamp)
        let slot = Int(UInt64(bitPattern: sequence) % UInt64(seen.count))
        if seen[slot] == sequence {
            statistics.duplicatePackets += 1
            return
        }
        seen[slot] = sequence
        statistics.packetsReceived += 1
        if firstSequence == nil { firstSequence = sequence }
        highestSequence = max(highestSequence, sequence)
        statistics.packetsExpected = Int(highestSequence - firstSequence! + 1)

        let duration = Int64(samples) * tsPerSample
        packetTimestamps = duration
        estimator.update(arrivalMilliseconds: arrival.milliseconds, timestampMilliseconds: Double(timestamp) / tsPerMs)
        if started && timestamp < position {
            statistics.latePackets += 1
            return
        }
        let entry = PacketBuffer.Entry(
            sequence: sequence, timestamp: timestamp, duration: duration, arrivalNanoseconds: arrival.nanoseconds,
            payloadLength: payload.count, hasFEC: OpusPacket.hasFEC(payload))
        var result = packets.insert(entry, payload: payload)
        if result == .full {
            flush(keepingLevel: 0)
            result = packets.insert(entry, payload: payload)
        }
        if result == .inserted { newestEnd = max(newestEnd, timestamp + duration) }
        updateDelayStatistics()
    }

    // MARK: Playout

    @discardableResult
    public func playoutTick(into output: UnsafeMutableBufferPointer<Int16>) -> PlayoutOperation {
        precondition(output.count == block, "playoutTick needs exactly one 10 ms block (\(block) samples)")
        var guardCount = 0
        while syncCount < block {
            produceChunk()
            guardCount += 1
            precondition(guardCount < 1_000, "jitter buffer made no progress")
        }
        sync.withUnsafeMutableBufferPointer { s in
            for i in 0..<block { output[i] = s[i] }
            for i in block..<syncCount { s[i - block] = s[i] }
        }
        syncCount -= block
        if everStarted {
            statistics.ticks += 1
            statistics.playedSamples += block
            updateDelayStatistics()
            statistics.delaySumMilliseconds += statistics.currentDelayMilliseconds
        }
        return lastOperation
    }

    private func updateDelayStatistics() {
        let waiting = Double(syncCount) * 1000 / Double(format.sampleRate)
        let ahead = newestEnd == .min || !started ? 0 : max(0, Double(newestEnd - position) / tsPerMs)
        statistics.currentDelayMilliseconds = ahead + waiting
        statistics.targetDelayMilliseconds = targetLevelMilliseconds
    }

    /// Drops buffered packets the playout position has passed: they came too late to be played.
    private func discardStale() {
        while !packets.isEmpty, packets.entry(at: 0).timestamp < position {
            packets.remove(at: 0)
            statistics.latePackets += 1
        }
    }

    private func flush(keepingLevel levelMs: Double) {
        var removed = 0
        if levelMs <= 0 {
            removed = packets.removeAll()
            started = false
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
                position = first.timestamp
            }
        }
        statistics.flushes += 1
        statistics.flushedPackets += removed
    }

    private func classify() -> PlayoutDecision.NextPacket {
        guard !packets.isEmpty else { return .none }
        let first = packets.entry(at: 0)
        if !started || first.timestamp == position { return .due }
        let gap = first.timestamp - position
        let contiguous = lastDecodedSequence.map { first.sequence == $0 + 1 } ?? false
        return .future(
            gapTimestamps: gap, isSequenceContiguous: contiguous, hasFEC: first.hasFEC,
            gapIsOneFrame: gap == first.duration)
    }

    private func produceChunk() {
        if started { discardStale() }
        let level = bufferLevelMilliseconds
        let target = targetLevelMilliseconds
        if started && level > target + configuration.flushExcessMilliseconds {
            flush(keepingLevel: target)
            lastOperation = .expand  // the next packet is merged in, hiding the jump
        }
        // Decisions use a smoothed level (NetEq's buffer_level_filter) so packet-sized wobble does not make the
        // buffer alternate between accelerate and slow-down.
        let current = bufferLevelMilliseconds
        let smoothed = started ? (filteredLevel.map { 0.95 * $0 + 0.05 * current } ?? current) : current
        filteredLevel = started ? smoothed : nil
        let input = PlayoutDecision.Input(
            hasStarted: started, next: classify(), bufferLevelMilliseconds: smoothed,
            targetLevelMilliseconds: target, previous: lastOperation, isHolding: holding,
            packetMilliseconds: Double(packetTimestamps) / tsPerMs)
        switch PlayoutDecision.decide(input) {
        case .buffer:
            appendSilence(block)
            if everStarted { statistics.concealedSamples += block }
            lastOperation = .buffering
        case .start:
            position = packets.entry(at: 0).timestamp
            started = true
            everStarted = true
            decodeDue()
            lastOperation = .normal
        case .normal:
            decodeDue()
            lastOperation = .normal
        case .accelerate:
            decodeDue()
            let removed = sync.withUnsafeMutableBufferPointer { stretcher.accelerate($0, count: syncCount) }
            syncCount -= removed
            filteredLevel? -= Double(removed) * 1000 / Double(format.sampleRate)
            statistics.acceleratedSamples += removed
            lastOperation = removed > 0 ? .accelerate : .normal
        case .slowDown:
            decodeDue()
            let added = sync.withUnsafeMutableBufferPointer { stretcher.slowDown($0, count: syncCount) }
            syncCount += added
            filteredLevel? += Double(added) * 1000 / Double(format.sampleRate)
            statistics.slowedDownSamples += added
            lastOperation = added > 0 ? .slowDown : .normal
        case .merge:
            merge()
        case .jumpAndMerge:
            position = packets.entry(at: 0).timestamp
            merge()
        case .expand(let advance):
            let n = conceal(samples: block)
            statistics.concealedSamples += n
            if advance {
                position += Int64(n) * tsPerSample
            } else {
                holding = true
                heldSamples += n
            }
            lastOperation = .expand
        case .fecRecover:
            let first = packets.entry(at: 0)
            let samples = Int(first.duration / tsPerSample)
            let n = packets.withPayload(at: 0) { payload in
                sync.withUnsafeMutableBufferPointer { s in
                    (try? decoder.decodeFEC(
                        from: payload, frameSamples: samples,
                        into: UnsafeMutableBufferPointer(rebasing: s[syncCount..<(syncCount + samples)]))) ?? 0
                }
            }
            if n > 0 {
                syncCount += n
                position += Int64(n) * tsPerSample
                statistics.fecRecoveredFrames += 1
                lastOperation = .fecRecover
            } else {
                let c = conceal(samples: samples)
                statistics.concealedSamples += c
                position += Int64(c) * tsPerSample
                lastOperation = .expand
            }
            holding = false
        case .comfortNoise:
            comfortNoise()
        }
    }

    private func comfortNoise() {
        let first = packets.entry(at: 0)
        var gap = first.timestamp - position
        if Double(gap) / tsPerMs > configuration.maximumDTXGapMilliseconds {
            position = first.timestamp  // a restart, not a pause: jump
            holding = false
            heldSamples = 0
            lastOperation = .expand
            return
        }
        if holding {
            // The pause we concealed in place was the sender's DTX: it was silence, and time moved on.
            statistics.concealedSamples -= heldSamples
            statistics.comfortNoiseSamples += heldSamples
            position += min(gap, Int64(heldSamples) * tsPerSample)
            holding = false
            heldSamples = 0
            lastOperation = .comfortNoise
            gap = first.timestamp - position
            if gap == 0 { return }
        }
        let chunk = Int(min(gap / tsPerSample, Int64(block)))
        let quantum = format.sampleRate / 400
        let n: Int
        if chunk % quantum == 0 {
            n = conceal(samples: chunk)
        } else {
            appendSilence(chunk)
            n = chunk
        }
        statistics.comfortNoiseSamples += n
        position += Int64(n) * tsPerSample
        lastOperation = .comfortNoise
    }

    private func merge() {
        // Continue the concealment for 2.5 ms (not played) and crossfade it into the decoded packet's start.
        let tailCount = tail.withUnsafeMutableBufferPointer { t in
            (try? decoder.conceal(frameSamples: mergeSamples, into: t)) ?? 0
        }
        let start = syncCount
        decodeDue()
        let decoded = syncCount - start
        let fade = min(tailCount, decoded)
        sync.withUnsafeMutableBufferPointer { s in
            for n in 0..<fade {
                let w = Double(n + 1) / Double(fade + 1)
                s[start + n] = Int16(clamping: Int((Double(tail[n]) * (1 - w) + Double(s[start + n]) * w).rounded()))
            }
        }
        lastOperation = .merge
    }

    /// Decodes the packet at the playout position into the sync buffer and removes it.
    private func decodeDue() {
        let first = packets.entry(at: 0)
        let capacity = sync.count - syncCount
        let n = packets.withPayload(at: 0) { payload in
            sync.withUnsafeMutableBufferPointer { s in
                (try? decoder.decode(payload, into: UnsafeMutableBufferPointer(rebasing: s[syncCount..<(syncCount + capacity)])))
                    ?? -1
            }
        }
        packets.remove(at: 0)
        lastDecodedSequence = first.sequence
        if holding && heldSamples >= rebaselineSamples { estimator.rebaseline() }
        holding = false
        heldSamples = 0
        if n > 0 {
            syncCount += n
        } else {
            statistics.invalidPackets += 1
            let c = conceal(samples: Int(first.duration / tsPerSample))
            statistics.concealedSamples += c
        }
        position = first.timestamp + first.duration
    }

    private func conceal(samples: Int) -> Int {
        let capacity = sync.count - syncCount
        let n = sync.withUnsafeMutableBufferPointer { s in
            (try? decoder.conceal(
                frameSamples: samples, into: UnsafeMutableBufferPointer(rebasing: s[syncCount..<(syncCount + min(capacity, samples))])))
                ?? 0
        }
        if n > 0 {
            syncCount += n
            return n
        }
        appendSilence(samples)
        return samples
    }

    private func appendSilence(_ count: Int) {
        sync.withUnsafeMutableBufferPointer { s in
            for i in syncCount..<(syncCount + count) { s[i] = 0 }
        }
        syncCount += count
    }
}
