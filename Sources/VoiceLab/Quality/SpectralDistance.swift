import Foundation
import VoiceDSP

/// How far what a listener hears is from a reference, as the project measures it without Python: the log-spectral
/// distance (dB) on mel bands of 20 ms frames every 10 ms, as a root mean square over the reference's active
/// speech. The square weighs a few badly damaged frames (a concealed syllable, a smeared splice) above many
/// slightly different ones, as a listener (and PESQ's L2/L6 aggregation) does; a plain mean hides them, because
/// a jitter buffer's output is bit-identical to the ideal receiver's wherever both decoded the same packet.
///
/// Why this measure: a jitter buffer shifts its output in time (a playout delay that moves in 10 ms ticks,
/// concealment, time-stretching), so sample-by-sample measures (SNR) score a good buffer as noise. Bands in dB
/// compare what is heard — a concealed frame, a smeared splice, a dropped syllable — and the alignment follows
/// the moving delay: a global lag first (frame-energy correlation), then the lag of each 200 ms block within
/// ±300 ms of the previous block's, then each frame within ±10 ms of its block's lag, at the best of four
/// sub-frame phases. Scoring a buffer's output against ``IdealReceiver``'s on the same packets says what the
/// buffer loses beyond what the network took; against the input it is an absolute figure.
public struct SpectralDistance: Sendable, Hashable {
    /// Root mean square over the reference's active frames of each frame's RMS band difference (dB). 0:
    /// identical spectra.
    public var decibels: Double
    /// Active reference frames compared.
    public var frames: Int
    /// Median lag (ms) of the degraded signal behind the reference.
    public var lagMilliseconds: Double

    static let bandCount = 24
    /// Frames whose energy is this far below the reference's loudest frame are silence and not scored.
    static let activityRangeDecibels: Float = 40
    /// Band levels are floored this far below the reference's loudest band, so silence compares as equal.
    static let floorRangeDecibels: Float = 65
    static let framesPerBlock = 20
    static let blockSearchFrames = 30
    static let frameSearchFrames = 1

    /// Measures `degraded` against `reference`, both mono PCM at `sampleRate`. `degraded` may trail the reference
    /// by up to `maximumLagMilliseconds` (and lead it by up to 50 ms).
    public static func measure(
        reference: [Int16], degraded: [Int16], sampleRate: Int, maximumLagMilliseconds: Double = 1_000
    ) -> SpectralDistance {
        let analysis = Analysis(sampleRate: sampleRate)
        let ref = analysis.features(reference, offset: 0)
        guard ref.frames > 0 else { return SpectralDistance(decibels: 0, frames: 0, lagMilliseconds: 0) }
        let loudest = ref.energy.max() ?? 0
        let floor = (ref.bands.max() ?? 0) - floorRangeDecibels
        let hop = analysis.hop
        let maxLag = Int(maximumLagMilliseconds / 10)
        var best: SpectralDistance?
        for phase in 0..<4 {
            let deg = analysis.features(degraded, offset: phase * hop / 4)
            let global = globalLag(ref.energy, deg.energy, range: -5...maxLag)
            let scored = score(ref, deg, floor: floor, active: loudest - activityRangeDecibels, globalLag: global)
            let lagMs = (Double(scored.medianLag * hop + phase * hop / 4)) * 1000 / Double(sampleRate)
            let candidate = SpectralDistance(decibels: scored.rms, frames: scored.frames, lagMilliseconds: lagMs)
            if best == nil || candidate.decibels < best!.decibels { best = candidate }
        }
        return best!
    }

    /// Mel-band levels (dB) of Hann-windowed 20 ms frames every 10 ms.
    struct Analysis {
        let hop: Int
        let window: [Float]
        let fft: FFT
        /// Bin range of each band.
        let bands: [Range<Int>]

        init(sampleRate: Int) {
            hop = sampleRate / 100
            let length = 2 * hop
            window = (0..<length).map { Float(0.5 - 0.5 * cos(2 * Double.pi * (Double($0) + 0.5) / Double(length))) }
            var size = 1
            while size < length { size <<= 1 }
            fft = FFT(size: size)
            func mel(_ f: Double) -> Double { 2595 * log10(1 + f / 700) }
            func hz(_ m: Double) -> Double { 700 * (pow(10, m / 2595) - 1) }
            let low = mel(100)
            let high = mel(min(7_800, 0.49 * Double(sampleRate)))
            let binHz = Double(sampleRate) / Double(size)
            var ranges: [Range<Int>] = []
            var start = max(1, Int((hz(low) / binHz).rounded()))
            for b in 1...SpectralDistance.bandCount {
                let end = max(
                    start + 1,
                    Int((hz(low + (high - low) * Double(b) / Double(SpectralDistance.bandCount)) / binHz).rounded()))
                ranges.append(start..<end)
                start = end
            }
            bands = ranges
        }

        struct Features {
            var frames: Int
            /// `frames × bandCount` levels (dB), row by row.
            var bands: [Float]
            /// Frame energy (dB).
            var energy: [Float]
        }

        func features(_ x: [Int16], offset: Int) -> Features {
            let length = window.count
            let count = x.count >= offset + length ? (x.count - offset - length) / hop + 1 : 0
            let size = fft.size
            var re = [Float](repeating: 0, count: size)
            var im = [Float](repeating: 0, count: size)
            var out = Features(
                frames: count, bands: [Float](repeating: 0, count: count * SpectralDistance.bandCount),
                energy: [Float](repeating: 0, count: count))
            for f in 0..<count {
                let start = offset + f * hop
                for i in 0..<size {
                    re[i] = i < length ? Float(x[start + i]) * window[i] / 32_768 : 0
                    im[i] = 0
                }
                re.withUnsafeMutableBufferPointer { r in
                    im.withUnsafeMutableBufferPointer { m in
                        fft.transform(re: r.baseAddress!, im: m.baseAddress!, inverse: false)
                    }
                }
                var total: Float = 0
                for (b, range) in bands.enumerated() {
                    var e: Float = 0
                    for k in range { e += re[k] * re[k] + im[k] * im[k] }
                    total += e
                    out.bands[f * SpectralDistance.bandCount + b] = 10 * log10(e / Float(range.count) + 1e-12)
                }
                out.energy[f] = 10 * log10(total + 1e-12)
            }
            return out
        }
    }

    /// The lag (frames) maximising the correlation of the two frame-energy envelopes.
    static func globalLag(_ r: [Float], _ d: [Float], range: ClosedRange<Int>) -> Int {
        let floorR = (r.max() ?? 0) - 60
        let floorD = (d.max() ?? 0) - 60
        let a = r.map { max($0, floorR) }
        let b = d.map { max($0, floorD) }
        let meanA = a.reduce(0, +) / Float(max(1, a.count))
        let meanB = b.reduce(0, +) / Float(max(1, b.count))
        var best = 0
        var bestScore = -Float.infinity
        for lag in range {
            var s: Float = 0
            var n = 0
            for i in 0..<a.count where i + lag >= 0 && i + lag < b.count {
                s += (a[i] - meanA) * (b[i + lag] - meanB)
                n += 1
            }
            guard n > a.count / 4 else { continue }
            let normalized = s / Float(n)
            if normalized > bestScore {
                bestScore = normalized
                best = lag
            }
        }
        return best
    }

    /// The RMS band difference (dB) of reference frame `i` against degraded frame `j` (silence past its end).
    static func frameDistance(_ ref: Analysis.Features, _ i: Int, _ deg: Analysis.Features, _ j: Int, floor: Float)
        -> Float
    {
        let n = bandCount
        var sum: Float = 0
        for b in 0..<n {
            let r = max(ref.bands[i * n + b], floor)
            let d = j >= 0 && j < deg.frames ? max(deg.bands[j * n + b], floor) : floor
            sum += (r - d) * (r - d)
        }
        return (sum / Float(n)).squareRoot()
    }

    static func score(
        _ ref: Analysis.Features, _ deg: Analysis.Features, floor: Float, active: Float, globalLag: Int
    ) -> (rms: Double, frames: Int, medianLag: Int) {
        var total = 0.0
        var frames = 0
        var lags: [Int] = []
        var previous = globalLag
        var blockStart = 0
        while blockStart < ref.frames {
            let blockEnd = min(ref.frames, blockStart + framesPerBlock)
            let activeFrames = (blockStart..<blockEnd).filter { ref.energy[$0] >= active }
            guard !activeFrames.isEmpty else {
                blockStart = blockEnd
                continue
            }
            var bestLag = previous
            var bestCost = Float.infinity
            for lag in (previous - blockSearchFrames)...(previous + blockSearchFrames) {
                var cost: Float = 0
                for i in activeFrames { cost += frameDistance(ref, i, deg, i + lag, floor: floor) }
                // Ties (and near-ties) stay at the previous lag: the delay moves only when the audio says so.
                cost += 0.02 * Float(abs(lag - previous)) * Float(activeFrames.count)
                if cost < bestCost {
                    bestCost = cost
                    bestLag = lag
                }
            }
            previous = bestLag
            for i in activeFrames {
                var d = Float.infinity
                for lag in (bestLag - frameSearchFrames)...(bestLag + frameSearchFrames) {
                    d = min(d, frameDistance(ref, i, deg, i + lag, floor: floor))
                }
                total += Double(d) * Double(d)
                frames += 1
                lags.append(bestLag)
            }
            blockStart = blockEnd
        }
        lags.sort()
        return (
            frames > 0 ? (total / Double(frames)).squareRoot() : 0, frames,
            lags.isEmpty ? globalLag : lags[lags.count / 2]
        )
    }
}
