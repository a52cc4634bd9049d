import Foundation
import Testing
import VoiceConference
import VoiceLab
import VoiceNetSim
import VoiceTestSupport

/// The room's "concealed" figure per participant (the server's report prints it) counts loss concealment only: a
/// participant that sends nothing (DTX while silent, a dormant listener) is not being concealed. On a perfect
/// network a room of 3 talkers of real speech and 2 silent listeners reports ≈ 0; with loss on the uplinks it
/// reports what the network took and in-band FEC did not recover.
@Suite("Conference concealment statistic")
struct ConferenceConcealmentStatisticsTests {
    static func run(uplinkLoss: Double?, seconds: Int, inputs: [[Int16]]) throws -> ConferenceSimulation.Result {
        let network = uplinkLoss.map {
            NetworkConditions(baseDelayMilliseconds: 20, jitter: .none, loss: .bernoulli(probability: $0), seed: 11)
        }
        var members = (0..<3).map { index -> ConferenceSimulation.Member in
            var member = ConferenceSimulation.Member(label: "talker\(index)", input: inputs[index], network: network)
            member.impaired = .up
            return member
        }
        members += (0..<2).map { index -> ConferenceSimulation.Member in
            var member = ConferenceSimulation.Member(label: "listener\(index)", network: network)
            member.impaired = .up
            return member
        }
        return try ConferenceSimulation(configuration: .init(members: members, durationMilliseconds: seconds * 1000))
            .run()
    }

    @Test(
        .enabled(
            if: SharedTestData.isPresent, "needs ../shared/testdata/speech (real speech with pauses, where DTX sets in)"
        ))
    func cleanRoomConcealsNothingAndALossyOneWhatTheNetworkLost() throws {
        let seconds = 12
        let inputs = try #require(conferenceSpeech(samples: seconds * 16_000), "speech recordings missing")
        let clean = try Self.run(uplinkLoss: nil, seconds: seconds, inputs: inputs)
        let lossy = try Self.run(uplinkLoss: 0.05, seconds: seconds, inputs: inputs)
        for (name, result) in [("perfect network", clean), ("5 % uplink loss", lossy)] {
            for p in result.participants {
                print(
                    "\(name) \(p.label): lost \(p.packetsLost)/\(p.packetsExpected) (\(String(format: "%.2f", 100 * p.lossRatio)) %),"
                        + " concealed \(p.concealedSamples * 1000 / 16_000) ms of \(p.playedSamples * 1000 / 16_000) ms played"
                        + " (\(String(format: "%.2f", 100 * p.concealmentRatio)) %), FEC \(p.fecRecoveredFrames) frames"
                        + " \(p.fecRecoveredSamples * 1000 / 16_000) ms,"
                        + " dormant ticks \(p.dormantTicks)")
            }
        }
        // Perfect network: every participant, talking or silent, is concealed for (almost) nothing.
        for p in clean.participants {
            #expect(p.packetsLost == 0)
            #expect(
                p.concealmentRatio < 0.005, "\(p.label) on a perfect network: \(100 * p.concealmentRatio) % concealed")
        }
        // 5 % loss on the uplinks: each participant's concealment is the audio the network took and FEC did not
        // bring back — 20 ms per lost frame less what was played from FEC copies — within a frame or two (a
        // restart's rounding), the silent listeners' lost DTX updates included (measured: exactly that). Before
        // the buffer looks ahead for FEC (early in the call) a loss shows only when the next packet comes, so
        // concealment plays the lost frame's start while playout waits, and its FEC copy fills only the rest:
        // such a frame is concealed, not recovered (`fecRecoveredFrames` leaves it out), and only its rest counts
        // as played from FEC.
        for p in lossy.participants {
            let lostMilliseconds = Double(p.packetsLost * 20)
            let fromFECMilliseconds = Double(p.fecRecoveredSamples) * 1000 / 16_000
            let unrecovered = lostMilliseconds - fromFECMilliseconds
            let concealedMilliseconds = Double(p.concealedSamples) * 1000 / 16_000
            #expect(
                concealedMilliseconds >= unrecovered - 20 && concealedMilliseconds <= unrecovered + 40,
                "\(p.label): concealed \(concealedMilliseconds) ms for \(p.packetsLost) lost, \(fromFECMilliseconds) ms played from FEC"
            )
            // A frame counted as recovered was played from FEC whole; the rests of concealed frames add to that.
            #expect(p.fecRecoveredSamples >= p.fecRecoveredFrames * 320 && p.fecRecoveredFrames <= p.packetsLost)
        }
        for p in lossy.participants.prefix(3) {
            #expect(p.packetsLost > 0 && p.concealedSamples > 0, "\(p.label): loss or concealment not reported")
        }
    }
}
