import Foundation
import NIOCore
import Testing
import VoiceConferenceServer
import VoiceEngine
import VoiceSIP
import VoiceTestSupport

/// DTMF in a room: a participant's keys — in its media (RFC 4733, negotiated in the room's answer) and by SIP INFO —
/// become `dtmf` events of the room's timeline, in order, once each; they are not passed to the others. Media
/// ports 28_800–28_809 are this suite's.
@Suite(.tags(.live), .scheduledByTags, .serialized, .timeLimit(.minutes(1)))
struct ConferenceDTMFTests {
    @Test func keysInTheMediaAndByInfoAreRoomEvents() async throws {
        try await withEventLoop { loop in
            let (server, port) = try await startLoopbackServer(rtpPorts: 28_800...28_809, on: loop)
            let alice = try await makeParticipant("alice", on: loop)
            let transport = try await UDPMediaTransport.bind(host: "127.0.0.1", port: 0)
            let call = try await alice.call(
                roomURI("keys", host: "127.0.0.1", port: port),
                offering: AudioCapabilities(address: "127.0.0.1", port: Int(transport.localEndpoint.port)))
            guard case .success(let media) = await outcome(of: call) else { throw SIPCallError("alice could not join") }
            #expect(media.telephoneEventPayloadType == 101, "the room answers telephone-event beside Opus")
            try transport.setRemote(negotiated: media)
            let format = AudioFormat(sampleRate: 16_000)
            let live = try LiveCall(
                configuration: MediaStreamConfiguration(negotiated: media, deviceFormat: format), transport: transport,
                capture: NullAudioDevice(direction: .capture, format: format, clocking: .realTime),
                playout: NullAudioDevice(direction: .playout, format: format, clocking: .realTime))
            try live.start()
            try await Task.sleep(for: .milliseconds(300))

            try live.sendDTMF("12")
            func keys() async -> [String] {
                await server.openRoomReports().first?.timeline.filter { $0.kind == .dtmf }.compactMap(\.key) ?? []
            }
            let inMedia = await eventually { await keys() == ["1", "2"] }
            let afterMedia = await keys()
            #expect(inMedia, "timeline keys: \(afterMedia)")
            try await call.sendDTMF(try DTMFDigit.parse("#"))
            let byInfo = await eventually { await keys() == ["1", "2", "#"] }
            let afterInfo = await keys()
            #expect(byInfo, "timeline keys: \(afterInfo)")
            let report = try #require(await server.openRoomReports().first)
            #expect(report.text.contains("dtmf # sip:alice@participants.test"), "\(report.text)")

            _ = await live.stop()
            await call.hangUp()
            await server.close()
        }
    }
}
