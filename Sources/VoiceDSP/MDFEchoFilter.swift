internal import CSpeexDSP

/// speexdsp's MDF adaptive echo filter on its own: no delay alignment, no drift compensation, no residual-echo
/// suppression.
///
/// This is the building block ``EchoCanceller`` aligns and drives, and the "raw speex" baseline the benchmark and
/// the `aec` report compare against. It is the single owner of its `SpeexEchoState` (destroyed in `deinit`). It
/// sets `SPEEX_ECHO_SET_SAMPLING_RATE` at creation: speexdsp otherwise assumes 8 kHz and mis-tunes its adaptation
/// at every other rate (a known field bug in code that forgets it).
public final class MDFEchoFilter {
    /// Processing rate in Hz (8, 16, 32 or 48 kHz).
    public let sampleRate: Int
    /// Samples per block (10 ms).
    public let blockSize: Int
    /// Length of the adaptive filter in samples: the longest echo path (after alignment) it can model.
    public let tailSamples: Int
    /// Number of taps ``impulseResponse(into:)`` writes: the tail rounded up to whole blocks
    /// (`SPEEX_ECHO_GET_IMPULSE_RESPONSE_SIZE`).
    public let impulseResponseCount: Int

    let state: OpaquePointer

    /// Creates the filter.
    /// - Parameters:
    ///   - sampleRate: 8000, 16000, 32000 or 48000.
    ///   - blockSize: samples per call, normally `sampleRate / 100`.
    ///   - tailSamples: filter length; at least one block, at most 1 s.
    /// - Throws: ``SpeexDSPError/invalidArgument(field:reason:)`` for a bad rate or size; the speexdsp failure.
    public init(sampleRate: Int, blockSize: Int, tailSamples: Int) throws(SpeexDSPError) {
        try SpeexDSPError.checkRate(sampleRate)
        guard blockSize > 0, blockSize <= sampleRate / 10 else {
            throw .invalidArgument(field: "blockSize", reason: "\(blockSize) samples; 1 ... 100 ms of samples")
        }
        guard tailSamples >= blockSize, tailSamples <= sampleRate else {
            throw .invalidArgument(field: "tailSamples", reason: "\(tailSamples); one block ... 1 s of samples")
        }
        guard let created = speex_echo_state_init(Int32(blockSize), Int32(tailSamples)) else {
            throw .initFailed(call: "speex_echo_state_init")
        }
        var rate = Int32(sampleRate)
        let result = speex_echo_ctl(created, SPEEX_ECHO_SET_SAMPLING_RATE, &rate)
        if result != 0 {
            speex_echo_state_destroy(created)
            try SpeexDSPError.check(result, "speex_echo_ctl", "SPEEX_ECHO_SET_SAMPLING_RATE")
        }
        var size: Int32 = 0
        let sizeResult = speex_echo_ctl(created, SPEEX_ECHO_GET_IMPULSE_RESPONSE_SIZE, &size)
        if sizeResult != 0 {
            speex_echo_state_destroy(created)
            try SpeexDSPError.check(sizeResult, "speex_echo_ctl", "SPEEX_ECHO_GET_IMPULSE_RESPONSE_SIZE")
        }
        self.impulseResponseCount = Int(size)
        self.state = created
        self.sampleRate = sampleRate
        self.blockSize = blockSize
        self.tailSamples = tailSamples
    }

    deinit { speex_echo_state_destroy(state) }

    /// Removes the echo of `reference` (the far-end samples that reached the loudspeaker at the same time) from
    /// `mic`, writing the result to `output`. All three are exactly `blockSize` long. Never allocates.
    public func cancel(
        mic: UnsafeBufferPointer<Int16>, reference: UnsafeBufferPointer<Int16>,
        into output: UnsafeMutableBufferPointer<Int16>
    ) {
        precondition(
            mic.count == blockSize && reference.count == blockSize && output.count == blockSize,
            "MDFEchoFilter blocks must be \(blockSize) samples")
        speex_echo_cancellation(state, mic.baseAddress!, reference.baseAddress!, output.baseAddress!)
    }

    /// Writes the adapted echo path (`SPEEX_ECHO_GET_IMPULSE_RESPONSE`, in speexdsp's fixed scale) into `taps`, which
    /// must hold exactly ``impulseResponseCount`` values. Tap `i` is the weight of the reference sample `i` samples
    /// before the current one, so the main peak's index is where the echo sits inside the filter: the drift
    /// estimator tracks it. Never allocates (speexdsp inverse-transforms into its own scratch).
    public func impulseResponse(into taps: UnsafeMutableBufferPointer<Int32>) throws(SpeexDSPError) {
        precondition(taps.count == impulseResponseCount, "impulse response buffer must hold the filter's taps")
        try SpeexDSPError.check(
            speex_echo_ctl(state, SPEEX_ECHO_GET_IMPULSE_RESPONSE, taps.baseAddress!),
            "speex_echo_ctl", "SPEEX_ECHO_GET_IMPULSE_RESPONSE")
    }

    /// Forgets the adapted echo path (after a large re-alignment, or for an unrelated stream).
    public func reset() { speex_echo_state_reset(state) }

    /// The sampling rate speexdsp reports it is tuned for (the check that the rate was really set).
    public func configuredSampleRate() throws(SpeexDSPError) -> Int {
        var rate: Int32 = 0
        try SpeexDSPError.check(
            speex_echo_ctl(state, SPEEX_ECHO_GET_SAMPLING_RATE, &rate), "speex_echo_ctl",
            "SPEEX_ECHO_GET_SAMPLING_RATE")
        return Int(rate)
    }
}
