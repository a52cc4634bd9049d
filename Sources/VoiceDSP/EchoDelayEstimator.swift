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
    private var mic: [Float]
    private var ref: [Float]
    private(set) var micCount: Int64 = 0  // decimated samples written
    private(set) var refCount: Int64 = 0
    private var micAcc: Float = 0
    private var micAccN = 0
    private var refAcc: Float = 0
    private var refAccN = 0
    private let fft: FFT
    private var re: [Float]
    private var im: [Float]
    private var xr: [Float]
    private var xi: [Float]
    private var smoothRe: [Float]
    private var smoothIm: [Float]
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
        mic = [Float](repeating: 0, count: capacity)
        ref = [Float](repeating: 0, count: capacity)
        re = [Float](repeating: 0, count: size)
        im = [Float](repeating: 0, count: size)
        xr = [Float](repeating: 0, count: size)
        xi = [Float](repeating: 0, count: size)
        smoothRe = [Float](repeating: 0, count: size)
        smoothIm = [Float](repeating: 0, count: size)
    }

    /// Appends microphone samples (any count).
    public func addMicrophone(_ samples: UnsafeBufferPointer<Int16>) {
        for s in samples {
            micAcc += Float(s)
            micAccN += 1
            if micAccN == factor {
                mic[Int(micCount % Int64(capacity))] = micAcc / Float(factor)
                micCount += 1
                micAcc = 0
                micAccN = 0
            }
        }
    }

    /// Appends reference samples (any count), in the timeline the microphone is compared against.
    public func addReference(_ samples: UnsafeBufferPointer<Int16>) {
        for s in samples {
            refAcc += Float(s)
            refAccN += 1
            if refAccN == factor {
                ref[Int(refCount % Int64(capacity))] = refAcc / Float(factor)
                refCount += 1
                refAcc = 0
                refAccN = 0
            }
        }
    }

    /// Forgets both histories (after an interruption).
    public func reset() {
        micCount = 0
        refCount = 0
        micAcc = 0
        micAccN = 0
        refAcc = 0
        refAccN = 0
        for i in smoothRe.indices {
            smoothRe[i] = 0
            smoothIm[i] = 0
        }
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
        let cap = Int64(capacity)
        var refEnergy: Float = 0
        var micMean: Float = 0
        var refMean: Float = 0
        for t in 0..<window { micMean += mic[Int((start + Int64(t)) % cap)] }
        for u in 0..<(window + maxLag) { refMean += ref[Int((start - Int64(maxLag) + Int64(u)) % cap)] }
        micMean /= Float(window)
        refMean /= Float(window + maxLag)
        for i in 0..<n {
            re[i] = 0
            im[i] = 0
        }
        for t in 0..<window { re[t] = mic[Int((start + Int64(t)) % cap)] - micMean }
        for u in 0..<(window + maxLag) {
            let v = ref[Int((start - Int64(maxLag) + Int64(u)) % cap)] - refMean
            im[u] = v
            refEnergy += v * v
        }
        // Decimation by block averaging divides the level by roughly sqrt(factor) for wideband signals; the
        // threshold is on the envelope-rate signal, which is what is correlated.
        guard (refEnergy / Float(window + maxLag)).squareRoot() > minimumReferenceRMS / Float(factor).squareRoot()
        else { return nil }
        re.withUnsafeMutableBufferPointer { r in
            im.withUnsafeMutableBufferPointer { i in
                fft.transform(re: r.baseAddress!, im: i.baseAddress!, inverse: false)
            }
        }
        // Split the two real spectra: A = mic, B = reference; cross spectrum conj(A)·B, phase-transformed.
        var meanMagnitude: Float = 0
        for k in 0..<n {
            let j = (n - k) & (n - 1)
            let ar = 0.5 * (re[k] + re[j])
            let ai = 0.5 * (im[k] - im[j])
            let br = 0.5 * (im[k] + im[j])
            let bi = -0.5 * (re[k] - re[j])
            // conj(A) * B
            let cr = ar * br + ai * bi
            let ci = ar * bi - ai * br
            // Averaged over successive windows: the echo path is stable, estimation noise is not.
            let sr = smoothing * smoothRe[k] + (1 - smoothing) * cr
            let si = smoothing * smoothIm[k] + (1 - smoothing) * ci
            smoothRe[k] = sr
            smoothIm[k] = si
            xr[k] = sr
            xi[k] = si
            meanMagnitude += (sr * sr + si * si).squareRoot()
        }
        meanMagnitude /= Float(n)
        let floor = 0.2 * meanMagnitude + 1e-12
        for k in 0..<n {
            let m = (xr[k] * xr[k] + xi[k] * xi[k]).squareRoot() + floor
            xr[k] /= m
            xi[k] /= m
        }
        xr.withUnsafeMutableBufferPointer { r in
            xi.withUnsafeMutableBufferPointer { i in
                fft.transform(re: r.baseAddress!, im: i.baseAddress!, inverse: true)
            }
        }
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
}
