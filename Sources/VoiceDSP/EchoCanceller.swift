import Foundation

/// Acoustic echo cancellation for one call: speex MDF, aligned in time and drift-corrected, followed by
/// residual-echo suppression, noise suppression, AGC and VAD.
///
/// Feed it what was actually played (``addFarEnd(_:)``, any count per call, as the playout side delivers it) and
/// the microphone in 10 ms blocks (``processCapture(_:into:)``). The filter sits in the middle; each concern
/// around it is a part of its own, present when its ``Stage`` is on:
/// 1. the far end goes into ``EchoReferenceLine``, the reference delay line — through the drift resampler of
///    ``EchoDriftCompensation`` once a drift is being compensated;
/// 2. ``EchoDelayAlignment`` measures by GCC-PHAT how far the microphone trails that line and sets the delay at
///    which the reference is read, with hysteresis; ``EchoReturnMonitor`` notices when the echo return collapses
///    while the far end talks and finds where the echo jumped to, so the reference is shifted with the adapted
///    filter kept;
/// 3. every 250 ms ``EchoPathPeak`` locates the adapted filter's main peak to a fraction of a sample: where the
///    filter has the echo. Alignment plus peak plus what the resampler has stretched is the echo delay in the far
///    end's own timeline, whose slope ``EchoDriftCompensation`` fits and cancels, so the reference and the
///    microphone run on one clock;
/// 4. ``MDFEchoFilter`` removes the linear echo, on frames of half a block by default at 16 kHz and up (it adapts
///    once per frame: twice as many adaptations a second converge far faster), ``ResidualEchoSuppressor`` what is
///    left per band, and ``Preprocessor`` (attached to the filter, on the same frames) the residual echo and noise;
/// 5. ``ResidualEchoGain`` (when the per-band suppressor is off) attenuates what is still only echo (MDF's leak,
///    measured from its own echo estimate against its output), broadband, aligned with the preprocessor's
///    one-frame delay: on a long tail MDF alone leaves the echo ~25 dB down after 20 s, with the gain ~32 dB.
///
/// Double talk: the delay estimator withholds unclear estimates, MDF's own double-talk control slows adaptation,
/// residual suppression is limited to `echoSuppressionActiveDB` when the near end is active, and the residual-echo
/// gain stays near 1 while the output holds more than the estimated residual (a near-end talker).
///
/// No allocation per block: the delay line, the estimator's windows, the impulse-response buffer and all scratch
/// are allocated in `init`. The first drift adjustment allocates a filter table inside speexdsp (once, at control
/// rate). Use from one thread.
public final class EchoCanceller {
    public let configuration: EchoCancellerConfiguration
    /// Samples per microphone block: `sampleRate / 100`.
    public let blockSize: Int
    /// Samples per MDF (and preprocessor) frame: a fraction of the block, so the filter adapts several times per block.
    let frameSize: Int
    /// Most far-end samples accepted per ``addFarEnd(_:)`` call (four blocks).
    public let maxFarEndSamplesPerCall: Int

    /// The adaptive filter: speexdsp's MDF state, which the preprocessor reads for its residual-echo estimate.
    let echoFilter: MDFEchoFilter
    /// The preprocessor after the echo filter.
    public let preprocessor: Preprocessor
    /// The residual-echo gain after the preprocessor (`nil` when switched off).
    private var residualGain: ResidualEchoGain?
    /// The per-band residual-echo suppressor between MDF and the preprocessor (`nil` when switched off).
    private var suppressor: ResidualEchoSuppressor?
    /// Whether the ``Stage/echoFilter`` stage runs (off: noise suppression and VAD only).
    private let cancelsEcho: Bool
    private let line: EchoReferenceLine
    private let peak: EchoPathPeak
    /// The parts of the optional stages (`nil` when off).
    private let alignment: EchoDelayAlignment?
    private let monitor: EchoReturnMonitor?
    private let drift: EchoDriftCompensation?

    private var micCount: Int64 = 0
    /// Samples by which the reference is delayed to line up with the microphone.
    private var appliedDelay = 0
    private var blocksSincePeak = 0
    private var blocksSinceReset = 0
    /// The reference for the current block, read from ``line`` at ``appliedDelay``.
    private var reference: [Int16]
    /// Statistics other than the applied delay and the drift (read from their owners in ``statistics``).
    private var stats = EchoCanceller.initialStatistics
    private var referenceMeanSquare: Double = 0
    /// Peak-to-mean tap energy ratio of the last impulse-response read (for tests and diagnostics).
    var lastPeakToMean: Double { peak.lastPeakToMean }

    private let peakInterval = 25
    /// Aligned-reference mean square under which the far end counts as silent: about -90 dBFS, one LSB (digital
    /// silence or dither; any echo of it would lie under every room's noise).
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

    private static let initialStatistics = EchoCancellerStatistics(
        estimatedDelayMilliseconds: nil, appliedDelayMilliseconds: 0, estimatedDriftPPM: nil,
        compensatedDriftPPM: 0, realignments: 0, lastConfidence: 0, voiceActive: false)

    /// Creates the canceller and everything it preallocates.
    /// - Throws: ``SpeexDSPError`` naming a bad setting or the speexdsp call that failed.
    public init(configuration: EchoCancellerConfiguration = EchoCancellerConfiguration()) throws(SpeexDSPError) {
        let rate = configuration.sampleRate
        try SpeexDSPError.checkRate(rate)
        guard (10...1000).contains(configuration.tailMilliseconds) else {
            throw .invalidArgument(
                field: "tailMilliseconds", reason: "\(configuration.tailMilliseconds); 10 ... 1000 ms")
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
        let stages = configuration.stages
        cancelsEcho = stages.contains(.echoFilter)
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
        let residualInPreprocessor = stages.contains(.preprocessorEchoSuppression) && cancelsEcho
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
        let echoFloorDB = cancelsEcho ? configuration.residualEchoSuppressorFloorDB : nil
        if !cancelsEcho { residualGain = nil }
        if echoFloorDB != nil || noiseFloorDB != nil {
            suppressor = ResidualEchoSuppressor(
                hop: frameSize, sampleRate: rate, floorDB: echoFloorDB, noiseFloorDB: noiseFloorDB)
        }
        let estimator = try EchoDelayEstimator(
            sampleRate: rate, maxDelayMilliseconds: configuration.maxDelayMilliseconds)
        let aligns = cancelsEcho && stages.contains(.delayAlignment)
        alignment = aligns ? EchoDelayAlignment(estimator: estimator, configuration: configuration) : nil
        monitor =
            aligns
            ? EchoReturnMonitor(
                sampleRate: rate, maxDelay: estimator.maxDelaySamples, taps: echoFilter.impulseResponseCount)
            : nil
        if cancelsEcho && stages.contains(.driftCompensation) {
            drift = try EchoDriftCompensation(
                sampleRate: rate, searchLags: estimator.maxDelaySamples / estimator.factor + 1,
                maxFarEndSamplesPerCall: maxFarEndSamplesPerCall)
        } else {
            drift = nil
        }
        let lineSeconds = Double(configuration.maxDelayMilliseconds + configuration.tailMilliseconds) / 1000 + 2
        line = EchoReferenceLine(capacity: Int(lineSeconds * Double(rate)), estimator: alignment?.estimator)
        peak = EchoPathPeak(taps: echoFilter.impulseResponseCount)
        reference = [Int16](repeating: 0, count: blockSize)
        quietBlocksBeforeBypass = configuration.tailMilliseconds / 10 + 20
        preprocessorInput = [Int16](repeating: 0, count: frameSize)
        preprocessorDelay = [Int16](repeating: 0, count: frameSize)
    }

    /// Delay from a microphone sample to its processed output, in samples: the preprocessor's one frame (MDF itself
    /// adds none).
    public var latencySamples: Int { preprocessor.latencySamples + (suppressor?.latencySamples ?? 0) }

    /// Statistics after the last block.
    public var statistics: EchoCancellerStatistics {
        var s = stats
        s.appliedDelayMilliseconds = Double(appliedDelay) * 1000 / Double(configuration.sampleRate)
        if let drift {
            s.estimatedDriftPPM = drift.estimatedPPM
            s.compensatedDriftPPM = drift.compensatedPPM
        }
        return s
    }

    /// Mean square (16-bit units²) of the aligned reference used for the last block: how loud the far end was in
    /// the echo it should be cancelling (for single-talk detection in reports).
    public var lastReferenceMeanSquare: Double { referenceMeanSquare }

    /// Blocks between GCC-PHAT delay measurements now: 20 while acquiring, 80 while idle (for tests).
    var delayMeasurementIntervalBlocks: Int { alignment?.estimateSpacing ?? EchoDelayAlignment.estimateInterval }

    // MARK: Far end

    /// Records far-end samples just handed to the loudspeaker, in play order. Any count up to
    /// `maxFarEndSamplesPerCall`. Never allocates.
    public func addFarEnd(_ played: UnsafeBufferPointer<Int16>) throws(SpeexDSPError) {
        precondition(
            played.count <= maxFarEndSamplesPerCall, "at most \(maxFarEndSamplesPerCall) far-end samples per call")
        guard cancelsEcho else { return }
        if let drift {
            try drift.pass(played, to: line)
        } else {
            line.write(played)
        }
    }

    // MARK: Capture

    /// Cancels the echo in one microphone block (`blockSize` samples) and runs the preprocessor, writing the
    /// result to `output`. Returns the voice-activity decision. Never allocates.
    @discardableResult
    public func processCapture(
        _ mic: UnsafeBufferPointer<Int16>, into output: UnsafeMutableBufferPointer<Int16>
    ) throws(SpeexDSPError) -> Bool {
        precondition(mic.count == blockSize && output.count == blockSize, "capture blocks must be \(blockSize) samples")
        guard cancelsEcho else { return suppressNoiseOnly(mic, into: output) }
        let start = micCount
        micCount += Int64(blockSize)
        if let alignment {
            if let delay = alignment.addMicrophone(mic, appliedDelay: appliedDelay, peak: peak, statistics: &stats) {
                realign(to: delay)
            }
            if let drift,
                let delay = try drift.acquire(
                    estimator: alignment.estimator, peak: peak, margin: alignment.margin, now: micCount,
                    appliedDelay: &appliedDelay)
            {
                realign(to: delay)
            }
        }
        referenceMeanSquare = reference.withUnsafeMutableBufferPointer {
            line.read(from: start - Int64(appliedDelay), into: $0)
        }
        let frame = frameSize
        reference.withUnsafeBufferPointer { r in
            for f in stride(from: 0, to: blockSize, by: frame) {
                echoFilter.cancel(
                    mic: UnsafeBufferPointer(rebasing: mic[f..<f + frame]),
                    reference: UnsafeBufferPointer(rebasing: r[f..<f + frame]),
                    into: UnsafeMutableBufferPointer(rebasing: output[f..<f + frame]))
            }
        }
        if let monitor,
            let delay = try monitor.observe(
                mic: mic, output: UnsafeBufferPointer(output), end: micCount, referenceMeanSquare: referenceMeanSquare,
                filter: echoFilter, peak: peak, reference: line, appliedDelay: appliedDelay)
        {
            jump(to: delay)
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
                        unaligned: !(alignment?.aligned ?? true),
                        farInFlight: line.soundEnd > start - Int64(appliedDelay) + Int64(f + frame))
                }
            }
            residualGain?.analyse(
                mic: UnsafeBufferPointer(rebasing: mic[f..<f + frame]), output: UnsafeBufferPointer(out))
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

    /// Without cancellation (``Stage/echoFilter`` off): the microphone through the suppressor's noise suppression
    /// and the preprocessor's voice-activity decision, nothing else. The same latency as with cancellation (the
    /// STFT's hop and the preprocessor's frame).
    private func suppressNoiseOnly(_ mic: UnsafeBufferPointer<Int16>, into output: UnsafeMutableBufferPointer<Int16>)
        -> Bool
    {
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
    private func passMicrophoneWhenNoEcho(
        _ mic: UnsafeBufferPointer<Int16>, _ output: UnsafeMutableBufferPointer<Int16>
    ) {
        quietReferenceBlocks =
            referenceMeanSquare < Self.quietReferenceMeanSquare ? min(quietReferenceBlocks + 1, Int.max / 2) : 0
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
        mic: UnsafeBufferPointer<Int16>, farEnd: UnsafeBufferPointer<Int16>,
        into output: UnsafeMutableBufferPointer<Int16>
    ) throws(SpeexDSPError) -> Bool {
        try addFarEnd(farEnd)
        return try processCapture(mic, into: output)
    }

    // MARK: Echo path

    /// Locates the adapted filter's main peak; keeps the echo inside the comfortable part of the filter (with delay
    /// alignment) and hands the far-end-timeline delay to the drift compensation.
    private func trackPeak() throws(SpeexDSPError) {
        guard alignment?.aligned ?? true, blocksSinceReset >= 100 else { return }
        guard let best = try peak.locate(in: echoFilter), let position = peak.position else { return }
        let rate = Double(configuration.sampleRate)
        stats.estimatedDelayMilliseconds = (Double(appliedDelay) + position) * 1000 / rate
        if let alignment {
            // A drift left uncompensated moves the echo towards an edge of the filter.
            let margin = alignment.margin
            let tail = Double(echoFilter.tailSamples)
            if peak.stableReads >= 3, position < Double(margin) / 4 || position > tail - Double(margin) / 2 {
                realign(to: max(0, appliedDelay + best - margin))
                return
            }
        }
        guard let drift, peak.stableReads >= 1 else { return }
        // The delay in the far end's own timeline: alignment + peak + what the resampler has stretched so far.
        let farTimeline =
            Double(appliedDelay) + position + Double(line.written - drift.farConsumed + Int64(drift.latency))
        try drift.track(delay: farTimeline, at: micCount, appliedDelay: &appliedDelay)
    }

    /// Moves the reference to `delay` and restarts the filter (a coarse re-alignment: the adapted path is wrong).
    private func realign(to delay: Int) {
        let moved = delay != appliedDelay
        alignment?.didAlign(moved: moved)
        guard moved else { return }
        appliedDelay = delay
        stats.realignments += 1
        echoFilter.reset()
        blocksSinceReset = 0
        peak.forget()
    }

    /// Shifts the reference by a jump ``EchoReturnMonitor`` found, keeping the adapted filter.
    private func jump(to delay: Int) {
        appliedDelay = delay
        stats.realignments += 1
        alignment?.didJump()
        drift?.clearSearch()
    }

    /// Starts over for a new, unrelated stream (after an interruption): forgets the echo path, delay, drift and
    /// the buffered reference (the drift resampler is bypassed again until a new drift is measured). Keeps the
    /// configuration and the preallocated buffers.
    public func reset() throws(SpeexDSPError) {
        echoFilter.reset()
        residualGain?.reset()
        suppressor?.reset()
        alignment?.reset()
        monitor?.reset()
        drift?.reset()
        line.reset()
        peak.forget()
        micCount = 0
        appliedDelay = 0
        blocksSincePeak = 0
        blocksSinceReset = 0
        quietReferenceBlocks = Int.max / 2
        bypassMix = 1
        stats = Self.initialStatistics
    }
}
