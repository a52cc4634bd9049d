import Foundation

/// Per-bin noise-suppression gain: a Wiener gain on the decision-directed a-priori SNR (Ephraim and Malah, 1984),
/// floored. It runs inside the ``ResidualEchoSuppressor``'s STFT, on the bins it has already cleaned of echo, with
/// the background estimate that stage tracks.
///
/// Why not speexdsp's denoiser: its gain floor is `sqrt((floor·N + E) / (1 + N + E))`, which falls towards 0 when the
/// noise estimate `N` is tiny, and it mixes floor and gain by a speech probability that is low in every weak bin of a
/// voice — on clean speech (jfk, silent far end) it cost 0.52 PESQ-WB at −15 dB (4.61 → 4.09). This gain is 1
/// wherever the a-priori SNR is high, whatever the absolute level, so clean speech passes, and the decision-directed
/// smoothing keeps the residual noise free of musical tones.
final class NoiseSuppressionGain {
    let bins: Int
    private let floorDB: Float
    /// This frame's floor: ``floorDB`` scaled down where the background is quiet (see ``beginFrame(noiseMeanSquare:)``).
    private var floor: Float = 1
    /// Background level (dBFS, from 300 Hz up) under which noise is left alone, and the span above it over which the
    /// depth reaches `floorDB`. Below -55 dBFS a background is inaudible at any sane playback level; "suppressing" it
    /// only changes its texture: on two quiet clean clips (backgrounds near -60 dBFS) the full depth cost 0.16 and
    /// 0.34 PESQ-WB. From 300 Hz up, where a rumble does not reach: a rumble under 100 Hz opening the depth
    /// cost speech at 5-10 dB SNR 0.2-0.3 PESQ-WB (the gain dips on the voice's lowest harmonics) for nothing heard.
    /// Broadband rather than per bin: per bin, the same rumble cost 0.5.
    ///
    /// Measured from ``depthFromHz`` (1 kHz) up, not from 300 Hz: brown noise (a steep slope, nearly all under
    /// 300 Hz) still stands loud at 300-1000 Hz, where it opened the full depth, and the Wiener gain then cut the
    /// voice's weak harmonics there for noise PESQ-WB hardly hears (the microphone itself scores 3.5-3.9 at 0 dB SNR):
    /// brown noise was a loss, -0.05 mean, worst clip -0.45 (`Benchmarks/scripts/noisy-speech.py`, five talkers,
    /// 0-20 dB SNR); from 1 kHz +0.02 mean, worst -0.07 (600 Hz: -0.00 / -0.12; 2 kHz +0.00 / -0.06 with half
    /// the gain on the clips that profit). White, pink and babble noise reach above 1 kHz and keep their depth.
    /// The threshold is -57 dBFS, not -55: measured from 1 kHz a pink background reads lower than from 300 Hz, and at
    /// -55 the linear noise vector (pink, -40 dBFS) kept only 28.4 dB of ERLE, 2.7 dB under its 31.1 — more than the
    /// 1 dB the vectors may regress. At -57: 30.9 dB, brown noise +0.01 mean, worst clip -0.19 (-0.45 from 300 Hz).
    static let quietBackgroundDBFS: Float = -57
    static let depthFromHz = 1000
    /// (10 dB: with 15 the noise vector, pink at -40 dBFS, reached only 29.2 dB of ERLE against 31.8.)
    static let depthSpanDB: Float = 10
    /// Weight of the previous frame's clean estimate in the a-priori SNR. At 200 frames a second (5 ms hops) 0.97
    /// is the time constant 0.98 gives at the usual 10 ms.
    private let priorWeight: Float = 0.97
    /// The background tracker is a minimum: it runs under the noise's mean by about this factor.
    private let noiseBias: Float = 1.6
    /// Bins under 300 Hz (the voice's fundamental) are attenuated at most 6 dB: a rumble there sits under the
    /// fundamental, and suppressing it to the floor took the fundamental with it (speech plus brown noise at 20 dB SNR:
    /// PESQ-WB 4.62 -> 4.38 with the full depth there).
    private let lowBins: Int
    static let lowFloor: Float = 0.5
    /// Previous frame's clean-speech power over the noise (the decision-directed term), per bin.
    private let previous: UnsafeMutableBufferPointer<Float>

    /// - Parameters:
    ///   - bins: spectrum bins (FFT size / 2 + 1).
    ///   - floorDB: the deepest attenuation (negative dB).
    ///   - lowBins: bins under 300 Hz, where the depth is limited to ``lowFloor``.
    init(bins: Int, floorDB: Double, lowBins: Int = 0) {
        self.bins = bins
        self.lowBins = lowBins
        self.floorDB = Float(floorDB)
        previous = .allocate(capacity: bins)
        previous.initialize(repeating: 0)
    }

    deinit { previous.deallocate() }

    /// Sets this frame's depth from the background's mean square from 300 Hz up (16-bit units²).
    func beginFrame(noiseMeanSquare: Float) {
        let level = 10 * Foundation.log10(max(noiseMeanSquare, 1e-3) / (32768 * 32768))
        let depth = max(0, min(1, (level - Self.quietBackgroundDBFS) / Self.depthSpanDB))
        floor = Foundation.pow(10, depth * floorDB / 20)
    }

    /// The gain for bin `k` of this frame, given its power and the background's power there. Call once per bin per
    /// frame, in order.
    @inline(__always)
    func gain(bin k: Int, power: Float, noise: Float) -> Float {
        let n = noiseBias * noise
        guard n > 0, floor < 1 else {
            previous[k] = 0
            return 1
        }
        let posterior = power / n
        let prior = priorWeight * previous[k] + (1 - priorWeight) * max(posterior - 1, 0)
        let g = max(k < lowBins ? max(floor, Self.lowFloor) : floor, prior / (1 + prior))
        previous[k] = g * g * posterior
        return g
    }

    func reset() { previous.update(repeating: 0) }
}
