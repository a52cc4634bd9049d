import Foundation
import Testing
@testable import VoiceDSP

/// Exploratory measurements behind the issue 5 report, run by hand (they print figures and assert nothing, so they
/// are off unless AEC_EXPERIMENT=1): raw MDF convergence against tail, frame size, alignment and far-end background;
/// the engine on every standard scenario (AEC_TAIL, AEC_FLOOR, AEC_NS, AEC_SUP, AEC_SUPACT, AEC_NORES, AEC_NODRIFT,
/// AEC_ONLY, AEC_TRACK); the filter-peak / drift track of one scenario.
///
///     AEC_EXPERIMENT=1 swift test --filter EchoCancellerExperimentTests
@Suite(.enabled(if: ProcessInfo.processInfo.environment["AEC_EXPERIMENT"] != nil, "set AEC_EXPERIMENT=1"))
struct EchoCancellerExperimentTests {
    func rawERLE(far: [Int16], mic: [Int16], block: Int, tail: Int, shift: Int) throws -> [Double] {
        let f = try MDFEchoFilter(sampleRate: 16_000, blockSize: block, tailSamples: tail)
        let shifted = [Int16](repeating: 0, count: shift) + far.prefix(far.count - shift)
        let blocks = mic.count / block
        var out = [Int16](repeating: 0, count: blocks * block)
        shifted.withUnsafeBufferPointer { fp in
            mic.withUnsafeBufferPointer { mp in
                out.withUnsafeMutableBufferPointer { op in
                    for b in 0..<blocks {
                        let r = b * block..<(b + 1) * block
                        f.cancel(mic: UnsafeBufferPointer(rebasing: mp[r]), reference: UnsafeBufferPointer(rebasing: fp[r]),
                                 into: UnsafeMutableBufferPointer(rebasing: op[r]))
                    }
                }
            }
        }
        // mask on 10 ms blocks of the shifted far (aligned with the echo when shift = delay)
        let n = 160
        let nb = out.count / n
        var ms = [Double](repeating: 0, count: nb)
        let d = 640
        for b in 0..<nb {
            var s = 0.0
            for i in b * n..<(b + 1) * n where i - d >= 0 { s += Double(far[i - d]) * Double(far[i - d]) }
            ms[b] = s / Double(n)
        }
        let mask = AECRunner.singleTalkBlocks(referenceMeanSquare: ms, near: nil, blockSize: n)
        var res: [Double] = []
        var from = 0
        while from < nb {
            res.append(AECRunner.erle(mic: mic, output: out, blocks: mask, blockSize: n, fromBlock: from, toBlock: from + 200) ?? .nan)
            from += 200
        }
        return res
    }

    @Test func rawMDFConvergenceVariants() throws {
        var s = AECScenario(name: "x")
        s.seconds = 20
        let sig = AECVectorGenerator.generate(s)
        func show(_ label: String, _ v: [Double]) {
            print(label.padding(toLength: 40, withPad: " ", startingAt: 0), v.map { String(format: "%5.1f", $0) }.joined(separator: " "))
        }
        for (block, tail, shift) in [(160, 3200, 0), (320, 3200, 0), (160, 3200, 560), (160, 2048, 560), (160, 1024, 560), (320, 1024, 560), (160, 1600, 560)] {
            show("speech b\(block) t\(tail) s\(shift)", try rawERLE(far: sig.far, mic: sig.mic, block: block, tail: tail, shift: shift))
        }
        // white noise far end through the same path
        let h = AECVectorGenerator.roomImpulseResponse(sampleRate: 16_000, rt60Milliseconds: 150, lengthMilliseconds: 60, gainDB: -6, seed: 7)
        let wn = SignalGenerator.whiteNoise(rms: 0.05, sampleRate: 16_000, seconds: 20, seed: 3)
        var e = [Float](repeating: 0, count: wn.count)
        for i in 0..<wn.count { var a: Float = 0; for k in 0..<h.count where i - 640 - k >= 0 { a += h[k] * wn[i - 640 - k] }; e[i] = a }
        show("white b160 t3200 s0", try rawERLE(far: SignalGenerator.toInt16(wn), mic: SignalGenerator.toInt16(e), block: 160, tail: 3200, shift: 0))
        show("white b160 t1024 s560", try rawERLE(far: SignalGenerator.toInt16(wn), mic: SignalGenerator.toInt16(e), block: 160, tail: 1024, shift: 560))
        // speech + noise floor in the far end
        for floorDB in [-60.0, -50.0, -40.0] {
            let sp = SignalGenerator.speechLike(sampleRate: 16_000, seconds: 20, seed: 101, level: 0.3)
            let pn = SignalGenerator.pinkNoise(rms: pow(10, floorDB / 20), sampleRate: 16_000, seconds: 20, seed: 99)
            let far = zip(sp, pn).map { $0 + $1 }
            let fq = SignalGenerator.toFloat(SignalGenerator.toInt16(far))
            var ec = [Float](repeating: 0, count: fq.count)
            for i in 0..<fq.count { var a: Float = 0; for k in 0..<h.count where i - 640 - k >= 0 { a += h[k] * fq[i - 640 - k] }; ec[i] = a }
            show("speech+pink\(Int(floorDB)) b160 t1024 s560", try rawERLE(far: SignalGenerator.toInt16(far), mic: SignalGenerator.toInt16(ec), block: 160, tail: 1024, shift: 560))
            show("speech+pink\(Int(floorDB)) b160 t3200 s0", try rawERLE(far: SignalGenerator.toInt16(far), mic: SignalGenerator.toInt16(ec), block: 160, tail: 3200, shift: 0))
        }
    }

    static func env(_ k: String) -> String? { ProcessInfo.processInfo.environment[k] }

    @Test func engineOnScenarios() throws {
        let seconds = Double(Self.env("AEC_SECONDS") ?? "20")!
        let floor = Self.env("AEC_FLOOR").flatMap(Double.init)
        let tail = Int(Self.env("AEC_TAIL") ?? "100")!
        let only = Self.env("AEC_ONLY")
        var config = EchoCancellerConfiguration(tailMilliseconds: tail)
        if let v = Self.env("AEC_NS") { config.preprocessor.noiseSuppressionDB = Int(v) == 0 ? nil : Int(v) }
        if let v = Self.env("AEC_SUP") { config.preprocessor.echoSuppressionDB = Int(v)! }
        if let v = Self.env("AEC_SUPACT") { config.preprocessor.echoSuppressionActiveDB = Int(v)! }
        if Self.env("AEC_NORES") != nil { config.suppressResidualEcho = false }
        if Self.env("AEC_NODRIFT") != nil { config.compensateDrift = false }
        for var s in AECBenchmark.standardScenarios where only == nil || s.name.contains(only!) {
            s.seconds = seconds
            s.farNoiseDBFS = floor
            if s.delayAfterChangeMilliseconds != nil {}
            let sig = AECVectorGenerator.generate(s)
            let run = try AECRunner.runEngine(far: sig.far, mic: sig.mic, configuration: config)
            let raw = try AECRunner.runRawMDF(far: sig.far, mic: sig.mic, sampleRate: 16_000, tailMilliseconds: 200)
            let mask = AECRunner.singleTalkBlocks(referenceMeanSquare: run.referenceMeanSquare, near: s.nearSeed == nil ? nil : sig.near, blockSize: 160)
            func seg(_ out: [Int16]) -> String {
                stride(from: 0, to: mask.count, by: 200).map { String(format: "%5.1f", AECRunner.erle(mic: sig.mic, output: out, blocks: mask, blockSize: 160, fromBlock: $0, toBlock: $0 + 200) ?? .nan) }.joined(separator: " ")
            }
            let half = mask.count / 2
            let eSteady = AECRunner.erle(mic: sig.mic, output: run.output, blocks: mask, blockSize: 160, fromBlock: half) ?? .nan
            let rSteady = AECRunner.erle(mic: sig.mic, output: raw.output, blocks: mask, blockSize: 160, fromBlock: half) ?? .nan
            print("== \(s.name): steady(2nd half) engine \(String(format: "%.1f", eSteady)) raw \(String(format: "%.1f", rSteady)) drift est \(run.statistics.estimatedDriftPPM.map { String(format: "%.1f", $0) } ?? "nil") comp \(String(format: "%.1f", run.statistics.compensatedDriftPPM)) delay \(run.statistics.estimatedDelayMilliseconds.map { String(format: "%.2f", $0) } ?? "nil") applied \(run.statistics.appliedDelayMilliseconds) realign \(run.statistics.realignments)")
            print("   engine " + seg(run.output))
            print("   raw    " + seg(raw.output))
            if s.nearSeed != nil {
                print(String(format: "   near segSNR engine %.1f raw %.1f", AECRunner.nearEndSegmentalSNR(near: sig.near, output: run.output, sampleRate: 16_000), AECRunner.nearEndSegmentalSNR(near: sig.near, output: raw.output, sampleRate: 16_000)))
            }
            if s.nearSeed != nil {
                for k in [80, 128, 160, 192, 240, 320] {
                    let shifted = [Int16](repeating: 0, count: k) + sig.near.prefix(sig.near.count - k)
                    print(String(format: "   lag %d segSNR engine %.1f", k, AECRunner.nearEndSegmentalSNR(near: shifted, output: run.output, sampleRate: 16_000)))
                }
            }
            if Self.env("AEC_TRACK") != nil {
                print("   track " + run.track.map { String(format: "%.0f:%@/%@", $0.seconds, $0.estimatedDelayMilliseconds.map { String(format: "%.2f", $0) } ?? "-", $0.estimatedDriftPPM.map { String(format: "%.0f", $0) } ?? "-") }.joined(separator: " "))
            }
        }
    }

    @Test func peakTrace() throws {
        var s = AECBenchmark.standardScenarios.first { $0.name == (Self.env("AEC_ONLY") ?? "drift_plus_1000ppm") }!
        s.seconds = 20
        s.farNoiseDBFS = Self.env("AEC_FLOOR").flatMap(Double.init)
        let sig = AECVectorGenerator.generate(s)
        let c = try EchoCanceller(configuration: EchoCancellerConfiguration(tailMilliseconds: Int(Self.env("AEC_TAIL") ?? "100")!))
        var out = [Int16](repeating: 0, count: 160)
        var line = ""
        for b in 0..<(sig.mic.count / 160) {
            let r = b * 160..<(b + 1) * 160
            try sig.far.withUnsafeBufferPointer { f in try sig.mic.withUnsafeBufferPointer { m in try out.withUnsafeMutableBufferPointer { o in
                try c.process(mic: UnsafeBufferPointer(rebasing: m[r]), farEnd: UnsafeBufferPointer(rebasing: f[r]), into: o) } } }
            if b % 50 == 49 {
                let st = c.statistics
                line += String(format: " %.1f:%.0f/r%d/%@/%@/%.0f", Double(b + 1) / 100, c.lastPeakToMean, st.realignments, st.estimatedDelayMilliseconds.map { String(format: "%.2f", $0) } ?? "-", st.estimatedDriftPPM.map { String(format: "%.1f", $0) } ?? "-", st.compensatedDriftPPM)
            }
        }
        print("TRACE" + line)
    }
}
