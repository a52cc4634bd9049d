import Foundation
import Testing
import VoiceCodec
import VoiceEngine
import VoiceLab
import VoiceNetSim
import VoiceRTP

/// When the peer's fmtp asks for in-band FEC, Opus carries it from the first packet (expecting
/// `LossAdaptationPolicy.initialExpectedLossPercent`) instead of waiting for the first RTCP report.
@Suite struct FECFromFirstPacketTests {
    @Test func negotiatedFECStartsWithTheConfiguredExpectedLoss() throws {
        var c = StreamTestSupport.configuration(seed: 60, fec: true)
        #expect(c.effectiveOpus.inbandFEC && c.effectiveOpus.expectedLossPercent == 5)
        c.lossAdaptation.initialExpectedLossPercent = 12
        #expect(c.effectiveOpus.expectedLossPercent == 12)
        let stream = try MediaStream(configuration: c)
        #expect(stream.encoderConfiguration.expectedLossPercent == 12)
        // Without FEC negotiated, or with an expected loss configured, nothing changes.
        #expect(StreamTestSupport.configuration(seed: 61).effectiveOpus.expectedLossPercent == 0)
        #expect(
            StreamTestSupport.configuration(seed: 62, fec: true, expectedLoss: 20).effectiveOpus.expectedLossPercent
                == 20)
        c.lossAdaptation.initialExpectedLossPercent = 101
        #expect(throws: MediaStreamError.self) { try c.validate() }
    }

    @Test func theFirstPacketsCarryFECBeforeAnyReport() throws {
        // 1.5 s of a call: the first RTCP report comes later than that, so only the initial setting can give FEC.
        func packetsWithFEC(fec: Bool) throws -> (withFEC: Int, sent: Int) {
            let path = try SimulatedPacketPath(aToB: .clean(delayMilliseconds: 20), bToA: .clean(delayMilliseconds: 20))
            path.recordsSentRTP = true
            let sim = try CallSimulation(
                configuration: .init(
                    streamA: StreamTestSupport.configuration(seed: 63, fec: fec),
                    streamB: StreamTestSupport.configuration(seed: 64),
                    inputA: StreamTestSupport.speech(seconds: 1.5, seed: 9), inputB: [], drainMilliseconds: 100),
                path: path)
            sim.streamB.isOnHold = true
            let result = sim.run()
            #expect(result.statisticsA.rtcpReceived == 0)
            let sent = path.sentRTP[.a] ?? []
            let withFEC = try sent.filter { datagram in
                try datagram.withUnsafeBytes { b in
                    let view = try RTPPacketView(b)
                    return OpusPacket.hasFEC(Array(b[view.payloadRange]))
                }
            }.count
            return (withFEC, sent.count)
        }
        let on = try packetsWithFEC(fec: true)
        #expect(on.sent >= 70)
        #expect(on.withFEC >= on.sent / 2)
        let off = try packetsWithFEC(fec: false)
        #expect(off.withFEC == 0)
    }
}
