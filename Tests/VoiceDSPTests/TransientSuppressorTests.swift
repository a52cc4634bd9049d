import Foundation
import Testing
import VoiceCore
import VoiceDSP
import VoiceLab
import VoiceTestSupport

/// The transient suppressor removes handling knocks from the capture path and leaves speech alone: knocks in the
/// pauses of real speech (synthetic, and one recorded on a real device) are brought down to the background while
/// every speech sample passes bit for bit, even with the far end playing throughout.
@Suite("Transient suppressor")
struct TransientSuppressorTests {
    static let rate = 16_000
    static let block = 160
    /// The far end's mean square while it plays (−20 dBFS): the suppressor's gate is open everywhere.
    static let playing = 10_737_418.0

    /// A knock: seeded noise, differentiated (a knock's energy is mostly high-band), rising in half a millisecond and
    /// decaying with a 6 ms time constant over 40 ms, peaking near `peak`.
    static func knock(peak: Double, seed: UInt64) -> [Double] {
        var rng = SeededGenerator(seed: seed)
        var previous = 0.0
        return (0..<640).map { i in
            let t = Double(i) / Double(rate)
            let envelope = min(1, t / 0.0005) * Foundation.exp(-t / 0.006)
            let noise = rng.nextGaussian()
            defer { previous = noise }
            return peak * 0.4 * envelope * (noise - previous)
        }
    }

    /// `speech` at 1 s into a −65 dBFS noise bed, `knock` mixed in at 0.5 s and again after the talker: `after`
    /// seconds after the last word, or by default 0.6 s after the recording ends and at least 2 s after the last
    /// word (past the 1.5 s a talker's vowel protects).
    static func scene(speech: [Int16], knock: [Double], after: Double? = nil) -> (
        signal: [Int16], knockStarts: [Int], speech: Range<Int>
    ) {
        let speechRange = rate..<(rate + speech.count)
        let lastWord = rate + lastWordEnd(speech)
        let second =
            after.map { lastWord + Int($0 * Double(rate)) }
            ?? max(lastWord + rate * 2, speechRange.upperBound + rate * 6 / 10)
        let bed = SignalGenerator.whiteNoise(
            rms: Foundation.pow(10, -65.0 / 20), sampleRate: rate,
            seconds: Double(max(second + knock.count, speechRange.upperBound) + rate / 5) / Double(rate), seed: 7)
        var mix = bed.map { Double($0) * 32_767 }
        for (i, s) in speech.enumerated() { mix[rate + i] += Double(s) }
        let starts = [rate / 2, second]
        for start in starts {
            for (i, k) in knock.enumerated() where start + i < mix.count { mix[start + i] += k }
        }
        return (mix.map { Int16(clamping: Int($0.rounded())) }, starts, speechRange)
    }

    /// Where the talker's last word ends: the end of the last 10 ms block within 20 dB of the loudest one.
    static func lastWordEnd(_ speech: [Int16]) -> Int {
        let energies = stride(from: 0, to: speech.count - block + 1, by: block).map {
            energy(speech, $0..<($0 + block))
        }
        let loud = (energies.max() ?? 0) / 100
        return ((energies.lastIndex { $0 >= loud } ?? 0) + 1) * block
    }

    static func suppress(
        _ signal: [Int16], farEndMeanSquare: Double = playing,
        configuration: TransientSuppressorConfiguration = TransientSuppressorConfiguration()
    ) throws -> (output: [Int16], suppressedBlocks: Int) {
        var suppressor = try TransientSuppressor(configuration: configuration)
        var output = signal
        output.withUnsafeMutableBufferPointer { o in
            for start in stride(from: 0, to: o.count - block + 1, by: block) {
                suppressor.process(
                    UnsafeMutableBufferPointer(rebasing: o[start..<start + block]), farEndMeanSquare: farEndMeanSquare)
            }
        }
        return (output, suppressor.suppressedBlocks)
    }

    static func energy(_ x: [Int16], _ range: Range<Int>) -> Double {
        var sum = 0.0
        for i in range where i < x.count { sum += Double(x[i]) * Double(x[i]) }
        return sum
    }

    /// Energy removed over `length` samples from each knock's start, dB (the least of the knocks).
    static func knockReduction(_ input: [Int16], _ output: [Int16], starts: [Int], length: Int = 960) -> Double {
        starts.map { start in
            let range = start..<(start + length)
            return 10 * Foundation.log10(energy(input, range) / max(energy(output, range), 1))
        }.min() ?? 0
    }

    static func talkers() throws -> [(String, [Int16])] {
        guard SharedTestData.isPresent else { return [] }
        return try VoiceProcessingTransparencyTests.talkers()
    }

    @Test(.enabled(if: SharedTestData.isPresent, "../shared/testdata/speech absent"))
    func syntheticKnocksInSpeechPausesAreRemovedAndSpeechPassesBitForBit() throws {
        let talkers = try Self.talkers()
        #expect(talkers.count >= 4)
        for (name, speech) in talkers {
            let (signal, starts, speechRange) = Self.scene(speech: speech, knock: Self.knock(peak: 6_000, seed: 3))
            let (output, suppressed) = try Self.suppress(signal)
            let reduction = Self.knockReduction(signal, output, starts: starts)
            print("knock \(name): \(String(format: "%.1f", reduction)) dB removed, \(suppressed) blocks suppressed")
            #expect(reduction >= 20, "\(name): knock only \(reduction) dB down")
            // The speech (and its 300 ms after) is untouched, but for a mouth click alone in a pause (one in
            // mediastreamer2's silence-voice clip, 40 ms before a word): its PESQ and SNR cannot move.
            let changed = (speechRange.lowerBound..<(speechRange.upperBound + 4_800)).filter {
                signal[$0] != output[$0]
            }
            let span = (changed.last ?? 0) - (changed.first ?? 0)
            #expect(span < 2 * Self.block, "\(name): \(changed.count) speech samples changed over \(span) samples")
        }
    }

    static let movedDevice = "aec-devices/0woDOjC0p0KzH5nN0fn1Jw_doubletalk_with_movement"

    /// The AEC-Challenge recording of a device moved while the far end talks (../shared/testdata/aec-devices, read from
    /// there, not copied) through the echo canceller without and with the transient suppressor, as
    /// `voice-bench aec --devices` scores it: the rattle at 8.6-9.1 s is most of the output's far-talk energy.
    static func movedDeviceRuns() throws -> (
        clip: DeviceEchoClip, far: [Int16], mic: [Int16], without: AECRunner.Run, with: AECRunner.Run
    ) {
        let folder = URL(fileURLWithPath: SharedTestData.path("aec-devices"))
        let clip = try #require(try DeviceEchoClip.load(folder: folder).first { $0.name == "challenge-0woD-dt-move" })
        let (far, mic) = try clip.read(folder: folder)
        let without = try AECRunner.runEngine(
            far: far, mic: mic, configuration: EchoCancellerConfiguration(), transientSuppression: nil)
        let with = try AECRunner.runEngine(
            far: far, mic: mic, configuration: EchoCancellerConfiguration(),
            transientSuppression: TransientSuppressorConfiguration())
        return (clip, far, mic, without, with)
    }

    @Test(
        .enabled(
            if: SharedTestData.exists(movedDevice + "_mic.wav") && SharedTestData.exists("aec-devices/clips.json"),
            "../shared/testdata/aec-devices absent"))
    func theRattleOfAMovedDeviceDoesNotStandOverTheBackground() throws {
        let (clip, far, mic, without, with) = try Self.movedDeviceRuns()
        let before = try #require(clip.measure(far: far, mic: mic, output: without.output))
        let after = try #require(clip.measure(far: far, mic: mic, output: with.output))
        print(
            "moved device: residual over background \(before.residualOverBackgroundDB) -> \(after.residualOverBackgroundDB) dB, "
                + "\(with.transientSuppressedBlocks) blocks suppressed")
        #expect(before.residualOverBackgroundDB > 10, "the measure no longer sees the rattle")
        #expect(after.residualOverBackgroundDB <= 2)
        // Only the rattle (8.6-9.2 s) changes: the near talker after 15.25 s passes bit for bit.
        let changed = zip(without.output, with.output).enumerated().filter { $0.element.0 != $0.element.1 }.map(
            \.offset)
        #expect((changed.first ?? 0) >= Int(8.5 * 16_000) && (changed.last ?? 0) < Int(9.3 * 16_000))
    }

    /// A knock 0.6 s after a talker's last word passes: inside a talker's turn a word-initial fricative rising out
    /// of a quiet output cannot be told from a knock (the AEC-Challenge double-talk recordings' follow a vowel by up
    /// to 0.96 s), so the 1.5 s after a vowel are left alone; the knock before the talker starts is still removed.
    @Test(.enabled(if: SharedTestData.isPresent, "../shared/testdata/speech absent"))
    func aKnockInsideATalkersTurnPasses() throws {
        for (name, speech) in try Self.talkers() {
            let knock = Self.knock(peak: 6_000, seed: 3)
            let (signal, starts, _) = Self.scene(speech: speech, knock: knock, after: 0.6)
            let (output, _) = try Self.suppress(signal)
            let inTurn = starts[1]..<(starts[1] + knock.count)
            #expect(output[inTurn] == signal[inTurn], "\(name): a knock 0.6 s after the talker was suppressed")
            #expect(Self.knockReduction(signal, output, starts: [starts[0]]) >= 20, "\(name): the lone knock stayed")
        }
    }

    /// That rattle, as the canceller leaves it (8.55-8.95 s of its output), in a pause of real speech.
    @Test(
        .enabled(
            if: SharedTestData.isPresent && SharedTestData.exists(movedDevice + "_mic.wav")
                && SharedTestData.exists("aec-devices/clips.json"),
            "../shared/testdata/aec-devices absent"))
    func aRecordedHandlingKnockIsRemoved() throws {
        let knock = try Self.movedDeviceRuns().without.output[Int(8.55 * 16_000)..<Int(8.95 * 16_000)].map(Double.init)
        let (name, speech) = try #require(Self.talkers().first)
        let (signal, starts, speechRange) = Self.scene(speech: speech, knock: knock)
        let (output, _) = try Self.suppress(signal)
        let reduction = Self.knockReduction(signal, output, starts: starts, length: knock.count)
        print("recorded knock in \(name): \(String(format: "%.1f", reduction)) dB removed")
        #expect(reduction >= 15)
        #expect(output[speechRange] == signal[speechRange])
    }

    /// Clean and noisy real speech with the far end playing throughout (the gate open: the worst case for a talker):
    /// its onsets, plosives and fricatives are not taken for knocks. A block or two may go where a mouth click stands
    /// alone in a pause (mediastreamer2's silence-voice clip has one 40 ms before a word).
    @Test(.enabled(if: SharedTestData.isPresent, "../shared/testdata/speech absent"))
    func speechOnsetsAndPlosivesAreNotTakenForKnocks() throws {
        var clips = try Self.talkers()
        let noisy = SharedTestData.path("speech-noisy")
        if let names = try? FileManager.default.contentsOfDirectory(atPath: noisy) {
            for name in names.sorted() where name.hasSuffix(".wav") {
                clips.append((name, try WAVFile.read(path: noisy + "/" + name).int16Samples))
            }
        }
        var total = 0
        var blocks = 0
        for (name, speech) in clips {
            let (output, suppressed) = try Self.suppress(speech)
            let changed = zip(speech, output).filter { $0 != $1 }.count
            print("speech \(name): \(suppressed) blocks suppressed, \(changed) samples changed")
            #expect(suppressed <= 2, "\(name): \(suppressed) blocks of speech suppressed")
            total += suppressed
            blocks += speech.count / Self.block
            // Without a far end (the default gate) nothing changes at all.
            let (quiet, none) = try Self.suppress(speech, farEndMeanSquare: 0)
            #expect(none == 0 && quiet == speech, "\(name): changed without a far end")
        }
        #expect(Double(total) <= Double(blocks) * 0.0005, "\(total) of \(blocks) speech blocks suppressed")
    }

    /// Random blocks — silence, full scale, clicks, noise at every level, square waves, knocks — with random far-end
    /// levels (NaN and infinity included): no trap, and never a sample louder than its input.
    @Test(arguments: [1, 2, 3] as [UInt64])
    func randomInputNeverCrashesOrAmplifies(seed: UInt64) throws {
        let rate = Self.rate
        var suppressor = try TransientSuppressor(configuration: TransientSuppressorConfiguration(sampleRate: rate))
        var rng = SplitMix64(seed: seed)
        let n = rate / 100
        var block = [Int16](repeating: 0, count: n)
        var louder = 0
        for _ in 0..<3_000 {
            // Square waves are voiced (and hold suppression off for 300 ms): rare, so the other kinds reach it.
            let kind = Int.random(in: 0..<100, using: &rng) == 0 ? 4 : [0, 1, 2, 3, 5, 6].randomElement(using: &rng)!
            let scale = Double.random(in: 0...1, using: &rng)
            for i in 0..<n {
                switch kind {
                case 0: block[i] = 0
                case 1: block[i] = Bool.random(using: &rng) ? .max : .min
                case 2: block[i] = i == n / 2 ? Int16.random(in: .min ... .max, using: &rng) : 0
                case 3: block[i] = Int16(clamping: Int(scale * Double(Int16.random(in: .min ... .max, using: &rng))))
                case 4: block[i] = (i / 7) % 2 == 0 ? Int16(scale * 32_767) : Int16(-scale * 32_767)
                case 5: block[i] = Int16.random(in: -3...3, using: &rng)
                default:  // a knock near the Nyquist frequency, decaying over the block
                    let decay = Foundation.exp(-Double(i) / Double(n / 8))
                    block[i] = Int16(
                        (i % 2 == 0 ? 1 : -1) * scale * decay * Double(Int16.random(in: 0 ... .max, using: &rng)))
                }
            }
            let far: Double =
                switch Int.random(in: 0..<5, using: &rng) {
                case 0: 0
                case 1: .nan
                case 2: .infinity
                default: Double.random(in: 0...1e9, using: &rng)
                }
            let input = block
            block.withUnsafeMutableBufferPointer { _ = suppressor.process($0, farEndMeanSquare: far) }
            louder += zip(input, block).filter { abs(Int($1)) > abs(Int($0)) }.count
        }
        #expect(louder == 0)
        #expect(suppressor.suppressedBlocks > 0, "the random clicks never engaged it: the test exercises nothing")
    }

    @Test func badSettingsAreRefusedWithTheirName() {
        let bad: [(TransientSuppressorConfiguration, String)] = [
            (TransientSuppressorConfiguration(sampleRate: 44_100), "sampleRate"),
            (TransientSuppressorConfiguration(sampleRate: 8_000), "sampleRate"),
            (TransientSuppressorConfiguration(onsetRiseDB: 0), "onsetRiseDB"),
            (TransientSuppressorConfiguration(ceilingOverFloorDB: -1), "ceilingOverFloorDB")
        ]
        for (configuration, field) in bad {
            do {
                _ = try TransientSuppressor(configuration: configuration)
                Issue.record("\(field): accepted")
            } catch {
                guard case .invalidArgument(let named, _) = error else {
                    Issue.record("\(field): \(error)")
                    continue
                }
                #expect(named == field)
            }
        }
    }
}
