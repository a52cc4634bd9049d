import Foundation

/// Settings of the ``EchoCanceller``.
public struct EchoCancellerConfiguration: Sendable, Equatable {
    /// Processing rate in Hz: 16000 by default; 8000, 32000 and 48000 are supported.
    public var sampleRate: Int
    /// Echo tail the adaptive filter models, after bulk-delay alignment: the alignment margin plus the room's
    /// response, not the device latency (the delay estimator takes care of that). Short converges fast: MDF's
    /// convergence slows with the filter length, so after alignment 100 ms (the default) beats the 200-500 ms a
    /// canceller without alignment needs. Raise it for rooms with long reverberation.
    public var tailMilliseconds: Int
    /// Longest bulk delay between the played reference and its echo in the microphone that is searched for.
    public var maxDelayMilliseconds: Int
    /// Track the bulk delay and re-align the reference (off: the reference is used as played, like raw speex).
    public var alignDelay: Bool
    /// Estimate clock drift from the adapted echo path's main peak and compensate it by resampling the reference.
    public var compensateDrift: Bool
    /// Suppress the residual echo in the preprocessor (`SPEEX_PREPROCESS_SET_ECHO_STATE`).
    public var suppressResidualEcho: Bool
    /// Cancel echo at all. Off: no adaptive filter, delay or drift tracking and no residual-echo suppression — the
    /// far end is ignored and the microphone gets noise suppression and the voice-activity decision only (what
    /// baresip's `speex_pp` does; for a headset, or to compare with a canceller-less stack).
    public var cancelEcho: Bool = true
    /// Noise suppression, AGC and VAD after the echo filter (its `sampleRate` is replaced by this one's). Its
    /// `noiseSuppressionDB` is the floor of the canceller's own spectral noise suppression (``NoiseSuppressionGain``),
    /// not of speexdsp's denoiser, which only carries the residual-echo gains (at -1 dB).
    public var preprocessor: PreprocessorConfiguration
    /// How far ahead of the estimated echo onset the reference is placed inside the filter, so estimation error
    /// and drift before compensation stay inside the filter.
    public var alignmentMarginMilliseconds: Int
    /// Delay estimates with a lower GCC-PHAT confidence are ignored.
    public var minimumConfidence: Double
    /// A bulk-delay change smaller than this is left to the adaptive filter (and the drift loop); a larger one,
    /// seen in three agreeing confident estimates, re-aligns the reference and restarts the filter.
    public var realignThresholdMilliseconds: Int
    /// MDF frames per 10 ms block (1, 2, 4 or 5), or `nil` for the default: 2 (5 ms frames) at 16 kHz and above,
    /// 1 at 8 kHz. MDF adapts once per frame, so shorter frames converge faster in time: at 16 kHz, 2 reaches
    /// ~36 dB ERLE on the synthetic test vectors where 1 reaches ~28 dB by 20 s (4 and 5 are no better and less
    /// stable). The price is a noisier steady state on a recording that converges quickly anyway: on the real
    /// recorded 8 kHz pair the tests use when present, 2 frames are ~1.7 dB (upsampled to 16 kHz) and ~2.9 dB (its own 8 kHz, 40-sample
    /// frames) below 1 — hence 1 at 8 kHz. The residual-echo preprocessor runs on the same frames (speexdsp needs
    /// it), so its latency is one frame.
    public var filterFramesPerBlock: Int?
    /// Floor in dB of the canceller's own residual-echo gain after the preprocessor (see ``EchoCanceller``), or
    /// `nil` for none. The gain attenuates frames that hold only the echo MDF left (its leak, measured from the
    /// filter's own echo estimate) and passes frames where a near-end talker stands above it.
    public var residualEchoGainFloorDB: Double?
    /// Floor in dB of the per-band residual-echo suppressor after MDF (``ResidualEchoSuppressor``: the echo MDF
    /// leaves, linear and the loudspeaker's nonlinear part, estimated per frequency bin from the far-end spectrum
    /// and a learned echo-path gain), or `nil` for none. It takes the place of the broadband gain
    /// (`residualEchoGainFloorDB` is ignored while it is on) and adds one MDF frame of latency.
    public var residualEchoSuppressorFloorDB: Double?

    public init(
        sampleRate: Int = 16_000, tailMilliseconds: Int = 100, maxDelayMilliseconds: Int = 500, alignDelay: Bool = true,
        compensateDrift: Bool = true, suppressResidualEcho: Bool = true,
        preprocessor: PreprocessorConfiguration = PreprocessorConfiguration(), alignmentMarginMilliseconds: Int = 8,
        minimumConfidence: Double = 7, realignThresholdMilliseconds: Int = 20, filterFramesPerBlock: Int? = nil,
        residualEchoGainFloorDB: Double? = -30, residualEchoSuppressorFloorDB: Double? = -40
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
        self.realignThresholdMilliseconds = realignThresholdMilliseconds
        self.filterFramesPerBlock = filterFramesPerBlock
        self.residualEchoGainFloorDB = residualEchoGainFloorDB
        self.residualEchoSuppressorFloorDB = residualEchoSuppressorFloorDB
    }

    /// The MDF frames per 10 ms block the canceller uses at `sampleRate`: ``filterFramesPerBlock`` or its default.
    public func framesPerBlock(atRate sampleRate: Int) -> Int {
        filterFramesPerBlock ?? (sampleRate >= 16_000 ? 2 : 1)
    }
}

/// What the echo canceller currently believes about the echo path: plain values for reports and meters.
public struct EchoCancellerStatistics: Sendable, Equatable {
    /// The echo delay in milliseconds: the applied alignment plus the position of the adapted filter's main peak
    /// once the filter has converged (sub-sample precise), else the last confident GCC-PHAT measurement (`nil`
    /// before the first).
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
/// 1. the far end goes into a fixed ring, the reference delay line — through a drift resampler once a drift is
///    being compensated (bypassed until then, so it adds no latency; when it comes in, the alignment takes its
///    latency back);
/// 2. ``EchoDelayEstimator`` (GCC-PHAT) measures every 200 ms — while the filter has no stable echo path; it
///    pauses while it has one — by how much the microphone trails that ring. It is a
///    coarse tool (4 kHz envelope, biased towards strong early reflections), so it is used with hysteresis: the
///    first three agreeing confident measurements set the alignment (echo onset minus a margin); after that only a
///    jump larger than `realignThresholdMilliseconds` away from where the adapted filter has the echo, seen three
///    times in agreement, re-aligns the reference and restarts the filter. Smaller movements are the filter's job.
///    Faster, and keeping the filter: when the echo return collapses while the far end talks, ``DelayJumpSearch``
///    finds the new offset to the sample from the reference filtered by the adapted echo path, and the reference
///    is shifted by the jump (a device latency change is re-aligned within ~0.25 s);
/// 3. every 250 ms the adapted filter's impulse response is read and its main peak located to a fraction of a
///    sample. Alignment plus peak plus what the resampler has stretched is the echo delay in the far end's own
///    timeline; ``DriftEstimator`` fits its slope (the clock drift) and, at most once a second, the resampler's
///    fractional ratio is set to cancel it, so the reference and the microphone run on one clock — what MDF needs
///    (raw MDF falls from ~47 dB ERLE to ~11 dB at 100 ppm). A drift too fast for the filter to converge on
///    (hundreds of ppm and more: no stable peak ever appears) is acquired first by ``DriftSearch``, which lines up
///    several seconds of short GCC-PHAT correlations along candidate drift slopes; three agreeing clear results
///    set the compensation, after which the filter converges and its peak refines the estimate;
/// 4. ``MDFEchoFilter`` removes the linear echo, on frames of half a block by default at 16 kHz and up (it adapts once per frame:
///    twice as many adaptations a second converge far faster), and ``Preprocessor`` (attached to it, on the same
///    frames) the residual echo and noise;
/// 5. `ResidualEchoGain` attenuates what is still only echo (MDF's leak, measured from its own echo estimate
///    against its output), broadband, aligned with the preprocessor's one-frame delay: on a long tail MDF alone
///    leaves the echo ~25 dB down after 20 s, with the gain ~32 dB.
///
/// Double talk: the delay estimator withholds unclear estimates, MDF's own double-talk control slows adaptation,
/// residual suppression is limited to `echoSuppressionActiveDB` when the near end is active, and the residual-echo
/// gain stays near 1 while the output holds more than the estimated residual (a near-end talker).
///
/// No allocation per block: the ring, the estimator's windows, the impulse-response buffer and all scratch are
/// allocated in `init`. The first drift adjustment allocates a filter table inside speexdsp (once, at control
/// rate). Use from one thread.
public final class EchoCanceller {
    public let configuration: EchoCancellerConfiguration
    /// Samples per microphone block: `sampleRate / 100`.
    public let blockSize: Int
    /// Samples per MDF (and preprocessor) frame: a fraction of the block, so the filter adapts several times per block.
    let frameSize: Int
    /// Most far-end samples accepted per ``addFarEnd(_:)`` call (four blocks).
    public let maxFarEndSamplesPerCall: Int

    /// The adaptive filter (exposed read-only for inspection; do not drive it directly).
    public let echoFilter: MDFEchoFilter
    /// The preprocessor after the echo filter.
    public let preprocessor: Preprocessor
    /// The residual-echo gain after the preprocessor (`nil` when switched off).
    private var residualGain: ResidualEchoGain?
    /// The per-band residual-echo suppressor between MDF and the preprocessor (`nil` when switched off).
    private var suppressor: ResidualEchoSuppressor?
    private let estimator: EchoDelayEstimator
    private var drift: DriftEstimator
    private let driftSearch: DriftSearch
    /// Re-alignment after a bulk-delay jump that keeps the adapted filter (see ``DelayJumpSearch``).
    private let jumpSearch: DelayJumpSearch
    /// The last `jumpSearch.window` microphone samples (a ring at `micCount`).
    private var micHistory: [Int16]
    /// Echo-return monitor: short-term microphone and filter-output energies over far-end-active blocks, the
    /// long-term echo return the filter has been reaching (dB), and how many active blocks in a row it has been lost.
    private var shortMicEnergy = 0.0
    private var shortOutEnergy = 0.0
    private var establishedERLE = 0.0
    private var collapsedBlocks = 0
    private var blocksSinceJumpSearch = 0
    /// Blocks between jump searches while a collapse lasts: doubles (up to 2 s) each time the search finds the echo
    /// where it was (double talk, not a jump), back to 250 ms once the echo return has been good for a second
    /// (continuous double talk flickers in and out of collapse; a flicker must not restart the fast searches).
    private var jumpSearchInterval = 25
    /// A jump the last search found, waiting for the next search to confirm it.
    private var pendingJump: Int?
    /// Consecutive far-end-active blocks with the echo return not collapsed.
    private var goodBlocks = 0
    /// Consecutive blocks the filter has shown a stable echo path: after 5 s the drift search's history stops being
    /// fed (the search cannot start while the path is stable, and by the time it could the history is stale).
    private var stableBlocks = 0
    /// Blocks during which coarse GCC-PHAT re-alignment waits after a jump re-alignment (its window still holds the
    /// old delay).
    private var gccHoldOff = 0
    private var blocksSinceSegment = 0
    private var blocksSinceSearch = 0
    /// Blocks between drift searches: 50 (half a second), doubled after each search that found no clear drift up to
    /// ``maximumDriftSearchInterval``, back to 50 after a clear one. A call without echo (a headset, a muted
    /// speaker) would otherwise search without pause — a fifth of a live call's CPU with voice processing on.
    private var driftSearchInterval = 50
    private static let maximumDriftSearchInterval = 800
    /// Clear drift-search results agreeing with each other, not yet acted on (their sum and count).
    private var searchSum = 0.0
    private var searchCount = 0
    /// Agreeing clear searches needed before the drift is compensated (their mean is used).
    private let searchesNeeded = 3
    private let resampler: Resampler
    /// Whether the far end goes through ``resampler`` (from the first drift compensation on). Until then it is
    /// bypassed: the resampler's latency would make the reference late for an echo path shorter than it.
    private var resamplerEngaged = false
    /// Reference delay the resampler adds once engaged (its filter's latency), taken back from the alignment.
    private var resamplerLatency = 0

    private var ring: [Int16]
    private var ringWritten: Int64 = 0
    private var farConsumed: Int64 = 0
    private var micCount: Int64 = 0
    /// Samples by which the reference is delayed to line up with the microphone; the statistics follow it.
    private var appliedDelay = 0 {
        didSet { stats.appliedDelayMilliseconds = Double(appliedDelay) * 1000 / Double(configuration.sampleRate) }
    }
    private var aligned = false
    private var blocksSinceEstimate = 0
    private var blocksSincePeak = 0
    private var blocksSinceReset = 0
    private var lastDriftUpdate: Int64 = 0
    /// Not an array literal: a constant literal is a static object, and the first write would copy it (allocate).
    private var recent = [Double](repeating: 0, count: 3)
    private var recentCount = 0
    private var scratch: [Int16]
    private var reference: [Int16]
    private var taps: [Int32]
    /// Position of the adapted filter's main peak (taps), or `nil` while the filter has no clear peak.
    private var peak: Double?
    /// Consecutive reads that found the peak where the previous one was (a single read can be a noise tap).
    private var peakStable = 0
    private var stats: EchoCancellerStatistics
    private var referenceMeanSquare: Double = 0
    /// Peak-to-mean tap energy ratio of the last impulse-response read (for tests and diagnostics).
    private(set) var lastPeakToMean = 0.0

    private let margin: Int
    private let realignThreshold: Double
    private let estimateInterval = 20
    /// Blocks between GCC-PHAT measurements now: `estimateInterval` (200 ms) while acquiring, `idleEstimateInterval`
    /// once `unclearEstimatesBeforeIdle` measurements in a row over an active far end found no clear echo (a headset
    /// or a muted speaker: nothing to find, yet two 8192-point FFTs ran every 200 ms for the whole call — a tenth of a
    /// live processing-on call's media thread, and their 200 kB of scratch evicting the filters' state); back to
    /// 200 ms at the first confident one. A silent far end (no measurement) neither counts nor resets.
    private var estimateSpacing = 20
    private var unclearEstimates = 0
    private static let unclearEstimatesBeforeIdle = 10
    private static let idleEstimateInterval = 80
    private static let stableBlocksBeforeSegmentPause = 500
    private let peakInterval = 25
    /// Aligned-reference mean square under which the far end counts as silent: -60 dBFS (its echo would lie under
    /// any room's noise).
    static let quietReferenceMeanSquare = 1.07
    /// Silent reference blocks after which no echo is left for MDF to remove (its tail plus 200 ms).
    private let quietBlocksBeforeBypass: Int
    /// Starts past `quietBlocksBeforeBypass`: until a far end has played there is no echo, so a call's first
    /// words pass untouched (from 0, MDF's output went on for the first 300 ms, its DC notch lifting loud peaks into
    /// clipping: pjsip's talker, speaking from 0.1 s, lost 0.07 PESQ-WB).
    private var quietReferenceBlocks = Int.max / 2
    /// 1 while the microphone goes on unfiltered (see ``passMicrophoneWhenNoEcho``), 0 while MDF's output does.
    private var bypassMix: Float = 1
    /// The preprocessor's input this frame and last frame (see ``preprocessFrame(_:)``).
    private var preprocessorInput: [Int16]
    private var preprocessorDelay: [Int16]
    /// speexdsp's denoiser depth when it only carries the residual-echo gains.
    static let speexDenoiseDB = -1

    /// Creates the canceller and everything it preallocates.
    /// - Throws: ``SpeexDSPError`` naming a bad setting or the speexdsp call that failed.
    public init(configuration: EchoCancellerConfiguration = EchoCancellerConfiguration()) throws(SpeexDSPError) {
        let rate = configuration.sampleRate
        try SpeexDSPError.checkRate(rate)
        guard (10...1000).contains(configuration.tailMilliseconds) else {
            throw .invalidArgument(field: "tailMilliseconds", reason: "\(configuration.tailMilliseconds); 10 ... 1000 ms")
        }
        guard (0...50).contains(configuration.alignmentMarginMilliseconds),
            configuration.alignmentMarginMilliseconds < configuration.tailMilliseconds / 2
        else {
            throw .invalidArgument(field: "alignmentMarginMilliseconds", reason: "0 ... 50 ms and under half the tail")
        }
        let frames = configuration.framesPerBlock(atRate: rate)
        guard [1, 2, 4, 5].contains(frames) else {
            throw .invalidArgument(field: "filterFramesPerBlock", reason: "\(frames); 1, 2, 4 or 5")
        }
        guard (2...1000).contains(configuration.realignThresholdMilliseconds) else {
            throw .invalidArgument(field: "realignThresholdMilliseconds", reason: "2 ... 1000 ms")
        }
        self.configuration = configuration
        blockSize = rate / 100
        maxFarEndSamplesPerCall = 4 * blockSize
        frameSize = blockSize / frames
        echoFilter = try MDFEchoFilter(
            sampleRate: rate, blockSize: frameSize, tailSamples: configuration.tailMilliseconds * rate / 1000)
        var pre = configuration.preprocessor
        pre.sampleRate = rate
        // Noise is suppressed in the spectral stage (``NoiseSuppressionGain``): speexdsp's denoiser costs clean speech
        // 0.5 PESQ-WB at -15 dB. But speexdsp applies its residual-echo gains only while its denoiser is on, so with
        // echo suppression it stays on at -1 dB (0.03 PESQ-WB on clean speech), as the carrier of those gains.
        let noiseFloorDB = pre.noiseSuppressionDB.map(Double.init)
        let residualInPreprocessor = configuration.suppressResidualEcho && configuration.cancelEcho
        pre.noiseSuppressionDB = residualInPreprocessor ? Self.speexDenoiseDB : nil
        preprocessor = try Preprocessor(configuration: pre, frameSize: frameSize)
        if residualInPreprocessor { try preprocessor.attach(echoFilter: echoFilter) }
        if let floorDB = configuration.residualEchoGainFloorDB {
            guard floorDB.isFinite, (-60...0).contains(floorDB) else {
                throw .invalidArgument(field: "residualEchoGainFloorDB", reason: "\(floorDB); -60 ... 0 dB")
            }
            residualGain = ResidualEchoGain(floorDB: floorDB, framesPerSecond: Double(rate / frameSize))
        }
        if let floorDB = configuration.residualEchoSuppressorFloorDB {
            guard floorDB.isFinite, (-80...0).contains(floorDB) else {
                throw .invalidArgument(field: "residualEchoSuppressorFloorDB", reason: "\(floorDB); -80 ... 0 dB")
            }
            residualGain = nil
        }
        // Without cancellation the suppressor's STFT carries the noise suppression alone.
        let echoFloorDB = configuration.cancelEcho ? configuration.residualEchoSuppressorFloorDB : nil
        if !configuration.cancelEcho { residualGain = nil }
        if echoFloorDB != nil || noiseFloorDB != nil {
            suppressor = ResidualEchoSuppressor(
                hop: frameSize, sampleRate: rate, floorDB: echoFloorDB, noiseFloorDB: noiseFloorDB)
        }
        estimator = try EchoDelayEstimator(sampleRate: rate, maxDelayMilliseconds: configuration.maxDelayMilliseconds)
        drift = DriftEstimator(sampleRate: rate)
        driftSearch = DriftSearch(lags: estimator.maxDelaySamples / estimator.factor + 1)
        jumpSearch = DelayJumpSearch(
            window: rate / 4, maxDelay: estimator.maxDelaySamples, taps: echoFilter.impulseResponseCount)
        micHistory = [Int16](repeating: 0, count: rate / 4)
        do {
            // Quality 3: a short filter (1.5 ms of latency at 16 kHz, flat to ~7 kHz); the reference only has to
            // model the echo.
            resampler = try Resampler(inputRate: rate, outputRate: rate, channels: 1, quality: 3)
        } catch { throw .resampler(error) }
        let ringSeconds = Double(configuration.maxDelayMilliseconds + configuration.tailMilliseconds) / 1000 + 2
        ring = [Int16](repeating: 0, count: Int(ringSeconds * Double(rate)))
        scratch = [Int16](repeating: 0, count: resampler.maximumOutputCount(forInput: maxFarEndSamplesPerCall))
        reference = [Int16](repeating: 0, count: blockSize)
        taps = [Int32](repeating: 0, count: echoFilter.impulseResponseCount)
        margin = configuration.alignmentMarginMilliseconds * rate / 1000
        quietBlocksBeforeBypass = configuration.tailMilliseconds / 10 + 20
        preprocessorInput = [Int16](repeating: 0, count: frameSize)
        preprocessorDelay = [Int16](repeating: 0, count: frameSize)
        realignThreshold = Double(configuration.realignThresholdMilliseconds * rate) / 1000
        stats = EchoCancellerStatistics(
            estimatedDelayMilliseconds: nil, appliedDelayMilliseconds: 0, estimatedDriftPPM: nil,
            compensatedDriftPPM: 0, realignments: 0, lastConfidence: 0, voiceActive: false)
    }

    /// Delay from a microphone sample to its processed output, in samples: the preprocessor's one frame (MDF itself
    /// adds none).
    public var latencySamples: Int { preprocessor.latencySamples + (suppressor?.latencySamples ?? 0) }

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
        guard configuration.cancelEcho else { return }
        farConsumed += Int64(played.count)
        guard resamplerEngaged else {
            write(played)
            return
        }
        let produced: Int
        do {
            produced = try scratch.withUnsafeMutableBufferPointer { out throws(ResamplerError) in
                try resampler.process(played, into: out).produced
            }
        } catch { throw .resampler(error) }
        scratch.withUnsafeBufferPointer { write(UnsafeBufferPointer(rebasing: $0[0..<produced])) }
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
        // The estimator's rings are only read for alignment: without it, no decimation work.
        if configuration.alignDelay { estimator.addReference(samples) }
    }

    // MARK: Capture

    /// Cancels the echo in one microphone block (`blockSize` samples) and runs the preprocessor, writing the
    /// result to `output`. Returns the voice-activity decision. Never allocates.
    @discardableResult
    public func processCapture(
        _ mic: UnsafeBufferPointer<Int16>, into output: UnsafeMutableBufferPointer<Int16>
    ) throws(SpeexDSPError) -> Bool {
        precondition(mic.count == blockSize && output.count == blockSize, "capture blocks must be \(blockSize) samples")
        guard configuration.cancelEcho else { return suppressNoiseOnly(mic, into: output) }
        let start = micCount
        micCount += Int64(blockSize)
        if configuration.alignDelay {
            estimator.addMicrophone(mic)
            blocksSinceEstimate += 1
            // GCC-PHAT acquires the delay; while the adapted filter shows a stable echo path it is not needed (the
            // filter's peak tracks small moves and DelayJumpSearch re-aligns on jumps), and skipping its three
            // 8192-point FFTs per 200 ms is most of the canceller's cost beyond speexdsp's own.
            if blocksSinceEstimate >= estimateSpacing && !(aligned && peakStable >= 2) {
                blocksSinceEstimate = 0
                if let estimate = estimator.estimate() {
                    stats.lastConfidence = estimate.confidence
                    spaceEstimates(afterConfident: estimate.confidence >= configuration.minimumConfidence)
                    if estimate.confidence >= configuration.minimumConfidence && gccHoldOff == 0 { use(estimate) }
                }
            }
        }
        if gccHoldOff > 0 { gccHoldOff -= 1 }
        if configuration.alignDelay && configuration.compensateDrift { try acquireDrift() }
        fillReference(from: start - Int64(appliedDelay))
        let frame = frameSize
        reference.withUnsafeBufferPointer { r in
            for f in stride(from: 0, to: blockSize, by: frame) {
                echoFilter.cancel(
                    mic: UnsafeBufferPointer(rebasing: mic[f..<f + frame]), reference: UnsafeBufferPointer(rebasing: r[f..<f + frame]),
                    into: UnsafeMutableBufferPointer(rebasing: output[f..<f + frame]))
            }
        }
        if configuration.alignDelay {
            recordMicrophone(mic)
            try monitorEchoReturn(mic: mic, output: UnsafeBufferPointer(output))
        }
        passMicrophoneWhenNoEcho(mic, output)
        blocksSinceReset += 1
        blocksSincePeak += 1
        if blocksSincePeak >= peakInterval {
            blocksSincePeak = 0
            try trackPeak()
        }
        var active = false
        for f in stride(from: 0, to: blockSize, by: frame) {
            let out = UnsafeMutableBufferPointer(rebasing: output[f..<f + frame])
            if let suppressor {
                reference.withUnsafeBufferPointer { r in
                    suppressor.process(
                        out, reference: UnsafeBufferPointer(rebasing: r[f..<f + frame]),
                        microphone: UnsafeBufferPointer(rebasing: mic[f..<f + frame]),
                        unaligned: configuration.alignDelay && !aligned)
                }
            }
            residualGain?.analyse(mic: UnsafeBufferPointer(rebasing: mic[f..<f + frame]), output: UnsafeBufferPointer(out))
            if preprocessFrame(out) { active = true }
            // The suppressor's comfort noise goes in after the preprocessor: its echo-state suppression would remove it
            // with the echo (speexdsp cannot tell the two apart), and the background would drop out while the far end
            // talks. Aligned: `comfortNoise` is one frame late, as the preprocessor's output is.
            if let suppressor {
                let noise = suppressor.comfortNoise
                for i in 0..<frame { out[i] = Int16(clamping: Int(out[i]) + Int(noise[i])) }
            }
            residualGain?.apply(to: out)
        }
        stats.voiceActive = active
        return stats.voiceActive
    }

    /// Without cancellation (``EchoCancellerConfiguration/cancelEcho`` off): the microphone through the suppressor's
    /// noise suppression and the preprocessor's voice-activity decision, nothing else. The same latency as with
    /// cancellation (the STFT's hop and the preprocessor's frame).
    private func suppressNoiseOnly(_ mic: UnsafeBufferPointer<Int16>, into output: UnsafeMutableBufferPointer<Int16>) -> Bool {
        micCount += Int64(blockSize)
        for i in 0..<blockSize { output[i] = mic[i] }
        let frame = frameSize
        var active = false
        // `reference` is never filled in this mode: it stays silent.
        reference.withUnsafeBufferPointer { silent in
            for f in stride(from: 0, to: blockSize, by: frame) {
                let out = UnsafeMutableBufferPointer(rebasing: output[f..<f + frame])
                suppressor?.process(out, reference: UnsafeBufferPointer(rebasing: silent[f..<f + frame]))
                if preprocessor.process(out) { active = true }
            }
        }
        stats.voiceActive = active
        return active
    }

    /// While no echo is possible — the aligned reference has been below -60 dBFS for longer than the filter's tail
    /// plus 200 ms — the microphone itself goes on instead of MDF's output, cross-faded over a block on the way in and
    /// out. MDF's output is never the microphone even with nothing to cancel: speexdsp runs it through a DC notch
    /// whose phase swing lifts the peaks of loud, clipped speech by up to 60 % (clipped again at full scale; on the
    /// clean set's pystoi clip that alone cost 0.25 PESQ-WB). MDF still runs, so its state is current when the far
    /// end comes back.
    private func passMicrophoneWhenNoEcho(_ mic: UnsafeBufferPointer<Int16>, _ output: UnsafeMutableBufferPointer<Int16>) {
        quietReferenceBlocks = referenceMeanSquare < Self.quietReferenceMeanSquare ? min(quietReferenceBlocks + 1, Int.max / 2) : 0
        let target: Float = quietReferenceBlocks > quietBlocksBeforeBypass ? 1 : 0
        guard target != 0 || bypassMix != 0 else { return }
        let step = (target - bypassMix) / Float(output.count)
        for i in 0..<output.count {
            bypassMix += step
            output[i] = Int16(clamping: Int((bypassMix * Float(mic[i]) + (1 - bypassMix) * Float(output[i])).rounded()))
        }
        bypassMix = target
    }

    /// Runs the preprocessor on one frame (its VAD decision is returned). While no echo is possible its output is
    /// replaced by its input one frame late (its own latency, so the timing does not move): speexdsp applies gains
    /// only through its denoiser, which must stay on to carry the residual-echo gains, and even at -1 dB that
    /// denoiser cuts the weak bins of quiet speech (two realistic-set talkers at -62 dBFS background lost 0.15 and
    /// 0.18 PESQ-WB through `simulate`). With no echo there is nothing for it to remove.
    private func preprocessFrame(_ out: UnsafeMutableBufferPointer<Int16>) -> Bool {
        let n = out.count
        preprocessorInput.withUnsafeMutableBufferPointer { input in
            for i in 0..<n { input[i] = out[i] }
        }
        let active = preprocessor.process(out)
        if bypassMix == 1 {
            preprocessorDelay.withUnsafeBufferPointer { delayed in
                for i in 0..<n { out[i] = delayed[i] }
            }
        }
        swap(&preprocessorInput, &preprocessorDelay)
        return active
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
        let capacity = ring.count
        let written = ringWritten
        let oldest = max(0, written - Int64(capacity))
        var sum = 0.0
        reference.withUnsafeMutableBufferPointer { out in
            ring.withUnsafeBufferPointer { r in
                // One division for the block, then a wrapping ring position (`index` may be negative).
                var position = Int(index % Int64(capacity))
                if position < 0 { position += capacity }
                var k = index
                for i in 0..<out.count {
                    if k >= oldest && k < written {
                        let v = r[position]
                        out[i] = v
                        sum += Double(v) * Double(v)
                    } else {
                        out[i] = 0
                    }
                    k += 1
                    position += 1
                    if position == capacity { position = 0 }
                }
            }
        }
        referenceMeanSquare = sum / Double(blockSize)
    }

    /// Feeds the drift search a segment correlation every 25 blocks (paused after 5 s of a stable echo path) and,
    /// while the filter shows no stable echo path, runs a search over the last 3-6 s, four candidates per block:
    /// every half second, less often (up to every 8 s) while searches find no clear drift.
    private func acquireDrift() throws(SpeexDSPError) {
        blocksSinceSearch += 1
        if driftSearch.searching {
            if let result = driftSearch.step(budget: 4) {
                try use(result)
            }
            return
        }
        stableBlocks = peakStable >= 2 ? stableBlocks + 1 : 0
        if stableBlocks == Self.stableBlocksBeforeSegmentPause { driftSearch.clear() }
        if stableBlocks >= Self.stableBlocksBeforeSegmentPause { return }
        blocksSinceSegment += 1
        if blocksSinceSegment >= 25 {
            blocksSinceSegment = 0
            if let t = estimator.segmentCorrelation(into: driftSearch.nextSlot) { driftSearch.commit(time: t) }
        }
        // Only while the filter shows no stable echo path: once it does, it tracks any drift left itself.
        if driftSearch.count >= 12 && blocksSinceSearch >= driftSearchInterval && peakStable < 2 {
            blocksSinceSearch = 0
            driftSearch.start()
        }
    }

    /// Acts on a finished drift search: a clear drift (its peak well above the no-drift one and the grid's mean),
    /// seen in three agreeing searches, is added to the compensation (their mean) — unless the filter already shows
    /// the echo path, in which case it tracks the drift itself, more precisely.
    private func use(_ result: DriftSearch.Result) throws(SpeexDSPError) {
        let clear = result.score > 1.5 * result.zeroScore && result.score > 2.5 * result.meanScore && abs(result.ppm) >= 50
        guard clear else {
            searchCount = 0
            driftSearchInterval = min(driftSearchInterval * 2, Self.maximumDriftSearchInterval)
            return
        }
        driftSearchInterval = 50
        // The filter shows the path: it follows the drift itself, and the filter-peak estimate will be finer.
        if peakStable >= 2 { return }
        if let error = drift.driftStandardErrorPPM, error < 5, drift.driftPPM != nil { return }
        if searchCount > 0 && abs(searchSum / Double(searchCount) - result.ppm) > 60 { searchCount = 0 }
        if searchCount == 0 { searchSum = 0 }
        searchSum += result.ppm
        searchCount += 1
        guard searchCount >= searchesNeeded else { return }
        let measured = searchSum / Double(searchCount)
        searchCount = 0
        let target = stats.compensatedDriftPPM + measured
        // The echo delay now, in the reference ring's timeline as the search saw it. Until now nothing kept the
        // alignment on the moving echo (the filter had no stable peak): when the echo has left the comfortable part
        // of the filter (more than half the margin from where the alignment put it), the alignment is set afresh.
        let onset = result.lag * estimator.factor
        let moved = abs(onset - (appliedDelay + margin)) > margin / 2
        let wasEngaged = resamplerEngaged
        if try applyCompensation(target) {
            if moved { realign(to: max(0, onset - margin - (wasEngaged ? 0 : resamplerLatency))) }
            stats.estimatedDriftPPM = target
            driftSearch.clear()
            // The filter-peak line restarts from here: points from before (an unconverged filter, the resampler's
            // engagement step) would bias its slope.
            drift.reset()
        }
    }

    private func recordMicrophone(_ mic: UnsafeBufferPointer<Int16>) {
        let capacity = micHistory.count
        micHistory.withUnsafeMutableBufferPointer { h in
            var position = Int((micCount - Int64(mic.count)) % Int64(capacity))
            for s in mic {
                h[position] = s
                position += 1
                if position == capacity { position = 0 }
            }
        }
    }

    /// Watches the echo return over far-end-active blocks. When a filter that had been cancelling well (an
    /// established return above 10 dB) stops cancelling at all (under 3 dB) for 250 ms of far-end activity — the
    /// echo moved — ``DelayJumpSearch`` looks for where it went, and the reference is shifted there with the adapted
    /// filter kept. Double talk looks the same, but there the search finds the echo where it was and nothing
    /// changes; the searches then back off (250 ms, 500 ms, ... up to 2 s apart) while the collapse lasts.
    private func monitorEchoReturn(mic: UnsafeBufferPointer<Int16>, output: UnsafeBufferPointer<Int16>) throws(SpeexDSPError) {
        blocksSinceJumpSearch += 1
        guard referenceMeanSquare > 900 else { return }
        var micEnergy = 0.0
        var outEnergy = 0.0
        for i in 0..<mic.count {
            micEnergy += Double(mic[i]) * Double(mic[i])
            outEnergy += Double(output[i]) * Double(output[i])
        }
        shortMicEnergy = 0.7 * shortMicEnergy + 0.3 * micEnergy
        shortOutEnergy = 0.7 * shortOutEnergy + 0.3 * outEnergy
        let short = 10 * log10((shortMicEnergy + 1) / (shortOutEnergy + 1))
        if short < 3 && establishedERLE > 10 {
            collapsedBlocks += 1
            goodBlocks = 0
        } else {
            collapsedBlocks = 0
            goodBlocks += 1
            if goodBlocks >= 100 { jumpSearchInterval = 25 }
            // What the filter reaches when it works: a peak hold decaying 2 dB a second of far-end activity, so double
            // talk (near-end speech in the output) does not drag it down and a collapse is seen against it.
            establishedERLE = max(min(short, 40), establishedERLE - 0.02)
        }
        guard collapsedBlocks >= 25, blocksSinceJumpSearch >= jumpSearchInterval, peakStable >= 2 else { return }
        blocksSinceJumpSearch = 0
        try taps.withUnsafeMutableBufferPointer { t throws(SpeexDSPError) in try echoFilter.impulseResponse(into: t) }
        // The last window of microphone samples and the reference span ending at the same time with no offset.
        let window = jumpSearch.window
        let capacity = micHistory.count
        micHistory.withUnsafeBufferPointer { h in
            var position = Int(micCount % Int64(capacity))
            for t in 0..<window {
                jumpSearch.mic[t] = Float(h[position])
                position += 1
                if position == capacity { position = 0 }
            }
        }
        let length = jumpSearch.referenceLength
        copyReference(from: micCount - Int64(length), into: jumpSearch.reference)
        let found = taps.withUnsafeBufferPointer { jumpSearch.search(impulseResponse: $0) }
        guard let found, found.confidence >= 10, abs(found.delay - appliedDelay) >= 2 else {
            jumpSearchInterval = min(2 * jumpSearchInterval, 200)
            pendingJump = nil
            return
        }
        // Two searches in a row must agree: in double talk a single search can find a confident wrong offset (the
        // AEC-Challenge double-talk clip was shifted 11.7 ms off its true echo at 16 s and echoed for two seconds).
        guard let pending = pendingJump, abs(pending - found.delay) <= 2 else {
            pendingJump = found.delay
            blocksSinceJumpSearch = jumpSearchInterval - 2  // the confirming search 20 ms later
            return
        }
        pendingJump = nil
        appliedDelay = found.delay
        stats.realignments += 1
        collapsedBlocks = 0
        recentCount = 0
        gccHoldOff = 200
        driftSearch.clear()
    }

    /// Copies reference ring samples `index ..< index + out.count` (zero where the ring has none).
    private func copyReference(from index: Int64, into out: UnsafeMutableBufferPointer<Float>) {
        let capacity = ring.count
        let written = ringWritten
        let oldest = max(0, written - Int64(capacity))
        ring.withUnsafeBufferPointer { r in
            var position = Int(index % Int64(capacity))
            if position < 0 { position += capacity }
            var k = index
            for i in 0..<out.count {
                out[i] = k >= oldest && k < written ? Float(r[position]) : 0
                k += 1
                position += 1
                if position == capacity { position = 0 }
            }
        }
    }

    /// Blocks between GCC-PHAT delay measurements now: 20 while acquiring, 80 while idle (for tests).
    var delayMeasurementIntervalBlocks: Int { estimateSpacing }

    /// Counts measurements that found no clear echo and sets the spacing of the next (see ``estimateSpacing``).
    private func spaceEstimates(afterConfident confident: Bool) {
        unclearEstimates = confident ? 0 : unclearEstimates + 1
        estimateSpacing = unclearEstimates >= Self.unclearEstimatesBeforeIdle ? Self.idleEstimateInterval : estimateInterval
    }

    /// Coarse alignment with hysteresis from a confident GCC-PHAT measurement.
    private func use(_ estimate: EchoDelayEstimator.Estimate) {
        let rate = Double(configuration.sampleRate)
        if peak == nil { stats.estimatedDelayMilliseconds = estimate.delaySamples * 1000 / rate }
        recent[recentCount % 3] = estimate.delaySamples
        recentCount += 1
        let lo = min(recent[0], recent[1], recent[2])
        let hi = max(recent[0], recent[1], recent[2])
        if recentCount >= 3 && hi - lo <= rate / 1000 {
            let median = recent[0] + recent[1] + recent[2] - lo - hi
            // Where the echo is now: the adapted filter knows best; before it has a clear peak, the alignment.
            let onset = Double(appliedDelay) + (peakStable >= 2 ? peak ?? Double(margin) : Double(margin))
            if !aligned || abs(median - onset) > realignThreshold {
                realign(to: max(0, Int(median.rounded()) - margin))
                return
            }
        }
    }

    private func realign(to delay: Int) {
        aligned = true
        guard delay != appliedDelay else { return }
        appliedDelay = delay
        stats.realignments += 1
        echoFilter.reset()
        blocksSinceReset = 0
        peak = nil
        peakStable = 0
        recentCount = 0
    }

    /// Locates the adapted filter's main peak, feeds the far-end-timeline delay to the drift fit and, at most once
    /// a second, updates the resampler's drift compensation.
    private func trackPeak() throws(SpeexDSPError) {
        guard aligned || !configuration.alignDelay, blocksSinceReset >= 100 else { return }
        try taps.withUnsafeMutableBufferPointer { t throws(SpeexDSPError) in try echoFilter.impulseResponse(into: t) }
        var best = 0
        var bestMagnitude = 0.0
        var energy = 0.0
        taps.withUnsafeBufferPointer { t in
            for i in t.indices {
                let v = Double(t[i])
                energy += v * v
                if abs(v) > bestMagnitude {
                    bestMagnitude = abs(v)
                    best = i
                }
            }
        }
        // A clear peak: far above the mean tap energy. An adapted room response has its direct path ~20 dB above
        // the mean (a diffuse tail decaying over the filter); an unadapted filter's largest tap is noise, ~10 dB.
        lastPeakToMean = energy > 0 ? bestMagnitude * bestMagnitude * Double(taps.count) / energy : 0
        let keeping = peak.map { abs($0 - Double(best)) <= 4 } ?? false
        guard bestMagnitude > 0, lastPeakToMean > (keeping ? 25 : 40) else {
            peak = nil
            peakStable = 0
            return
        }
        peakStable = keeping ? peakStable + 1 : 0
        var position = Double(best)
        if best > 0 && best < taps.count - 1 {
            let y0 = abs(Double(taps[best - 1]))
            let y1 = bestMagnitude
            let y2 = abs(Double(taps[best + 1]))
            let denominator = y0 - 2 * y1 + y2
            if denominator < 0 { position += max(-0.5, min(0.5, 0.5 * (y0 - y2) / denominator)) }
        }
        peak = position
        let rate = Double(configuration.sampleRate)
        stats.estimatedDelayMilliseconds = (Double(appliedDelay) + position) * 1000 / rate
        if configuration.alignDelay {
            // Keep the echo inside the comfortable part of the filter (a drift left uncompensated moves it).
            let tail = Double(echoFilter.tailSamples)
            if peakStable >= 3, position < Double(margin) / 4 || position > tail - Double(margin) / 2 {
                realign(to: max(0, appliedDelay + best - margin))
                return
            }
        }
        guard configuration.compensateDrift, peakStable >= 1 else { return }
        // The delay in the far end's own timeline: alignment + peak + what the resampler has stretched so far.
        let farTimeline = Double(appliedDelay) + position + Double(ringWritten - farConsumed + Int64(resamplerLatency))
        drift.add(time: micCount, delay: farTimeline)
        try updateCompensation()
    }

    /// Sets the resampler's drift compensation from the filter-peak drift estimate when it is precise, at most once
    /// a second.
    private func updateCompensation() throws(SpeexDSPError) {
        guard let ppm = drift.driftPPM, let error = drift.driftStandardErrorPPM, error < 5 else { return }
        let target = ppm
        stats.estimatedDriftPPM = target
        let engaged = stats.compensatedDriftPPM != 0
        // Below ~10 ppm the echo path moves under 0.2 samples a second, which MDF follows by itself; and near the
        // nominal ratio the resampler's steps are 15 ppm apart, so engaging would only add error.
        guard engaged || abs(target) >= 10, micCount - lastDriftUpdate >= Int64(configuration.sampleRate),
            abs(target - stats.compensatedDriftPPM) > 1
        else { return }
        try applyCompensation(target)
    }

    /// Sets the reference resampler to cancel a drift of `ppm`, engaging it (and taking its latency back from the
    /// alignment) the first time. Returns whether it was applied (not when the echo path is shorter than the
    /// resampler's latency).
    @discardableResult
    private func applyCompensation(_ ppm: Double) throws(SpeexDSPError) -> Bool {
        if !resamplerEngaged {
            // From now on the reference comes out of the resampler, later by its latency: take that back from the
            // alignment so the echo stays where the filter has it. An echo path shorter than the latency cannot
            // be drift-compensated this way (the reference would arrive after its echo).
            let latency = resampler.outputLatency
            guard appliedDelay >= latency else { return false }
            appliedDelay -= latency
            resamplerLatency = latency
            resamplerEngaged = true
        }
        lastDriftUpdate = micCount
        let clamped = max(-5_000, min(5_000, ppm))
        do { try resampler.setDrift(ppm: -clamped) } catch { throw .resampler(error) }
        stats.compensatedDriftPPM = -resampler.driftPPM
        return true
    }

    /// Starts over for a new, unrelated stream (after an interruption): forgets the echo path, delay, drift and
    /// the buffered reference (the drift resampler is bypassed again until a new drift is measured). Keeps the
    /// configuration and the preallocated buffers.
    public func reset() throws(SpeexDSPError) {
        echoFilter.reset()
        residualGain?.reset()
        suppressor?.reset()
        estimator.reset()
        drift.reset()
        resampler.reset()
        resamplerEngaged = false
        resamplerLatency = 0
        ringWritten = 0
        farConsumed = 0
        micCount = 0
        appliedDelay = 0
        aligned = false
        peak = nil
        peakStable = 0
        recentCount = 0
        blocksSinceEstimate = 0
        estimateSpacing = estimateInterval
        unclearEstimates = 0
        blocksSincePeak = 0
        blocksSinceReset = 0
        lastDriftUpdate = 0
        driftSearch.clear()
        blocksSinceSegment = 0
        blocksSinceSearch = 0
        driftSearchInterval = 50
        searchCount = 0
        shortMicEnergy = 0
        shortOutEnergy = 0
        establishedERLE = 0
        collapsedBlocks = 0
        blocksSinceJumpSearch = 0
        jumpSearchInterval = 25
        pendingJump = nil
        goodBlocks = 0
        stableBlocks = 0
        gccHoldOff = 0
        micHistory.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
        quietReferenceBlocks = Int.max / 2
        bypassMix = 1
        stats = EchoCancellerStatistics(
            estimatedDelayMilliseconds: nil, appliedDelayMilliseconds: 0, estimatedDriftPPM: nil,
            compensatedDriftPPM: 0, realignments: 0, lastConfidence: 0, voiceActive: false)
    }
}
