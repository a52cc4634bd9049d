import Foundation
import Testing
@testable import VoiceDSP

/// The radix-2 transform the echo canceller's delay search and the suppressors run on. (The butterflies run in C,
/// `cdsp_fft_radix2`, vectorised by the compiler: an eight-lane Swift SIMD version costs about 10 % of the
/// processing-on block in release but is three times slower in debug builds, where the live-call tests run the
/// same path and then conceal more than 5 % under load.)
@Suite("FFT")
struct FFTTests {
    /// Against the DFT computed directly in Double.
    @Test(arguments: [8, 64, 256])
    func matchesTheDirectTransform(size n: Int) {
        var random = SystemRandomNumberGenerator()
        let input = (0..<n).map { _ in Double.random(in: -1...1, using: &random) }
        var re = input.map(Float.init)
        var im = [Float](repeating: 0, count: n)
        let fft = FFT(size: n)
        re.withUnsafeMutableBufferPointer { r in
            im.withUnsafeMutableBufferPointer { i in
                fft.transform(re: r.baseAddress!, im: i.baseAddress!, inverse: false)
            }
        }
        for k in 0..<n {
            var sumRe = 0.0, sumIm = 0.0
            for (t, x) in input.enumerated() {
                let angle = -2 * Double.pi * Double(k * t) / Double(n)
                sumRe += x * cos(angle)
                sumIm += x * sin(angle)
            }
            #expect(abs(Double(re[k]) - sumRe) < 1e-3 * Double(n), "bin \(k) of \(n): re \(re[k]) vs \(sumRe)")
            #expect(abs(Double(im[k]) - sumIm) < 1e-3 * Double(n), "bin \(k) of \(n): im \(im[k]) vs \(sumIm)")
        }
    }

    @Test func aToneLandsInItsBin() {
        let n = 256
        let fft = FFT(size: n)
        var re = (0..<n).map { Float(cos(2 * Double.pi * 5 * Double($0) / Double(n))) }
        var im = [Float](repeating: 0, count: n)
        re.withUnsafeMutableBufferPointer { r in
            im.withUnsafeMutableBufferPointer { i in
                fft.transform(re: r.baseAddress!, im: i.baseAddress!, inverse: false)
            }
        }
        let magnitudes = (0..<n).map { (re[$0] * re[$0] + im[$0] * im[$0]).squareRoot() }
        #expect(abs(magnitudes[5] - Float(n) / 2) < 1e-2)
        #expect(abs(magnitudes[n - 5] - Float(n) / 2) < 1e-2)
        #expect(
            magnitudes.enumerated().filter { $0.offset != 5 && $0.offset != n - 5 }.allSatisfy { $0.element < 1e-2 })
    }

    /// Bit for bit the scalar strided radix-2 walk the transform was before its butterflies moved to C (kept here
    /// as the reference): the echo canceller's figures rest on it, so a reordering or a fused multiply-add that
    /// changes a rounding must fail here, forward and inverse, for the sizes the engine uses.
    @Test(arguments: [2, 4, 8, 256, 512, 8192])
    func bitForBitTheScalarWalk(size n: Int) {
        var generator = SystemRandomNumberGenerator()
        let fft = FFT(size: n)
        for inverse in [false, true] {
            for trial in 0..<4 {
                let re0 = (0..<n).map { _ in Float.random(in: -32768...32767, using: &generator) }
                let im0 =
                    trial % 2 == 0
                    ? [Float](repeating: 0, count: n) : re0.map { _ in Float.random(in: -1...1, using: &generator) }
                var re = re0, im = im0
                re.withUnsafeMutableBufferPointer { r in
                    im.withUnsafeMutableBufferPointer { i in
                        fft.transform(re: r.baseAddress!, im: i.baseAddress!, inverse: inverse)
                    }
                }
                let (refRe, refIm) = Self.scalarWalk(re0, im0, inverse: inverse)
                #expect(re.map(\.bitPattern) == refRe.map(\.bitPattern), "re, size \(n), inverse \(inverse)")
                #expect(im.map(\.bitPattern) == refIm.map(\.bitPattern), "im, size \(n), inverse \(inverse)")
            }
        }
    }

    /// The transform as it was (627b379): bit reversal by compare, one cos/sin table walked with a stride per stage.
    static func scalarWalk(_ re0: [Float], _ im0: [Float], inverse: Bool) -> ([Float], [Float]) {
        var re = re0, im = im0
        let n = re.count
        let bits = n.trailingZeroBitCount
        let cosT = (0..<n / 2).map { Float(cos(2 * Double.pi * Double($0) / Double(n))) }
        let sinT = (0..<n / 2).map { k -> Float in
            let s = Float(-sin(2 * Double.pi * Double(k) / Double(n)))
            return inverse ? -s : s
        }
        for i in 0..<n {
            var r = 0, v = i
            for _ in 0..<bits {
                r = (r << 1) | (v & 1)
                v >>= 1
            }
            if r > i {
                re.swapAt(i, r)
                im.swapAt(i, r)
            }
        }
        var half = 1
        while half < n {
            let step = n / (half * 2)
            for start in stride(from: 0, to: n, by: half * 2) {
                for (k, j) in (start..<start + half).enumerated() {
                    let wr = cosT[k * step], wi = sinT[k * step], l = j + half
                    let tr = wr * re[l] - wi * im[l]
                    let ti = wr * im[l] + wi * re[l]
                    re[l] = re[j] - tr
                    im[l] = im[j] - ti
                    re[j] += tr
                    im[j] += ti
                }
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
        return (re, im)
    }
}
