internal import CSpeexDSP

/// A streaming sample-rate converter over speexdsp's resampler, with fine ratio adjustment for clock-drift
/// compensation.
///
/// One `Resampler` converts one interleaved stream (any channel count) from `inputRate` to `outputRate`. It keeps
/// its filter history between calls, so a stream can be fed in blocks of any size (the engine uses 10 ms blocks)
/// and the result is the same as converting it in one piece. It is the single owner of its
/// `SpeexResamplerState`, which it destroys in `deinit`. It is not thread-safe: use it from one thread at a time
/// (the audio thread that owns the stream).
///
/// ## Block sizes and latency
/// speexdsp starts producing output immediately: its filter history is primed with zeros, so the first
/// `outputLatency` output samples are the filter's start-up transient (silence for a stream that starts with
/// signal) and the input is delayed by `inputLatency` input samples (= `outputLatency` output samples). When the
/// nominal ratio divides a block exactly (10 ms at any two rates does: 480 → 160, 441 → 480, …) every block in
/// steady state produces exactly `block * outputRate / inputRate` samples; for other block sizes, or while a drift
/// adjustment is applied, a block produces the exact count ±1 and the running total stays within one sample of
/// `consumed * outputRate / inputRate`.
///
/// ## Allocation
/// `process` never allocates (speexdsp converts `Int16` through a stack buffer). `init`, and `setDrift` when it
/// needs a bigger filter table (the first adjustment away from the nominal ratio), allocate inside speexdsp.
public final class Resampler {
    /// The speexdsp quality used when none is given: 5 (`SPEEX_RESAMPLER_QUALITY_DESKTOP`).
    ///
    /// Why 5 rather than speexdsp's `DEFAULT` (4) or `VOIP` (3), measured on speexdsp 1.2.1 (float build) for
    /// 48 kHz → 16 kHz: quality 5 passes 7 kHz (the top of wideband voice) at -0.2 dB and attenuates tones above
    /// the new 8 kHz Nyquist by more than 120 dB (8.5 kHz: 121 dB, 12 kHz: 145 dB). Quality 4 loses 0.4 dB at
    /// 7 kHz and stops only 89 dB at 8.5 kHz; quality 3 loses 3.1 dB at 7 kHz and stops 85 dB. Higher settings
    /// buy nothing audible at voice bandwidths and cost longer filters. At quality 5 the filter is 80 taps at the
    /// lower rate (240 input taps for 48 → 16 kHz: 120 input samples, 2.5 ms, of latency), about 4 M
    /// multiply-adds per second per channel.
    public static let defaultQuality = 5

    /// Highest sample rate accepted, in Hz. speexdsp keeps ratio arithmetic in 32 bits; this bound keeps every
    /// rate and drift adjustment well inside it.
    public static let maximumRate = 768_000

    /// Largest drift adjustment `setDrift(ppm:)` accepts, in parts per million (±5 %). Real clock drift between
    /// audio devices is well under 1 000 ppm; larger speed changes are the time-stretcher's job.
    public static let maximumDriftPPM = 50_000.0

    /// Denominator bounds for the fractional ratio (see `setDrift(ppm:)`).
    static let minimumRatioDenominator: UInt64 = 4_096
    static let maximumRatioDenominator: UInt64 = 65_535

    /// Input sample rate in Hz.
    public let inputRate: Int
    /// Output sample rate in Hz (nominal: the actual output rate also depends on `driftPPM`).
    public let outputRate: Int
    /// Interleaved channels, the same on both sides.
    public let channels: Int
    /// The speexdsp quality, 0 (fastest) ... 10 (best).
    public let quality: Int

    private let state: OpaquePointer
    /// The ratio handed to speexdsp, input samples per output sample, as a reduced fraction.
    private var ratioNumerator: UInt64
    private var ratioDenominator: UInt64
    private var appliedDriftPPM: Double = 0

    /// Creates a resampler.
    ///
    /// - Parameters:
    ///   - inputRate: input sample rate in Hz, 1 ... `maximumRate`.
    ///   - outputRate: output sample rate in Hz, 1 ... `maximumRate`.
    ///   - channels: interleaved channels, 1 ... 256.
    ///   - quality: speexdsp quality 0 ... 10; `defaultQuality` (5) unless you have measured a reason to change it.
    /// - Throws: `ResamplerError` with code `.invalidArgument` and `field` naming the bad parameter, or the speexdsp
    ///   error from `speex_resampler_init`.
    public init(
        inputRate: Int, outputRate: Int, channels: Int = 1, quality: Int = Resampler.defaultQuality
    ) throws(ResamplerError) {
        let call = "Resampler.init"
        guard (1...Self.maximumRate).contains(inputRate) else { throw .invalidArgument(field: "inputRate", call: call) }
        guard (1...Self.maximumRate).contains(outputRate) else {
            throw .invalidArgument(field: "outputRate", call: call)
        }
        guard (1...256).contains(channels) else { throw .invalidArgument(field: "channels", call: call) }
        guard (0...10).contains(quality) else { throw .invalidArgument(field: "quality", call: call) }

        var err: Int32 = 0
        let created = speex_resampler_init(
            UInt32(channels), UInt32(inputRate), UInt32(outputRate), Int32(quality), &err)
        guard let created else {
            try ResamplerError.check(err, "speex_resampler_init")
            throw ResamplerError(code: .allocationFailed, call: "speex_resampler_init")
        }
        if err != 0 {
            speex_resampler_destroy(created)
            try ResamplerError.check(err, "speex_resampler_init")
        }
        self.state = created
        self.inputRate = inputRate
        self.outputRate = outputRate
        self.channels = channels
        self.quality = quality
        let g = Self.gcd(UInt64(inputRate), UInt64(outputRate))
        self.ratioNumerator = UInt64(inputRate) / g
        self.ratioDenominator = UInt64(outputRate) / g
    }

    deinit {
        speex_resampler_destroy(state)
    }

    // MARK: Processing

    /// Converts interleaved 16-bit samples, keeping state for the next call.
    ///
    /// Consumes as much of `input` as `output` has room for and returns how many samples per channel were read and
    /// written. With `output.count >= maximumOutputCount(forInput: input.count / channels) * channels` the whole
    /// input is always consumed. Never allocates.
    ///
    /// - Precondition: `input.count` is a multiple of `channels`.
    /// - Returns: samples per channel consumed from `input` and produced into `output`.
    /// - Throws: the speexdsp error from `speex_resampler_process_interleaved_int` (none is expected for a valid
    ///   state). `input` and `output` must not overlap; speexdsp does not detect it.
    @discardableResult
    public func process(
        _ input: UnsafeBufferPointer<Int16>, into output: UnsafeMutableBufferPointer<Int16>
    ) throws(ResamplerError) -> (consumed: Int, produced: Int) {
        precondition(input.count % channels == 0, "input holds a partial interleaved frame")
        guard let inBase = input.baseAddress else { return (0, 0) }
        return try interleaved(
            speex_resampler_process_interleaved_int, "speex_resampler_process_interleaved_int", inBase,
            frames: input.count / channels, into: output)
    }

    /// Converts interleaved float samples (nominally -1 ... 1, but any scale works: the filter is linear), keeping
    /// state for the next call. Same contract as the `Int16` overload; the two may not be mixed meaningfully on
    /// one stream unless the caller scales consistently (speexdsp's float API does not rescale).
    @discardableResult
    public func process(
        _ input: UnsafeBufferPointer<Float>, into output: UnsafeMutableBufferPointer<Float>
    ) throws(ResamplerError) -> (consumed: Int, produced: Int) {
        precondition(input.count % channels == 0, "input holds a partial interleaved frame")
        guard let inBase = input.baseAddress else { return (0, 0) }
        return try interleaved(
            speex_resampler_process_interleaved_float, "speex_resampler_process_interleaved_float", inBase,
            frames: input.count / channels, into: output)
    }

    /// Pushes `inputLatency` samples of silence through the filter so the last real input comes out: call once at
    /// the end of a finite stream (a file). Returns samples per channel written to `output`.
    @discardableResult
    public func drain(into output: UnsafeMutableBufferPointer<Int16>) throws(ResamplerError) -> Int {
        // A NULL input is speexdsp's documented way to feed zeros.
        try interleaved(
            speex_resampler_process_interleaved_int, "speex_resampler_process_interleaved_int", nil,
            frames: inputLatency, into: output
        ).produced
    }

    /// Float overload of `drain(into:)`.
    @discardableResult
    public func drain(into output: UnsafeMutableBufferPointer<Float>) throws(ResamplerError) -> Int {
        try interleaved(
            speex_resampler_process_interleaved_float, "speex_resampler_process_interleaved_float", nil,
            frames: inputLatency, into: output
        ).produced
    }

    /// One speexdsp interleaved process call, shared by the `Int16` and `Float` overloads of `process` and
    /// `drain`: `frames` samples per channel from `input` (nil feeds zeros) into as much of `output` as holds whole
    /// frames. Returns (0, 0) when `output` cannot hold one frame.
    @inline(__always)
    private func interleaved<Sample>(
        _ call: (
            OpaquePointer?, UnsafePointer<Sample>?, UnsafeMutablePointer<UInt32>?, UnsafeMutablePointer<Sample>?,
            UnsafeMutablePointer<UInt32>?
        ) -> Int32,
        _ name: StaticString, _ input: UnsafePointer<Sample>?, frames: Int,
        into output: UnsafeMutableBufferPointer<Sample>
    ) throws(ResamplerError) -> (consumed: Int, produced: Int) {
        guard let outBase = output.baseAddress, output.count >= channels else { return (0, 0) }
        var inLength = Self.length(frames)
        var outLength = Self.length(output.count / channels)
        try ResamplerError.check(call(state, input, &inLength, outBase, &outLength), name)
        return (Int(inLength), Int(outLength))
    }

    /// Output capacity, in samples per channel, that always suffices for `n` input samples per channel:
    /// `ceil(n * outputRate / inputRate)` scaled for the largest drift `setDrift` accepts, plus 8 samples for the
    /// filter's phase and for the few buffered samples a filter-length change releases. It does not depend on the
    /// current drift, so a buffer sized once at stream start stays valid.
    public func maximumOutputCount(forInput n: Int) -> Int {
        precondition(n >= 0, "negative sample count")
        let scaled = Double(n) * Double(outputRate) / Double(inputRate) * (1 + Self.maximumDriftPPM / 1_000_000)
        return Int(scaled.rounded(.up)) + 8
    }

    // MARK: Drift

    /// Adjusts the conversion ratio while running, for clock-drift compensation, without resetting the filter.
    ///
    /// `ppm > 0` produces that many parts per million more output per input than the nominal
    /// `outputRate / inputRate` (use it when the consumer's clock runs fast relative to the producer's); `ppm < 0`
    /// produces less; `0` returns to the nominal rate. The nominal rates stay as they are; only the ratio changes,
    /// through `speex_resampler_set_rate_frac`, which keeps the filter history and rescales the fractional phase,
    /// so there is no click.
    ///
    /// Resolution: speexdsp rescales its fractional phase in 32-bit arithmetic and corrupts its state (measured:
    /// a crash) when the old and new ratio denominators multiply past 2^32, so the ratio is the fraction nearest
    /// the request with a denominator of 4 096 ... 65 535 (the lower bound keeps the phase rescale error under
    /// 1/4096 sample). Away from the nominal rate that is accurate to about 0.1 ppm, but the smallest step away
    /// from an exact rate ratio is 1/(65535·a) where the nominal ratio is a/b in lowest terms, e.g. 15 ppm for
    /// 8 → 48 kHz and 5 ppm for 48 → 16 kHz. Once a drift has been applied, a request for 0 gets that nearest
    /// step rather than the exact nominal ratio (whose tiny denominator would shift the phase by up to a sample).
    /// `driftPPM` reports what was actually applied, so a control loop can account for the difference.
    ///
    /// Call it at control rate (e.g. once per second), not per block: speexdsp recomputes its filter table on every
    /// change, and the first change away from the nominal ratio allocates a larger table.
    ///
    /// - Throws: `.invalidArgument` (`field: "ppm"`) when `|ppm| > maximumDriftPPM` or not finite; the speexdsp
    ///   error from `speex_resampler_set_rate_frac`.
    public func setDrift(ppm: Double) throws(ResamplerError) {
        guard ppm.isFinite, abs(ppm) <= Self.maximumDriftPPM else {
            throw .invalidArgument(field: "ppm", call: "Resampler.setDrift")
        }
        let nominal = Double(inputRate) / Double(outputRate)
        let (num, den): (UInt64, UInt64)
        if ppm == 0 && ratioDenominator < Self.minimumRatioDenominator {
            // Still at the exact nominal ratio: nothing to do.
            return
        } else {
            (num, den) = Self.nearestFraction(
                to: nominal / (1 + ppm / 1_000_000),
                denominators: Self.minimumRatioDenominator...Self.maximumRatioDenominator)
        }
        if num == ratioNumerator && den == ratioDenominator { return }
        try ResamplerError.check(
            speex_resampler_set_rate_frac(state, UInt32(num), UInt32(den), UInt32(inputRate), UInt32(outputRate)),
            "speex_resampler_set_rate_frac")
        ratioNumerator = num
        ratioDenominator = den
        appliedDriftPPM = (nominal * Double(den) / Double(num) - 1) * 1_000_000
    }

    /// The drift adjustment currently applied, in ppm (0 until `setDrift` is called). It can differ from the last
    /// request by the resolution described in `setDrift(ppm:)`.
    public var driftPPM: Double { appliedDriftPPM }

    // MARK: State

    /// Delay through the filter in input samples (per channel): half the filter length.
    public var inputLatency: Int { Int(speex_resampler_get_input_latency(state)) }

    /// Delay through the filter in output samples (per channel).
    public var outputLatency: Int { Int(speex_resampler_get_output_latency(state)) }

    /// Clears the filter history and phase, for a new, unrelated stream (after an interruption, so stale audio
    /// does not bleed into the new stream). Keeps rates, quality and drift.
    public func reset() {
        // speex_resampler_reset_mem only fails for a NULL state, which cannot happen here.
        _ = speex_resampler_reset_mem(state)
    }

    /// Drops the filter's start-up delay: the first `inputLatency` input samples are consumed without producing
    /// their leading zeros, so output sample 0 lines up with input sample 0 (a file converted this way has the
    /// same length and timing as its source, once `drain` is called at the end). Call it right after `init` or
    /// `reset`, before the first `process`. Real-time streams should not use it: the first block would then come
    /// out `outputLatency` samples short.
    public func skipZeros() {
        // speex_resampler_skip_zeros always returns RESAMPLER_ERR_SUCCESS.
        _ = speex_resampler_skip_zeros(state)
    }

    // MARK: Helpers

    @inline(__always)
    private static func length(_ count: Int) -> UInt32 {
        precondition(count <= Int(UInt32.max), "buffer too large for speexdsp")
        return UInt32(truncatingIfNeeded: count)
    }

    static func gcd(_ a: UInt64, _ b: UInt64) -> UInt64 {
        var (a, b) = (a, b)
        while b != 0 { (a, b) = (b, a % b) }
        return a
    }

    /// The reduced fraction p/q nearest `x` whose reduced denominator lies in `denominators`.
    static func nearestFraction(to x: Double, denominators: ClosedRange<UInt64>) -> (UInt64, UInt64) {
        var best: (UInt64, UInt64) = (UInt64((x * Double(denominators.upperBound)).rounded()), denominators.upperBound)
        var bestError = Double.infinity
        for q in denominators {
            let floorP = Int64((x * Double(q)).rounded(.down))
            for delta: Int64 in -1...2 where floorP + delta >= 1 {
                let p = UInt64(floorP + delta)
                let error = abs(Double(p) / Double(q) - x)
                guard error < bestError else { continue }
                let g = gcd(p, q)
                if q / g >= denominators.lowerBound {
                    bestError = error
                    best = (p / g, q / g)
                }
            }
        }
        return best
    }
}
