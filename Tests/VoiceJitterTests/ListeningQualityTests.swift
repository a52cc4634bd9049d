import Foundation
import Testing
import VoiceCodec
import VoiceCore
import VoiceJitter
import VoiceNetSim
import VoiceTestSupport
import VoiceLab

/// What the listener hears, with the project's own measure (``SpectralDistance`` against the
/// ``IdealReceiver`` on the same packets), so the figures cannot regress silently without Python. Real speech
/// (the shared set, 65 s); the tests send its first 20 s through the conditions of the table below.
private let speechSet: JitterBenchmark.Speech? = try? JitterBenchmark.loadSpeechSet(directory: SharedTestData.speech)
private let hasSpeechSet = speechSet != nil

/// The shared noisy real speech (`speech-noisy/`: a hissy recording, real devices' talkers in room noise, speech
/// over café noise).
private let noisySpeechSet: JitterBenchmark.Speech? = try? JitterBenchmark.loadSpeechSet(
    directory: SharedTestData.path("speech-noisy"), files: JitterBenchmark.noisySpeechSetFiles)

/// The first `seconds` of the speech set (or the noisy set) through one quality condition
/// (`JitterBenchmark.qualityScenarios`).
private func quality(
    _ name: String, seed: UInt64 = 1, seconds: Double = 20, noisy: Bool = false
) throws -> JitterBenchmark.ScenarioResult {
    let speech = try #require(noisy ? noisySpeechSet : speechSet).samples
    let scenario = try #require(
        JitterBenchmark.qualityScenarios(seconds: seconds, seed: seed).first { $0.name == name })
    return try JitterBenchmark.run(scenario, speech: speech)
}

// MARK: The measure and the reference

@Test(.tags(.slow), .scheduledByTags, .enabled(if: hasSpeechSet, "needs ../shared/testdata/speech (real speech)"))
func spectralDistanceIsZeroForACopyAndFindsItsDelay() throws {
    let speech = try #require(speechSet?.samples.prefix(5 * 16_000)).map { $0 }
    let delayed = [Int16](repeating: 0, count: 2_200) + speech  // 137.5 ms later, on a sub-frame phase
    let d = SpectralDistance.measure(reference: speech, degraded: delayed, sampleRate: 16_000)
    #expect(d.decibels < 0.01)
    #expect(abs(d.lagMilliseconds - 137.5) < 0.1)
    // Off every sub-frame phase (137 ms: 0.7 of a hop), the distance stays small.
    let off = SpectralDistance.measure(
        reference: speech, degraded: [Int16](repeating: 0, count: 2_192) + speech, sampleRate: 16_000)
    #expect(off.decibels < 0.5)
    #expect(d.frames > 100)
}

@Test(.tags(.slow), .scheduledByTags, .enabled(if: hasSpeechSet, "needs ../shared/testdata/speech (real speech)"))
func spectralDistanceGrowsWithDamage() throws {
    let speech = Array(try #require(speechSet).samples.prefix(5 * 16_000))
    func damaged(every period: Int) -> [Int16] {
        var x = speech
        var start = 0
        while start + 320 <= x.count {  // silence 20 ms out of every `period` frames
            for i in start..<(start + 320) { x[i] = 0 }
            start += period * 320
        }
        return x
    }
    let light = SpectralDistance.measure(reference: speech, degraded: damaged(every: 20), sampleRate: 16_000)
    let heavy = SpectralDistance.measure(reference: speech, degraded: damaged(every: 5), sampleRate: 16_000)
    #expect(light.decibels > 1)
    #expect(heavy.decibels > light.decibels * 1.5)
}

@Test(.tags(.slow), .scheduledByTags, .enabled(if: hasSpeechSet, "needs ../shared/testdata/speech (real speech)"))
func idealReceiverRecoversFromTheNextPacketsFECElseConceals() throws {
    let speech = Array(try #require(speechSet).samples.prefix(2 * 16_000))
    let encoder = try OpusEncoder(configuration: JitterSimulation.Configuration.defaultEncoder)
    var frames: [IdealReceiver.Frame] = []
    var packet = [UInt8](repeating: 0, count: OpusEncoder.maxPacketBytes)
    for k in 0..<(speech.count / 320) {
        let n = try encoder.encode(Array(speech[(k * 320)..<((k + 1) * 320)]), into: &packet)
        frames.append(IdealReceiver.Frame(payload: Array(packet[0..<n]), arrived: true))
    }
    let clean = try IdealReceiver.render(frames: frames, frameSamples: 320, sampleRate: 16_000)
    #expect(clean.decodedFrames == frames.count && clean.output.count == frames.count * 320)
    // Lose frame 40 (its successor carries FEC: recovered) and frames 60 and 61 (61's successor may have FEC:
    // 61 recovered, 60 concealed).
    var lossy = frames
    for k in [40, 60, 61] { lossy[k].arrived = false }
    let r = try IdealReceiver.render(frames: lossy, frameSamples: 320, sampleRate: 16_000)
    let withFEC = [41, 61, 62].filter { OpusPacket.hasFEC(frames[$0].payload) }.count
    #expect(withFEC >= 2)
    #expect(r.decodedFrames == frames.count - 3)
    #expect(r.fecRecoveredFrames == [40, 61].filter { OpusPacket.hasFEC(frames[$0 + 1].payload) }.count)
    #expect(r.fecRecoveredFrames + r.concealedFrames == 3)
}

// MARK: The jitter buffers against the ideal receiver (project measure)

@Test(.tags(.slow), .scheduledByTags, .enabled(if: hasSpeechSet, "needs ../shared/testdata/speech (real speech)"))
func withoutJitterTheAdaptiveBufferPlaysWhatTheIdealReceiverPlays() throws {
    let clean = try quality("loss0")
    #expect(clean.adaptive.distanceToIdeal.decibels < 0.05)
    #expect(clean.adaptive.stretchedSamplesPerMinute == 0)
    for name in ["loss5", "loss10"] {
        let r = try quality(name)
        print(
            "\(name): distance to ideal adaptive \(r.adaptive.distanceToIdeal.decibels) speex \(r.speex.distanceToIdeal.decibels), stretched/min \(r.adaptive.stretchedSamplesPerMinute), FEC \(r.adaptive.fecRecoveredFrames)/\(r.ideal.fecRecoveredFrames)"
        )
        // Look-ahead from the first loss: for every frame the ideal receiver recovers from FEC, the buffer's FEC
        // stands in for the whole frame too (two frames lost in a row included, and the first loss, whose
        // concealment while playout waited becomes the look-ahead's delay), and nothing is time-stretched
        // (measured 45/45 and 82/82 frames, 0.30 and 0.55 dB, 0 samples/min; with the look-ahead from the third
        // gap on, 42/45 and 80/82, 0.41 and 0.65 dB, 916 and 0).
        #expect(r.adaptive.fecRecoveredFrames >= r.ideal.fecRecoveredFrames - 1, "\(name)")
        #expect(r.adaptive.stretchedSamplesPerMinute == 0, "\(name)")
        #expect(r.adaptive.distanceToIdeal.decibels <= 0.65, "\(name)")
        #expect(r.adaptive.distanceToIdeal.decibels < r.speex.distanceToIdeal.decibels, "\(name)")
    }
}

/// The same on noisy speech, where the codec spends bits on the noise and concealment has a background to continue
/// (measured 0.20 / 0.32 / 0.56 dB at 0 / 5 / 10 % loss, FEC 45/45 and 84/84 frames; speexdsp 1.41 and 2.18 dB with
/// loss). Without loss the distance is not the clean set's zero although nothing is stretched or late.
@Test(
    .tags(.slow), .scheduledByTags,
    .enabled(if: noisySpeechSet != nil, "needs ../shared/testdata/speech-noisy (noisy real speech)"))
func onNoisySpeechTheAdaptiveBufferPlaysWhatTheIdealReceiverPlays() throws {
    let clean = try quality("loss0", noisy: true)
    print(
        "noisy loss0: distance to ideal \(clean.adaptive.distanceToIdeal.decibels), stretched/min \(clean.adaptive.stretchedSamplesPerMinute), late % \(clean.adaptive.lateLossPercent)"
    )
    #expect(clean.adaptive.distanceToIdeal.decibels < 0.3)
    for name in ["loss5", "loss10"] {
        let r = try quality(name, noisy: true)
        print(
            "noisy \(name): distance to ideal adaptive \(r.adaptive.distanceToIdeal.decibels) speex \(r.speex.distanceToIdeal.decibels), FEC \(r.adaptive.fecRecoveredFrames)/\(r.ideal.fecRecoveredFrames)"
        )
        // Whole frames from FEC from the first loss on, as above.
        #expect(r.adaptive.fecRecoveredFrames >= r.ideal.fecRecoveredFrames - 1, "\(name)")
        #expect(r.adaptive.distanceToIdeal.decibels <= 0.65, "\(name)")
        #expect(r.adaptive.distanceToIdeal.decibels < r.speex.distanceToIdeal.decibels, "\(name)")
    }
}

/// The adaptive buffer's and speexdsp's figures on one scenario, averaged over seeds 1–3.
private func meanOfThreeSeeds(_ name: String, noisy: Bool) throws -> (
    distance: Double, speexDistance: Double, stretched: Double, speexStretched: Double, delay: Double,
    speexDelay: Double
) {
    var m = (distance: 0.0, speexDistance: 0.0, stretched: 0.0, speexStretched: 0.0, delay: 0.0, speexDelay: 0.0)
    for seed: UInt64 in 1...3 {
        let r = try quality(name, seed: seed, noisy: noisy)
        m.distance += r.adaptive.distanceToIdeal.decibels / 3
        m.speexDistance += r.speex.distanceToIdeal.decibels / 3
        m.stretched += r.adaptive.stretchedSamplesPerMinute / 3
        m.speexStretched += r.speex.stretchedSamplesPerMinute / 3
        m.delay += r.adaptive.meanDelayMilliseconds / 3
        m.speexDelay += r.speex.meanDelayMilliseconds / 3
    }
    return m
}

/// Under 30 ms jitter on noisy speech, with and without loss, three draws each: the adaptive buffer no further from
/// the ideal receiver than speexdsp, and stretching less (measured 0.68 / 0.65 / 0.75 dB against speexdsp's 0.78 /
/// 0.86 / 0.89 at 0 / 5 / 10 % loss; 1.0 k / 1.1 k / 1.1 k samples a minute against 4.5 k / 4.5 k / 4.1 k).
@Test(
    .tags(.slow), .scheduledByTags,
    .enabled(if: noisySpeechSet != nil, "needs ../shared/testdata/speech-noisy (noisy real speech)"))
func onNoisySpeechUnderJitterTheAdaptiveBufferIsNoFurtherFromTheIdealThanSpeexdsp() throws {
    for name in ["jitter30", "jitter30_loss5", "jitter30_loss10"] {
        let m = try meanOfThreeSeeds(name, noisy: true)
        let (distance, speexDistance) = (m.distance, m.speexDistance)
        let (stretched, speexStretched) = (m.stretched, m.speexStretched)
        print(
            "noisy \(name): distance to ideal adaptive \(distance) speex \(speexDistance), stretched/min \(stretched) speex \(speexStretched)"
        )
        #expect(distance <= speexDistance, "\(name)")
        #expect(stretched <= 4_000 && stretched <= speexStretched, "\(name)")
    }
}

@Test(.tags(.slow), .scheduledByTags, .enabled(if: hasSpeechSet, "needs ../shared/testdata/speech (real speech)"))
func underJitterTheAdaptiveBufferIsNoFurtherFromTheIdealThanSpeexdsp() throws {
    for name in ["jitter30", "jitter30_loss5", "jitter30_loss10", "burst5", "burst10"] {
        let r = try quality(name)
        print(
            "\(name): distance to ideal adaptive \(r.adaptive.distanceToIdeal.decibels) speex \(r.speex.distanceToIdeal.decibels), stretched/min \(r.adaptive.stretchedSamplesPerMinute), delay \(r.adaptive.meanDelayMilliseconds) vs \(r.speex.meanDelayMilliseconds)"
        )
        #expect(r.adaptive.distanceToIdeal.decibels <= r.speex.distanceToIdeal.decibels + 0.3, "\(name)")
        #expect(r.adaptive.stretchedSamplesPerMinute <= 20_000, "\(name)")
    }
}

/// Under 30 ms jitter the damage PESQ hears is time-stretching, which the spectral distance barely sees (a splice
/// changes no band levels much). So the stretching itself is held, next to the distance: without the measures below
/// the adaptive buffer stretched 10–25 k samples a minute here (PESQ-WB 3.72 / 3.55 / 3.57 against
/// speexdsp's 4.19 / 3.95 / 3.63); with a 10 s delay histogram, a two-tick accelerate band under jitter, late
/// packets that skip what concealment covered and a look-ahead with hysteresis, about 1 k (PESQ-WB 4.22 / 4.08 /
/// 3.75 through `voice-engine simulate`, seeds 1–3). Three draws, 20 s each.
/// Mean end-to-end delay (ms, play − send) under 30 ms jitter, 3 × 20 s: measured 137.3 / 141.0 / 141.3; the
/// bounds stand 1.7–2.2 ms above. Through `voice-engine simulate` (65 s) the same buffer reports 165.7 / 174.0 /
/// 171.3 ms one-way (E-model: buffer level + packet time + codec look-ahead + network), and the output lags its input
/// by 155 / 161 / 160 ms (`acoustic-lag.py`): three measures of one delay.
private let delayBound: [String: Double] = ["jitter30": 139.5, "jitter30_loss5": 142.7, "jitter30_loss10": 143.0]

@Test(.tags(.slow), .scheduledByTags, .enabled(if: hasSpeechSet, "needs ../shared/testdata/speech (real speech)"))
func underJitterTheAdaptiveBufferStretchesAboutAsLittleAsSpeexdsp() throws {
    for name in ["jitter30", "jitter30_loss5", "jitter30_loss10"] {
        let m = try meanOfThreeSeeds(name, noisy: false)
        let (adaptive, speex, distance, speexDistance) = (m.stretched, m.speexStretched, m.distance, m.speexDistance)
        let (delay, speexDelay) = (m.delay, m.speexDelay)
        print(
            "\(name): stretched/min adaptive \(adaptive) speex \(speex), distance \(distance) speex \(speexDistance), mean delay \(delay) speex \(speexDelay) ms"
        )
        #expect(adaptive <= 4_000, "\(name): \(adaptive) stretched samples a minute")
        #expect(distance <= speexDistance + 0.1, "\(name)")
        // And not at more delay than speexdsp's on the same packets (end to end, play − send): measured 137.3 /
        // 141.0 / 141.3 ms against 145.2 / 144.8 / 146.8. The delay target
        // (about 155 ms one-way through `voice-engine simulate`) is not met; see Benchmarks/README.
        #expect(delay <= speexDelay, "\(name): mean delay \(delay) ms against speexdsp's \(speexDelay)")
        // And not above what it is today, by more than 2 ms (the runs are seeded): the delay bound under jitter.
        let bound = try #require(delayBound[name])
        #expect(delay <= bound, "\(name): mean delay \(delay) ms, bound \(bound)")
    }
}

// MARK: FEC in the speexdsp alternative

@Test(.tags(.slow), .scheduledByTags, .enabled(if: hasSpeechSet, "needs ../shared/testdata/speech (real speech)"))
func speexdspRecoversLostFramesFromFECWhenTheNextPacketIsThere() throws {
    let r = try quality("jitter30_loss10")
    #expect(r.speex.fecRecoveredFrames > 0)
    #expect(r.speex.fecRecoveredFrames <= r.ideal.fecRecoveredFrames)
}
