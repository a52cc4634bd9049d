import Testing
import VoiceCore

@testable import VoiceDevices
import VoiceTestSupport

@Suite struct ClockRateEstimatorTests {
    /// A device running `ppm` fast, observed every 10 ms for `seconds`, each timestamp jittered by up to
    /// `jitterMicroseconds` (scheduling noise).
    func synthetic(nominal: Double, ppm: Double, seconds: Double, jitterMicroseconds: Double, seed: UInt64)
        -> ClockRateEstimator
    {
        var estimator = ClockRateEstimator(nominalRate: nominal)
        var random = SplitMix64(seed: seed)
        let actual = nominal * (1 + ppm * 1e-6)
        let period = Int64(nominal / 100)
        let start: Int64 = 123_456_789_000
        var frames: Int64 = 0
        while Double(frames) / actual < seconds {
            frames += period
            let trueTime = Double(frames) / actual
            let jitter = random.nextSigned() * jitterMicroseconds * 1e-6
            estimator.add(timeNanoseconds: start + Int64((trueTime + jitter) * 1e9), frames: frames)
        }
        return estimator
    }

    @Test func estimatesFastDeviceWithinFewPPMDespiteJitter() throws {
        let estimator = synthetic(nominal: 48_000, ppm: 120, seconds: 60, jitterMicroseconds: 500, seed: 1)
        let ppm = try #require(estimator.deviationPPM)
        #expect(abs(ppm - 120) < 3, "estimated \(ppm) ppm")
        let rate = try #require(estimator.estimatedRate)
        #expect(abs(rate - 48_000 * (1 + 120e-6)) < 0.15)
    }

    @Test func estimatesSlowDeviceAtAnotherRate() throws {
        let estimator = synthetic(nominal: 16_000, ppm: -75, seconds: 120, jitterMicroseconds: 300, seed: 7)
        let ppm = try #require(estimator.deviationPPM)
        #expect(abs(ppm + 75) < 3, "estimated \(ppm) ppm")
    }

    @Test func relativeDriftOfCaptureAgainstPlayout() throws {
        let capture = synthetic(nominal: 48_000, ppm: 120, seconds: 60, jitterMicroseconds: 200, seed: 3)
        let playout = synthetic(nominal: 44_100, ppm: -30, seconds: 60, jitterMicroseconds: 200, seed: 4)
        let drift = try #require(ClockRateEstimator.relativeDriftPPM(capture: capture, playout: playout))
        // (1 + 120e-6) / (1 - 30e-6) - 1 ≈ 150.0045 ppm
        #expect(abs(drift - 150.0045) < 4, "relative drift \(drift) ppm")
    }

    @Test func noEstimateUntilTwoDistinctTimes() {
        var estimator = ClockRateEstimator(nominalRate: 48_000)
        #expect(estimator.estimatedRate == nil)
        estimator.add(ClockObservation(time: .milliseconds(10), frames: 480))
        #expect(estimator.estimatedRate == nil)
        estimator.add(ClockObservation(time: .milliseconds(10), frames: 960))
        #expect(estimator.estimatedRate == nil)
        estimator.add(ClockObservation(time: .milliseconds(30), frames: 1440))
        #expect(estimator.estimatedRate != nil)
        estimator.reset()
        #expect(estimator.count == 0 && estimator.estimatedRate == nil)
    }

    @Test func manuallyClockedDeviceMeasuresExactlyNominal() throws {
        let clock = ManualClock()
        let device = try NullAudioDevice(direction: .capture, format: .mono48k, clocking: .manual(clock))
        try device.start()
        var estimator = ClockRateEstimator(nominalRate: 48_000)
        for _ in 0..<200 {
            clock.advance(by: .milliseconds(10))
            device.tick()
            _ = drain(device.ring)
            estimator.add(try #require(device.latestClockObservation))
        }
        let ppm = try #require(estimator.deviationPPM)
        #expect(abs(ppm) < 0.01)
    }
}

@Suite struct PeriodScheduleTests {
    @Test func periodsDueAreExactAtNonIntegerNanosecondPeriods() {
        // 441 frames at 44.1 kHz = 10 ms exactly; 480 frames at 44.1 kHz = 10.884353... ms.
        let s = PeriodSchedule(sampleRate: 44_100, periodFrames: 480)
        let end0 = s.endOfPeriod(0)
        #expect(s.periodsDue(elapsedNanoseconds: end0 - 1) == 0)
        #expect(s.periodsDue(elapsedNanoseconds: end0) == 1)
        // After a simulated day the schedule has not drifted: 86 400 s × 44 100 / 480 periods.
        let day: Int64 = 86_400 * 1_000_000_000
        #expect(s.periodsDue(elapsedNanoseconds: day) == 86_400 * 44_100 / 480)
        let k: Int64 = 7_937_999
        #expect(s.periodsDue(elapsedNanoseconds: s.endOfPeriod(k)) == k + 1)
        #expect(s.periodsDue(elapsedNanoseconds: s.endOfPeriod(k) - 1) == k)
    }
}
