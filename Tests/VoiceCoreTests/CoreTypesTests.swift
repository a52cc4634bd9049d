import Testing
import VoiceCore

@Suite struct AudioFormatTests {
    @Test(arguments: [(8_000, 80), (16_000, 160), (48_000, 480), (44_100, 441), (12_000, 120)])
    func tenMillisecondBlockHoldsRateOverHundredSamples(rate: Int, expected: Int) {
        #expect(AudioFormat(sampleRate: rate).samplesPerBlock == expected)
    }

    @Test func interleavedSampleCountsIncludeEveryChannel() {
        let stereo = AudioFormat(sampleRate: 48_000, channels: 2)
        #expect(stereo.samplesPerChannel(milliseconds: 20) == 960)
        #expect(stereo.interleavedSamples(milliseconds: 20) == 1_920)
        #expect(AudioFormat.mono16k.interleavedSamples(milliseconds: 60) == 960)
    }

    @Test func describesRateAndChannelLayout() {
        #expect(AudioFormat.mono8k.description == "8000 Hz mono")
        #expect(AudioFormat(sampleRate: 48_000, channels: 2).description == "48000 Hz stereo")
        #expect(AudioFormat(sampleRate: 16_000, channels: 6).description == "16000 Hz 6 ch")
    }
}

@Suite struct AudioFrameTests {
    @Test func newFrameIsOneSilentTenMillisecondBlock() {
        let frame = AudioFrame(format: AudioFormat(sampleRate: 48_000, channels: 2), timestamp: 960)
        #expect(frame.samples.count == 960)
        #expect(frame.samplesPerChannel == 480)
        #expect(frame.samples.allSatisfy { $0 == 0 })
        #expect(frame.timestamp == 960)
    }

    @Test func writesInPlaceAndSilenceClearsEverySample() {
        var frame = AudioFrame(format: .mono16k)
        frame.withUnsafeMutableSamples { buffer in
            for i in buffer.indices { buffer[i] = Int16(i + 1) }
        }
        #expect(frame.samples.first == 1)
        #expect(frame.samples.last == 160)
        #expect(frame.withUnsafeSamples { $0.reduce(0) { $0 + Int($1) } } == 160 * 161 / 2)
        frame.silence()
        #expect(frame.samples.count == 160)
        #expect(frame.samples.allSatisfy { $0 == 0 })
    }

    @Test func wrapsExistingSamples() {
        let samples = (0..<80).map { Int16($0 * 3) }
        let frame = AudioFrame(format: .mono8k, samples: samples, timestamp: 80)
        #expect(frame.samples == samples)
        #expect(frame.timestamp == 80)
    }
}

@Suite struct MediaClockTests {
    @Test func mediaTimeConvertsUnitsAndDoesArithmetic() {
        #expect(MediaTime.milliseconds(20).nanoseconds == 20_000_000)
        #expect(MediaTime.microseconds(125).nanoseconds == 125_000)
        #expect(MediaTime.seconds(1.5).nanoseconds == 1_500_000_000)
        #expect((MediaTime.milliseconds(30) - .milliseconds(10)).milliseconds == 20)
        var t = MediaTime.zero
        t += .milliseconds(10)
        #expect(t.seconds == 0.01)
        #expect(MediaTime.milliseconds(1) < .milliseconds(2))
    }

    @Test func manualClockMovesOnlyWhenAdvancedOrSet() {
        let clock = ManualClock(start: .milliseconds(100))
        #expect(clock.now == .milliseconds(100))
        #expect(clock.now == .milliseconds(100))
        clock.advance(by: .milliseconds(10))
        #expect(clock.now == .milliseconds(110))
        clock.advance(by: .zero)
        #expect(clock.now == .milliseconds(110))
        clock.set(.seconds(2))
        #expect(clock.now == .seconds(2))
    }

    @Test func manualClockIsUsableThroughTheProtocol() {
        let clock = ManualClock()
        let injected: any MediaClock = clock
        for _ in 0..<100 { clock.advance(by: .milliseconds(10)) }
        #expect(injected.now == .seconds(1))
    }

    @Test func monotonicClockNeverGoesBackwards() {
        let clock = MonotonicClock()
        var previous = clock.now
        var backwards = 0
        var advanced = false
        for _ in 0..<100_000 {
            let now = clock.now
            if now < previous { backwards += 1 }
            if now > previous { advanced = true }
            previous = now
        }
        #expect(backwards == 0)
        #expect(advanced)
    }
}
