import Foundation
import Testing
import VoiceConference
import VoiceCore
import VoiceLab
import VoiceNetSim
import VoiceTestSupport

/// Three speech recordings (16 kHz mono) from the shared test data, each looped or cut to `samples`.
func conferenceSpeech(samples: Int) -> [[Int16]]? {
    let names = ["jfk_16k_mono.wav", "pjsip_input_16k.wav", "pystoi_clean_16k.wav"]
    let loaded = names.compactMap { try? WAVFile.read(path: SharedTestData.speech + "/" + $0).int16Samples }
    guard loaded.count == 3 else { return nil }
    return loaded.map { s in (0..<samples).map { s[$0 % s.count] } }
}

@Suite("Conference mixer quality")
struct ConferenceQualityTests {
    /// The ideal mix a participant should hear: the other talkers' clean speech, summed.
    static func idealMix(_ inputs: [[Int16]], excluding i: Int, samples: Int) -> [Int16] {
        var mix = [Int32](repeating: 0, count: samples)
        for (j, input) in inputs.enumerated() where j != i {
            for k in 0..<samples { mix[k] += Int32(input[k]) }
        }
        return mix.map { Int16(clamping: $0) }
    }

    /// A 5-participant room (3 talkers of real speech, 2 silent DTX listeners), every leg through the network
    /// simulator with loss and jitter: each participant's received mix stays close to the ideal mix of the others'
    /// clean speech (the project's spectral distance, against the same room on a perfect network as the yardstick),
    /// and the mixer never clips.
    @Test(.enabled(if: SharedTestData.isPresent, "needs ../shared/testdata/speech (real speech)"))
    func fiveParticipantsThroughLossAndJitter() throws {
        let seconds = 8
        let samples = seconds * 16_000
        let inputs = try #require(conferenceSpeech(samples: samples), "speech recordings missing")
        let network = NetworkConditions(
            baseDelayMilliseconds: 30, jitter: .normal(meanMilliseconds: 10, standardDeviationMilliseconds: 10),
            loss: .bernoulli(probability: 0.05), seed: 7)
        func run(_ network: NetworkConditions?) throws -> ConferenceSimulation.Result {
            var members = (0..<3).map {
                ConferenceSimulation.Member(label: "talker\($0)", input: inputs[$0], network: network)
            }
            members += (0..<2).map { ConferenceSimulation.Member(label: "listener\($0)", network: network) }
            return try ConferenceSimulation(
                configuration: .init(members: members, durationMilliseconds: seconds * 1000)
            )
            .run()
        }
        let clean = try run(nil)
        let lossy = try run(network)
        for r in [clean, lossy] {
            #expect(r.room.clippedSamples == 0, "the mixer clipped")
            for p in r.participants { #expect(p.limiterClippedSamples == 0) }
        }
        for i in 0..<5 {
            let ideal = Self.idealMix(inputs, excluding: min(i, 3), samples: samples)
            let reference = Array(ideal[16_000...])
            let cleanDistance = SpectralDistance.measure(
                reference: reference, degraded: Array(clean.received[i].prefix(samples)[16_000...]), sampleRate: 16_000)
            let lossyDistance = SpectralDistance.measure(
                reference: reference, degraded: Array(lossy.received[i].prefix(samples)[16_000...]), sampleRate: 16_000)
            print(
                "participant \(i): spectral distance to the ideal mix \(cleanDistance.decibels) dB (perfect network),"
                    + " \(lossyDistance.decibels) dB (5 % loss, jitter); lag \(lossyDistance.lagMilliseconds) ms")
            #expect(cleanDistance.decibels < 6, "participant \(i) on a perfect network: \(cleanDistance.decibels) dB")
            #expect(lossyDistance.decibels < 9, "participant \(i) through loss/jitter: \(lossyDistance.decibels) dB")
            #expect(lossyDistance.decibels < cleanDistance.decibels + 4)
        }
        // Loss and concealment are visible per participant in the room's statistics.
        for p in lossy.participants.prefix(3) {
            #expect(p.packetsLost > 0 && p.concealedSamples > 0, "\(p.label): loss/concealment not reported")
        }
    }
}
