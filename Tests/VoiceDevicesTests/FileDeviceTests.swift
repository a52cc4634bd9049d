import Foundation
import Testing
import VoiceCore

@testable import VoiceDevices
import VoiceTestSupport

@Suite(.tags(.live), .scheduledByTags) struct FileDeviceTests {
    func writeInputWAV(samples: [Int16], format: AudioFormat) throws -> String {
        let path = temporaryPath("mic.wav")
        try WAVFile.write(pcm16: samples, format: format, to: path)
        return path
    }

    @Test func wavMicrophoneDeliversExactSamplesThenSilenceAndEndEvent() async throws {
        var random = SplitMix64(seed: 42)
        let format = AudioFormat.mono16k
        let input = (0..<(160 * 3 + 70)).map { _ in random.nextSample() }  // 3 periods and a bit
        let path = try writeInputWAV(samples: input, format: format)
        defer { unlink(path) }
        let clock = ManualClock()
        let mic = try FileCaptureDevice(path: path, clocking: .manual(clock), endOfFile: .silence)
        #expect(mic.format == format && mic.periodFrames == 160 && mic.direction == .capture)
        try mic.start()
        #expect(mic.tick() == 0)
        var received: [Int16] = []
        for _ in 0..<6 {
            clock.advance(by: .milliseconds(10))
            #expect(mic.tick() == 1)
            received += drain(mic.ring)
        }
        #expect(received.count == 6 * 160)
        #expect(Array(received.prefix(input.count)) == input)
        #expect(received.dropFirst(input.count).allSatisfy { $0 == 0 })
        #expect(mic.statistics.periods == 6 && mic.statistics.frames == 960)
        mic.close()
        #expect(mic.state == .closed)
        #expect(await collect(mic.events) == [.endOfInput])
    }

    @Test func wavMicrophoneLoops() throws {
        let format = AudioFormat(sampleRate: 8_000, channels: 2)
        let input: [Int16] = (0..<(2 * 100)).map { Int16($0) }  // 100 stereo frames, period = 80 frames
        let path = try writeInputWAV(samples: input, format: format)
        defer { unlink(path) }
        let clock = ManualClock()
        let mic = try FileCaptureDevice(path: path, format: format, clocking: .manual(clock), endOfFile: .loop)
        try mic.start()
        clock.advance(by: .milliseconds(50))
        #expect(mic.tick() == 5)
        let received = drain(mic.ring)
        #expect(received.count == 5 * 80 * 2)
        let expected = (0..<received.count).map { input[$0 % input.count] }
        #expect(received == expected)
    }

    @Test func tickTransfersExactlyThePeriodsDue() throws {
        let clock = ManualClock(start: .seconds(5))
        let device = try NullAudioDevice(direction: .capture, format: .mono48k, clocking: .manual(clock))
        #expect(device.tick() == 0)  // not started
        try device.start()
        clock.advance(by: .milliseconds(25))
        #expect(device.tick() == 2)
        #expect(device.tick() == 0)
        clock.advance(by: .milliseconds(5))
        #expect(device.tick() == 1)
        clock.advance(by: .microseconds(9_999))
        #expect(device.tick() == 0)
        clock.advance(by: .microseconds(1))
        #expect(device.tick() == 1)
        #expect(device.statistics.periods == 4)
        device.stop()
        clock.advance(by: .milliseconds(100))
        #expect(device.tick() == 0)
        #expect(device.state == .stopped)
    }

    @Test func speakerWAVHoldsExactlyWhatWasPlayed() throws {
        var random = SplitMix64(seed: 9)
        let format = AudioFormat(sampleRate: 48_000, channels: 2)
        let path = temporaryPath("speaker.wav")
        defer { unlink(path) }
        let clock = ManualClock()
        let speaker = try FilePlayoutDevice(path: path, format: format, clocking: .manual(clock))
        try speaker.start()
        var played: [Int16] = []
        for period in 0..<10 {
            // The chain delivers 10 ms blocks, except it misses period 6 (the device plays silence then).
            if period != 6 {
                let block = (0..<960).map { _ in random.nextSample() }
                #expect(speaker.ring.write(contentsOf: block) == 960)
                played += block
            } else {
                played += [Int16](repeating: 0, count: 960)
            }
            clock.advance(by: .milliseconds(10))
            #expect(speaker.tick() == 1)
        }
        try speaker.finalize()
        #expect(speaker.statistics.ringUnderflowSamples == 960)
        let file = try WAVFile.read(path: path)
        #expect(file.format == format)
        #expect(file.int16Samples == played)
    }

    @Test func realTimeMicrophoneDeliversTheFileInOrder() async throws {
        let format = AudioFormat.mono16k
        let input: [Int16] = (0..<16_000).map { Int16(truncatingIfNeeded: $0 * 7) }
        let path = try writeInputWAV(samples: input, format: format)
        defer { unlink(path) }
        let mic = try FileCaptureDevice(path: path, clocking: .realTime, endOfFile: .loop)
        try mic.start()
        #expect(mic.state == .running)
        var received: [Int16] = []
        #expect(
            waitUntil {
                received += drain(mic.ring)
                return received.count >= 5 * 160
            })
        mic.stop()
        received += drain(mic.ring)
        #expect(mic.state == .stopped)
        #expect(received.count == Int(mic.statistics.frames))
        #expect(received == Array(input.prefix(received.count)))
        let observation = try #require(mic.latestClockObservation)
        #expect(observation.frames == mic.statistics.frames)
        mic.close()
    }

    @Test func realTimeNullPlayoutDrainsTheRingAndStopsPromptlyOnClose() async throws {
        let speaker = try NullAudioDevice(
            direction: .playout, format: .mono16k, clocking: .realTime, realtimePriority: 5)
        #expect(speaker.ring.write(contentsOf: [Int16](repeating: 1, count: 320)) == 320)
        try speaker.start()
        #expect(waitUntil { speaker.statistics.periods >= 4 })
        speaker.close()
        #expect(speaker.state == .closed)
        #expect(speaker.ring.availableToRead == 0)
        let stats = speaker.statistics
        #expect(stats.ringUnderflowSamples == stats.frames - 320)
        #expect(stats.realtime != .notRequested)
        #expect(throws: AudioDeviceError.closed(device: "null")) { try speaker.start() }
    }

    @Test func captureCountsOverflowWhenTheChainDoesNotRead() throws {
        let clock = ManualClock()
        let ring = SampleRing(capacity: 480 * 2)
        let device = try NullAudioDevice(direction: .capture, format: .mono48k, clocking: .manual(clock), ring: ring)
        try device.start()
        clock.advance(by: .milliseconds(50))
        #expect(device.tick() == 5)
        #expect(device.statistics.ringOverflowSamples == 3 * 480)
        #expect(ring.availableToRead == 960)
    }

    @Test func transferOnePeriodMovesOnePeriodRegardlessOfClock() throws {
        let clock = ManualClock()
        let device = try NullAudioDevice(direction: .capture, format: .mono16k, clocking: .manual(clock))
        for _ in 0..<3 {
            device.transferOnePeriod()
            #expect(device.ring.discardAll() == 160)
        }
        #expect(device.statistics.periods == 3)
    }

    @Test func missingWAVAndWrongFormatAreClearErrors() throws {
        #expect(throws: AudioDeviceError.wav(.fileNotFound(path: "/nonexistent/mic.wav"))) {
            _ = try FileCaptureDevice(path: "/nonexistent/mic.wav", clocking: .realTime)
        }
        let path = try writeInputWAV(samples: [1, 2, 3], format: .mono8k)
        defer { unlink(path) }
        let error = #expect(throws: AudioDeviceError.self) {
            _ = try FileCaptureDevice(path: path, format: .mono16k, clocking: .realTime)
        }
        #expect(error == .formatMismatch(device: path, requested: .mono16k, found: .mono8k))
        #expect(error?.description.contains("8000 Hz mono") == true)
        #expect(throws: AudioDeviceError.self) {
            _ = try FilePlayoutDevice(path: "/nonexistent-dir/x.wav", format: .mono8k, clocking: .realTime)
        }
        #expect(throws: AudioDeviceError.invalidPeriod(milliseconds: 3, format: AudioFormat(sampleRate: 44_100))) {
            _ = try NullAudioDevice(
                direction: .capture, format: AudioFormat(sampleRate: 44_100), periodMilliseconds: 3, clocking: .realTime
            )
        }
    }
}
