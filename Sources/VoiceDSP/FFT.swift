import Foundation

/// An in-place radix-2 complex FFT with precomputed twiddles and bit-reversal table, for the echo path's
/// delay estimator, the test-vector convolution and the listening-quality measure (VoiceLab). Package-internal: a
/// tool, not an API. Never allocates after `init`.
package final class FFT {
    package let size: Int
    private let log2Size: Int
    // Tables owned by this object (freed in deinit), held as unsafe buffers in `let`s so the butterflies index them
    // with no exclusivity check. Twiddles are stored per stage, contiguous: the stage whose butterflies span `half`
    // has its `half` twiddles at `half ..< 2 * half` (the same values a strided walk of one cos/sin table would read,
    // so the transform is bit for bit what that walk computes), which lets the butterflies run eight at a time.
    private let cosTable: UnsafeMutableBufferPointer<Float>
    /// -sin (forward twiddles) and +sin (inverse), so the inner loop does not multiply by a sign.
    private let forwardSinTable: UnsafeMutableBufferPointer<Float>
    private let inverseSinTable: UnsafeMutableBufferPointer<Float>
    /// The bit-reversal permutation as the pairs it swaps (`i` < its reversal), so reordering tests no index.
    private let swapPairs: UnsafeMutableBufferPointer<(Int32, Int32)>

    package init(size: Int) {
        precondition(size >= 2 && size & (size - 1) == 0, "FFT size must be a power of two")
        self.size = size
        log2Size = size.trailingZeroBitCount
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
        var pairs: [(Int32, Int32)] = []
        for i in 0..<size {
            var r = 0
            var v = i
            for _ in 0..<log2Size {
                r = (r << 1) | (v & 1)
                v >>= 1
            }
            if r > i { pairs.append((Int32(i), Int32(r))) }
        }
        swapPairs = .allocate(capacity: pairs.count)
        _ = swapPairs.initialize(from: pairs)
    }

    deinit {
        cosTable.deallocate()
        forwardSinTable.deallocate()
        inverseSinTable.deallocate()
        swapPairs.deallocate()
    }

    /// Transforms `re`/`im` (each `size` long) in place. `inverse` uses the conjugate twiddles and scales by 1/size.
    package func transform(re: UnsafeMutablePointer<Float>, im: UnsafeMutablePointer<Float>, inverse: Bool) {
        let n = size
        for (a, b) in swapPairs {
            let i = Int(a), j = Int(b)
            swap(&re[i], &re[j])
            swap(&im[i], &im[j])
        }
        let cosT = cosTable.baseAddress!
        let sinT = (inverse ? inverseSinTable : forwardSinTable).baseAddress!
        var half = 1
        // The first stage (pairs of neighbours), one butterfly at a time.
        if n >= 2 {
            let wr = cosT[1]
            let wi = sinT[1]
            var j = 0
            while j < n {
                let l = j + 1
                let tr = wr * re[l] - wi * im[l]
                let ti = wr * im[l] + wi * re[l]
                re[l] = re[j] - tr
                im[l] = im[j] - ti
                re[j] += tr
                im[j] += ti
                j &+= 2
            }
            half = 2
        }
        // Stages of two and four butterflies per group, a group at a time in SIMD lanes.
        if half == 2 && n >= 4 {
            butterflyGroups(SIMD2<Float>.self, re: re, im: im, half: 2, cos: cosT, sin: sinT)
            half = 4
        }
        if half == 4 && n >= 8 {
            butterflyGroups(SIMD4<Float>.self, re: re, im: im, half: 4, cos: cosT, sin: sinT)
            half = 8
        }
        // The rest eight butterflies at a time.
        while half < n {
            var start = 0
            while start < n {
                var k = 0
                while k < half {
                    butterflies(
                        SIMD8<Float>.self, re: re, im: im, at: start + k, half: half, twiddle: half + k, cos: cosT,
                        sin: sinT)
                    k &+= 8
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

    /// One stage whose groups are exactly one vector wide (`half` == `V.scalarCount`), a group at a time.
    @inline(__always)
    private func butterflyGroups<V: SIMD>(
        _: V.Type, re: UnsafeMutablePointer<Float>, im: UnsafeMutablePointer<Float>, half: Int,
        cos cosT: UnsafeMutablePointer<Float>, sin sinT: UnsafeMutablePointer<Float>
    ) where V.Scalar == Float {
        var j = 0
        while j < size {
            butterflies(V.self, re: re, im: im, at: j, half: half, twiddle: half, cos: cosT, sin: sinT)
            j &+= 2 * half
        }
    }

    /// `V.scalarCount` neighbouring butterflies (`j ..< j + count` with their partners `half` further) in SIMD lanes,
    /// their twiddles from table position `twiddle` on: the same products and sums per element as one at a time (no
    /// fused multiply-add, no reordering), so the result does not change.
    @inline(__always)
    private func butterflies<V: SIMD>(
        _: V.Type, re: UnsafeMutablePointer<Float>, im: UnsafeMutablePointer<Float>, at j: Int, half: Int,
        twiddle: Int, cos cosT: UnsafeMutablePointer<Float>, sin sinT: UnsafeMutablePointer<Float>
    ) where V.Scalar == Float {
        let l = j + half
        let wr = UnsafeRawPointer(cosT + twiddle).loadUnaligned(as: V.self)
        let wi = UnsafeRawPointer(sinT + twiddle).loadUnaligned(as: V.self)
        let rl = UnsafeRawPointer(re + l).loadUnaligned(as: V.self)
        let il = UnsafeRawPointer(im + l).loadUnaligned(as: V.self)
        let rj = UnsafeRawPointer(re + j).loadUnaligned(as: V.self)
        let ij = UnsafeRawPointer(im + j).loadUnaligned(as: V.self)
        let tr = wr * rl - wi * il
        let ti = wr * il + wi * rl
        UnsafeMutableRawPointer(re + l).storeBytes(of: rj - tr, as: V.self)
        UnsafeMutableRawPointer(im + l).storeBytes(of: ij - ti, as: V.self)
        UnsafeMutableRawPointer(re + j).storeBytes(of: rj + tr, as: V.self)
        UnsafeMutableRawPointer(im + j).storeBytes(of: ij + ti, as: V.self)
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
