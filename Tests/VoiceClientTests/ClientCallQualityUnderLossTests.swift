import Foundation
import Testing
import VoiceClient
import VoiceTestSupport

/// The quality events of a real call while its network goes bad and recovers: a client calls baresip through
/// Kamailio, and baresip's media reaches the client through a relay whose VoiceNetSim simulator loses nothing,
/// then 20 % of the RTP, then nothing again (``LossyCallRelay``). Ports 26140–26142.
@Suite(
    "VoiceClient quality events under loss", .tags(.interop, .live, .slow), .scheduledByTags, .serialized,
    .timeLimit(.minutes(2)),
    .enabled(if: serviceUnavailableReason == nil, "\(serviceUnavailableReason ?? "")"),
    .enabled(if: BaresipPeer.isInstalled, "baresip is not installed (make test-deps installs it)"))
struct ClientCallQualityUnderLossTests {
    static let clean = Duration.seconds(5), lossy = Duration.seconds(8), recovery = Duration.seconds(7)

    @Test func qualityFollowsTheLossFromZeroToTwentyPercentAndBackAndTheCallSurvives() async throws {
        try await withService(sipPort: 26140) { service in
            try await ClientPeerCallTests().withBaresip(port: 26141, in: service.directory, microphoneSeconds: 40) {
                _, _ in
                let relay = try LossyCallRelay(sipPort: 26142, peerSIPPort: 26141)
                defer { relay.stop() }
                var configuration = service.configuration()
                configuration.audio = CallAudioDevices(
                    microphone: "null", speaker: "null", sampleRate: 16_000, voiceProcessing: false)
                configuration.health = CallHealthConfiguration(qualityInterval: .seconds(1))
                let alice = try VoiceClient(userID: "alice", configuration: configuration) { service.sign($0) }
                await alice.start()
                let call = try await alice.callSIP("b@127.0.0.1:26142")
                let updates = ClientCallHealthTests.Updates(call)
                try await waitFor(call, .established)
                try await Task.sleep(for: Self.clean)
                let lossFrom = ContinuousClock.now
                try relay.setLoss(0.2)
                try await Task.sleep(for: Self.lossy)
                let lossUntil = ContinuousClock.now
                try relay.setLoss(0)
                try await Task.sleep(for: Self.recovery)
                #expect(await call.state == .established, "the call did not survive the loss")
                try await call.hangup()
                await alice.terminate()

                // A report covers the second before it: those that straddle a change are left out.
                let reports = updates.reports
                let before = reports.filter { $0.0 < lossFrom }.map(\.1)
                let during = reports.filter { $0.0 > lossFrom + .seconds(1.5) && $0.0 <= lossUntil }.map(\.1)
                let after = reports.filter { $0.0 > lossUntil + .seconds(2) }.map(\.1)
                let relayed = relay.snapshot
                print(
                    "quality under loss (relay: \(relayed.rtpForwarded) RTP forwarded, \(relayed.rtpDropped) dropped):\n"
                        + "  before: \(before.map(\.description).joined(separator: "; "))\n"
                        + "  during: \(during.map(\.description).joined(separator: "; "))\n"
                        + "  after: \(after.map(\.description).joined(separator: "; "))")
                func mean(_ values: [Double]) -> Double { values.reduce(0, +) / Double(max(values.count, 1)) }

                try #require(before.count >= 3 && during.count >= 5 && after.count >= 3, "too few quality reports")
                #expect(before.allSatisfy { $0.lossPercent < 2 && $0.networkQuality == .good }, "\(before)")
                // About 20 % lost, concealed, a lower MOS and a lower level, which does not flap.
                let lossDuring = mean(during.map(\.lossPercent))
                #expect(lossDuring > 13 && lossDuring < 27, "mean loss \(lossDuring) % at 20 % simulated")
                #expect(during.allSatisfy { $0.lossPercent > 2 && $0.networkQuality < .good }, "\(during)")
                #expect(mean(during.map(\.concealmentPercent)) > 5, "\(during)")
                #expect(mean(during.map(\.mos)) < mean(before.map(\.mos)) - 0.5)
                let levelChanges = zip(during, during.dropFirst()).filter { $0.networkQuality != $1.networkQuality }
                #expect(levelChanges.count <= 2, "the level flapped: \(during)")
                // Recovered: no loss, good again.
                #expect(after.allSatisfy { $0.lossPercent < 2 && $0.networkQuality == .good }, "\(after)")
                // Loss does not make jitter; RTT comes from RTCP, which the relay does not drop.
                #expect(reports.allSatisfy { $0.1.jitterMilliseconds < 30 }, "\(reports.map(\.1))")
                let roundTrips = reports.compactMap(\.1.roundTripMilliseconds)
                #expect(!roundTrips.isEmpty && roundTrips.allSatisfy { $0 < 100 }, "RTT \(roundTrips)")
                let dropped = Double(relayed.rtpDropped) / Double(max(relayed.rtpDropped + relayed.rtpForwarded, 1))
                #expect(relayed.fromClient > 0 && dropped > 0.03 && dropped < 0.15, "relay dropped \(dropped)")
                #expect(await call.details.endCause == .localHangup)
            }
        }
    }
}
