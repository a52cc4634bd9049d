import Foundation
import Testing
import VoiceEngine
import VoiceLab

/// Two streams through the simulated network: audio quality, SRTP, loss, FEC and RTCP.
@Suite struct MediaStreamCallTests {
    @Test func roundTripOnCleanLinkReproducesSpeechBothWaysOverSRTP() throws {
        let (srtpA, srtpB) = StreamTestSupport.srtpPair()
        let inputA = StreamTestSupport.speech(seconds: 5, seed: 1)
        let inputB = StreamTestSupport.speech(seconds: 5, seed: 2)
        let path = try SimulatedPacketPath(
            aToB: .clean(delayMilliseconds: 30), bToA: .clean(delayMilliseconds: 30))
        let sim = try CallSimulation(
            configuration: .init(
                streamA: StreamTestSupport.configuration(seed: 10, srtp: srtpA),
                streamB: StreamTestSupport.configuration(seed: 11, srtp: srtpB), inputA: inputA,
                inputB: inputB),
            path: path)
        let result = sim.run()
        let atB = StreamTestSupport.alignedSegmentalSNR(
            reference: inputA, test: result.playedB, sampleRate: 16_000)
        let atA = StreamTestSupport.alignedSegmentalSNR(
            reference: inputB, test: result.playedA, sampleRate: 16_000)
        print(
            "clean SRTP round trip: segSNR A→B \(atB.snr) dB lag \(atB.lag), B→A \(atA.snr) dB lag \(atA.lag)"
        )
        #expect(atB.snr > 8)
        #expect(atA.snr > 8)
        // Mouth-to-ear: 30 ms network + buffer + framing; well under 200 ms on a clean link.
        #expect(atB.lag > 30 * 16 && atB.lag < 200 * 16)
        for s in [result.statisticsA, result.statisticsB] {
            #expect(s.drops.total == 0)
            #expect(s.lostPackets == 0)
            #expect(s.packetsReceived >= 240)
            #expect(s.jitterBuffer.concealedSamples < 16_000 / 10)  // < 100 ms concealed (start-up only)
        }
        // Everything sent arrived, except what is still in flight when the run stops (sent in the last 30 ms).
        let inFlightAB = path.fates(from: .a).filter { $0.arrival! > sim.clock.now - .milliseconds(10) }
            .count
        #expect(result.statisticsA.packetsSent - inFlightAB == result.statisticsB.packetsReceived)
        #expect(inFlightAB <= 2)
    }

    @Test func fivePercentLossIsRepairedByFECAndConcealmentAndCountersBalance() throws {
        let input = StreamTestSupport.speech(seconds: 8, seed: 3)
        let lossy = NetworkConditions(
            baseDelayMilliseconds: 25, loss: .bernoulli(probability: 0.05), seed: 5)
        let path = try SimulatedPacketPath(
            aToB: .conditions(lossy), bToA: .clean(delayMilliseconds: 25))
        let sim = try CallSimulation(
            configuration: .init(
                streamA: StreamTestSupport.configuration(seed: 20, fec: true, expectedLoss: 10),
                streamB: StreamTestSupport.configuration(seed: 21), inputA: input, inputB: []),
            path: path)
        let result = sim.run()
        let b = result.statisticsB
        let networkLost = path.fates(from: .a).filter(\.isLost).count
        print(
            "5 % loss: network lost \(networkLost), B lost \(b.lostPackets) expected \(b.expectedPackets) FEC \(b.jitterBuffer.fecRecoveredFrames) concealed \(b.jitterBuffer.concealedSamples)"
        )
        #expect(networkLost > 10)
        #expect(b.jitterBuffer.fecRecoveredFrames > 0)
        #expect(b.jitterBuffer.concealedSamples > 0)
        // RFC 3550 A.3 balance, and the loss the receiver counts is the loss the network caused.
        #expect(b.receivedPackets + b.lostPackets == b.expectedPackets)
        #expect(abs(b.lostPackets - networkLost) <= 2)
        #expect(b.expectedPackets >= result.statisticsA.packetsSent - 3)
        let snr = StreamTestSupport.alignedSegmentalSNR(
            reference: input, test: result.playedB, sampleRate: 16_000)
        print("5 % loss segSNR \(snr.snr)")
        #expect(snr.snr > 4)
        // The report agrees with the counters.
        let report = CallReport(stream: sim.streamB, durationSeconds: 9)
        #expect(report.rtp.received + report.rtp.lost == report.rtp.expected)
        #expect(report.quality.packetLossPercent < report.rtp.lossPercent)  // FEC lowered the residual loss
    }

    @Test func rtcpRoundTripTimeIsTwiceTheOneWayDelay() throws {
        let path = try SimulatedPacketPath(
            aToB: .clean(delayMilliseconds: 40), bToA: .clean(delayMilliseconds: 40))
        let sim = try CallSimulation(
            configuration: .init(
                streamA: StreamTestSupport.configuration(seed: 30),
                streamB: StreamTestSupport.configuration(seed: 31),
                inputA: StreamTestSupport.speech(seconds: 14, seed: 4),
                inputB: StreamTestSupport.speech(seconds: 14, seed: 5)),
            path: path)
        let result = sim.run()
        for s in [result.statisticsA, result.statisticsB] {
            print(
                "RTT \(String(describing: s.roundTripMilliseconds)) over \(s.roundTripSamples) reports, RTCP sent \(s.rtcpSent)"
            )
            let rtt = try #require(s.roundTripMilliseconds)
            #expect(abs(rtt - 80) < 1)
            #expect(s.rtcpSent >= 2 && s.rtcpReceived >= 2)
            #expect(s.remoteFractionLost == 0)
        }
    }

    @Test func reportedLossTurnsFECOnAndACleanLinkLeavesItOff() throws {
        func run(loss: Double) throws -> MediaStreamStatistics {
            let conditions = NetworkConditions(
                baseDelayMilliseconds: 20, loss: .bernoulli(probability: loss), seed: 8)
            let path = try SimulatedPacketPath(
                aToB: .conditions(conditions), bToA: .clean(delayMilliseconds: 20))
            let sim = try CallSimulation(
                configuration: .init(
                    streamA: StreamTestSupport.configuration(seed: 40),
                    streamB: StreamTestSupport.configuration(seed: 41),
                    inputA: StreamTestSupport.speech(seconds: 14, seed: 6), inputB: []),
                path: path)
            sim.streamB.isOnHold = true
            return sim.run().statisticsA
        }
        let lossy = try run(loss: 0.10)
        print(
            "10 % loss: FEC \(lossy.encoderFECEnabled) expected \(lossy.encoderExpectedLossPercent) smoothed \(lossy.smoothedRemoteLossPercent)"
        )
        #expect(lossy.encoderFECEnabled)
        #expect(lossy.encoderExpectedLossPercent >= 2 && lossy.encoderExpectedLossPercent <= 30)
        #expect(lossy.fecAdaptations >= 1)
        #expect(try #require(lossy.remoteFractionLost) > 0.02)
        let clean = try run(loss: 0)
        #expect(!clean.encoderFECEnabled)
        #expect(clean.encoderExpectedLossPercent == 0)
        #expect(clean.fecAdaptations == 0)
        #expect(clean.rtcpReceived >= 1)
    }

    @Test func echoCancellerAtBRemovesMostOfTheEchoOfA() throws {
        // B is silent; its microphone hears only A's voice played through the room. What B sends back is echo.
        let input = StreamTestSupport.speech(seconds: 8, seed: 7)
        let path = try SimulatedPacketPath(
            aToB: .clean(delayMilliseconds: 20), bToA: .clean(delayMilliseconds: 20))
        let sim = try CallSimulation(
            configuration: .init(
                streamA: StreamTestSupport.configuration(seed: 50),
                streamB: StreamTestSupport.configuration(seed: 51, voiceProcessing: true), inputA: input,
                inputB: [],
                echoPathB: .syntheticRoom(sampleRate: 16_000)),
            path: path)
        let result = sim.run()
        let erle = try #require(result.statisticsB.erleDecibels)
        let micLevel = StreamTestSupport.level(result.microphoneB[32_000...])
        let returned = StreamTestSupport.level(result.playedA[32_000...])
        print("echo: ERLE \(erle) dB, mic \(micLevel) dBFS, echo returned to A \(returned) dBFS")
        // The canceller is being tuned elsewhere; these floors say "clearly working", not "at target".
        #expect(erle > 6)
        #expect(returned < micLevel - 6)
    }
}
