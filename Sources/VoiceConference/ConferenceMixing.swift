#if canImport(Glibc)
import Glibc
#endif

/// The arithmetic of one mixing tick, apart from the room's bookkeeping so it can be tested on its own:
/// saturation-free summing into a 32-bit accumulator, mix-minus, and a limiter that brings the sum back into
/// 16 bits without clipping.
///
/// Why a wide accumulator: N talkers of up to ±32768 each sum to up to N·32768, which 16 bits cannot hold;
/// clipping the sum (what a naive `Int16` add with saturation does) distorts exactly when several people talk
/// at once. The sum is kept in `Int32` and one limiter per output scales it down smoothly instead.
public enum ConferenceMixing {
    /// Adds `source` into `accumulator` (same length).
    @inlinable
    public static func accumulate(
        _ source: UnsafeBufferPointer<Int16>, into accumulator: UnsafeMutableBufferPointer<Int32>
    ) {
        precondition(source.count == accumulator.count, "accumulate: lengths differ")
        for i in 0..<source.count { accumulator[i] &+= Int32(source[i]) }
    }

    /// Mean square of `samples` (16-bit units²): the level the talker detection compares.
    @inlinable
    public static func meanSquare(_ samples: UnsafeBufferPointer<Int16>) -> Double {
        guard !samples.isEmpty else { return 0 }
        var sum: Int64 = 0
        for s in samples { sum &+= Int64(s) * Int64(s) }
        return Double(sum) / Double(samples.count)
    }

    /// dBFS of a mean square (full scale 32768; −120 for silence).
    public static func dBFS(meanSquare: Double) -> Double {
        meanSquare <= 0 ? -120 : 10 * log10(meanSquare / (32_768.0 * 32_768.0))
    }

    /// The mean square of a level in dBFS.
    public static func meanSquare(dBFS: Double) -> Double { 32_768.0 * 32_768.0 * pow(10, dBFS / 10) }
}

/// A peak limiter for one output of the mixer (the shared mix, or one talker's mix-minus).
///
/// Per block: the peak of the (wide) input decides a gain `threshold / peak`. A lower gain than the current one
/// is applied at once, to the whole block (no look-ahead, no overshoot: every sample of the block is at most
/// `threshold`); a higher one is approached smoothly (release), interpolated sample by sample from the previous
/// gain, which is lower, so the block still cannot exceed `threshold`. Output is therefore always inside
/// ±`threshold`; ``clippedSamples`` counts samples that would still have needed clamping (a bug if ever non-zero).
public struct ConferenceLimiter: Sendable {
    /// The largest output magnitude (default −0.5 dBFS).
    public let threshold: Int32
    /// Fraction of the distance to the target gain recovered per block when the level falls (release).
    public let releasePerBlock: Double
    /// The gain applied at the end of the last block (1: transparent).
    public private(set) var gain: Double = 1
    /// Blocks in which the gain was below 1 (the limiter was working).
    public private(set) var limitedBlocks = 0
    /// Samples that had to be clamped after gain: must stay 0.
    public private(set) var clippedSamples = 0

    public init(threshold: Int16 = 30_934, releasePerBlock: Double = 0.1) {
        precondition(threshold > 0, "limiter threshold must be positive")
        self.threshold = Int32(threshold)
        self.releasePerBlock = releasePerBlock
    }

    /// Writes `accumulator − minus` (or the accumulator alone), limited, into `output`. No allocation.
    public mutating func process(
        _ accumulator: UnsafeBufferPointer<Int32>, minus: UnsafeBufferPointer<Int16>?,
        into output: UnsafeMutableBufferPointer<Int16>
    ) {
        let n = accumulator.count
        precondition(output.count == n && (minus == nil || minus!.count == n), "limiter: lengths differ")
        var peak: Int32 = 0
        if let minus {
            for i in 0..<n { peak = max(peak, abs(accumulator[i] &- Int32(minus[i]))) }
        } else {
            for i in 0..<n { peak = max(peak, abs(accumulator[i])) }
        }
        let target = peak > threshold ? Double(threshold) / Double(peak) : 1
        let start: Double
        let end: Double
        if target <= gain {
            start = target
            end = target
        } else {
            start = gain
            end = min(target, gain + (target - gain) * releasePerBlock + 1e-6)
        }
        if end < 1 || start < 1 { limitedBlocks += 1 }
        // `Int32(_:)` of a Double truncates towards zero (as the C loop's cast), without the libm `trunc` call that
        // `.rounded(.towardZero)` made per sample.
        let hi = threshold
        let unity = start == 1 && end == 1
        let step = (end - start) / Double(n)
        var g = start
        var clipped = 0
        for i in 0..<n {
            let x = minus.map { accumulator[i] &- Int32($0[i]) } ?? accumulator[i]
            output[i] = Self.clamp(unity ? x : Int32(Double(x) * g), hi, &clipped)
            g += step
        }
        clippedSamples += clipped
        gain = end
    }

    /// `y` inside ±`hi` as 16 bits, counting a clamp in `clipped`.
    @inline(__always)
    private static func clamp(_ y: Int32, _ hi: Int32, _ clipped: inout Int) -> Int16 {
        guard y > hi || y < -hi else { return Int16(truncatingIfNeeded: y) }
        clipped += 1
        return Int16(truncatingIfNeeded: min(max(y, -hi), hi))
    }
}
