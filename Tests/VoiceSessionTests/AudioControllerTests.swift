import Testing
import VoiceCore

@testable import VoiceSession

@Suite struct AudioControllerTests {
    @Test func mixSaturatesInsteadOfWrapping() throws {
        let loud = [Int16](repeating: 20_000, count: 160)
        let controller = AudioController(deviceFormat: .mono16k)
        try controller.startPlayingSoundFile(SoundFile(wav: WAVFile(format: .mono16k, samples: loud)), loop: true)
        var call = [Int16](repeating: 20_000, count: 80) + [Int16](repeating: -20_000, count: 80)
        call.withUnsafeMutableBufferPointer { controller.mix(into: $0) }
        #expect(call[0..<80].allSatisfy { $0 == Int16.max })
        #expect(call[80...].allSatisfy { $0 == 0 })
        let quiet = [Int16](repeating: -30_000, count: 160)
        try controller.startPlayingSoundFile(SoundFile(wav: WAVFile(format: .mono16k, samples: quiet)), loop: true)
        var low = [Int16](repeating: -10_000, count: 160)
        low.withUnsafeMutableBufferPointer { controller.mix(into: $0) }
        #expect(low.allSatisfy { $0 == Int16.min })
    }

    @Test func mixesIntoCallAudioAndIntoEveryChannel() throws {
        let format = AudioFormat(sampleRate: 16_000, channels: 2)
        let controller = AudioController(deviceFormat: format)
        let ring = (0..<320).map { Int16($0 * 10) }
        try controller.startPlayingSoundFile(SoundFile(wav: WAVFile(format: .mono16k, samples: ring)), loop: false)
        var frame = AudioFrame(format: format, samples: (0..<320).map { _ in 7 })
        controller.mix(into: &frame)
        for i in 0..<160 {
            #expect(frame.samples[2 * i] == ring[i] + 7 && frame.samples[2 * i + 1] == ring[i] + 7)
        }
    }

    @Test func stopTakesEffectAtTheNextBlockAndToneAndFileAreIndependent() throws {
        let controller = AudioController(deviceFormat: .mono8k, toneProfile: .us)
        try controller.startPlayingSoundFile(
            SoundFile(wav: WAVFile(format: .mono8k, samples: [Int16](repeating: 3_000, count: 80))), loop: true)
        controller.startPlayingTone(.busy)
        var block = [Int16](repeating: 0, count: 80)
        func play() -> [Int16] {
            block.withUnsafeMutableBufferPointer { buffer in
                buffer.update(repeating: 0)
                controller.mix(into: buffer)
            }
            return block
        }
        #expect(play().contains { $0 != 3_000 }, "busy tone on top of the file")
        controller.stopPlayingTone()
        #expect(play().allSatisfy { $0 == 3_000 }, "file alone")
        controller.stopPlayingSoundFile()
        #expect(play().allSatisfy { $0 == 0 })
        // Many more commands than the queue holds while the audio thread does not run: the latest per voice
        // still arrives.
        for _ in 0..<100 {
            controller.startPlayingTone(.ringback)
            controller.stopPlayingTone()
        }
        controller.startPlayingTone(.ringback)
        _ = play()
        #expect(play().contains { $0 != 0 }, "the last command (start) was delivered")
        controller.stopPlayingTone()
        #expect(play().allSatisfy { $0 == 0 })
    }
}
