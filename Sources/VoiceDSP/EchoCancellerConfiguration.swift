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
    /// The stages that run (all by default). Without ``EchoCanceller/Stage/echoFilter`` the others do nothing.
    public var stages: Set<EchoCanceller.Stage>
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
        sampleRate: Int = 16_000, tailMilliseconds: Int = 100, maxDelayMilliseconds: Int = 500,
        stages: Set<EchoCanceller.Stage> = Set(EchoCanceller.Stage.allCases),
        preprocessor: PreprocessorConfiguration = PreprocessorConfiguration(), alignmentMarginMilliseconds: Int = 8,
        minimumConfidence: Double = 7, realignThresholdMilliseconds: Int = 20, filterFramesPerBlock: Int? = nil,
        residualEchoGainFloorDB: Double? = -30, residualEchoSuppressorFloorDB: Double? = -40
    ) {
        self.sampleRate = sampleRate
        self.tailMilliseconds = tailMilliseconds
        self.maxDelayMilliseconds = maxDelayMilliseconds
        self.stages = stages
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

extension EchoCanceller {
    /// A part of the canceller that can be left out: to fit a device (a headset has no echo), or to measure what
    /// each part brings against a simpler stack.
    public enum Stage: Sendable, Hashable, CaseIterable {
        /// The adaptive filter and everything around it. Without it the far end is ignored and the microphone gets
        /// noise suppression and the voice-activity decision only (what baresip's `speex_pp` does), and the other
        /// stages do nothing.
        case echoFilter
        /// Track the bulk delay and re-align the reference (``EchoDelayAlignment``, ``EchoReturnMonitor``). Without
        /// it the reference is used as played, like raw speex.
        case delayAlignment
        /// Estimate clock drift and compensate it by resampling the reference (``EchoDriftCompensation``). A drift
        /// too fast for the filter to show is only acquired with ``delayAlignment``.
        case driftCompensation
        /// Suppress the residual echo in the preprocessor (`SPEEX_PREPROCESS_SET_ECHO_STATE`).
        case preprocessorEchoSuppression
    }
}
