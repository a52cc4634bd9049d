import Foundation
import Testing
@testable import VoiceDSP

@Suite("FFT")
struct FFTTests {
    /// The radix-2 transform as it was written before its butterflies ran eight at a time (one strided cos/sin table,
    /// one butterfly per iteration): the reference the vectorised transform must match bit for bit, so the echo
    /// canceller's delay estimates and the suppressor's output do not move.
    private func stridedReference(re: inout [Float], im: inout [Float], inverse: Bool) {
        let n = re.count
        let bits = n.trailingZeroBitCount
        var cosT = [Float](repeating: 0, count: n / 2)
        var sinT = [Float](repeating: 0, count: n / 2)
        for k in 0..<n / 2 {
            let angle = 2 * Double.pi * Double(k) / Double(n)
            let s = Float(-sin(angle))
            cosT[k] = Float(cos(angle))
            sinT[k] = inverse ? -s : s
        }
        for i in 0..<n {
            var r = 0
            var v = i
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
                for k in 0..<half {
                    let j = start + k, l = j + half
                    let wr = cosT[k * step], wi = sinT[k * step]
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
    }

    @Test(arguments: [2, 4, 8, 16, 32, 64, 256, 1024, 8192])
    func matchesTheStridedTransformBitForBit(size: Int) {
        var random = SystemRandomNumberGenerator()
        let fft = FFT(size: size)
        for inverse in [false, true] {
            let re0 = (0..<size).map { _ in Float.random(in: -32768...32767, using: &random) }
            let im0 = (0..<size).map { _ in Float.random(in: -32768...32767, using: &random) }
            var re = re0, im = im0
            re.withUnsafeMutableBufferPointer { r in
                im.withUnsafeMutableBufferPointer { i in fft.transform(re: r.baseAddress!, im: i.baseAddress!, inverse: inverse) }
            }
            var expectedRe = re0, expectedIm = im0
            stridedReference(re: &expectedRe, im: &expectedIm, inverse: inverse)
            #expect(re.map(\.bitPattern) == expectedRe.map(\.bitPattern), "re, size \(size), inverse \(inverse)")
            #expect(im.map(\.bitPattern) == expectedIm.map(\.bitPattern), "im, size \(size), inverse \(inverse)")
        }
    }

    @Test func aToneLandsInItsBin() {
        let n = 256
        let fft = FFT(size: n)
        var re = (0..<n).map { Float(cos(2 * Double.pi * 5 * Double($0) / Double(n))) }
        var im = [Float](repeating: 0, count: n)
        re.withUnsafeMutableBufferPointer { r in
            im.withUnsafeMutableBufferPointer { i in fft.transform(re: r.baseAddress!, im: i.baseAddress!, inverse: false) }
        }
        let magnitudes = (0..<n).map { (re[$0] * re[$0] + im[$0] * im[$0]).squareRoot() }
        #expect(abs(magnitudes[5] - Float(n) / 2) < 1e-2)
        #expect(abs(magnitudes[n - 5] - Float(n) / 2) < 1e-2)
        #expect(magnitudes.enumerated().filter { $0.offset != 5 && $0.offset != n - 5 }.allSatisfy { $0.element < 1e-2 })
    }
}
