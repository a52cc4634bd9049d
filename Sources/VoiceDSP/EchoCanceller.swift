/// Settings of the ``EchoCanceller``.
public struct EchoCancellerConfiguration: Sendable, Equatable {
    /// Processing rate in Hz: 16000 by default; 8000, 32000 and 48000 are supported.
    public var sampleRate: Int
    /// Echo tail the adaptive filter models, after bulk-delay alignment: the room's reverberation, not the device
    /// latency (the delay estimator takes care of that).
    public var tailMilliseconds: Int
    /// Longest bulk delay between the played reference and its echo in the microphone that is searched for.
    public var maxDelayMilliseconds: Int
    /// Track the bulk delay and re-align the reference (off: the reference is used as played, like raw speex).
    public var alignDelay: Bool
    /// Estimate clock drift and compensate it by resampling the reference. Off by default for now: on the
    /// project's speech-like vectors the delay estimate still hops between early reflections, which biases the
    /// drift fit by tens of ppm, and a wrong compensation costs MDF more than it gains (see issue 5's report).
    public var compensateDrift: Bool
    /// Suppress the residual echo in the preprocessor (`SPEEX_PREPROCESS_SET_ECHO_STATE`).
    public var suppressResidualEcho: Bool
    /// Noise suppression, AGC and VAD after the echo filter (its `sampleRate` is replaced by this one's).
    public var preprocessor: PreprocessorConfiguration
    /// How far ahead of the estimated echo onset the reference is placed inside the filter, so estimation error
    /// and drift between re-alignments stay inside the filter.
    public var alignmentMarginMilliseconds: Int
    /// Delay estimates with a lower GCC-PHAT confidence are ignored.
    public var minimumConfidence: Double

    public init(
        sampleRate: Int = 16_000, tailMilliseconds: Int = 200, maxDelayMilliseconds: Int = 500, alignDelay: Bool = true,
        compensateDrift: Bool = false, suppressResidualEcho: Bool = true,
        preprocessor: PreprocessorConfiguration = PreprocessorConfiguration(), alignmentMarginMilliseconds: Int = 12,
        minimumConfidence: Double = 7
    ) {
        self.sampleRate = sampleRate
        self.tailMilliseconds = tailMilliseconds
        self.maxDelayMilliseconds = maxDelayMilliseconds
        self.alignDelay = alignDelay
        self.compensateDrift = compensateDrift
        self.suppressResidualEcho = suppressResidualEcho
        self.preprocessor = preprocessor
        self.alignmentMarginMilliseconds = alignmentMarginMilliseconds
        self.minimumConfidence = minimumConfidence
    }
}

/// What the echo canceller currently believes about the echo path: plain values for reports and meters.
public struct EchoCancellerStatistics: Sendable, Equatable {
    /// The last confident bulk-delay measurement, in milliseconds (`nil` before the first).
    public var estimatedDelayMilliseconds: Double?
    /// The delay applied to the reference, in milliseconds (estimate minus the alignment margin).
    public var appliedDelayMilliseconds: Double
    /// Estimated drift, ppm, positive when the loudspeaker clock is faster than the microphone's (`nil` before
    /// there is enough history).
    public var estimatedDriftPPM: Double?
    /// Drift compensation applied by the reference resampler, in the same sense as `estimatedDriftPPM`.
    public var compensatedDriftPPM: Double
    /// Times the reference was re-aligned (and the adaptive filter restarted).
    public var realignments: Int
    /// Confidence of the last delay measurement.
    public var lastConfidence: Double
    /// Voice-activity decision of the last block (drives DTX).
    public var voiceActive: Bool
}

/// Acoustic echo cancellation for one call: speex MDF, aligned in time and drift-corrected, followed by
/// residual-echo suppression, noise suppression, AGC and VAD.
///
/// Feed it what was actually played (``addFarEnd(_:)``, any count per call, as the playout side delivers it) and
/// the microphone in 10 ms blocks (``processCapture(_:into:)``). Inside:
/// 1. the far end goes through a drift resampler (bypassed until a drift is measured, so it adds no latency) into a
///    fixed ring, the reference delay line;
/// 2. ``EchoDelayEstimator`` measures, every 200 ms, by how much the microphone trails that ring; three agreeing
///    confident measurements that differ from the applied alignment by more than 3 ms re-align the reference
///    (the filter restarts from the new alignment);
/// 3. ``DriftEstimator`` fits the delay track (in the far end's own timeline) and, at most once a second, sets the
///    resampler's fractional ratio to cancel the drift, so the aligned reference and the microphone run on one
///    clock — what MDF needs (raw MDF falls from ~47 dB ERLE to ~11 dB at 100 ppm);
/// 4. ``MDFEchoFilter`` removes the linear echo, and ``Preprocessor`` (attached to it) the residual echo and noise.
///
/// Double talk: the delay estimator withholds unclear estimates, MDF's own double-talk control slows adaptation,
/// and residual suppression is limited to `echoSuppressionActiveDB` when the near end is active.
///
/// No allocation per block: the ring, the estimator's windows and all scratch are allocated in `init`. The first
/// drift adjustment allocates a filter table inside speexdsp (once, at control rate). Use from one thread.
public final class EchoCanceller {
    public let configuration: EchoCancellerConfiguration
    /// Samples per microphone block: `sampleRate / 100`.
    public let blockSize: Int
    /// Most far-end samples accepted per ``addFarEnd(_:)`` call (four blocks).
    public let maxFarEndSamplesPerCall: Int

    /// The adaptive filter (exposed read-only for inspection; do not drive it directly).
    public let echoFilter: MDFEchoFilter
    /// The preprocessor after the echo filter.
    public let preprocessor: Preprocessor
    private let estimator: EchoDelayEstimator
    private var drift: DriftEstimator
    private let resampler: Resampler
    private var resamplerEngaged = false

    private var ring: [Int16]
    private var ringWritten: Int64 = 0
    private var farConsumed: Int64 = 0
    private var micCount: Int64 = 0
    private var appliedDelay = 0
    private var blocksSinceEstimate = 0
    private var lastDriftUpdate: Int64 = 0
    private var recent: [Double] = [0, 0, 0]
    private var recentCount = 0
    private var scratch: [Int16]
    private var reference: [Int16]
    private var stats: EchoCancellerStatistics
    private var referenceMeanSquare: Double = 0

    private let margin: Int
    private let realignThreshold: Double
    private let estimateInterval = 20

    /// Creates the canceller and everything it preallocates.
    /// - Throws: ``SpeexDSPError`` naming a bad setting or the speexdsp call that failed.
    public init(configuration: EchoCancellerConfiguration = EchoCancellerConfiguration()) throws(SpeexDSPError) {
        let rate = configuration.sampleRate
        try SpeexDSPError.checkRate(rate)
        guard (10...1000).contains(configuration.tailMilliseconds) else {
            throw .invalidArgument(field: "tailMilliseconds", reason: "\(configuration.tailMilliseconds); 10 ... 1000 ms")
        }
        guard (0...50).contains(configuration.alignmentMarginMilliseconds) else {
            throw .invalidArgument(field: "alignmentMarginMilliseconds", reason: "0 ... 50 ms")
        }
        self.configuration = configuration
        blockSize = rate / 100
        maxFarEndSamplesPerCall = 4 * blockSize
        echoFilter = try MDFEchoFilter(
            sampleRate: rate, blockSize: blockSize, tailSamples: configuration.tailMilliseconds * rate / 1000)
        var pre = configuration.preprocessor
        pre.sampleRate = rate
        preprocessor = try Preprocessor(configuration: pre)
        if configuration.suppressResidualEcho { try preprocessor.attach(echoFilter: echoFilter) }
        estimator = try EchoDelayEstimator(sampleRate: rate, maxDelayMilliseconds: configuration.maxDelayMilliseconds)
        drift = DriftEstimator(sampleRate: rate)
        do {
            // Quality 3: a short filter (1.5 ms of latency at 16 kHz); the reference only has to model the echo.
            resampler = try Resampler(inputRate: rate, outputRate: rate, channels: 1, quality: 3)
        } catch { throw .resampler(error) }
        let ringSeconds = Double(configuration.maxDelayMilliseconds + configuration.tailMilliseconds) / 1000 + 2
        ring = [Int16](repeating: 0, count: Int(ringSeconds * Double(rate)))
        scratch = [Int16](repeating: 0, count: resampler.maximumOutputCount(forInput: maxFarEndSamplesPerCall))
        reference = [Int16](repeating: 0, count: blockSize)
        margin = configuration.alignmentMarginMilliseconds * rate / 1000
        realignThreshold = Double(rate) / 1000
        stats = EchoCancellerStatistics(
            estimatedDelayMilliseconds: nil, appliedDelayMilliseconds: 0, estimatedDriftPPM: nil,
            compensatedDriftPPM: 0, realignments: 0, lastConfidence: 0, voiceActive: false)
    }

    /// Statistics after the last block.
    public var statistics: EchoCancellerStatistics { stats }

    /// Mean square (16-bit units²) of the aligned reference used for the last block: how loud the far end was in
    /// the echo it should be cancelling (for single-talk detection in reports).
    public var lastReferenceMeanSquare: Double { referenceMeanSquare }

    // MARK: Far end

    /// Records far-end samples just handed to the loudspeaker, in play order. Any count up to
    /// `maxFarEndSamplesPerCall`. Never allocates.
    public func addFarEnd(_ played: UnsafeBufferPointer<Int16>) throws(SpeexDSPError) {
        precondition(played.count <= maxFarEndSamplesPerCall, "at most \(maxFarEndSamplesPerCall) far-end samples per call")
        farConsumed += Int64(played.count)
        if resamplerEngaged {
            let produced: Int
            do {
                produced = try scratch.withUnsafeMutableBufferPointer { out throws(ResamplerError) in
                    try resampler.process(played, into: out).produced
                }
            } catch { throw .resampler(error) }
            scratch.withUnsafeBufferPointer { write(UnsafeBufferPointer(rebasing: $0[0..<produced])) }
        } else {
            write(played)
        }
    }

    private func write(_ samples: UnsafeBufferPointer<Int16>) {
        let capacity = ring.count
        ring.withUnsafeMutableBufferPointer { r in
            var position = Int(ringWritten % Int64(capacity))
            for s in samples {
                r[position] = s
                position += 1
                if position == capacity { position = 0 }
            }
        }
        ringWritten += Int64(samples.count)
        estimator.addReference(samples)
    }

    // MARK: Capture

    /// Cancels the echo in one microphone block (`blockSize` samples) and runs the preprocessor, writing the
    /// result to `output`. Returns the voice-activity decision. Never allocates.
    @discardableResult
    public func processCapture(
        _ mic: UnsafeBufferPointer<Int16>, into output: UnsafeMutableBufferPointer<Int16>
    ) throws(SpeexDSPError) -> Bool {
        precondition(mic.count == blockSize && output.count == blockSize, "capture blocks must be \(blockSize) samples")
        let start = micCount
        estimator.addMicrophone(mic)
        micCount += Int64(blockSize)
        if configuration.alignDelay || configuration.compensateDrift {
            blocksSinceEstimate += 1
            if blocksSinceEstimate >= estimateInterval {
                blocksSinceEstimate = 0
                if let estimate = estimator.estimate() {
                    stats.lastConfidence = estimate.confidence
                    if estimate.confidence >= configuration.minimumConfidence { try use(estimate) }
                }
            }
        }
        fillReference(from: start - Int64(appliedDelay))
        reference.withUnsafeBufferPointer { echoFilter.cancel(mic: mic, reference: $0, into: output) }
        stats.voiceActive = preprocessor.process(output)
        return stats.voiceActive
    }

    /// Convenience for lock-step callers (files, simulations): the far-end block played during this capture
    /// block, then the capture block.
    @discardableResult
    public func process(
        mic: UnsafeBufferPointer<Int16>, farEnd: UnsafeBufferPointer<Int16>, into output: UnsafeMutableBufferPointer<Int16>
    ) throws(SpeexDSPError) -> Bool {
        try addFarEnd(farEnd)
        return try processCapture(mic, into: output)
    }

    private func fillReference(from index: Int64) {
        let capacity = Int64(ring.count)
        var sum = 0.0
        reference.withUnsafeMutableBufferPointer { out in
            ring.withUnsafeBufferPointer { r in
                for i in 0..<blockSize {
                    let k = index + Int64(i)
                    if k >= 0 && k < ringWritten && k >= ringWritten - capacity {
                        let v = r[Int(k % capacity)]
                        out[i] = v
                        sum += Double(v) * Double(v)
                    } else {
                        out[i] = 0
                    }
                }
            }
        }
        referenceMeanSquare = sum / Double(blockSize)
    }

    private func use(_ estimate: EchoDelayEstimator.Estimate) throws(SpeexDSPError) {
        let rate = Double(configuration.sampleRate)
        stats.estimatedDelayMilliseconds = estimate.delaySamples * 1000 / rate
        if configuration.compensateDrift {
            // The delay in the far end's own timeline: add back what the resampler has stretched.
            let raw = estimate.delaySamples + Double(ringWritten - farConsumed)
            drift.add(time: estimate.atMicSample, delay: raw)
            // Act only on a significant estimate: a wrong compensation hurts MDF as much as drift does.
            if let ppm = drift.driftPPM, let error = drift.driftStandardErrorPPM, error < 8, abs(ppm) > 3 * error {
                stats.estimatedDriftPPM = ppm
                let clamped = max(-5_000, min(5_000, ppm))
                if micCount - lastDriftUpdate >= Int64(configuration.sampleRate),
                    abs(clamped - stats.compensatedDriftPPM) > 2
                {
                    lastDriftUpdate = micCount
                    do { try resampler.setDrift(ppm: -clamped) } catch { throw .resampler(error) }
                    resamplerEngaged = true
                    stats.compensatedDriftPPM = -resampler.driftPPM
                }
            }
        }
        guard configuration.alignDelay else { return }
        recent[recentCount % 3] = estimate.delaySamples
        recentCount += 1
        guard recentCount >= 3 else { return }
        let lo = min(recent[0], recent[1], recent[2])
        let hi = max(recent[0], recent[1], recent[2])
        guard hi - lo <= rate / 1000 else { return }
        let median = recent[0] + recent[1] + recent[2] - lo - hi
        let target = max(0, Int(median.rounded()) - margin)
        // Re-align only when the echo onset has left the comfortable part of the filter: before its first
        // millisecond (the reference would come too late) or past 40 % of the tail. Within that range the
        // adaptive filter already models it, and a restart would cost more than it gains.
        let offset = median - Double(appliedDelay)
        let tail = Double(echoFilter.tailSamples)
        guard stats.realignments == 0 || offset < realignThreshold || offset > 0.4 * tail else { return }
        guard target != appliedDelay else { return }
        appliedDelay = target
        stats.appliedDelayMilliseconds = Double(target) * 1000 / rate
        stats.realignments += 1
        echoFilter.reset()
    }

    /// Starts over for a new, unrelated stream (after an interruption): forgets the echo path, delay, drift and
    /// the buffered reference. Keeps the configuration and preallocated buffers.
    public func reset() throws(SpeexDSPError) {
        echoFilter.reset()
        estimator.reset()
        drift.reset()
        resampler.reset()
        ringWritten = 0
        farConsumed = 0
        micCount = 0
        appliedDelay = 0
        recentCount = 0
        blocksSinceEstimate = 0
        lastDriftUpdate = 0
        stats = EchoCancellerStatistics(
            estimatedDelayMilliseconds: nil, appliedDelayMilliseconds: 0, estimatedDriftPPM: nil,
            compensatedDriftPPM: stats.compensatedDriftPPM, realignments: 0, lastConfidence: 0, voiceActive: false)
    }
}
