import Foundation
import Testing
import VoiceClient
import VoiceTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// A live call's health reaching the app through Kamailio: quality reports while the media flows, the media
/// timeout ending the call when the peer vanishes without a BYE (baresip killed with SIGKILL), a hangup's media
/// stopping at once when the peer no longer answers the BYE, and a speaker that vanishes mid-call ending it after
/// the interruption timeout. Ports 26105–26106, 26110–26112, 26115.
@Suite(
    "VoiceClient call health", .tags(.interop, .live), .scheduledByTags, .serialized, .timeLimit(.minutes(2)),
    .enabled(if: serviceUnavailableReason == nil, "\(serviceUnavailableReason ?? "")"),
    .enabled(if: BaresipPeer.isInstalled, "baresip is not installed (make test-deps installs it)"))
struct ClientCallHealthTests {
    /// The quality reports and the end a call's `updates` carried, collected as they come.
    final class Updates: @unchecked Sendable {
        private let lock = NSLock()
        private var quality: [(ContinuousClock.Instant, CallQuality)] = []
        private var ended: ContinuousClock.Instant?

        init(_ call: Call) {
            let updates = call.updates
            Task { [self] in
                for await effect in updates {
                    switch effect {
                    case .qualityUpdated(let report): lock.withLock { quality.append((.now, report)) }
                    case .stateChanged(.ended): lock.withLock { ended = .now }
                    default: break
                    }
                }
            }
        }

        var reports: [(ContinuousClock.Instant, CallQuality)] { lock.withLock { quality } }
        var endedAt: ContinuousClock.Instant? { lock.withLock { ended } }
    }

    @Test func qualityIsReportedAndAPeerKilledMidCallEndsTheCallAsATimeoutWithinTheMediaTimeout() async throws {
        try await withService(sipPort: 26110) { service in
            try await ClientPeerCallTests().withBaresip(port: 26111, in: service.directory) { _, baresip in
                var configuration = service.configuration()
                configuration.audio = CallAudioDevices(
                    microphone: "null", speaker: "null", sampleRate: 16_000, voiceProcessing: false)
                configuration.health = CallHealthConfiguration(mediaTimeout: .seconds(3), qualityInterval: .seconds(1))
                let alice = try VoiceClient(userID: "alice", configuration: configuration) { id in service.sign(id) }
                await alice.start()
                let call = try await alice.callSIP("b@127.0.0.1:26111")
                let updates = Updates(call)
                try await waitFor(call, .established)
                try await Task.sleep(for: .seconds(4.5))
                let reports = updates.reports
                print("quality from baresip: " + reports.map { "\($0.1)" }.joined(separator: "; "))
                #expect(reports.count >= 3, "\(reports.count) quality reports in 4.5 s at 1 s intervals")
                #expect(reports.allSatisfy { $0.1.lossPercent < 1 && $0.1.networkQuality == .good })
                if reports.count >= 2 {
                    let gap = reports[reports.count - 1].0 - reports[reports.count - 2].0
                    #expect(gap > .milliseconds(700) && gap < .milliseconds(1600), "quality interval \(gap)")
                }

                // The peer vanishes: no BYE, no RTCP BYE, nothing more on the wire.
                let killedAt = ContinuousClock.now
                kill(-baresip.pid, SIGKILL)
                try await waitFor(call, .ended, timeout: .seconds(8))
                let ended = try #require(updates.endedAt)
                let details = await call.details
                print(
                    "peer killed: the call ended \(ended - killedAt) later: \(details.endCause as Any) \(details.error as Any)"
                )
                #expect(details.endCause == .timeout)
                #expect(details.error == .network("no media received for 3 s"))
                #expect(ended - killedAt >= .seconds(2.5) && ended - killedAt < .seconds(4.5))
                await alice.terminate()
            }
        }
    }

    /// A peer that stops answering (baresip stopped with SIGSTOP: its socket stays open, so nothing refuses the
    /// BYE) answers the BYE only when the transaction times out (about 30 s): the hangup stops the media at once.
    @Test func aHangUpToAPeerThatNoLongerAnswersStopsTheMediaAtOnce() async throws {
        try await withService(sipPort: 26105) { service in
            try await ClientPeerCallTests().withBaresip(port: 26106, in: service.directory) { _, baresip in
                var configuration = service.configuration()
                configuration.audio = CallAudioDevices(
                    microphone: "null", speaker: "null", sampleRate: 16_000, voiceProcessing: false)
                let alice = try VoiceClient(userID: "alice", configuration: configuration) { id in service.sign(id) }
                await alice.start()
                let call = try await alice.callSIP("b@127.0.0.1:26106")
                try await waitFor(call, .established)
                kill(-baresip.pid, SIGSTOP)
                defer { kill(-baresip.pid, SIGCONT) }
                let hungUpAt = ContinuousClock.now
                try await call.hangup()
                try await waitFor(call, .ended)
                while await call.mediaReport == nil, ContinuousClock.now < hungUpAt + .seconds(1) {
                    try await Task.sleep(for: .milliseconds(20))
                }
                let stopped = ContinuousClock.now - hungUpAt
                print("hangup to a stopped peer: the media stopped \(stopped) later")
                #expect(await call.mediaReport != nil, "the media still ran 1 s after the hangup")
                #expect(await call.details.endCause == .localHangup)
                kill(-baresip.pid, SIGCONT)
                await alice.terminate()
            }
        }
    }

    /// Two clients on loopback: both ends of the call get quality reports every second, all *good*.
    @Test func bothClientsGetQualityReportsWhileTheCallRuns() async throws {
        try await withService(sipPort: 26112) { service in
            var configuration = service.configuration()
            configuration.audio = CallAudioDevices(
                microphone: "null", speaker: "null", sampleRate: 16_000, voiceProcessing: false)
            configuration.health = CallHealthConfiguration(mediaTimeout: .seconds(20), qualityInterval: .seconds(1))
            let alice = try VoiceClient(userID: "alice", configuration: configuration) { id in service.sign(id) }
            let bob = try VoiceClient(userID: "bob", configuration: configuration) { id in service.sign(id) }
            let (call, incoming, _) = try await ringingCall(from: alice, to: bob, "bob")
            let callerUpdates = Updates(call), calleeUpdates = Updates(incoming.call)
            try await incoming.call.answer()
            try await waitFor(call, .established)
            try await Task.sleep(for: .seconds(3.5))
            for (side, updates) in [("caller", callerUpdates), ("callee", calleeUpdates)] {
                let reports = updates.reports.map(\.1)
                #expect(reports.count >= 2, "\(side): \(reports.count) quality reports in 3.5 s")
                #expect(reports.allSatisfy { $0.networkQuality == .good && $0.mos > 4.3 }, "\(side): \(reports)")
            }
            try await call.hangup()
            try await waitFor(incoming.call, .ended)
            #expect(await incoming.call.details.endCause == .remoteHangup)
            await alice.terminate()
            await bob.terminate()
        }
    }

    /// The reading end of a FIFO, drained on a thread of its own until ``close()``: what alsa-lib's `file` plugin
    /// writes a speaker's audio into. Closing it makes the plugin's next write fail (EPIPE), which it reports to
    /// the device as EIO — the device is gone, as when a USB headset is pulled.
    final class FIFOReader: @unchecked Sendable {
        private let fd: Int32
        private let closed = NSLock()
        private var isClosed = false
        private(set) var bytes = 0

        init(path: String) throws {
            guard mkfifo(path, 0o600) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
            fd = open(path, O_RDONLY | O_NONBLOCK)
            guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
            Thread.detachNewThread { [self] in
                var buffer = [UInt8](repeating: 0, count: 65_536)
                while true {
                    let done = closed.withLock { () -> Bool in
                        if isClosed { return true }
                        let got = read(fd, &buffer, buffer.count)
                        if got > 0 { bytes += got }
                        return false
                    }
                    if done { return }
                    usleep(5_000)
                }
            }
        }

        var received: Int { closed.withLock { bytes } }

        func close() {
            closed.withLock {
                guard !isClosed else { return }
                isClosed = true
                _ = Glibc.close(fd)
            }
        }
    }

    @Test func aSpeakerThatVanishesMidCallEndsTheCallAfterTheInterruptionTimeout() async throws {
        // The plugin's failed write raises SIGPIPE first; a process playing into a pipe ignores it.
        signal(SIGPIPE, SIG_IGN)
        try await withService(sipPort: 26115) { service in
            let fifo = service.directory.appendingPathComponent("speaker.fifo").path
            let reader = try FIFOReader(path: fifo)
            defer { reader.close() }
            var configuration = service.configuration()
            configuration.interruptionTimeout = .seconds(2)
            configuration.audio = CallAudioDevices(
                microphone: "null", speaker: "plug:'file:FILE=\(fifo),FORMAT=raw'", sampleRate: 16_000,
                voiceProcessing: false)
            let alice = try VoiceClient(userID: "alice", configuration: configuration) { id in service.sign(id) }
            let bob = try service.client("bob")
            let (call, incoming, _) = try await ringingCall(from: alice, to: bob, "bob")
            let updates = call.updates
            let interruptions = Task {
                var seen: [CallEffect] = []
                for await effect in updates {
                    if case .mediaInterrupted = effect { seen.append(effect) }
                    if effect == .mediaResumed { seen.append(effect) }
                }
                return seen
            }
            try await incoming.call.answer()
            try await waitFor(call, .established)
            try await Task.sleep(for: .seconds(1.5))
            #expect(reader.received > 16_000, "alice's ALSA speaker wrote \(reader.received) bytes in 1.5 s")

            let pulledAt = ContinuousClock.now
            reader.close()
            // The pipe is gone too: the busy tone after the failure opens a plain file there instead of waiting
            // for a reader that never comes.
            unlink(fifo)
            try await waitFor(call, .ended, timeout: .seconds(8))
            let endedAfter = ContinuousClock.now - pulledAt
            let details = await call.details
            print(
                "speaker gone: the call ended \(endedAfter) later: \(details.endCause as Any) \(details.error as Any)")
            #expect(await interruptions.value == [.mediaInterrupted(.deviceLost)])
            #expect(details.endCause == .interruptionTimeout)
            #expect(details.error == .media("the audio devices were interrupted for 2 s"))
            #expect(details.report?.endCause == .interruptionTimeout)
            #expect(endedAfter >= .seconds(1.9) && endedAfter < .seconds(4))
            // The BYE reached bob: a consistent end on both sides.
            try await waitFor(incoming.call, .ended)
            #expect(await incoming.call.details.endCause == .remoteHangup)
            await alice.terminate()
            await bob.terminate()
        }
    }
}
