/// Finds where a known echo path has moved to after the bulk delay jumped (a device latency change): a GCC-PHAT
/// between the microphone and the reference *filtered by the adapted echo path*, at the full sampling rate.
///
/// A plain reference/microphone correlation has a peak for the direct path and for every strong reflection, and a
/// coarse one hops between them (an error of several milliseconds, useless for keeping the adapted filter). Filtered
/// through the adapted impulse response h, the reference is the predicted echo itself: `mic(t) ≈ (h ⊛ x)(t − D)` has
/// one sharp PHAT peak at the new offset D, to the sample. The ``EchoCanceller`` then shifts the reference by the
/// jump and keeps its converged filter, instead of restarting it — which is what makes re-convergence fast.
///
/// One search costs two forward and one inverse FFT of `fftSize` (16384 at 16 kHz, 500 ms, 100 ms tail); it runs
/// only when the echo return collapses. Storage is allocated in `init`; nothing per call.
final class DelayJumpSearch {
    /// Microphone samples correlated (the most recent, all after the jump).
    let window: Int
    /// Largest offset searched (samples).
    let maxDelay: Int
    /// Filter taps.
    let taps: Int
    let fft: FFT
    /// Reference samples needed: offsets 0 ... maxDelay plus the filter's reach.
    var referenceLength: Int { window + maxDelay + taps - 1 }
    /// The caller fills `window` microphone samples here (oldest first)...
    let mic: UnsafeMutableBufferPointer<Float>
    /// ...and `referenceLength` reference samples here, the last one being the reference sample at the same time
    /// as the last microphone sample with no offset.
    let reference: UnsafeMutableBufferPointer<Float>
    private let re: UnsafeMutableBufferPointer<Float>
    private let im: UnsafeMutableBufferPointer<Float>
    private let hr: UnsafeMutableBufferPointer<Float>
    private let hi: UnsafeMutableBufferPointer<Float>

    /// Result of one search.
    struct Result: Equatable {
        /// Offset (samples) at which the reference, filtered by the echo path, best matches the microphone.
        var delay: Int
        /// Peak height over the correlation floor's RMS.
        var confidence: Float
    }

    init(window: Int, maxDelay: Int, taps: Int) {
        self.window = window
        self.maxDelay = maxDelay
        self.taps = taps
        var size = 2
        while size < window + maxDelay + 2 * taps { size *= 2 }
        fft = FFT(size: size)
        func zeroed(_ count: Int) -> UnsafeMutableBufferPointer<Float> {
            let b = UnsafeMutableBufferPointer<Float>.allocate(capacity: count)
            b.initialize(repeating: 0)
            return b
        }
        mic = zeroed(window)
        reference = zeroed(window + maxDelay + taps - 1)
        re = zeroed(size)
        im = zeroed(size)
        hr = zeroed(size)
        hi = zeroed(size)
    }

    deinit {
        for b in [mic, reference, re, im, hr, hi] { b.deallocate() }
    }

    /// Correlates ``mic`` against ``reference`` filtered by `impulseResponse` (tap i: the weight of the reference
    /// sample i samples earlier). `nil` when the reference is silent.
    func search(impulseResponse: UnsafeBufferPointer<Int32>) -> Result? {
        precondition(impulseResponse.count == taps, "one value per tap")
        let n = fft.size
        let re = re, im = im, hr = hr, hi = hi, mic = mic, reference = reference
        let length = referenceLength
        var energy: Float = 0
        for u in 0..<length { energy += reference[u] * reference[u] }
        guard energy > 0 else { return nil }
        // a = microphone window (real part), b = reference span (imaginary part), transformed together.
        for t in 0..<window { re[t] = mic[t] }
        for t in window..<n { re[t] = 0 }
        for u in 0..<length { im[u] = reference[u] }
        for u in length..<n { im[u] = 0 }
        fft.transform(re: re.baseAddress!, im: im.baseAddress!, inverse: false)
        var scale: Float = 0
        for i in 0..<taps { scale = max(scale, abs(Float(impulseResponse[i]))) }
        guard scale > 0 else { return nil }
        for i in 0..<taps { hr[i] = Float(impulseResponse[i]) / scale }
        for i in taps..<n { hr[i] = 0 }
        for i in 0..<n { hi[i] = 0 }
        fft.transform(re: hr.baseAddress!, im: hi.baseAddress!, inverse: false)
        // Cross spectrum conj(A)·B·H, phase-transformed (with a small floor so empty bins stay quiet).
        var meanMagnitude: Float = 0
        for k in 0..<n {
            let (cr0, ci0) = fft.packedCrossSpectrum(re: re, im: im, bin: k)
            let cr = cr0 * hr[k] - ci0 * hi[k]
            let ci = cr0 * hi[k] + ci0 * hr[k]
            // Stored apart from re/im: bin j still needs them.
            hr[k] = cr
            hi[k] = ci
            meanMagnitude += (cr * cr + ci * ci).squareRoot()
        }
        fft.phaseTransformCorrelation(
            re: hr, im: hi, meanMagnitude: meanMagnitude / Float(n), floorFraction: 0.1, epsilon: 1e-20)
        // c[j] = Σ a[t]·q[t + j]; q[k] is the filtered reference at span index k (valid from taps − 1 on). Offset D
        // lines microphone sample t up with span index t + maxDelay + taps − 1 − D.
        let base = maxDelay + taps - 1
        var best: Float = -.infinity
        var bestDelay = 0
        for d in 0...maxDelay where hr[base - d] > best {
            best = hr[base - d]
            bestDelay = d
        }
        var sumSquares: Float = 0
        var count = 0
        for d in 0...maxDelay where abs(d - bestDelay) > 8 {
            let v = hr[base - d]
            sumSquares += v * v
            count += 1
        }
        let floorRMS = (sumSquares / Float(max(count, 1))).squareRoot() + 1e-20
        return Result(delay: bestDelay, confidence: best / floorRMS)
    }
}
