internal import CSpeexDSP
import VoiceCodec
import VoiceCore
import VoiceRTP

/// The speexdsp jitter buffer (`speex_jitter.h`) behind ``JitterBufferStrategy``, decoding Opus with PLC, as a
/// baseline to compare the adaptive buffer against on identical input.
///
/// Used the way speexdsp intends: one `jitter_buffer_get` + `jitter_buffer_tick` per packet duration (20 ms),
/// the decoded frame played out as two 10 ms blocks. speexdsp adapts its delay by dropping whole frames or
/// inserting concealment (no time-stretching) and knows nothing of FEC; this wrapper keeps a copy of the last
/// packets it was given, so a frame speexdsp reports missing is decoded from the next packet's in-band FEC when
/// that packet has arrived and carries it (as applications built on speexdsp do), and concealed with Opus PLC
/// otherwise. The only owner of its `JitterBuffer*`, freed in `deinit`. Note: speexdsp copies each packet with `malloc`
/// in `jitter_buffer_put` — this strategy allocates per packet inside the C library.
public final class SpeexJitterBuffer: JitterBufferStrategy {
    public let format: AudioFormat
    public private(set) var statistics = JitterBufferStatistics()

    private let handle: OpaquePointer
    private let decoder: AudioDecoder
    private let rtpClockRate: Int
    private let tsPerSample: Int64
    private let frameTimestamps: Int32
    private let frameSamples: Int
    private let block: Int
    private var pcm: [Int16]
    private var pending = 0  // decoded samples not yet output, at the front of `pcm`
    private var packetData: [UInt8]
    private var arrivals = PacketArrivals()
    private var newestEnd: Int64 = .min
    private var started = false
    private var pointer: Int64 = 0  // extended playout pointer (RTP units)
    /// The last `recentSlots` packets put, for FEC: payload bytes (`maxPayloadBytes` per slot), extended
    /// timestamp (nil: empty slot) and length.
    private static let recentSlots = 32
    private static let maxPayloadBytes = 1_500
    private var recentPayloads: [UInt8]
    private var recentTimestamps: [Int64?]
    private var recentLengths: [Int]
    private var nextRecentSlot = 0

    /// - Parameters:
    ///   - sampleRate: output and decoding rate.
    ///   - rtpClockRate: RTP timestamp rate (48 kHz for Opus).
    ///   - frameMilliseconds: the packet duration the sender uses (speexdsp's step size).
    ///   - codec: what decodes and conceals the payloads.
    /// - Throws: `OpusError` when the decoder cannot be created.
    public init(
        sampleRate: Int = 16_000, rtpClockRate: Int = 48_000, frameMilliseconds: Int = 20, codec: AudioCodec = .opus
    ) throws(OpusError) {
        format = AudioFormat(sampleRate: sampleRate, channels: 1)
        decoder = try AudioDecoder(codec: codec, sampleRate: sampleRate)
        self.rtpClockRate = rtpClockRate
        tsPerSample = Int64(rtpClockRate / sampleRate)
        frameTimestamps = Int32(rtpClockRate * frameMilliseconds / 1000)
        frameSamples = sampleRate * frameMilliseconds / 1000
        block = format.samplesPerBlock
        guard let jb = jitter_buffer_init(frameTimestamps) else {
            preconditionFailure("jitter_buffer_init failed (out of memory)")
        }
        handle = jb
        pcm = [Int16](repeating: 0, count: sampleRate * 120 / 1000 + sampleRate / 50)
        packetData = [UInt8](repeating: 0, count: Self.maxPayloadBytes)
        recentPayloads = [UInt8](repeating: 0, count: Self.recentSlots * Self.maxPayloadBytes)
        recentTimestamps = [Int64?](repeating: nil, count: Self.recentSlots)
        recentLengths = [Int](repeating: 0, count: Self.recentSlots)
    }

    deinit {
        jitter_buffer_destroy(handle)
    }

    public var playoutTimestamp: Int64? { started ? pointer - Int64(pending) * tsPerSample : nil }

    public func insert(
        payload: UnsafeBufferPointer<UInt8>, sequenceNumber: UInt16, rtpTimestamp: UInt32, arrival: MediaTime
    ) {
        guard !payload.isEmpty, payload.count <= packetData.count,
            let samples = decoder.durationAndFEC(of: payload)?.samples
        else {
            statistics.invalidPackets += 1
            return
        }
        guard
            let admitted = arrivals.admit(
                sequenceNumber: sequenceNumber, rtpTimestamp: rtpTimestamp, statistics: &statistics)
        else { return }
        let timestamp = admitted.timestamp
        let span = Int64(samples) * tsPerSample
        // A late packet is still put: speexdsp learns from it that its delay is too short, then discards it.
        if started && timestamp + span <= pointer { statistics.latePackets += 1 }
        newestEnd = max(newestEnd, timestamp + span)
        keepRecent(payload, timestamp: timestamp)
        var packet = JitterBufferPacket()
        packet.len = spx_uint32_t(payload.count)
        packet.timestamp = spx_uint32_t(truncatingIfNeeded: timestamp)
        packet.span = spx_uint32_t(span)
        packet.sequence = spx_uint16_t(sequenceNumber)
        packet.user_data = 0
        payload.withMemoryRebound(to: CChar.self) { bytes in
            packet.data = UnsafeMutablePointer(mutating: bytes.baseAddress)
            jitter_buffer_put(handle, &packet)
        }
    }

    @discardableResult
    public func playoutTick(into output: UnsafeMutableBufferPointer<Int16>) -> PlayoutOperation {
        precondition(output.count == block, "playoutTick needs exactly one 10 ms block (\(block) samples)")
        var operation = PlayoutOperation.normal
        while pending < block {
            operation = fetchFrame()
            if !started {
                break
            }
        }
        if !started {
            for i in 0..<block { output[i] = 0 }
            return .buffering
        }
        pcm.withUnsafeMutableBufferPointer { p in
            for i in 0..<block { output[i] = p[i] }
            for i in block..<pending { p[i - block] = p[i] }
        }
        pending -= block
        statistics.ticks += 1
        statistics.playedSamples += block
        let ahead = newestEnd == .min ? 0 : max(0, Double(newestEnd - pointer) * 1000 / Double(rtpClockRate))
        statistics.currentDelayMilliseconds = ahead + Double(pending) * 1000 / Double(format.sampleRate)
        statistics.targetDelayMilliseconds = statistics.currentDelayMilliseconds
        statistics.delaySumMilliseconds += statistics.currentDelayMilliseconds
        return operation
    }

    private func keepRecent(_ payload: UnsafeBufferPointer<UInt8>, timestamp: Int64) {
        let slot = nextRecentSlot
        nextRecentSlot = (nextRecentSlot + 1) % Self.recentSlots
        recentTimestamps[slot] = timestamp
        recentLengths[slot] = payload.count
        recentPayloads.withUnsafeMutableBufferPointer { r in
            for i in 0..<payload.count { r[slot * Self.maxPayloadBytes + i] = payload[i] }
        }
    }

    /// Decodes the frame at `timestamp` from the in-band FEC of the packet that follows it, if that packet has
    /// been put and carries FEC. Returns the samples written at `pcm[pending...]`, 0 when there is no FEC.
    private func recoverFromNextPacket(frameAt timestamp: Int64, samples: Int) -> Int {
        let next = timestamp + Int64(frameTimestamps)
        guard let slot = recentTimestamps.firstIndex(where: { $0 == next }) else { return 0 }
        let length = recentLengths[slot]
        return recentPayloads.withUnsafeBufferPointer { r in
            let payload = UnsafeBufferPointer(
                rebasing: r[(slot * Self.maxPayloadBytes)..<(slot * Self.maxPayloadBytes + length)])
            guard decoder.hasFEC(payload) else { return 0 }
            return pcm.withUnsafeMutableBufferPointer { p in
                (try? decoder.decodeFEC(
                    from: payload, frameSamples: samples,
                    into: UnsafeMutableBufferPointer(rebasing: p[pending..<p.count]))) ?? 0
            }
        }
    }

    /// One speexdsp get + tick: appends one frame (decoded, recovered from FEC or concealed) to `pcm`.
    private func fetchFrame() -> PlayoutOperation {
        var packet = JitterBufferPacket()
        var offset: spx_int32_t = 0
        let frameStart = pointer
        let status = packetData.withUnsafeMutableBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { bytes in
                packet.data = bytes.baseAddress
                packet.len = spx_uint32_t(bytes.count)
                return jitter_buffer_get(handle, &packet, frameTimestamps, &offset)
            }
        }
        jitter_buffer_tick(handle)
        if !started {
            guard status == JITTER_BUFFER_OK else { return .buffering }
            started = true
            pointer = arrivals.timestampUnwrapper.peek(packet.timestamp)
        }
        var operation: PlayoutOperation
        var produced = 0
        if status == JITTER_BUFFER_OK {
            let length = Int(packet.len)
            produced = packetData.withUnsafeBufferPointer { data in
                pcm.withUnsafeMutableBufferPointer { p in
                    (try? decoder.decode(
                        UnsafeBufferPointer(rebasing: data[0..<length]),
                        into: UnsafeMutableBufferPointer(rebasing: p[pending..<p.count]))) ?? 0
                }
            }
            operation = .normal
            if produced == 0 { statistics.invalidPackets += 1 }
        } else {
            operation = status == JITTER_BUFFER_INSERTION ? .slowDown : .expand
        }
        if produced == 0 && status == JITTER_BUFFER_MISSING {
            produced = recoverFromNextPacket(frameAt: frameStart, samples: frameSamples)
            if produced > 0 {
                statistics.fecRecoveredFrames += 1
                statistics.fecRecoveredSamples += produced
                operation = .fecRecover
            }
        }
        if produced == 0 {
            let span = max(Int(packet.span), Int(frameTimestamps))
            let samples = min(span / Int(tsPerSample), frameSamples)
            produced = pcm.withUnsafeMutableBufferPointer { p in
                (try? decoder.conceal(
                    frameSamples: samples, into: UnsafeMutableBufferPointer(rebasing: p[pending..<p.count]))) ?? 0
            }
            if produced == 0 {
                produced = samples
                pcm.withUnsafeMutableBufferPointer { p in for i in pending..<(pending + samples) { p[i] = 0 } }
            }
            statistics.concealedSamples += produced
            if operation == .slowDown { statistics.slowedDownSamples += produced }
        }
        pending += produced
        pointer = arrivals.timestampUnwrapper.peek(
            spx_uint32_t(bitPattern: jitter_buffer_get_pointer_timestamp(handle)))
        return operation
    }
}
