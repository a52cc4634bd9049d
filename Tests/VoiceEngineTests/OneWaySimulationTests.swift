import Foundation
import Testing
import VoiceEngine
import VoiceLab

/// The one-way simulation behind `voice-engine simulate`, on the project's own test vectors.
@Suite struct OneWaySimulationTests {
    static let speech = "TestVectors/speech_like_16k.wav"

    @Test(
        .enabled(
            if: FileManager.default.fileExists(atPath: speech), "TestVectors/speech_like_16k.wav missing")
    )
    func cleanOneWayCallReproducesTheInputAtItsRate() throws {
        let file = try WAVFile.read(path: Self.speech)
        let result = try OneWaySimulation.run(
            input: file.int16Samples, sampleRate: file.format.sampleRate,
            options: .init(network: .clean(delayMilliseconds: 30), voiceProcessing: false))
        #expect(result.sampleRate == file.format.sampleRate)
        #expect(result.output.count >= file.int16Samples.count)
        let snr = StreamTestSupport.alignedSegmentalSNR(
            reference: file.int16Samples, test: result.output, sampleRate: 16_000)
        print("simulate clean: segSNR \(snr.snr) dB, lag \(snr.lag) samples")
        #expect(snr.snr > 8)
        let r = result.receiverReport
        #expect(r.rtp.lost == 0 && r.drops.total == 0)
        #expect(r.rtp.received + r.rtp.lost == r.rtp.expected)
        #expect(r.stream.srtpSuite == "AES_CM_128_HMAC_SHA1_80")
        #expect(r.quality.mos > 4.3)
    }

    @Test(
        .enabled(
            if: FileManager.default.fileExists(atPath: speech), "TestVectors/speech_like_16k.wav missing")
    )
    func replayingTheWrittenTraceGivesTheSameCall() throws {
        let file = try WAVFile.read(path: Self.speech)
        let conditions = NetworkConditions(
            baseDelayMilliseconds: 30,
            jitter: .normal(meanMilliseconds: 10, standardDeviationMilliseconds: 10),
            loss: .bernoulli(probability: 0.03), seed: 4)
        let first = try OneWaySimulation.run(
            input: file.int16Samples, sampleRate: 16_000,
            options: .init(network: .conditions(conditions), voiceProcessing: false))
        let trace = try NetworkTrace(csv: first.trace.csv)
        let second = try OneWaySimulation.run(
            input: file.int16Samples, sampleRate: 16_000,
            options: .init(network: .trace(trace), voiceProcessing: false))
        #expect(first.receiverReport.rtp.lost > 0)
        #expect(second.receiverReport.rtp.lost == first.receiverReport.rtp.lost)
        #expect(second.receiverReport.rtp.expected == first.receiverReport.rtp.expected)
        #expect(second.output == first.output)
    }

    @Test func unsupportedRateIsRejected() {
        #expect(throws: MediaStreamError.self) {
            _ = try OneWaySimulation.run(
                input: [Int16](repeating: 0, count: 1_000), sampleRate: 4_000,
                options: .init(network: .clean()))
        }
    }
}
