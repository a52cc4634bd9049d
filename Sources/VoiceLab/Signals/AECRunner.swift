import VoiceEngine
import Foundation

/// Runs whole recordings through the echo canceller exactly as a live call does (10 ms blocks, the far-end block
/// played then the capture block) and measures the result. Used by `voice-engine aec`, the AEC test vectors and
/// the `aec` benchmark.
public enum AECRunner {
    /// One point of the delay and drift track.
    public struct TrackPoint: Codable, Sendable, Equatable {
        public var seconds: Double
        public var estimatedDelayMilliseconds: Double?
        public var appliedDelayMilliseconds: Double
        public var estimatedDriftPPM: Double?
        public var compensatedDriftPPM: Double
    }

    /// Output of a run.
    public struct Run: Sendable {
        /// The processed microphone, shifted earlier by the canceller's latency (``EchoCanceller/latencySamples``,
        /// the preprocessor's one frame, 5 ms by default) so that it lines up sample by sample with the microphone and the clean near
        /// end it is measured against (silent blocks after the end flush the last samples out).
        public var output: [Int16]
        /// The latency removed from `output`, in samples.
        public var latencySamples: Int
        /// Per 10 ms block: mean square of the aligned reference (far-end activity where the echo is).
        public var referenceMeanSquare: [Double]
        /// Per block: the VAD decision.
        public var voiceActive: [Bool]
        /// Twice a second.
        public var track: [TrackPoint]
        public var statistics: EchoCancellerStatistics
        /// Wall-clock processing time per block, µs (for benchmarks; meaningless in debug builds), the transient
        /// suppressor included.
        public var microsecondsPerBlock: Double
        /// The transient suppressor's share of ``microsecondsPerBlock`` (0 when it is off).
        public var transientMicrosecondsPerBlock: Double
        /// Blocks the transient suppressor attenuated.
        public var transientSuppressedBlocks: Int
    }

    /// Runs `mic` against `far` (same rate, same length — the caller trims) through an ``EchoCanceller`` and, when
    /// `transientSuppression` is given and the rate is one it supports, the ``TransientSuppressor`` after it, as a
    /// call's capture path runs them. The tail that does not fill a whole block is dropped.
    public static func runEngine(
        far: [Int16], mic: [Int16], configuration: EchoCancellerConfiguration,
        transientSuppression: TransientSuppressorConfiguration? = nil
    ) throws(SpeexDSPError) -> Run {
        let canceller = try EchoCanceller(configuration: configuration)
        var transient = try TransientSuppressor.forCapture(transientSuppression, sampleRate: configuration.sampleRate)
        let n = canceller.blockSize
        let blocks = min(far.count, mic.count) / n
        // Silent blocks after the end flush the canceller's latency, so the last samples come out too (a file cut to
        // zero there would be scored as a click).
        let flush = (canceller.latencySamples + n - 1) / n
        let far = far.prefix(blocks * n) + [Int16](repeating: 0, count: flush * n)
        let mic = mic.prefix(blocks * n) + [Int16](repeating: 0, count: flush * n)
        var output = [Int16](repeating: 0, count: (blocks + flush) * n)
        var reference = [Double](repeating: 0, count: blocks)
        var vad = [Bool](repeating: false, count: blocks)
        var track: [TrackPoint] = []
        let clock = ContinuousClock()
        var elapsed = Duration.zero
        var transientElapsed = Duration.zero
        for b in 0..<blocks + flush {
            let range = b * n..<(b + 1) * n
            let start = clock.now
            let active = try far.withUnsafeBufferPointer { f throws(SpeexDSPError) in
                try mic.withUnsafeBufferPointer { m throws(SpeexDSPError) in
                    try output.withUnsafeMutableBufferPointer { o throws(SpeexDSPError) in
                        try canceller.process(
                            mic: UnsafeBufferPointer(rebasing: m[range]),
                            farEnd: UnsafeBufferPointer(rebasing: f[range]),
                            into: UnsafeMutableBufferPointer(rebasing: o[range]))
                    }
                }
            }
            if transient != nil {
                let transientStart = clock.now
                output.withUnsafeMutableBufferPointer { o in
                    _ = transient?.process(
                        UnsafeMutableBufferPointer(rebasing: o[range]),
                        farEndMeanSquare: canceller.lastReferenceMeanSquare)
                }
                transientElapsed += clock.now - transientStart
            }
            elapsed += clock.now - start
            guard b < blocks else { continue }
            vad[b] = active
            reference[b] = canceller.lastReferenceMeanSquare
            if b % 50 == 49 {
                let s = canceller.statistics
                track.append(
                    TrackPoint(
                        seconds: Double(b + 1) / 100, estimatedDelayMilliseconds: s.estimatedDelayMilliseconds,
                        appliedDelayMilliseconds: s.appliedDelayMilliseconds, estimatedDriftPPM: s.estimatedDriftPPM,
                        compensatedDriftPPM: s.compensatedDriftPPM))
            }
        }
        let latency = canceller.latencySamples
        output = Array(output[latency..<latency + blocks * n])
        return Run(
            output: output, latencySamples: latency, referenceMeanSquare: reference, voiceActive: vad, track: track,
            statistics: canceller.statistics,
            microsecondsPerBlock: blocks > 0 ? seconds(elapsed) * 1e6 / Double(blocks + flush) : 0,
            transientMicrosecondsPerBlock: blocks > 0 ? seconds(transientElapsed) * 1e6 / Double(blocks + flush) : 0,
            transientSuppressedBlocks: transient?.suppressedBlocks ?? 0)
    }

    /// Raw speex MDF with no alignment, drift compensation or residual suppression: the baseline.
    public static func runRawMDF(
        far: [Int16], mic: [Int16], sampleRate: Int, tailMilliseconds: Int
    ) throws(SpeexDSPError) -> (output: [Int16], microsecondsPerBlock: Double) {
        let n = sampleRate / 100
        let filter = try MDFEchoFilter(
            sampleRate: sampleRate, blockSize: n, tailSamples: tailMilliseconds * sampleRate / 1000)
        let blocks = min(far.count, mic.count) / n
        var output = [Int16](repeating: 0, count: blocks * n)
        let clock = ContinuousClock()
        let start = clock.now
        far.withUnsafeBufferPointer { f in
            mic.withUnsafeBufferPointer { m in
                output.withUnsafeMutableBufferPointer { o in
                    for b in 0..<blocks {
                        let range = b * n..<(b + 1) * n
                        filter.cancel(
                            mic: UnsafeBufferPointer(rebasing: m[range]),
                            reference: UnsafeBufferPointer(rebasing: f[range]),
                            into: UnsafeMutableBufferPointer(rebasing: o[range]))
                    }
                }
            }
        }
        let elapsedSeconds = seconds(clock.now - start)
        return (output, blocks > 0 ? elapsedSeconds * 1e6 / Double(blocks) : 0)
    }

    /// Far-end single-talk blocks: the aligned reference is within 35 dB of its loudest block and, when the clean
    /// near end is known, the near end is below -50 dBFS in that block (and its neighbours).
    public static func singleTalkBlocks(referenceMeanSquare: [Double], near: [Int16]?, blockSize: Int) -> [Bool] {
        let peak = referenceMeanSquare.max() ?? 0
        guard peak > 0 else { return referenceMeanSquare.map { _ in false } }
        var nearActive = [Bool](repeating: false, count: referenceMeanSquare.count)
        if let near {
            for b in nearActive.indices {
                let lo = max(0, (b - 2) * blockSize)
                let hi = min(near.count, (b + 3) * blockSize)
                guard lo < hi else { continue }
                var sum = 0.0
                for i in lo..<hi { sum += Double(near[i]) * Double(near[i]) }
                let dbfs = 10 * log10(max(sum / Double(hi - lo) / (32768.0 * 32768.0) * 2, 1e-20))
                nearActive[b] = dbfs > -50
            }
        }
        return referenceMeanSquare.indices.map { referenceMeanSquare[$0] > peak * 3.1623e-4 && !nearActive[$0] }
    }

    /// ERLE in dB: 10·log10(Σ mic² / Σ out²) over the selected blocks from block `fromBlock` to `toBlock`.
    public static func erle(
        mic: [Int16], output: [Int16], blocks: [Bool], blockSize: Int, fromBlock: Int = 0, toBlock: Int? = nil
    ) -> Double? {
        var micEnergy = 0.0
        var outEnergy = 0.0
        let end = min(toBlock ?? blocks.count, blocks.count, output.count / blockSize, mic.count / blockSize)
        guard fromBlock < end else { return nil }
        var used = 0
        for b in fromBlock..<end where blocks[b] {
            used += 1
            for i in b * blockSize..<(b + 1) * blockSize {
                micEnergy += Double(mic[i]) * Double(mic[i])
                outEnergy += Double(output[i]) * Double(output[i])
            }
        }
        guard used > 0, micEnergy > 0 else { return nil }
        return 10 * log10(micEnergy / max(outEnergy, 1))
    }

    /// The background a listener hears under the canceller: the median over the masked blocks in `from..<to` of
    /// `output`'s level over `background`'s (the same canceller on the microphone with a silent far end), dB. Blocks
    /// where either is digital silence are skipped; `nil` without any block left. Used by `voice-bench aec
    /// --realistic` (`bg` columns) and the suppressor's tests, so both measure the same thing.
    public static func backgroundLevel(
        output: [Int16], background: [Int16], mask: [Bool], from: Int, to: Int, blockSize: Int = 160
    ) -> Double? {
        var differences: [Double] = []
        let end = min(to, mask.count)
        guard max(0, from) < end else { return nil }
        for b in max(0, from)..<end where mask[b] {
            var o = 0.0
            var q = 0.0
            for i in b * blockSize..<min((b + 1) * blockSize, output.count, background.count) {
                o += Double(output[i]) * Double(output[i])
                q += Double(background[i]) * Double(background[i])
            }
            if o > 0 && q > 0 { differences.append(10 * log10(o / q)) }
        }
        guard !differences.isEmpty else { return nil }
        differences.sort()
        return differences[differences.count / 2]
    }

    /// Echo-only ERLE over the masked blocks in `from..<to`: the echo's energy (`echo`: the echo alone, as the
    /// microphone held it) against the residual echo in `output`, taken per block as the output's energy over
    /// `background`'s (the same canceller, silent far end, on the microphone without echo), floored at zero. Unlike
    /// ``erle(mic:output:blocks:blockSize:fromBlock:toBlock:)`` it does not count background removed as echo
    /// removed. `nil` without echo energy in the blocks. Used by `aec-vectors` (`echo_only_erle_db`), `voice-bench
    /// aec --realistic` (`echo` columns) and `RealEchoRecordingTests`, so all three measure the same thing.
    public static func echoOnlyERLE(
        echo: [Int16], output: [Int16], background: [Int16], mask: [Bool], from: Int, to: Int, blockSize: Int = 160
    ) -> Double? {
        var echoEnergy = 0.0
        var residual = 0.0
        let end = min(to, mask.count, echo.count / blockSize, output.count / blockSize, background.count / blockSize)
        guard max(0, from) < end else { return nil }
        for b in max(0, from)..<end where mask[b] {
            var o = 0.0
            var q = 0.0
            for i in b * blockSize..<(b + 1) * blockSize {
                echoEnergy += Double(echo[i]) * Double(echo[i])
                o += Double(output[i]) * Double(output[i])
                q += Double(background[i]) * Double(background[i])
            }
            residual += max(0, o - q)
        }
        guard echoEnergy > 0 else { return nil }
        return 10 * log10(echoEnergy / max(residual, 1))
    }

    /// Near-end preservation: segmental SNR (20 ms frames) of the output against the clean near end.
    public static func nearEndSegmentalSNR(near: [Int16], output: [Int16], sampleRate: Int) -> Double {
        SignalMetrics.segmentalSNR(
            reference: SignalGenerator.toFloat(near), test: SignalGenerator.toFloat(output),
            frameLength: sampleRate / 50,
            silenceThresholdDBFS: -40)
    }
}

/// The `aec` benchmark's scenario runner, so the `voice-bench aec` command is a thin wrapper.
public enum AECBenchmark {
    /// Figures for one scenario.
    public struct Result: Codable, Sendable, Equatable {
        public var name: String
        /// ERLE (dB) over far-end single talk after `steadyStateSeconds`, raw speex MDF without alignment.
        public var erleRaw: Double?
        /// The same for the engine's canceller.
        public var erleEngine: Double?
        /// Segmental SNR (dB) of the output against the clean near end (double-talk scenarios), engine and raw.
        public var nearEndSegSNREngine: Double?
        public var nearEndSegSNRRaw: Double?
        /// Processing time per 10 ms block, µs (engine / raw MDF).
        public var microsecondsPerBlockEngine: Double
        public var microsecondsPerBlockRaw: Double
        /// The transient suppressor's part of ``microsecondsPerBlockEngine`` (0 when it is off).
        public var microsecondsPerBlockTransient: Double?
        public var estimatedDriftPPM: Double?
        public var finalDelayMilliseconds: Double?
        /// Seconds until the engine's ERLE over one-second windows first comes within 3 dB of its steady-state value
        /// (`nil` without a steady-state value).
        public var convergenceSeconds: Double?
        /// The far-end single-talk blocks (10 ms) the ERLE figures are measured over, so another canceller's output
        /// can be measured on exactly the same blocks (``AECRunner/erle(mic:output:blocks:blockSize:fromBlock:toBlock:)``).
        public var singleTalkBlocks: [Bool]
    }

    /// Tail of the raw-MDF baseline, ms: what a canceller without alignment needs to reach past a typical device
    /// delay (speexdsp suggests 100-500 ms).
    public static let rawTailMilliseconds = 200

    /// Generates the scenario and runs both cancellers on it.
    public static func run(
        scenario: AECScenario, configuration: EchoCancellerConfiguration = EchoCancellerConfiguration(),
        steadyStateSeconds: Double = 10
    ) throws(SpeexDSPError) -> Result {
        let signals = AECVectorGenerator.generate(scenario)
        return try run(
            name: scenario.name, far: signals.far, mic: signals.mic,
            near: scenario.nearSeed == nil ? nil : signals.near, sampleRate: scenario.sampleRate,
            configuration: configuration, steadyStateSeconds: steadyStateSeconds)
    }

    /// Runs both cancellers on given signals.
    public static func run(
        name: String, far: [Int16], mic: [Int16], near: [Int16]?, sampleRate: Int,
        configuration: EchoCancellerConfiguration = EchoCancellerConfiguration(), steadyStateSeconds: Double = 10,
        transientSuppression: TransientSuppressorConfiguration? = nil
    ) throws(SpeexDSPError) -> Result {
        var config = configuration
        config.sampleRate = sampleRate
        let engine = try AECRunner.runEngine(
            far: far, mic: mic, configuration: config, transientSuppression: transientSuppression)
        let raw = try AECRunner.runRawMDF(
            far: far, mic: mic, sampleRate: sampleRate, tailMilliseconds: rawTailMilliseconds)
        let n = sampleRate / 100
        let mask = AECRunner.singleTalkBlocks(referenceMeanSquare: engine.referenceMeanSquare, near: near, blockSize: n)
        let from = Int(steadyStateSeconds * 100)
        let steady = AECRunner.erle(mic: mic, output: engine.output, blocks: mask, blockSize: n, fromBlock: from)
        var convergence: Double?
        if let steady {
            for second in 0..<(mask.count / 100) {
                let window = AECRunner.erle(
                    mic: mic, output: engine.output, blocks: mask, blockSize: n, fromBlock: second * 100,
                    toBlock: second * 100 + 100)
                if let window, window >= steady - 3 {
                    convergence = Double(second + 1)
                    break
                }
            }
        }
        return Result(
            name: name,
            erleRaw: AECRunner.erle(mic: mic, output: raw.output, blocks: mask, blockSize: n, fromBlock: from),
            erleEngine: steady,
            nearEndSegSNREngine: near.map {
                AECRunner.nearEndSegmentalSNR(near: $0, output: engine.output, sampleRate: sampleRate)
            },
            nearEndSegSNRRaw: near.map {
                AECRunner.nearEndSegmentalSNR(near: $0, output: raw.output, sampleRate: sampleRate)
            },
            microsecondsPerBlockEngine: engine.microsecondsPerBlock, microsecondsPerBlockRaw: raw.microsecondsPerBlock,
            microsecondsPerBlockTransient: engine.transientMicrosecondsPerBlock,
            estimatedDriftPPM: engine.statistics.estimatedDriftPPM,
            finalDelayMilliseconds: engine.statistics.estimatedDelayMilliseconds, convergenceSeconds: convergence,
            singleTalkBlocks: mask)
    }

    /// The standard scenarios the test vectors and the benchmark use.
    public static var standardScenarios: [AECScenario] {
        func make(_ name: String, _ edit: (inout AECScenario) -> Void) -> AECScenario {
            var s = AECScenario(name: name)
            edit(&s)
            return s
        }
        return [
            make("linear_short_tail") { _ in },
            make("linear_long_tail") {
                $0.rt60Milliseconds = 400
                $0.impulseResponseMilliseconds = 180
                $0.delayMilliseconds = 120
            },
            make("double_talk") { $0.nearSeed = 202 },
            make("noise") { $0.noiseDBFS = -40 },
            make("loudspeaker_soft_clip") { $0.softClip = 3 },
            make("delay_change") {
                $0.delayMilliseconds = 40
                $0.delayAfterChangeMilliseconds = 220
            },
            make("drift_plus_100ppm") { $0.driftPPM = 100 },
            make("drift_minus_100ppm") { $0.driftPPM = -100 },
            make("drift_plus_1000ppm") { $0.driftPPM = 1000 },
            make("drift_minus_1000ppm") { $0.driftPPM = -1000 }
        ]
    }
}

/// A duration in seconds, for the runners' processing times.
private func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
}
