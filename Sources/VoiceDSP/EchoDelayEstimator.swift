import Foundation

/// Finds the bulk delay between the far-end reference and the microphone: how many samples after the reference
/// its echo reaches the microphone.
///
/// Both streams are decimated (block averages) to a 4 kHz envelope-rate signal and kept in fixed rings; on
/// request, the estimator cross-correlates the last second of microphone against the reference over lags
/// 0 ... `maxDelay` with GCC-PHAT (phase transform: every frequency weighs the same, so the sharp peak is the
/// direct echo path rather than the speech's broad autocorrelation). PHAT and the peak-to-floor confidence keep
/// it robust to double talk: a near-end talker is uncorrelated with the reference and lowers the peak rather than
/// moving it, and the estimate is withheld when the reference is silent or the peak is not clear.
///
/// Never allocates after `init`. One estimate costs two 8192-point FFTs; the ``EchoCanceller`` asks every 200 ms.
public final class EchoDelayEstimator {
    /// One delay measurement.
    public struct Estimate: Sendable, Equatable {
        /// Samples (at the processing rate, fractional from peak interpolation) by which the microphone trails the
        /// reference.
        public var delaySamples: Double
        /// Peak height over the correlation floor's RMS; above ~8 the peak is reliable.
        public var confidence: Double
        /// The microphone sample count at the end of the window measured.
        public var atMicSample: Int64
    }

    /// Processing rate in Hz.
    public let sampleRate: Int
    /// Largest delay searched, in samples at `sampleRate`.
    public let maxDelaySamples: Int
    /// The correlation rate in Hz.
    public static let analysisRate = 4_000

    let factor: Int
    let window: Int  // decimated samples correlated
    let maxLag: Int  // decimated
    let capacity: Int
    // Preallocated storage owned by this object (freed in deinit). Unsafe buffers held in `let`s: the hot loops
    // index them directly, with no per-access exclusivity check as a class-stored array would have.
    private let mic: UnsafeMutableBufferPointer<Float>
    private let ref: UnsafeMutableBufferPointer<Float>
    private(set) var micCount: Int64 = 0  // decimated samples written
    private(set) var refCount: Int64 = 0
    /// Ring positions of `micCount` / `refCount` (kept so the per-sample path needs no division).
    private var micPosition = 0
    private var refPosition = 0
    private var micAcc: Float = 0
    private var micAccN = 0
    private var refAcc: Float = 0
    private var refAccN = 0
    private let fft: FFT
    private let re: UnsafeMutableBufferPointer<Float>
    private let im: UnsafeMutableBufferPointer<Float>
    private let xr: UnsafeMutableBufferPointer<Float>
    private let xi: UnsafeMutableBufferPointer<Float>
    private let smoothRe: UnsafeMutableBufferPointer<Float>
    private let smoothIm: UnsafeMutableBufferPointer<Float>
    /// Short-segment correlation (for ``DriftSearch``): its own, smaller transform; `re`/`im`/`xr`/`xi` are reused
    /// as scratch (they are at least as large).
    private let segmentFFT: FFT
    /// Decimated microphone samples per segment correlation.
    let segmentLength = 1024
    /// Weight of the previous cross spectrum when a new window is averaged in (0: no memory).
    let smoothing: Float = 0.6
    /// Reference RMS (16-bit units) below which no estimate is made: the far end is silent.
    var minimumReferenceRMS: Float = 30

    /// - Parameters:
    ///   - sampleRate: 8000, 16000, 32000 or 48000.
    ///   - maxDelayMilliseconds: the longest bulk delay to look for (≤ 1000 ms).
    public init(sampleRate: Int, maxDelayMilliseconds: Int = 500) throws(SpeexDSPError) {
        try SpeexDSPError.checkRate(sampleRate)
        guard (10...1000).contains(maxDelayMilliseconds) else {
            throw .invalidArgument(field: "maxDelayMilliseconds", reason: "\(maxDelayMilliseconds); 10 ... 1000 ms")
        }
        self.sampleRate = sampleRate
        factor = sampleRate / Self.analysisRate
        maxLag = maxDelayMilliseconds * Self.analysisRate / 1000
        maxDelaySamples = maxLag * factor
        window = 4096
        var size = 2
        while size < window + maxLag { size *= 2 }
        fft = FFT(size: size)
        capacity = window + maxLag + 64
        func zeroed(_ count: Int) -> UnsafeMutableBufferPointer<Float> {
            let b = UnsafeMutableBufferPointer<Float>.allocate(capacity: count)
            b.initialize(repeating: 0)
            return b
        }
        mic = zeroed(capacity)
        ref = zeroed(capacity)
        re = zeroed(size)
        im = zeroed(size)
        xr = zeroed(size)
        xi = zeroed(size)
        smoothRe = zeroed(size / 2 + 1)
        smoothIm = zeroed(size / 2 + 1)
        var segmentSize = 2
        while segmentSize < segmentLength + maxLag { segmentSize *= 2 }
        segmentFFT = FFT(size: segmentSize)
    }

    deinit {
        for b in [mic, ref, re, im, xr, xi, smoothRe, smoothIm] { b.deallocate() }
    }

    /// Appends microphone samples (any count).
    public func addMicrophone(_ samples: UnsafeBufferPointer<Int16>) {
        Self.decimate(
            samples, into: mic, factor: factor, acc: &micAcc, accN: &micAccN, count: &micCount, position: &micPosition)
    }

    /// Appends reference samples (any count), in the timeline the microphone is compared against.
    public func addReference(_ samples: UnsafeBufferPointer<Int16>) {
        Self.decimate(
            samples, into: ref, factor: factor, acc: &refAcc, accN: &refAccN, count: &refCount, position: &refPosition)
    }

    /// Block-averages `samples` by `factor` into the ring `ring`; the state is worked on in locals and stored once.
    private static func decimate(
        _ samples: UnsafeBufferPointer<Int16>, into ring: UnsafeMutableBufferPointer<Float>, factor: Int,
        acc accState: inout Float, accN accNState: inout Int, count countState: inout Int64,
        position positionState: inout Int
    ) {
        var acc = accState
        var accN = accNState
        var position = positionState
        var written = 0
        let scale = Float(factor)
        let capacity = ring.count
        for s in samples {
            acc += Float(s)
            accN += 1
            if accN == factor {
                ring[position] = acc / scale
                position += 1
                if position == capacity { position = 0 }
                written += 1
                acc = 0
                accN = 0
            }
        }
        accState = acc
        accNState = accN
        positionState = position
        countState += Int64(written)
    }

    /// Forgets both histories (after an interruption).
    public func reset() {
        micCount = 0
        refCount = 0
        micPosition = 0
        refPosition = 0
        micAcc = 0
        micAccN = 0
        refAcc = 0
        refAccN = 0
        smoothRe.update(repeating: 0)
        smoothIm.update(repeating: 0)
    }

    /// Measures the delay over the most recent window, or returns `nil` when there is not yet a full window or the
    /// reference is silent. The caller judges `confidence`.
    public func estimate() -> Estimate? {
        let end = min(micCount, refCount)
        let start = end - Int64(window)
        guard start - Int64(maxLag) >= 0, start - Int64(maxLag) >= refCount - Int64(capacity),
            start >= micCount - Int64(capacity)
        else { return nil }
        let n = fft.size
        let window = window
        let maxLag = maxLag
        let span = window + maxLag
        let capacity = capacity
        let mic = mic, ref = ref, re = re, im = im, xr = xr, xi = xi, smoothRe = smoothRe, smoothIm = smoothIm
        // Ring positions of the first microphone and reference samples of the window (both counts are ≥ 0 here).
        let micStart = Int(start % Int64(capacity))
        let refStart = Int((start - Int64(maxLag)) % Int64(capacity))
        var refEnergy: Float = 0
        var micMean: Float = 0
        var refMean: Float = 0
        var p = micStart
        for _ in 0..<window {
            micMean += mic[p]
            p += 1
            if p == capacity { p = 0 }
        }
        p = refStart
        for _ in 0..<span {
            refMean += ref[p]
            p += 1
            if p == capacity { p = 0 }
        }
        micMean /= Float(window)
        refMean /= Float(span)
        p = micStart
        for t in 0..<window {
            re[t] = mic[p] - micMean
            p += 1
            if p == capacity { p = 0 }
        }
        for t in window..<n { re[t] = 0 }
        p = refStart
        for u in 0..<span {
            let v = ref[p] - refMean
            im[u] = v
            refEnergy += v * v
            p += 1
            if p == capacity { p = 0 }
        }
        for u in span..<n { im[u] = 0 }
        // Decimation by block averaging divides the level by roughly sqrt(factor) for wideband signals; the
        // threshold is on the envelope-rate signal, which is what is correlated.
        guard (refEnergy / Float(span)).squareRoot() > minimumReferenceRMS / Float(factor).squareRoot()
        else { return nil }
        fft.transform(re: re.baseAddress!, im: im.baseAddress!, inverse: false)
        // Split the two real spectra: A = mic, B = reference; cross spectrum conj(A)·B, phase-transformed.
        let smoothing = smoothing
        let half = n / 2
        for k in 0..<half + 1 {
            let (cr, ci) = fft.packedCrossSpectrum(re: re, im: im, bin: k)  // conj(A) * B
            // Averaged over successive windows: the echo path is stable, estimation noise is not.
            let sr = smoothing * smoothRe[k] + (1 - smoothing) * cr
            let si = smoothing * smoothIm[k] + (1 - smoothing) * ci
            smoothRe[k] = sr
            smoothIm[k] = si
            xr[k] = sr
            xi[k] = si
        }
        // Only bins 0 ... n/2 of the average are ever read (the upper half is mirrored into `xr`/`xi` below), so its
        // upper half is not kept (16 kB less memory touched per measurement).
        let meanMagnitude = Self.mirrorConjugates(re: xr, im: xi, magnitudes: re)
        fft.phaseTransformCorrelation(
            re: xr, im: xi, meanMagnitude: meanMagnitude / Float(n), floorFraction: 0.2, epsilon: 1e-12)
        // q[j] = Σ a[t] b[t + j]; lag l (mic trails reference by l) is j = maxLag - l.
        var bestLag = 0
        var best = -Float.infinity
        for l in 0...maxLag {
            let v = xr[maxLag - l]
            if v > best {
                best = v
                bestLag = l
            }
        }
        var sumSquares: Float = 0
        var count = 0
        for l in 0...maxLag where abs(l - bestLag) > 3 {
            let v = xr[maxLag - l]
            sumSquares += v * v
            count += 1
        }
        let floorRMS = (sumSquares / Float(max(count, 1))).squareRoot() + 1e-12
        var fractional = Double(bestLag)
        if bestLag > 0 && bestLag < maxLag {
            let y0 = Double(xr[maxLag - bestLag + 1])
            let y1 = Double(best)
            let y2 = Double(xr[maxLag - bestLag - 1])
            let denominator = y0 - 2 * y1 + y2
            if denominator < 0 { fractional += max(-0.5, min(0.5, 0.5 * (y0 - y2) / denominator)) }
        }
        return Estimate(
            delaySamples: fractional * Double(factor), confidence: Double(best / floorRMS),
            atMicSample: end * Int64(factor))
    }

    /// GCC-PHAT correlation of the last ``segmentLength`` decimated microphone samples against the reference, one
    /// value per lag 0 ... `maxLag` (the microphone trailing by that many decimated samples) written to `out`
    /// (`maxLag + 1` long). No smoothing across calls: ``DriftSearch`` lines the segments up itself. Returns the
    /// decimated microphone count at the segment's end, or `nil` when the history is short or the reference silent.
    func segmentCorrelation(into out: UnsafeMutableBufferPointer<Float>) -> Int64? {
        precondition(out.count == maxLag + 1, "one value per lag")
        let end = min(micCount, refCount)
        let length = segmentLength
        let start = end - Int64(length)
        guard start - Int64(maxLag) >= 0, start - Int64(maxLag) >= refCount - Int64(capacity),
            start >= micCount - Int64(capacity)
        else { return nil }
        let n = segmentFFT.size
        let maxLag = maxLag
        let span = length + maxLag
        let capacity = capacity
        let mic = mic, ref = ref, re = re, im = im, xr = xr, xi = xi
        var p = Int(start % Int64(capacity))
        var micMean: Float = 0
        for t in 0..<length {
            re[t] = mic[p]
            micMean += mic[p]
            p += 1
            if p == capacity { p = 0 }
        }
        micMean /= Float(length)
        for t in 0..<length { re[t] -= micMean }
        for t in length..<n { re[t] = 0 }
        p = Int((start - Int64(maxLag)) % Int64(capacity))
        var refMean: Float = 0
        for u in 0..<span {
            im[u] = ref[p]
            refMean += ref[p]
            p += 1
            if p == capacity { p = 0 }
        }
        refMean /= Float(span)
        // The reference must be active in the part that lines up with the segment for some lag: its last
        // `length` samples plus the lag range, i.e. all of the span.
        var refEnergy: Float = 0
        for u in 0..<span {
            let v = im[u] - refMean
            im[u] = v
            refEnergy += v * v
        }
        for u in span..<n { im[u] = 0 }
        guard (refEnergy / Float(span)).squareRoot() > minimumReferenceRMS / Float(factor).squareRoot()
        else { return nil }
        segmentFFT.transform(re: re.baseAddress!, im: im.baseAddress!, inverse: false)
        for k in 0..<n / 2 + 1 {
            let (cr, ci) = segmentFFT.packedCrossSpectrum(re: re, im: im, bin: k)
            xr[k] = cr
            xi[k] = ci
        }
        let meanMagnitude = Self.mirrorConjugates(re: xr, im: xi, magnitudes: re, count: n)
        segmentFFT.phaseTransformCorrelation(
            re: xr, im: xi, meanMagnitude: meanMagnitude / Float(n), floorFraction: 0.2, epsilon: 1e-12)
        for l in 0...maxLag { out[l] = xr[maxLag - l] }
        return end
    }

    /// The cross spectrum of two real signals is conjugate-symmetric: bin n − k is bin k conjugated (the packed split
    /// there only swaps the operands of its sums and the signs of its differences, so computing it gives the same
    /// values). Fills bins `n/2 + 1 ..< n` of `re`/`im` from `1 ..< n/2` instead of computing them, and returns the sum
    /// of all `n` magnitudes, added in bin order as before (half the square roots). `magnitudes` is scratch of `n`.
    private static func mirrorConjugates(
        re: UnsafeMutableBufferPointer<Float>, im: UnsafeMutableBufferPointer<Float>,
        magnitudes: UnsafeMutableBufferPointer<Float>, count n: Int? = nil
    ) -> Float {
        let n = n ?? re.count
        let half = n / 2
        for k in 0..<half + 1 { magnitudes[k] = (re[k] * re[k] + im[k] * im[k]).squareRoot() }
        for k in half + 1..<n {
            re[k] = re[n - k]
            im[k] = -im[n - k]
        }
        var sum: Float = 0
        for k in 0..<half + 1 { sum += magnitudes[k] }
        for k in half + 1..<n { sum += magnitudes[n - k] }
        return sum
    }
}
