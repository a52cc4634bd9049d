import Foundation
import Testing
@testable import VoiceDSP

/// The radix-2 transform the echo canceller's delay search and the suppressors run on. (An eight-lane SIMD version
/// was tried for issue 21: 10 % of the processing-on block in release, but three times slower in debug builds,
/// where the live-call tests run the same path — the real-time tests under load then concealed more than 5 %.)
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
            im.withUnsafeMutableBufferPointer { i in fft.transform(re: r.baseAddress!, im: i.baseAddress!, inverse: false) }
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
            im.withUnsafeMutableBufferPointer { i in fft.transform(re: r.baseAddress!, im: i.baseAddress!, inverse: false) }
        }
        let magnitudes = (0..<n).map { (re[$0] * re[$0] + im[$0] * im[$0]).squareRoot() }
        #expect(abs(magnitudes[5] - Float(n) / 2) < 1e-2)
        #expect(abs(magnitudes[n - 5] - Float(n) / 2) < 1e-2)
        #expect(magnitudes.enumerated().filter { $0.offset != 5 && $0.offset != n - 5 }.allSatisfy { $0.element < 1e-2 })
    }
}
