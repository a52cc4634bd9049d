import CDSPKernels
import Foundation

/// An in-place radix-2 complex FFT with precomputed twiddles and bit-reversal swaps, for the echo canceller's
/// residual-echo suppressor (two transforms of 256 points per 5 ms frame and end), its delay and drift searches, the
/// test-vector convolution and the listening-quality measure (VoiceLab). The butterflies run in C
/// (`cdsp_fft_radix2`), which the compiler vectorises and which stays fast in debug builds, where the live-call
/// tests run the same real-time path (an earlier Swift SIMD version was three times slower there). Bit for bit the
/// scalar radix-2 walk it replaced. Package-internal: a tool, not an API. Never allocates after `init`.
package final class FFT {
    package let size: Int
    // Tables owned by this object (freed in deinit). Twiddles are stored per stage, contiguous: the stage whose
    // butterflies span `half` has its `half` twiddles at `half ..< 2 * half` — the values a strided walk of one
    // cos/sin table reads, so the butterflies run over contiguous memory.
    private let cosTable: UnsafeMutableBufferPointer<Float>
    /// -sin (forward twiddles) and +sin (inverse), so the inner loop does not multiply by a sign.
    private let forwardSinTable: UnsafeMutableBufferPointer<Float>
    private let inverseSinTable: UnsafeMutableBufferPointer<Float>
    /// The bit-reversal permutation as pairs (i, j), i < j, to exchange (a per-index compare mispredicts half the time).
    private let swaps: UnsafeMutableBufferPointer<Int32>
    private let swapCount: Int

    package init(size: Int) {
        precondition(size >= 2 && size & (size - 1) == 0, "FFT size must be a power of two")
        precondition(size <= 1 << 30, "FFT size must fit the C kernel's 32-bit indices")
        self.size = size
        cosTable = .allocate(capacity: size)
        forwardSinTable = .allocate(capacity: size)
        inverseSinTable = .allocate(capacity: size)
        cosTable.initialize(repeating: 0)
        forwardSinTable.initialize(repeating: 0)
        inverseSinTable.initialize(repeating: 0)
        var half = 1
        while half < size {
            let step = size / (half * 2)
            for k in 0..<half {
                let angle = 2 * Double.pi * Double(k * step) / Double(size)
                let s = Float(-sin(angle))
                cosTable[half + k] = Float(cos(angle))
                forwardSinTable[half + k] = s
                inverseSinTable[half + k] = -s
            }
            half *= 2
        }
        let log2Size = size.trailingZeroBitCount
        var pairs: [Int32] = []
        for i in 0..<size {
            var r = 0
            var v = i
            for _ in 0..<log2Size {
                r = (r << 1) | (v & 1)
                v >>= 1
            }
            if r > i { pairs += [Int32(i), Int32(r)] }
        }
        swapCount = pairs.count / 2
        swaps = .allocate(capacity: max(pairs.count, 2))
        swaps.initialize(repeating: 0)
        _ = swaps.update(fromContentsOf: pairs)
    }

    deinit {
        cosTable.deallocate()
        forwardSinTable.deallocate()
        inverseSinTable.deallocate()
        swaps.deallocate()
    }

    /// Transforms `re`/`im` (each `size` long) in place. `inverse` uses the conjugate twiddles and scales by 1/size.
    package func transform(re: UnsafeMutablePointer<Float>, im: UnsafeMutablePointer<Float>, inverse: Bool) {
        cdsp_fft_radix2(
            re, im, Int32(size), cosTable.baseAddress!, (inverse ? inverseSinTable : forwardSinTable).baseAddress!,
            swaps.baseAddress!, Int32(swapCount), inverse ? 1 / Float(size) : 0)
    }

    /// Linear convolution of two real signals through the FFT (for offline use: allocates).
    package static func convolve(_ x: [Float], _ h: [Float]) -> [Float] {
        guard !x.isEmpty, !h.isEmpty else { return [] }
        let outCount = x.count + h.count - 1
        // Overlap-add with blocks sized from the filter.
        var fftSize = 2
        while fftSize < 2 * h.count { fftSize *= 2 }
        fftSize = max(fftSize, 1024)
        let block = fftSize - h.count + 1
        let fft = FFT(size: fftSize)
        var hr = [Float](repeating: 0, count: fftSize)
        var hi = [Float](repeating: 0, count: fftSize)
        for i in 0..<h.count { hr[i] = h[i] }
        hr.withUnsafeMutableBufferPointer { r in
            hi.withUnsafeMutableBufferPointer { i in
                fft.transform(re: r.baseAddress!, im: i.baseAddress!, inverse: false)
            }
        }
        var out = [Float](repeating: 0, count: outCount)
        var xr = [Float](repeating: 0, count: fftSize)
        var xi = [Float](repeating: 0, count: fftSize)
        var start = 0
        while start < x.count {
            let end = min(start + block, x.count)
            for i in 0..<fftSize {
                xr[i] = i < end - start ? x[start + i] : 0
                xi[i] = 0
            }
            xr.withUnsafeMutableBufferPointer { r in
                xi.withUnsafeMutableBufferPointer { i in
                    fft.transform(re: r.baseAddress!, im: i.baseAddress!, inverse: false)
                    for k in 0..<fftSize {
                        let a = r[k], b = i[k]
                        r[k] = a * hr[k] - b * hi[k]
                        i[k] = a * hi[k] + b * hr[k]
                    }
                    fft.transform(re: r.baseAddress!, im: i.baseAddress!, inverse: true)
                }
            }
            for i in 0..<fftSize where start + i < outCount { out[start + i] += xr[i] }
            start = end
        }
        return out
    }
}

extension FFT {
    /// GCC-PHAT's weighting and the way back: every bin of the cross spectrum in `re`/`im` (the first `size`) is
    /// divided by its magnitude plus `floorFraction` × `meanMagnitude` (+ `epsilon`) — so every frequency weighs
    /// the same and the correlation peak is sharp, while near-empty bins are not blown up into noise — then the
    /// inverse transform leaves the generalized cross-correlation in `re`.
    func phaseTransformCorrelation(
        re: UnsafeMutableBufferPointer<Float>, im: UnsafeMutableBufferPointer<Float>, meanMagnitude: Float,
        floorFraction: Float, epsilon: Float
    ) {
        let floor = floorFraction * meanMagnitude + epsilon
        for k in 0..<size {
            let m = (re[k] * re[k] + im[k] * im[k]).squareRoot() + floor
            re[k] /= m
            im[k] /= m
        }
        transform(re: re.baseAddress!, im: im.baseAddress!, inverse: true)
    }

    /// conj(A[k])·B[k] for two real signals transformed together as one complex signal (`re` = a, `im` = b, one
    /// FFT for both): each one's bin k is recovered from bins k and size − k of the packed spectrum.
    @inline(__always)
    func packedCrossSpectrum(
        re: UnsafeMutableBufferPointer<Float>, im: UnsafeMutableBufferPointer<Float>, bin k: Int
    ) -> (re: Float, im: Float) {
        let j = (size - k) & (size - 1)
        let ar = 0.5 * (re[k] + re[j])
        let ai = 0.5 * (im[k] - im[j])
        let br = 0.5 * (im[k] + im[j])
        let bi = -0.5 * (re[k] - re[j])
        return (ar * br + ai * bi, ar * bi - ai * br)
    }
}
