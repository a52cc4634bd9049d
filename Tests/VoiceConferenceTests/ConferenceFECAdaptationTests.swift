import Testing
import VoiceConference
import VoiceCore
import VoiceEngine
import VoiceLab
import VoiceNetSim

/// The room's encoders follow the loss their listeners report in RTCP receiver reports: the shared encoder (one
/// packet for every listener) the worst listener's, each talker's own encoder its own listener's.
@Suite("Conference FEC adaptation")
struct ConferenceFECAdaptationTests {
    /// Two talkers and two listeners; `lossyDown` members lose 10 % of what the room sends them.
    static func run(lossyDown: Set<String>) throws -> (ConferenceRoomStatistics, [String: MediaStreamStatistics]) {
        let names = ["talker0", "talker1", "listener0", "listener1"]
        let members = names.enumerated().map { i, name in
            let lossy = lossyDown.contains(name)
            var m = ConferenceSimulation.Member(
                label: name,
                input: i < 2 ? talk(i == 0 ? 440 : 900, milliseconds: 15_000, peak: 9_000, phase: Double(i)) : [],
                network: NetworkConditions(
                    baseDelayMilliseconds: 20, loss: lossy ? .bernoulli(probability: 0.10) : .none))
            m.impaired = .down
            return m
        }
        let sim = try ConferenceSimulation(configuration: .init(members: members, durationMilliseconds: 15_000))
        let result = sim.run()
        var streams: [String: MediaStreamStatistics] = [:]
        for p in sim.room.participants { streams[p.label] = p.stream.statistics }
        return (result.room, streams)
    }

    @Test func sharedEncoderFollowsTheWorstListenerAndTalkersTheirOwn() throws {
        let (room, streams) = try Self.run(lossyDown: ["listener0", "talker1"])
        // The shared mix goes to listener0 (10 % lost) and listener1 (none): FEC for the worse one.
        #expect(room.sharedEncoderFEC, "shared encoder without FEC although a listener reports 10 % loss")
        #expect((6...20).contains(room.sharedExpectedLossPercent), "expected loss \(room.sharedExpectedLossPercent) %")
        #expect(room.sharedFECAdaptations >= 1)
        // Talkers' own encoders: talker1's listener loses 10 %, talker0's nothing.
        let t0 = try #require(streams["talker0"])
        let t1 = try #require(streams["talker1"])
        #expect(
            t1.encoderFECEnabled && (6...20).contains(t1.encoderExpectedLossPercent),
            "talker1: \(t1.encoderExpectedLossPercent) %")
        #expect(
            !t0.encoderFECEnabled && t0.encoderExpectedLossPercent == 0, "talker0: \(t0.encoderExpectedLossPercent) %")
    }

    @Test func sharedEncoderDropsFECWhenNobodyLoses() throws {
        // Starts with FEC at the policy's initial 5 % (useinbandfec=1) and turns it off on clean reports.
        let (room, _) = try Self.run(lossyDown: [])
        #expect(!room.sharedEncoderFEC && room.sharedExpectedLossPercent == 0)
        #expect(room.sharedFECAdaptations >= 1)
    }
}
