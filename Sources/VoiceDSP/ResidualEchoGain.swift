import Foundation

/// A residual-echo gain of our own after MDF and the preprocessor: where the output is still mostly echo the
/// filter did not remove, it is attenuated; where it holds more than that (a near-end talker), it passes.
///
/// Why: on long echo paths MDF converges slowly (a 200 ms filter still leaves the echo only ~25 dB down after
/// 20 s), and speexdsp's preprocessor hardly suppresses what is left, since it estimates the residual from MDF's
/// own leak estimate. Here the leak is measured directly: per MDF frame, the power of the output `e` against the
/// power of the filter's echo estimate `y = mic - e`. Over far-end single talk their ratio is the leak; in double
/// talk the near end raises it. The leak estimate `L` follows the ratio's lower envelope (it falls quickly, rises
/// 1 dB a second), so double talk barely moves it. The residual echo in a frame is then `β·L·Py`, and the gain is
/// `1 - residual/Pe`, floored — close to 1 while a near-end talker stands above the residual, the floor in single
/// talk. It decreases smoothly and recovers at once (a near-end onset is never held down).
///
/// Broadband on purpose: a per-band gain needs its own analysis windows and would add their latency. The gain of
/// a frame is applied one frame later, to the preprocessor's output of that frame (the preprocessor delays by one
/// frame), ramped across the frame. Only scalars: nothing is allocated.
struct ResidualEchoGain {
    /// The lowest gain (linear amplitude).
    let floor: Double
    /// Over-estimation of the residual: the leak is a lower envelope, the residual in a frame fluctuates above it.
    let overEstimation: Double
    /// Cap on the residual estimate relative to the echo estimate's power.
    static let maximumResidualRatio = 0.1
    /// Factor by which the leak may rise per frame (1 dB a second).
    private let riseFactor: Double
    private var smoothedEcho = 0.0
    private var smoothedOutput = 0.0
    /// Leak estimate: residual power over echo-estimate power in single talk. Starts at 1 (nothing cancelled yet).
    private(set) var leak = 1.0
    /// Gain computed for the last frame (to apply to the next preprocessor output), the one computed before it
    /// (matching the preprocessor's current output) and the one applied last.
    private var pending = 1.0
    private var previous = 1.0
    private var applied = 1.0

    init(floorDB: Double, overEstimation: Double = 16, framesPerSecond: Double) {
        floor = Foundation.pow(10, floorDB / 20)
        self.overEstimation = overEstimation
        riseFactor = Foundation.pow(10, 1.0 / 10 / framesPerSecond)
    }

    /// Measures one MDF frame (`mic` in, `output` out of the filter, before the preprocessor) and computes its gain.
    mutating func analyse(mic: UnsafeBufferPointer<Int16>, output: UnsafeBufferPointer<Int16>) {
        var echo = 0.0
        var out = 0.0
        for i in 0..<mic.count {
            let e = Double(output[i])
            let y = Double(mic[i]) - e
            echo += y * y
            out += e * e
        }
        let n = Double(mic.count)
        smoothedEcho = 0.6 * smoothedEcho + 0.4 * echo
        smoothedOutput = 0.6 * smoothedOutput + 0.4 * out
        // Only frames where the filter predicts a real echo (above ~-60 dBFS) say anything about the leak.
        if smoothedEcho > 1_000 * n {
            let ratio = smoothedOutput / smoothedEcho
            if ratio < leak {
                leak = 0.8 * leak + 0.2 * ratio
            } else {
                leak = min(leak * riseFactor, ratio, 1)
            }
        }
        // At most a tenth of the echo estimate: while MDF has cancelled little (converging, after a restart) the
        // gain must not act as a half-duplex switch on a near-end talker.
        let residual = min(overEstimation * leak, Self.maximumResidualRatio) * echo
        var target = out > 0 ? 1 - residual / out : 1
        target = max(floor, min(1, target))
        // Recover at once, attenuate smoothly.
        pending = target >= pending ? target : 0.5 * pending + 0.5 * target
    }

    /// Applies the gain of the frame before (aligned with the preprocessor's one-frame delay), ramped from the gain
    /// applied last, to a preprocessor output frame in place.
    mutating func apply(to frame: UnsafeMutableBufferPointer<Int16>) {
        let target = previous
        previous = pending
        let start = applied
        applied = target
        if start == 1 && target == 1 { return }
        let step = (target - start) / Double(frame.count)
        var g = start
        for i in 0..<frame.count {
            g += step
            frame[i] = Int16(clamping: Int((Double(frame[i]) * g).rounded()))
        }
    }

    mutating func reset() {
        smoothedEcho = 0
        smoothedOutput = 0
        leak = 1
        pending = 1
        previous = 1
        applied = 1
    }
}
