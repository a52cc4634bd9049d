import Testing
import VoiceCore

@testable import VoiceDevices
import VoiceTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// The real libasound2 code path through ALSA's `null` PCM (no sound card needed): open, negotiate, run
/// threads, stop and close.
@Suite(.tags(.live), .scheduledByTags, .serialized) struct ALSANullPCMTests {
    init() { ALSADiagnostics.silenceLibraryMessages() }

    @Test(arguments: AudioDirection.allCases)
    func opensNullPCMAndNegotiatesRequestedFormat(direction: AudioDirection) throws {
        let device = try ALSADevice(
            name: "null", direction: direction, format: AudioFormat(sampleRate: 16_000, channels: 2))
        #expect(device.format == AudioFormat(sampleRate: 16_000, channels: 2))
        #expect(device.periodFrames == 160)
        #expect(device.negotiated.bufferFrames == 640)
        #expect(device.negotiated.pcmType == "NULL")
        #expect(device.isTimerPaced)
        #expect(device.state == .stopped)
        device.close()
        #expect(device.state == .closed)
    }

    @Test func captureThreadDeliversSilentPeriodsIntoTheRing() async throws {
        let device = try ALSADevice(name: "null", direction: .capture, format: .mono48k)
        try device.start()
        #expect(device.state == .running)
        var received: [Int16] = []
        #expect(
            waitUntil {
                received += drain(device.ring)
                return device.statistics.periods >= 5
            })
        device.stop()
        #expect(device.state == .stopped)
        received += drain(device.ring)
        let stats = device.statistics
        #expect(stats.frames == stats.periods * 480)
        #expect(received.count == Int(stats.frames))
        #expect(received.allSatisfy { $0 == 0 })
        #expect(stats.xruns == 0)
        #expect(stats.realtime != .notRequested)  // granted or denied, recorded either way
        let observation = try #require(device.latestClockObservation)
        #expect(observation.frames == stats.frames)
        // A stopped device starts again.
        try device.start()
        #expect(waitUntil { device.statistics.periods >= stats.periods + 2 })
        device.close()
        #expect(device.state == .closed)
        #expect(await collect(device.events).isEmpty)
    }

    @Test func playoutThreadPullsFromTheRingAndPlaysSilenceWhenItRunsDry() throws {
        var config = ALSADevice.Configuration()
        config.realtimePriority = nil
        let device = try ALSADevice(name: "null", direction: .playout, format: .mono16k, configuration: config)
        #expect(device.ring.write(contentsOf: [Int16](repeating: 5, count: 160 * 3)) == 480)
        try device.start()
        #expect(waitUntil { device.statistics.periods >= 6 })
        device.close()
        let stats = device.statistics
        #expect(device.ring.availableToRead == 0)
        #expect(stats.realtime == .notRequested)
        // Everything not supplied by the chain was played as silence (the loop holds one period in hand).
        #expect(stats.ringUnderflowSamples >= stats.frames - 480)
        #expect(stats.ringUnderflowSamples > 0)
    }

    @Test func devicePacedNullPCMRunsUnthrottledAndStillStops() throws {
        var config = ALSADevice.Configuration()
        config.pacing = .device
        config.realtimePriority = nil  // a spinning SCHED_FIFO thread would starve a 2-core machine
        let device = try ALSADevice(name: "null", direction: .capture, format: .mono48k, configuration: config)
        #expect(!device.isTimerPaced)
        try device.start()
        #expect(waitUntil { device.statistics.periods >= 1_000 })
        device.close()
        let stats = device.statistics
        #expect(stats.frames == stats.periods * 480)
        #expect(stats.ringOverflowSamples > 0)  // nobody read the ring
    }

    @Test func stopWhileThreadsAreBetweenPeriodsLeavesNothingRunning() throws {
        // Many start/stop cycles: each stop wakes a thread that is sleeping towards its next period.
        let devices = try [AudioDirection.capture, .playout].map {
            try ALSADevice(name: "null", direction: $0, format: .mono16k)
        }
        for _ in 0..<20 {
            for device in devices { try device.start() }
            for device in devices { device.stop() }
        }
        for device in devices {
            #expect(device.state == .stopped)
            device.close()
        }
    }

    @Test func openingNonexistentPCMNamesTheDeviceAndTheCall() throws {
        let error = #expect(throws: ALSAError.self) {
            _ = try ALSADevice(name: "nonexistent_pcm", direction: .playout, format: .mono48k)
        }
        let e = try #require(error)
        #expect(
            e
                == .callFailed(
                    call: "snd_pcm_open", device: "nonexistent_pcm", code: -ENOENT, message: "No such file or directory"
                ))
        #expect(e.identifier == "alsa.noSuchDevice")
        #expect(e.description.contains("\"nonexistent_pcm\""))
        #expect(e.description.contains("voice-engine devices"))
        #expect(e.interruptionReason == nil)
    }

    @Test func openingMissingCardFails() throws {
        let error = #expect(throws: ALSAError.self) {
            _ = try ALSADevice(name: "hw:99,0", direction: .capture, format: .mono16k)
        }
        #expect(error?.identifier == "alsa.noSuchDevice")
        #expect(error?.code.map { $0 < 0 } == true)
        #expect(error?.description.contains("snd_pcm_open on ALSA device \"hw:99,0\" failed") == true)
    }

    @Test func deviceWithoutS16ListsWhatItSupports() throws {
        // A μ-law plugin over a null slave accepts only MU_LAW from its client: real alsa-lib refusing S16_LE.
        var config = ALSADevice.Configuration()
        config.alsaConfiguration = """
            pcm.quiet { type null }
            pcm.mulawonly { type mulaw slave { pcm quiet format S16_LE } }
            """
        let error = #expect(throws: ALSAError.self) {
            _ = try ALSADevice(name: "mulawonly", direction: .playout, format: .mono8k, configuration: config)
        }
        guard case .unsupportedConfiguration(let device, let constraint, let supported) = try #require(error) else {
            Issue.record("expected unsupportedConfiguration, got \(String(describing: error))")
            return
        }
        #expect(device == "mulawonly")
        #expect(constraint.contains("S16_LE"))
        #expect(supported.formats == ["MU_LAW"])
        #expect(error?.identifier == "alsa.unsupportedConfiguration")
        #expect(error?.description.contains("formats [MU_LAW]") == true)
        #expect(error?.description.contains("rates") == true)
    }

    @Test func localConfigurationDefinesAUsablePCM() throws {
        var config = ALSADevice.Configuration()
        config.alsaConfiguration = "pcm.mine { type null }"
        let device = try ALSADevice(name: "mine", direction: .capture, format: .mono8k, configuration: config)
        #expect(device.format == .mono8k)
        #expect(device.periodFrames == 80)
        device.close()
    }

    @Test func enumerationListsTheNullPCMWithBothDirections() throws {
        let list = ALSADeviceList.current()
        let null = try #require(list.pcms.first { $0.name == "null" })
        #expect(null.directions == [.capture, .playout])
        #expect(list.printable.contains("null (capture, playout)"))
        #expect(list.printable.contains("Sound cards:"))
    }
}
