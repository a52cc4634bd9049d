import Foundation
import Testing
import VoiceCore

@testable import VoiceSession

@Suite struct AudioSessionActorTests {
    @Test func engineStartSetsCategoryOnceAndPublishesUpdates() async throws {
        let clock = ManualClock()
        let session = AudioSession(clock: clock)
        #expect(await session.startEngine() == [.setCategory(.playAndRecord), .setMode(.voiceChat)])
        clock.advance(by: .milliseconds(250))
        #expect(await session.startEngine() == [])
        await #expect(throws: AudioSessionError.categoryCannotRecord(.playback)) {
            try await session.send(.hostSetCategory(.playback))
            try await session.send(.callEstablished("A"))
        }
        var iterator = session.updates.makeAsyncIterator()
        let first = await iterator.next()
        let second = await iterator.next()
        let third = await iterator.next()
        let fourth = await iterator.next()
        #expect(first?.event == .engineStarted && first?.time == .zero)
        #expect(second?.effects == [] && second?.time == .milliseconds(250))
        #expect(third?.event == .hostSetCategory(.playback) && third?.state.category == .playback)
        #expect(fourth?.refusal == .categoryCannotRecord(.playback))
        #expect(await session.state.category == .playback, "the engine never sets the category back itself")
    }

    @Test func interruptionShorterThanTimeoutResumesWithBuffersFlushed() async throws {
        let clock = ManualClock()
        let session = AudioSession(clock: clock)
        await session.startEngine()
        try await session.send(.callEstablished("A"))
        clock.advance(by: .milliseconds(5_000))
        #expect(
            await session.handle(.interruptionBegan(reason: .suspended))
                == [.stopCapture, .stopPlayout, .deactivateSession])
        #expect(await session.state.isInterrupted)
        #expect(await session.interruptionDeadline == .milliseconds(35_000))
        for _ in 0..<29 {
            clock.advance(by: .milliseconds(1_000))
            #expect(await session.tick() == [])
        }
        clock.advance(by: .milliseconds(999))
        let resumed = await session.handle(.interruptionEnded)
        #expect(resumed == [.activateSession, .setVoiceProcessing(true), .flushBuffers, .startPlayout, .startCapture])
        clock.advance(by: .milliseconds(10_000))
        let report = try await session.callEnded("A", cause: .remoteHangup)
        #expect(await session.lastReport == report)
        #expect(!(await session.state.isActive))
        #expect(report.endCause == .remoteHangup)
        #expect(report.interruptionCount == 1)
        #expect(abs(report.interruptedDuration - 29.999) < 1e-9)
        #expect(abs(report.callDuration - 44.999) < 1e-9)
    }

    @Test func interruptionLongerThanTimeoutEndsTheCall() async throws {
        let clock = ManualClock()
        let session = AudioSession(clock: clock)
        await session.startEngine()
        try await session.send(.callEstablished("A"))
        await session.handle(.interruptionBegan(reason: .deviceBusy))
        clock.advance(by: .milliseconds(29_999))
        #expect(await session.tick() == [])
        clock.advance(by: .milliseconds(1))
        let effects = await session.tick()
        #expect(effects.first == .endCall("A", cause: .interruptionTimeout))
        #expect(await session.state.phase == .idle)
        #expect(!(await session.state.isActive))
        let report = try #require(await session.lastReport)
        #expect(report.endCause == .interruptionTimeout && report.interruptedDuration == 30)
        // The device coming back later does not resurrect the call.
        #expect(await session.handle(.interruptionEnded) == [])
        #expect(await session.state.phase == .idle)
    }

    @Test func configurableTimeout() async throws {
        let clock = ManualClock()
        let session = AudioSession(
            clock: clock, configuration: AudioSessionConfiguration(interruptionTimeout: .milliseconds(2_000)))
        await session.startEngine()
        try await session.send(.callEstablished("A"))
        try await session.send(.interruptionBegan(.hostApplication))
        clock.advance(by: .milliseconds(2_000))
        #expect(await session.tick().contains(.endCall("A", cause: .interruptionTimeout)))
    }

    @Test func deviceEventsDriveInterruptionsThroughMonitor() async throws {
        let clock = ManualClock()
        let session = AudioSession(clock: clock)
        await session.startEngine()
        try await session.send(.callEstablished("A"))
        let (events, continuation) = AsyncStream.makeStream(of: DeviceEvent.self)
        continuation.yield(.xrun(count: 1))
        continuation.yield(.interruptionBegan(reason: .deviceLost))
        continuation.yield(.endOfInput)
        continuation.finish()
        await session.monitor(events)
        let s = await session.state
        #expect(s.interruption?.source == .device(.deviceLost))
        #expect(!s.isCaptureRunning && !s.isActive)
        #expect(s.phase.call?.interruptionCount == 1)
    }

    @Test func progressToneStartsWhenRingingAndStopsWhenEstablished() async throws {
        let format = AudioFormat(sampleRate: 16_000)
        let controller = AudioController(deviceFormat: format, toneProfile: .eu)
        let session = AudioSession(clock: ManualClock(), controller: controller)
        var block = [Int16](repeating: 0, count: format.samplesPerBlock)
        func playBlock() -> Int {
            block.withUnsafeMutableBufferPointer { buffer in
                buffer.update(repeating: 0)
                controller.mix(into: buffer)
                return buffer.map { abs(Int($0)) }.max()!
            }
        }
        #expect(playBlock() == 0)
        await session.startEngine()
        try await session.callProgressing("A")
        var peak = 0
        for _ in 0..<20 { peak = max(peak, playBlock()) }  // 200 ms of EU ringback: 425 Hz, on for 1 s
        #expect(peak > 8_000, "ringback is audible while the remote side rings")
        try await session.callEstablished("A")
        for _ in 0..<10 { #expect(playBlock() == 0, "the progress tone stops when the call is established") }
    }

    @Test func reportIsCodable() throws {
        let report = CallStatisticsReport(
            callID: "CA123", endCause: .interruptionTimeout, startedAt: 1, establishedAt: 2.5, endedAt: 40,
            setupDuration: 1.5, callDuration: 37.5, interruptionCount: 1, interruptedDuration: 30,
            category: .playAndRecord, mode: .voiceChat)
        let data = try JSONEncoder().encode(report)
        let json = String(decoding: data, as: UTF8.self)
        #expect(json.contains("\"callID\":\"CA123\"") && json.contains("\"endCause\":\"interruptionTimeout\""))
        #expect(try JSONDecoder().decode(CallStatisticsReport.self, from: data) == report)
        for source: InterruptionSource in [.hostApplication, .device(.deviceBusy)] {
            let decoded = try JSONDecoder().decode(InterruptionSource.self, from: JSONEncoder().encode(source))
            #expect(decoded == source)
        }
    }
}
