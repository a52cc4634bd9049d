import Foundation
import Testing
import VoiceEngine

/// The E-model against known points of ITU-T G.107, and the JSON report.
@Suite struct CallReportTests {
    @Test func defaultRatingGivesMOS441() {
        let r = EModel.opus.rating(oneWayDelayMilliseconds: 0, lossPercent: 0)
        #expect(abs(r - 93.2) < 1e-9)
        #expect(abs(EModel.mos(r: r) - 4.41) < 0.005)
    }

    @Test func mosFollowsG107AnnexBAtKnownPoints() {
        // Values of the G.107 R-to-MOS curve.
        #expect(abs(EModel.mos(r: 50) - 2.575) < 0.001)
        #expect(abs(EModel.mos(r: 70) - 3.597) < 0.001)
        #expect(abs(EModel.mos(r: 80) - 4.024) < 0.001)
        #expect(EModel.mos(r: -5) == 1)
        #expect(EModel.mos(r: 120) == 4.5)
    }

    @Test func delayImpairmentStartsAbove100MillisecondsAndGrows() {
        #expect(EModel.delayImpairment(oneWayMilliseconds: 80) == 0)
        #expect(EModel.delayImpairment(oneWayMilliseconds: 100) == 0)
        // Ta = 200 ms: X = 1, Idd = 25·(2^(1/6) − 3·(1 + 3^-6)^(1/6) + 2) ≈ 3.04.
        #expect(abs(EModel.delayImpairment(oneWayMilliseconds: 200) - 3.044) < 0.01)
        let i300 = EModel.delayImpairment(oneWayMilliseconds: 300)
        let i400 = EModel.delayImpairment(oneWayMilliseconds: 400)
        #expect(i300 > 3.044 && i400 > i300)
    }

    @Test func lossLowersRAndBurstsLowerItMore() {
        let m = EModel.opus
        // Ie = 0, Bpl = 20, Ppl = 5 %, random: Ie,eff = 95·5/(5 + 20) = 19.
        #expect(abs(m.effectiveEquipmentImpairment(lossPercent: 5) - 19) < 1e-9)
        #expect(abs(m.rating(oneWayDelayMilliseconds: 0, lossPercent: 5) - 74.2) < 1e-9)
        let r1 = m.rating(oneWayDelayMilliseconds: 50, lossPercent: 1)
        let r10 = m.rating(oneWayDelayMilliseconds: 50, lossPercent: 10)
        let r10burst = m.rating(oneWayDelayMilliseconds: 50, lossPercent: 10, burstRatio: 3)
        #expect(r1 > r10 && r10 > r10burst)
        #expect(EModel.mos(r: m.rating(oneWayDelayMilliseconds: 400, lossPercent: 20)) < 2.5)
    }

    @Test func burstRatioIsOneForIsolatedLossesAndAboveOneForRuns() {
        #expect(EModel.burstRatio(lostPackets: 0, lossRuns: 0, expectedPackets: 100) == 1)
        #expect(abs(EModel.burstRatio(lostPackets: 10, lossRuns: 10, expectedPackets: 1000) - 1) < 0.02)
        #expect(EModel.burstRatio(lostPackets: 30, lossRuns: 10, expectedPackets: 1000) > 2.8)
    }

    @Test func reportRoundTripsThroughJSONWithBalancedCounters() throws {
        var s = MediaStreamStatistics()
        s.expectedPackets = 500
        s.receivedPackets = 480
        s.lostPackets = 20
        s.lossRuns = 8
        s.roundTripSamples = 2
        s.roundTripSumMilliseconds = 120
        s.roundTripMilliseconds = 61
        s.roundTripMinMilliseconds = 59
        s.roundTripMaxMilliseconds = 61
        s.jitterBuffer.delaySumMilliseconds = 600
        s.jitterBuffer.ticks = 10
        s.jitterBuffer.fecRecoveredFrames = 5
        let config = MediaStreamConfiguration(seed: 1)
        let report = CallReport(
            statistics: s, configuration: config, ssrc: 1, remoteSSRC: 2, durationSeconds: 10,
            codecLookaheadMilliseconds: 6.5)
        // One-way: 60 ms buffer + 20 ms ptime + 6.5 ms lookahead + RTT/2 = 30 ms.
        #expect(abs(report.quality.oneWayDelayMilliseconds - 116.5) < 1e-9)
        #expect(abs(report.quality.packetLossPercent - 3) < 1e-9)  // (20 − 5) / 500
        #expect(report.quality.assumptions.contains { $0.contains("RTT / 2") })
        let data = try report.jsonData()
        let decoded = try JSONDecoder().decode(CallReport.self, from: data)
        #expect(decoded.rtp.received + decoded.rtp.lost == decoded.rtp.expected)
        #expect(decoded.quality.rFactor == report.quality.rFactor)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["schemaVersion"] as? Int == 1)
        for key in ["rtp", "rtcp", "drops", "jitter", "rtt", "jitterBuffer", "fec", "echo", "quality"] {
            #expect(object[key] != nil, "missing \(key)")
        }
    }
}
