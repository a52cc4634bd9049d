import Foundation

/// Per-band residual-echo suppression after MDF, in the manner of WebRTC AEC3's suppression gain: what the linear
/// filter leaves — its misadjustment while it converges, and the loudspeaker's nonlinear echo that no linear filter
/// models — is estimated per frequency bin from the far-end spectrum and suppressed bin by bin, so a near-end talker
/// in other bins passes.
///
/// Per frame (MDF's frame, a hop of a sqrt-Hann STFT over two frames; the filter output `e` and the aligned
/// reference `x` share one complex FFT):
/// 1. the far-end power `X²(k)` is held with a decay (the room's reverberation keeps the echo after the far end
///    stops) and smoothed over time, as is the output power `E²(k)`;
/// 2. the residual echo-path gain `G(k)` is learned as the lower envelope of `E²/X²` over frames where the far end
///    plays: it falls quickly towards what single talk shows, rises slowly (a near end raises the ratio, a moved
///    device raises it for good). It starts high (+30 dB), so the first frames of a call are suppressed while MDF converges;
/// 3. the residual echo is `max(β·G(k), β_c·C(k))·X²(k)`, `C(k)` the echo-path gain of the part of the output coherent
///    with the reference (AEC2's and AEC3's coherence test: a near talker is incoherent with the far end, so `C` does
///    not rise in double talk and follows at once what the filter misses while misadjusted, where `G` rises 2 dB a
///    second); the gain is `1 - residual/E²(k)`, floored — near 1 where the near end stands above the echo, the floor
///    where the bin holds only echo. Frames the echo of a clipped far end reaches are echo in every bin. Gains fall at
///    once and rise at most 6 dB a frame, so they do not pump on the echo's fluctuations; a near talker who starts
///    while the reference is silent (only the echo's decaying tail is left) gets the gain at once;
/// 4. comfort noise at the output's own background level (a minimum-statistics tracker, capped by the intercept of a
///    least-squares fit of the output on the far-end power, which residual echo does not raise) fills what the gain
///    removed, so suppressed frames are not dead silence. It is not added to the frame: it comes out separately in
///    ``comfortNoise`` (one frame later, the preprocessor's latency), for the ``EchoCanceller`` to add *after*
///    speexdsp's preprocessor, whose echo-state suppression otherwise removed it together with the echo (the
///    background sat 14-23 dB under the no-far-end background while the far end talked).
///
/// 5. optionally, noise suppression (``NoiseSuppressionGain``) on the result, from the same background tracker: the
///    one STFT serves both.
///
/// Latency: one frame (the STFT's hop). Everything is allocated in `init`: nothing per frame.
final class ResidualEchoSuppressor {
    let hop: Int
    private let size: Int
    private let bins: Int
    private let fft: FFT
    /// The lowest echo gain, or `nil` when echo is not suppressed (noise suppression alone).
    private let floor: Float?
    private let noiseGain: NoiseSuppressionGain?
    /// First bin at or above ``NoiseSuppressionGain/depthFromHz`` (the noise level that sets the suppression depth is
    /// measured from there up).
    private let audibleBin: Int
    /// Over-estimation of the residual (the envelope runs under the frame-to-frame fluctuation).
    private let overEstimation: Float
    /// Per-frame decay of the held far-end power (the echo's reverberation).
    private let reverbDecay: Float
    /// Per-frame rise of the echo-path gain's envelope.
    private let gainRise: Float
    /// Reference sample level taken for a clipped far end, and the frames after one that its echo may reach (30 ms:
    /// the alignment margin and the loudest part of the room's response). A loudspeaker driven into clipping leaves
    /// echo at 3.5-7 kHz that no per-bin estimate follows (the real device 0woD, TestVectors/aec/README.md).
    private static let clippedReference: Int16 = 32_000
    private let clippedEchoFrames: Int
    private var framesSinceClippedFar = Int.max / 2
    /// Per-frame rise of the noise tracker.
    private let noiseRise: Float
    private let window: UnsafeMutableBufferPointer<Float>
    private let outputHistory: UnsafeMutableBufferPointer<Float>
    private let referenceHistory: UnsafeMutableBufferPointer<Float>
    private let overlap: UnsafeMutableBufferPointer<Float>
    private let re: UnsafeMutableBufferPointer<Float>
    private let im: UnsafeMutableBufferPointer<Float>
    private let farHeld: UnsafeMutableBufferPointer<Float>
    /// Smoothed auto- and cross-spectra of the reference `X` and the output `E` per bin (`Sxx`, `See`, `Sxe`): their
    /// coherence says how much of the output is the far end's echo, whatever its level (see ``coherentResidual``).
    private let coherenceFar: UnsafeMutableBufferPointer<Float>
    private let coherenceOutput: UnsafeMutableBufferPointer<Float>
    private let coherenceCrossRe: UnsafeMutableBufferPointer<Float>
    private let coherenceCrossIm: UnsafeMutableBufferPointer<Float>
    private let farSmoothed: UnsafeMutableBufferPointer<Float>
    private let outputSmoothed: UnsafeMutableBufferPointer<Float>
    private let pathGain: UnsafeMutableBufferPointer<Float>
    private let noise: UnsafeMutableBufferPointer<Float>
    /// The background the comfort noise is played at: a minimum tracker like ``noise``, but starting from the first
    /// frame's power and, while echo is possible, never rising in a bin the echo dominates, its fast start included.
    /// ``noise`` starts 10 dB low and rises through the start, which noise suppression needs (clean speech at a call's
    /// start must not be taken for background); comfort noise at that level would drop the background at the start,
    /// and a tracker that rises on the echo would play comfort noise over the background while the echo lasts (real
    /// devices, TestVectors/aec/README.md section 6). Separate, so neither trades against the other.
    private let comfortLevel: UnsafeMutableBufferPointer<Float>
    private let gain: UnsafeMutableBufferPointer<Float>
    /// Exponentially weighted least-squares fit, per bin, of the smoothed output power on the bin's own smoothed far-end
    /// power `a` and the far end's broadband power `b`: `out ≈ g·a + h·b + n`, `g, h ≥ 0`. The intercept `n` is the
    /// part of the output that does not follow the far end: the background. The minimum tracker cannot tell the two
    /// apart during continuous echo (on the AEC-Challenge clip its minima were nonlinear residual, 19-43 dB over the
    /// true floor under 5 kHz); residual echo, linear or spread by the loudspeaker's nonlinearity across bins (the
    /// broadband term), follows the far end and goes into `g` and `h`. Running sums (Double: the powers span 100 dB),
    /// a few multiply-adds per bin and frame, nothing allocated. Sums per bin because a bin's outliers are left out:
    /// ``fitSumsPerBin`` values per bin: the weighted sums of 1, a, b, a², ab, b², y, ay, by, then the fit they give
    /// (solved once per update: valid 1 or 0, n, g, h), which both the next frame's outlier test and this frame's
    /// comfort level read.
    private let fitSums: UnsafeMutableBufferPointer<Double>
    private static let fitSumsPerBin = 13
    /// Per-frame forgetting of the fit: a window of ~4 s (challenge clip, worst band under 8 kHz over the echo file's
    /// floor: 1 s +25 dB, 1.5 s +14, 3 s +3.4, 4 s +1.8; the synthetic call's background alike, -4.9...-4.5 dB).
    private let fitForget: Double
    /// Frames of fit (0.25 s) before its intercept caps the comfort noise.
    private let fitMinimumWeight: Double
    /// A bin's frame whose output exceeds twice the fit's prediction is left out (a near talker the frame-level test
    /// missed): at 3x the challenge clip's 125-500 Hz band stood +25 dB over the floor (near speech counted as
    /// background), at 2x +0...+3. The sums still forget, so a fit that rejects everything falls under its minimum
    /// weight and opens again.
    private let fitOutlier: Double = 2
    /// The cap is four times the intercept: the intercept is a mean, and the minimum of two noisy estimates runs low
    /// (synthetic call, first 2 s of echo: -6.3 dB at 1x, -4.9 at 4x; the challenge clip the same within 0.3 dB).
    private let fitScale: Float = 4
    /// Overlap-add tail of the comfort noise, and its last two frames (see ``comfortNoise``).
    private let noiseOverlap: UnsafeMutableBufferPointer<Float>
    private let noiseFrame: UnsafeMutableBufferPointer<Int16>
    private let noiseFrameDelayed: UnsafeMutableBufferPointer<Int16>
    /// Power correction of the random-phase comfort noise: the background estimate is a windowed frame's `|E(k)|²`,
    /// but noise of random phase spreads that energy over the whole zero-padded FFT frame, of which the synthesis
    /// window keeps `hop / size` (overlap-add of the sqrt-Hann squares sums to one). At 16 kHz (hop 80, size 256) the
    /// comfort noise stood 5 dB under the background it was meant to match. (AEC3 corrects the same loss by sqrt(2),
    /// its frame being unpadded.) Also the minimum tracker's bias, see `init`.
    private let noisePowerCorrection: Float
    private var random: UInt32 = 0x1234_5678
    private var backgroundStarted = false
    private var captureOpening: MutedCaptureOpening
    /// Frames with echo possible the background tracker has risen fast for.
    private var backgroundFrames = 0
    /// For its first 2 s of possible echo the background tracker rises 10 dB a second instead of 3. It starts from the first frame's
    /// power scaled by the smoothing (10 dB low) and rose 3 dB a second from there, so the comfort noise, at the
    /// tracker's level, stood 10-30 dB under the background for the first seconds of echo: the background dropped
    /// out at the start of every call. (A start from the mean of the first 100 ms, or from the first frame's power
    /// unscaled, took speech at a call's start for background: clean speech lost up to 0.13 PESQ-WB; and a first frame
    /// of digital silence leaves the tracker at zero — no comfort noise at all, as on the linear vectors, whose ERLE
    /// counts that silence — unless the capture opened muted, see ``MutedCaptureOpening``.)
    private let backgroundStartFrames: Int
    private let noiseRiseAtStart: Float
    /// Per-frame smoothing of the coherence spectra (~50 ms at 5 ms frames). Faster smoothing or a lower bias removes
    /// more echo on real devices but cuts the near talker in double talk.
    private let coherenceSmoothing: Float = 0.9
    /// Coherence of unrelated signals under that smoothing (its estimation bias), taken as none.
    private let coherenceBias: Float = 0.2
    /// Share of the output's power coherent with the far end above which a frame is not taken for a near talker.
    private let nearCoherence: Float = 0.3
    /// Over-estimation of the coherent residual (a mean, not an envelope).
    private let coherentOverEstimation: Float = 4
    /// Over-estimation while a near end stands out (the frame's output above `nearThreshold` times the echo the
    /// path gain predicts).
    private let overEstimationNearEnd: Float = 2
    /// (3 rather than 4: more double-talk frames are recognised at SER -10...+10 dB; see `nearEndFloor`.)
    private let nearThreshold: Float = 3
    /// The deepest gain in a frame where a near end is believed (-20 dB): what echo is left there sits under the near
    /// talker, and a -40 dB floor cuts the talker's own weaker bins with it. With the over-estimation 12 rather than
    /// 16 and the threshold 3 rather than 4, double talk on the realistic set scores PESQ-WB 1.29 against 1.25 and on
    /// the challenge clip 1.32 against 1.27 (WebRTC: 1.30, 1.33), for ERLE in the first 2 s of 23.3 against 26.5 (dt)
    /// and 20.1 against 23.3 (fst, move), the challenge clip's ERLE 26.2 against 28.3 (`voice-engine aec --near`,
    /// Benchmarks/scripts runs in TestVectors/aec/README.md). Each alone gives +0.01...+0.03.
    private let nearEndFloor: Float = 0.1
    /// Least output-to-echo-estimate energy ratio of a frame in which a near end is believed (-10 dB: on the linear
    /// vectors -3 dB gave the most ERLE, long tail 38.8 dB, but cost the double-talk near end 0.7 dB of segmental SNR;
    /// -10 dB keeps 37.0 dB and costs 0.25 dB).
    private let nearEchoRatio: Float = 0.1
    /// See `echoLearning` in ``process(_:reference:microphone:unaligned:farInFlight:)``.
    private let echoDominance: Float = 4
    private var framesSinceFar = Int.max / 2
    private let framesPerSecond: Int
    /// Per-frame smoothing of the far and output powers the path gain is learned from: ~50 ms, longer than the
    /// device delay left before the reference is aligned, so an onset's not-yet-arrived echo does not read as a
    /// low gain.
    private let smoothing: Float = 0.9
    /// Far-active frames at the start during which the path gain may not fall while the canceller has not aligned
    /// its reference (2 s): before alignment the reference leads the echo by the device delay, so every far-end onset
    /// reads as a low echo-path gain (output still quiet, far end already loud), and a gain free to fall would do so
    /// within ~100 ms, letting the echo through until MDF converges: on the real device double-talk clip (116 ms
    /// delay, aligned only after ~1.4 s of echo) ERLE over 0.9-1.9 s would be 1-5 dB. Bounded, so that without any
    /// echo to align on (a headset) the near end is held down for at most the first 2 s of far-end speech.
    private let startUpFrames: Int
    private var startUpFarFrames = 0
    /// Gain the echo-path envelope starts from, and its ceiling (+30 dB: louder than any coupling a device has; on the
    /// realistic set +10 dB gave 15.5 dB ERLE in the first 2 s, +20 dB 16.7, +30 dB 17.5, double talk no worse).
    static let initialPathGain: Float = 1000

    /// - Parameters:
    ///   - hop: samples per frame (MDF's frame).
    ///   - sampleRate: for the time constants.
    ///   - floorDB: the lowest echo gain, or `nil` to leave echo alone.
    ///   - noiseFloorDB: the deepest noise attenuation, or `nil` for no noise suppression.
    init(hop: Int, sampleRate: Int, floorDB: Double? = -40, noiseFloorDB: Double? = nil, overEstimation: Float = 12) {
        self.hop = hop
        var n = 1
        while n < 2 * hop { n *= 2 }
        size = n
        bins = n / 2 + 1
        fft = FFT(size: n)
        floor = floorDB.map { Float(Foundation.pow(10, $0 / 20)) }
        let voiceBin = (300 * n + sampleRate - 1) / sampleRate
        noiseGain = noiseFloorDB.map { NoiseSuppressionGain(bins: n / 2 + 1, floorDB: $0, lowBins: voiceBin) }
        audibleBin = min(bins - 1, (NoiseSuppressionGain.depthFromHz * n + sampleRate - 1) / sampleRate)
        self.overEstimation = overEstimation
        let framesPerSecond = Double(sampleRate) / Double(hop)
        self.framesPerSecond = sampleRate / hop
        startUpFrames = 2 * sampleRate / hop
        clippedEchoFrames = (30 * sampleRate / 1000 + hop - 1) / hop
        backgroundStartFrames = 2 * sampleRate / hop
        captureOpening = MutedCaptureOpening(hop: hop, sampleRate: sampleRate)
        // Reverberation held at 60 dB per second (a T60 of 1 s); envelope rising 2 dB a second; noise tracker 3 dB
        // a second.
        reverbDecay = Float(Foundation.pow(10, -60.0 / 10 / framesPerSecond))
        gainRise = Float(Foundation.pow(10, 0.2 / framesPerSecond))
        noiseRise = Float(Foundation.pow(10, 0.3 / framesPerSecond))
        noiseRiseAtStart = Float(Foundation.pow(10, 1.0 / framesPerSecond))
        func buffer<T: BinaryFloatingPoint>(_ count: Int, _ value: T = 0) -> UnsafeMutableBufferPointer<T> {
            let b = UnsafeMutableBufferPointer<T>.allocate(capacity: count)
            b.initialize(repeating: value)
            return b
        }
        window = buffer(2 * hop)
        for i in 0..<2 * hop {
            window[i] = Float(sin(Double.pi * (Double(i) + 0.5) / Double(2 * hop)))
        }
        outputHistory = buffer(2 * hop)
        referenceHistory = buffer(2 * hop)
        overlap = buffer(hop)
        re = buffer(n)
        im = buffer(n)
        farHeld = buffer(bins)
        coherenceFar = buffer(bins)
        coherenceOutput = buffer(bins)
        coherenceCrossRe = buffer(bins)
        coherenceCrossIm = buffer(bins)
        farSmoothed = buffer(bins)
        outputSmoothed = buffer(bins)
        pathGain = buffer(bins, Self.initialPathGain)
        noise = buffer(bins)
        comfortLevel = buffer(bins)
        gain = buffer(bins, 1)
        fitSums = buffer(bins * Self.fitSumsPerBin)
        fitForget = 1 - 1 / (4 * framesPerSecond)
        fitMinimumWeight = 0.25 * framesPerSecond
        noiseOverlap = buffer(hop)
        noiseFrame = .allocate(capacity: hop)
        noiseFrame.initialize(repeating: 0)
        noiseFrameDelayed = .allocate(capacity: hop)
        noiseFrameDelayed.initialize(repeating: 0)
        // Times 2 (+3 dB): the background tracker follows the minima of a 50 ms smoothing, which lie under the
        // background's mean; with the window's loss corrected the comfort noise still stood 4.2 dB under the
        // no-far-end background at 5-8 s of the synthetic call (ResidualEchoSuppressorTests), 2.9 dB on the realistic
        // set. Only the comfort noise is raised: noise suppression keeps the tracker's level.
        noisePowerCorrection = 2 * Float(n) / Float(hop)
    }

    deinit {
        for b in [
            window, outputHistory, referenceHistory, overlap, re, im, farHeld, farSmoothed, outputSmoothed,
            coherenceFar, coherenceOutput, coherenceCrossRe, coherenceCrossIm, pathGain, noise, comfortLevel, gain,
            noiseOverlap
        ] {
            b.deallocate()
        }
        noiseFrame.deallocate()
        noiseFrameDelayed.deallocate()
        fitSums.deallocate()
    }

    /// The fit of bin `k` (intercept `n`, slopes `g`, `h`), or `nil` before it has ``fitMinimumWeight`` frames.
    @inline(__always)
    private func fit(_ k: Int) -> (n: Double, g: Double, h: Double)? {
        let sums = fitSums.baseAddress! + k * Self.fitSumsPerBin
        let w = sums[0]
        guard w >= fitMinimumWeight else { return nil }
        let ma = sums[1] / w
        let mb = sums[2] / w
        let my = sums[6] / w
        let caa = sums[3] / w - ma * ma
        let cab = sums[4] / w - ma * mb
        let cbb = sums[5] / w - mb * mb
        let cay = sums[7] / w - ma * my
        let cby = sums[8] / w - mb * my
        // Non-negative least squares over the subsets {a, b}, {a}, {b}, {}: the feasible fit that explains most.
        var best = (n: my, g: 0.0, h: 0.0)
        var explained = 0.0
        if caa > 0, cay > 0, cay * cay / caa > explained {
            explained = cay * cay / caa
            best = (my - cay / caa * ma, cay / caa, 0)
        }
        if cbb > 0, cby > 0, cby * cby / cbb > explained {
            explained = cby * cby / cbb
            best = (my - cby / cbb * mb, 0, cby / cbb)
        }
        let det = caa * cbb - cab * cab
        if det > 1e-9 * caa * cbb {
            let g = (cay * cbb - cby * cab) / det
            let h = (cby * caa - cay * cab) / det
            if g > 0 && h > 0 && g * cay + h * cby > explained {
                best = (my - g * ma - h * mb, g, h)
            }
        }
        return best
    }

    /// The echo-path gain of the output's part that is coherent with the reference in bin `k`: `(γ - γ₀)/(1 - γ₀) ·
    /// See/Sxx`, `γ = |Sxe|²/(Sxx·See)`. A near talker is incoherent with the far end, so this estimate does not
    /// rise in double talk, where the lower envelope ``pathGain`` must rise slowly for that reason; it follows at once
    /// what the linear filter misses while it is misadjusted (the far end's loudest syllables on a real device, where
    /// MDF removes only a few dB). ``pathGain`` itself is not let rise fast in coherent frames: that removes more echo
    /// but cuts the near talker in double talk (TestVectors/aec/README.md).
    @inline(__always)
    private func coherentResidual(_ k: Int) -> Float {
        let sxx = coherenceFar[k]
        let see = coherenceOutput[k]
        guard sxx > 0, see > 0 else { return 0 }
        let cross = coherenceCrossRe[k] * coherenceCrossRe[k] + coherenceCrossIm[k] * coherenceCrossIm[k]
        let coherence = cross / (sxx * see)
        guard coherence > coherenceBias else { return 0 }
        return (coherence - coherenceBias) / (1 - coherenceBias) * see / sxx
    }

    /// The comfort noise for the frame the preprocessor returns after this
    /// ``process(_:reference:microphone:unaligned:farInFlight:)``
    /// (the suppressor's output one frame earlier: the preprocessor's latency), to be added to it. Zero where the gain
    /// removed nothing, and zero without echo suppression.
    var comfortNoise: UnsafeBufferPointer<Int16> { UnsafeBufferPointer(noiseFrameDelayed) }

    /// Latency added: one hop.
    var latencySamples: Int { hop }

    /// Suppresses the residual echo in one frame of MDF output (`frame`, in place, delayed by one hop), given the
    /// reference frame MDF cancelled it with.
    ///
    /// With `microphone` (the frame MDF cancelled, so `microphone - frame` is MDF's own echo estimate), a near end is
    /// only believed where the output also stands out against that echo estimate (AEC3's dominant-near-end test): a
    /// misadjusted filter's leak on a loud echo onset raises the output above the path gain's prediction as a near
    /// talker would, but it stays far under the echo the filter is removing; and where the microphone is at least that
    /// estimate (a near talker adds to the microphone, a filter that over-predicts does not).
    ///
    /// `unaligned`: the canceller has not yet aligned its reference with the echo (see ``startUpFrames``).
    /// `farInFlight`: the far end has played since `reference` (its echo may reach the microphone before it).
    func process(
        _ frame: UnsafeMutableBufferPointer<Int16>, reference: UnsafeBufferPointer<Int16>,
        microphone: UnsafeBufferPointer<Int16>? = nil, unaligned: Bool = false, farInFlight: Bool = false
    ) {
        let h = hop
        let n = size
        var frameOutput: Float = 0
        var frameEcho: Float = 0
        var frameMicrophone: Float = 0
        if let microphone {
            for i in 0..<h {
                let e = Float(frame[i])
                let m = Float(microphone[i])
                let y = m - e
                frameOutput += e * e
                frameEcho += y * y
                frameMicrophone += m * m
            }
        }
        var referencePeak: Int16 = 0
        for i in 0..<h {
            outputHistory[i] = outputHistory[i + h]
            referenceHistory[i] = referenceHistory[i + h]
            outputHistory[i + h] = Float(frame[i])
            referenceHistory[i + h] = Float(reference[i])
            referencePeak = max(referencePeak, reference[i] == .min ? .max : abs(reference[i]))
        }
        // A far end played at full scale drove the loudspeaker into clipping: its echo holds distortion no linear
        // filter or per-bin estimate follows, so the frames its echo reaches are taken for echo in every bin.
        framesSinceClippedFar = referencePeak >= Self.clippedReference ? 0 : framesSinceClippedFar &+ 1
        let clippedEcho = framesSinceClippedFar < clippedEchoFrames
        for i in 0..<2 * h {
            re[i] = outputHistory[i] * window[i]
            im[i] = referenceHistory[i] * window[i]
        }
        for i in 2 * h..<n {
            re[i] = 0
            im[i] = 0
        }
        fft.transform(re: re.baseAddress!, im: im.baseAddress!, inverse: false)
        var farTotal: Float = 0
        var farFrameTotal: Float = 0
        var farSmoothedTotal: Float = 0
        // Split the packed spectrum: output E(k) = (Z(k) + Z*(n-k)) / 2, reference X(k) = (Z(k) - Z*(n-k)) / 2i.
        for k in 0..<bins {
            let m = (n - k) & (n - 1)
            let xr = 0.5 * (im[k] + im[m])
            let xi = 0.5 * (re[m] - re[k])
            let x2 = xr * xr + xi * xi
            farHeld[k] = max(x2, reverbDecay * farHeld[k])
            farFrameTotal += x2
            let er = 0.5 * (re[k] + re[m])
            let ei = 0.5 * (im[k] - im[m])
            let c = coherenceSmoothing
            coherenceFar[k] = c * coherenceFar[k] + (1 - c) * x2
            coherenceOutput[k] = c * coherenceOutput[k] + (1 - c) * (er * er + ei * ei)
            coherenceCrossRe[k] = c * coherenceCrossRe[k] + (1 - c) * (xr * er + xi * ei)
            coherenceCrossIm[k] = c * coherenceCrossIm[k] + (1 - c) * (xr * ei - xi * er)
            farSmoothed[k] = smoothing * farSmoothed[k] + (1 - smoothing) * farHeld[k]
            farTotal += farHeld[k]
            farSmoothedTotal += farSmoothed[k]
        }
        // The far end plays (above ~-60 dBFS in the window): frames that say something about the echo path. A
        // second after it last played, its echo has died away: nothing left to suppress (a loopback's own noise
        // floor must not pass for a far end).
        let farPlaying = Float(n * h) * 500
        let farActive = farTotal > farPlaying
        framesSinceFar = farActive ? 0 : framesSinceFar + 1
        let echoPossible = framesSinceFar < framesPerSecond
        if farActive && startUpFarFrames < startUpFrames { startUpFarFrames += 1 }
        let holdPathGain = unaligned && startUpFarFrames < startUpFrames
        // Near-end presence: the frame's output well above the echo the path gain predicts. Then the residual is
        // over-estimated less (the near end masks what echo is left; suppressing hard would cut into it).
        var outputTotal: Float = 0
        var predicted: Float = 0
        for k in 0..<bins {
            let m = (n - k) & (n - 1)
            let er = 0.5 * (re[k] + re[m])
            let ei = 0.5 * (im[k] - im[m])
            outputTotal += er * er + ei * ei
            predicted += pathGain[k] * farHeld[k]
        }
        // Nor where 30 % or more of the output is coherent with the far end: a misadjusted filter's leak and the echo
        // of a loud onset stand above the path gain's prediction as a near talker does, but they follow the far end,
        // a near talker does not.
        var coherentOutput: Float = 0
        var coherenceOutputTotal: Float = 0
        for k in 0..<bins where coherenceFar[k] > 0 {
            let cross = coherenceCrossRe[k] * coherenceCrossRe[k] + coherenceCrossIm[k] * coherenceCrossIm[k]
            coherentOutput += cross / coherenceFar[k]
            coherenceOutputTotal += coherenceOutput[k]
        }
        let echoCoherent = coherentOutput > nearCoherence * coherenceOutputTotal
        let standsOut =
            outputTotal > nearThreshold * predicted && frameOutput >= nearEchoRatio * frameEcho && !echoCoherent
        // Nor where the microphone is quieter than MDF's own echo estimate: a near talker adds to what the microphone
        // hears, so an output that stands out while the microphone stays under the echo the filter predicts is the
        // filter's overshoot, not a talker. A loudspeaker driven to its loudest compresses, and the linear filter then
        // predicts more echo than arrives: on the AEC-Challenge far-end single-talk clip 9mkQ, at its loudest
        // syllables, the estimate stands 2-5 dB over the microphone, and the output, 17 % coherent with the far end,
        // would pass for a near talker (residual over the background 5.2 dB without this test, 2.9 with it).
        let nearEnd = standsOut && frameMicrophone >= frameEcho
        // The trackers restart after a capture that opened muted (`outputTotal`: `n·h/2` times the mean square).
        let reopened = captureOpening.reopens(meanSquare: 2 * outputTotal / Float(n * h), farActive: farActive)
        let backgroundFirst = !backgroundStarted || reopened
        // A first frame under a far end above -40 dBFS holds its echo: the comfort tracker then starts 10 dB under it,
        // as the noise tracker does (started from such a frame, the comfort noise stood over the background through
        // the first 2 s of the AEC-Challenge double-talk clip: echo-only ERLE 31.8 dB there against 41.4).
        let farLoud = farTotal > Float(n * h) * 50_000
        backgroundStarted = true
        // The fast start only while there is echo to fill for: without a far end the tracker serves noise suppression
        // alone, which the fast rise made cut into clean speech (VoiceProcessingTransparencyTests: 2.2 dB).
        var rise = noiseRise
        if echoPossible && backgroundFrames < backgroundStartFrames {
            backgroundFrames += 1
            rise = noiseRiseAtStart
        }
        // After its fast start the tracker does not rise in a bin the echo dominates (the output under
        // `echoDominance` times the echo the path gain predicts): its minima there are residual echo, and the comfort
        // noise, added after the preprocessor, would play them back as noise.
        let echoLearning = echoPossible && rise == noiseRise
        let over = nearEnd ? overEstimationNearEnd : overEstimation
        // A near talker after the far end stopped gets the gains at once (rising 6 dB a frame from the floor, they cut
        // 30-40 ms of a word after a far turn); not while anything played since the reference, whose echo may lead it.
        let openAtOnce = nearEnd && !farInFlight && farFrameTotal <= farPlaying
        // The fit learns from every frame but those whose output stands out (a near end's speech, or the filter's
        // overshoot: neither is background).
        let fitting = !backgroundFirst && !standsOut
        let farBroadband = Double(farSmoothedTotal)
        if let noiseGain {
            // The background's mean square from 1 kHz up, in the signal's units: the one-sided bins hold half the
            // energy, the window's squares sum to one hop.
            var total: Float = 0
            for k in audibleBin..<bins { total += noise[k] }
            noiseGain.beginFrame(noiseMeanSquare: 2 * total / Float(n * h))
        }
        for k in 0..<bins {
            let m = (n - k) & (n - 1)
            let er = 0.5 * (re[k] + re[m])
            let ei = 0.5 * (im[k] - im[m])
            let e2 = er * er + ei * ei
            if backgroundFirst {
                outputSmoothed[k] = e2
                noise[k] = (1 - smoothing) * e2
                comfortLevel[k] = farLoud ? (1 - smoothing) * e2 : e2
            } else {
                outputSmoothed[k] = smoothing * outputSmoothed[k] + (1 - smoothing) * e2
                let echoDominated = outputSmoothed[k] <= echoDominance * pathGain[k] * farSmoothed[k]
                if outputSmoothed[k] < noise[k] {
                    noise[k] = outputSmoothed[k]
                } else if !echoLearning || !echoDominated {
                    noise[k] *= rise
                }
                if outputSmoothed[k] < comfortLevel[k] {
                    comfortLevel[k] = outputSmoothed[k]
                } else if !echoPossible || !echoDominated {
                    comfortLevel[k] *= rise
                } else if !echoLearning {
                    comfortLevel[k] *= noiseRise
                }
            }
            if fitting {
                let a = Double(farSmoothed[k])
                let b = farBroadband
                let y = Double(outputSmoothed[k])
                let sums = fitSums.baseAddress! + k * Self.fitSumsPerBin
                var take = true
                if sums[9] != 0 {
                    take = y <= fitOutlier * (max(sums[10], 0) + sums[11] * a + sums[12] * b)
                }
                let t: Double = take ? 1 : 0
                let f = fitForget
                sums[0] = f * sums[0] + t
                sums[1] = f * sums[1] + t * a
                sums[2] = f * sums[2] + t * b
                sums[3] = f * sums[3] + t * a * a
                sums[4] = f * sums[4] + t * a * b
                sums[5] = f * sums[5] + t * b * b
                sums[6] = f * sums[6] + t * y
                sums[7] = f * sums[7] + t * a * y
                sums[8] = f * sums[8] + t * b * y
                if let solved = fit(k) {
                    sums[9] = 1
                    sums[10] = solved.n
                    sums[11] = solved.g
                    sums[12] = solved.h
                } else {
                    sums[9] = 0
                }
            }
            if farActive && farSmoothed[k] > Float(h) {
                let ratio = outputSmoothed[k] / farSmoothed[k]
                let g = pathGain[k]
                // Falls by a tenth of the gap a frame (-10 dB in ~110 ms): at 0.2 a far-end onset whose echo had not
                // arrived yet (device delay before alignment) dragged the gain down in a few frames and the start of a
                // call echoed (first 2 s on 30 realistic clips, `voice-engine aec`: 18.2 dB at 0.2, 24.5 at 0.1, 31.0 at
                // 0.05 — but 0.05 cost the double-talk vectors' near end 0.7 dB, under their floors).
                if ratio >= g {
                    pathGain[k] = min(g * gainRise, ratio, Self.initialPathGain)
                } else if !holdPathGain {
                    pathGain[k] = 0.9 * g + 0.1 * ratio
                }
            }
            var outR = er
            var outI = ei
            var noiseR: Float = 0
            var noiseI: Float = 0
            if let floor {
                // In a frame taken for a near talker the coherent estimate is left out: its bias on the talker's own
                // bins would cut the near end in double talk.
                let coherent = nearEnd ? 0 : coherentOverEstimation * coherentResidual(k)
                var residual = echoPossible ? max(over * pathGain[k], coherent) * farHeld[k] : 0
                if clippedEcho { residual = e2 }
                var target = e2 > 0 ? 1 - residual / e2 : 1
                target = max(nearEnd ? max(floor, nearEndFloor) : floor, min(1, target))
                let previous = gain[k]
                let g = target < previous || openAtOnce ? target : min(target, 2 * previous)
                gain[k] = g
                if g < 1 {
                    // Comfort noise where the gain removed something: the background's power, random phase.
                    // The background the comfort noise matches: the minimum tracker (x2 for its bias), capped by the
                    // fit's intercept, which residual echo does not raise.
                    var level = 2 * comfortLevel[k]
                    let fitted = fitSums.baseAddress! + k * Self.fitSumsPerBin
                    if fitted[9] != 0 { level = min(level, fitScale * Float(max(0, fitted[10]))) }
                    let fill = (noisePowerCorrection * 0.5 * level * max(0, 1 - g * g)).squareRoot()
                    random = random &* 1_664_525 &+ 1_013_904_223
                    let phase = Float(random >> 8) * (2 * Float.pi / 16_777_216)
                    outR = g * er
                    outI = g * ei
                    noiseR = fill * cos(phase)
                    noiseI = fill * sin(phase)
                }
            }
            if let noiseGain {
                // One gain for the frame and its comfort noise, judged on both (as the background it replaces).
                let sr = outR + noiseR / noisePowerCorrection.squareRoot()
                let si = outI + noiseI / noisePowerCorrection.squareRoot()
                let g = noiseGain.gain(bin: k, power: sr * sr + si * si, noise: noise[k])
                outR *= g
                outI *= g
                noiseR *= g
                noiseI *= g
            }
            // One inverse FFT for both real signals: Z = S + iC, so the frame comes out in the real part and the
            // comfort noise in the imaginary part (S and C are each conjugate-symmetric).
            if k == 0 || k == n / 2 {
                re[k] = outR
                im[k] = noiseR
            } else {
                re[k] = outR - noiseI
                im[k] = outI + noiseR
                re[m] = outR + noiseI
                im[m] = noiseR - outI
            }
        }
        fft.transform(re: re.baseAddress!, im: im.baseAddress!, inverse: true)
        for i in 0..<h {
            let v = overlap[i] + re[i] * window[i]
            overlap[i] = re[i + h] * window[i + h]
            frame[i] = Int16(clamping: Int(v.rounded()))
            let c = noiseOverlap[i] + im[i] * window[i]
            noiseOverlap[i] = im[i + h] * window[i + h]
            noiseFrameDelayed[i] = noiseFrame[i]
            noiseFrame[i] = Int16(clamping: Int(c.rounded()))
        }
    }

    func reset() {
        for b in [
            outputHistory, referenceHistory, overlap, farHeld, farSmoothed, outputSmoothed, noise, comfortLevel,
            coherenceFar, coherenceOutput, coherenceCrossRe, coherenceCrossIm,
            noiseOverlap
        ] {
            b.update(repeating: 0)
        }
        noiseFrame.update(repeating: 0)
        noiseFrameDelayed.update(repeating: 0)
        pathGain.update(repeating: Self.initialPathGain)
        gain.update(repeating: 1)
        fitSums.update(repeating: 0)
        noiseGain?.reset()
        backgroundFrames = 0
        backgroundStarted = false
        captureOpening.reset()
        framesSinceFar = Int.max / 2
        startUpFarFrames = 0
        framesSinceClippedFar = Int.max / 2
    }
}
