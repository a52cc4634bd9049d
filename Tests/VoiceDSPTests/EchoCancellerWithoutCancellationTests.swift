import Foundation
import Testing
import VoiceCore
import VoiceDSP
import VoiceTestSupport

private let speechPath = SharedTestData.repository.appendingPathComponent("TestVectors/speech_like_16k.wav").path

/// `EchoCanceller.Stage.echoFilter` off: noise suppression and VAD only, the far end ignored (the
/// configuration `voice-bench live --voice-processing --no-echo-canceller` compares with baresip's speex_pp).
@Suite("Echo canceller switched off")
struct EchoCancellerWithoutCancellationTests {
    /// Mean square of the output and microphone over the last `seconds` of an echo-only call (the microphone holds
    /// the far end 40 ms late at half level), and the share of blocks judged speech.
    private func run(cancelEcho: Bool, speech: [Int16], seconds: Int = 8) throws -> (
        out: Double, mic: Double, active: Double, delay: Double?
    ) {
        var configuration = EchoCancellerConfiguration()
        if !cancelEcho { configuration.stages.remove(.echoFilter) }
        let canceller = try EchoCanceller(configuration: configuration)
        let block = canceller.blockSize
        let delay = 640
        var far = [Int16](repeating: 0, count: block)
        var mic = [Int16](repeating: 0, count: block)
        var out = [Int16](repeating: 0, count: block)
        var outEnergy = 0.0, micEnergy = 0.0, activeBlocks = 0
        let blocks = seconds * 100
        for b in 0..<blocks {
            for i in 0..<block {
                let t = b * block + i
                far[i] = speech[t % speech.count]
                mic[i] = t >= delay ? speech[(t - delay) % speech.count] / 2 : 0
            }
            let active = try far.withUnsafeBufferPointer { f in
                try mic.withUnsafeBufferPointer { m in
                    try out.withUnsafeMutableBufferPointer { o in try canceller.process(mic: m, farEnd: f, into: o) }
                }
            }
            if active { activeBlocks += 1 }
            if b >= blocks - 300 {
                for i in 0..<block {
                    outEnergy += Double(out[i]) * Double(out[i])
                    micEnergy += Double(mic[i]) * Double(mic[i])
                }
            }
        }
        return (
            outEnergy, micEnergy, Double(activeBlocks) / Double(blocks), canceller.statistics.estimatedDelayMilliseconds
        )
    }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: speechPath), "TestVectors/speech_like_16k.wav missing"))
    func theMicrophoneGetsNoiseSuppressionAndVADButNoCancellation() throws {
        let speech = try WAVFile(contentsOfFile: speechPath).int16Samples
        let on = try run(cancelEcho: true, speech: speech)
        let off = try run(cancelEcho: false, speech: speech)
        let onDB = 10 * log10(on.out / on.mic), offDB = 10 * log10(off.out / off.mic)
        // The canceller removes the echo; switched off, the echo (speech to the noise suppressor) passes nearly whole.
        #expect(onDB < -10, "canceller on: output \(onDB) dB against the microphone")
        #expect(abs(offDB) < 3, "canceller off: output \(offDB) dB against the microphone")
        // Off, the far end is not even looked at: no delay is ever estimated. On, it is found.
        #expect(off.delay == nil)
        #expect(on.delay != nil)
        // The voice-activity decision still runs on the microphone's speech.
        #expect(off.active > 0.3, "speech judged active in \(off.active) of the blocks")
    }

    @Test func silenceIsNotJudgedSpeech() throws {
        var configuration = EchoCancellerConfiguration()
        configuration.stages.remove(.echoFilter)
        let canceller = try EchoCanceller(configuration: configuration)
        let silent = [Int16](repeating: 0, count: canceller.blockSize)
        var out = [Int16](repeating: 1, count: canceller.blockSize)
        var active = 0
        for _ in 0..<300 {
            let a = try silent.withUnsafeBufferPointer { s in
                try out.withUnsafeMutableBufferPointer { o in try canceller.process(mic: s, farEnd: s, into: o) }
            }
            if a { active += 1 }
        }
        #expect(active == 0)
        #expect(out.allSatisfy { $0 == 0 })
    }
}
