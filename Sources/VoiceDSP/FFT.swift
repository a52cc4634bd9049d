import Foundation

/// An in-place radix-2 complex FFT with precomputed twiddles and bit-reversal table, for the echo path's
/// delay estimator, the test-vector convolution and the listening-quality measure (VoiceLab). Package-internal: a
/// tool, not an API. Never allocates after `init`.
package final class FFT {
    package let size: Int
    private let log2Size: Int
    // Tables owned by this object (freed in deinit), held as unsafe buffers in `let`s so the butterflies index them
    // with no exclusivity check.
    private let cosTable: UnsafeMutableBufferPointer<Float>
    /// -sin (forward twiddles) and +sin (inverse), so the inner loop does not multiply by a sign.
    private let forwardSinTable: UnsafeMutableBufferPointer<Float>
    private let inverseSinTable: UnsafeMutableBufferPointer<Float>
    private let bitReversed: UnsafeMutableBufferPointer<Int32>

    package init(size: Int) {
        precondition(size >= 2 && size & (size - 1) == 0, "FFT size must be a power of two")
        self.size = size
        log2Size = size.trailingZeroBitCount
        cosTable = .allocate(capacity: size / 2)
        forwardSinTable = .allocate(capacity: size / 2)
        inverseSinTable = .allocate(capacity: size / 2)
        for k in 0..<size / 2 {
            let angle = 2 * Double.pi * Double(k) / Double(size)
            let s = Float(-sin(angle))
            cosTable.initializeElement(at: k, to: Float(cos(angle)))
            forwardSinTable.initializeElement(at: k, to: s)
            inverseSinTable.initializeElement(at: k, to: -s)
        }
        bitReversed = .allocate(capacity: size)
        for i in 0..<size {
            var r = 0
            var v = i
            for _ in 0..<log2Size {
                r = (r << 1) | (v & 1)
                v >>= 1
            }
            bitReversed.initializeElement(at: i, to: Int32(r))
        }
    }

    deinit {
        cosTable.deallocate()
        forwardSinTable.deallocate()
        inverseSinTable.deallocate()
        bitReversed.deallocate()
    }

    /// Transforms `re`/`im` (each `size` long) in place. `inverse` uses the conjugate twiddles and scales by 1/size.
    package func transform(re: UnsafeMutablePointer<Float>, im: UnsafeMutablePointer<Float>, inverse: Bool) {
        let n = size
        let rev = bitReversed
        for i in 0..<n {
            let j = Int(rev[i])
            if j > i {
                swap(&re[i], &re[j])
                swap(&im[i], &im[j])
            }
        }
        let cosT = cosTable
        let sinT = inverse ? inverseSinTable : forwardSinTable
        var half = 1
        while half < n {
            let step = n / (half * 2)
            var start = 0
            while start < n {
                var k = 0
                var j = start
                let stop = start + half
                while j < stop {
                    let wr = cosT[k]
                    let wi = sinT[k]
                    let l = j + half
                    let tr = wr * re[l] - wi * im[l]
                    let ti = wr * im[l] + wi * re[l]
                    re[l] = re[j] - tr
                    im[l] = im[j] - ti
                    re[j] += tr
                    im[j] += ti
                    k &+= step
                    j &+= 1
                }
                start += half * 2
            }
            half *= 2
        }
        if inverse {
            let scale = 1 / Float(n)
            for i in 0..<n {
                re[i] *= scale
                im[i] *= scale
            }
        }
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
            hi.withUnsafeMutableBufferPointer { i in fft.transform(re: r.baseAddress!, im: i.baseAddress!, inverse: false) }
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
