import Foundation
import NIOCore
import Testing
import VoiceConferenceServer
import VoiceEngine
import VoiceSIP
import VoiceTestSupport

/// A participant that re-keys mid-call (a re-INVITE with a fresh `a=crypto` key, RFC 4568 §7.1.4) keeps being
/// heard and keeps hearing the room: the server hands the new keys to the participant's leg in the mixer. Two real
/// participants — the engine's `LiveCall` with file microphones (the repository's speech-like vectors) and SDES-SRTP
/// over loopback — and the server in process. SIP on an ephemeral port, media on 28710–28729.
@Suite("Conference participants re-key mid-call", .tags(.live), .scheduledByTags, .serialized, .timeLimit(.minutes(1)))
struct ConferenceRekeyTests {
    static let format = AudioFormat(sampleRate: 16_000, channels: 1)

    /// A participant's media: its live call and where its speaker is recorded.
    struct Media {
        let call: LiveCall
        let speaker: String
    }

    /// Dials `room` from `agent`, then runs the answer's media on a `LiveCall` with `microphone` as its capture.
    static func join(
        _ room: SIPURI, from agent: SIPUserAgent, microphone: String, directory: URL, name: String
    ) async throws -> (SIPCall, Media) {
        let transport = try await UDPMediaTransport.bind(
            host: "127.0.0.1", port: 0, configuration: UDPMediaTransport.Configuration(receive: .consumerPolls))
        let call = try await agent.call(
            room, offering: AudioCapabilities(address: "127.0.0.1", port: Int(transport.localEndpoint.port)))
        guard case .success(let negotiated) = await outcome(of: call) else {
            throw SIPCallError("\(name) could not join")
        }
        transport.setRemote(try UDPEndpoint(host: negotiated.remoteAddress, port: negotiated.remotePort))
        let speaker = directory.appendingPathComponent("\(name)-speaker.wav").path
        let live = try LiveCall(
            callID: CallID(name),
            configuration: MediaStreamConfiguration(negotiated: negotiated, voiceProcessing: false),
            transport: transport,
            capture: try FileCaptureDevice(path: microphone, format: format, clocking: .realTime),
            playout: try FilePlayoutDevice(path: speaker, format: format, clocking: .realTime))
        try live.start()
        return (call, Media(call: live, speaker: speaker))
    }

    @Test func reKeyedParticipantIsStillHeardAndHears() async throws {
        let directory = try makeTemporaryDirectory("conference-rekey")
        defer { try? FileManager.default.removeItem(at: directory) }
        let vectors = SharedTestData.repository.appendingPathComponent("TestVectors")
        try await withEventLoop { loop in
            let (server, port) = try await startLoopbackServer(rtpPorts: 28_710...28_729, on: loop)
            let room = roomURI("rekey", host: "127.0.0.1", port: port)
            let alice = try await makeParticipant("alice", on: loop)
            let bob = try await makeParticipant("bob", on: loop)
            let (aliceCall, aliceMedia) = try await Self.join(
                room, from: alice, microphone: vectors.appendingPathComponent("speech_like_16k.wav").path,
                directory: directory, name: "alice")
            let (bobCall, bobMedia) = try await Self.join(
                room, from: bob, microphone: vectors.appendingPathComponent("speech_like_16k_b.wav").path,
                directory: directory, name: "bob")
            try await Task.sleep(for: .seconds(1.5))

            func aliceLeg() async -> ConferenceRoomReport.Participant? {
                await server.openRoomReports().first?.participants.first { $0.name.contains("alice") }
            }
            let before = try #require(await aliceLeg())
            let aliceHeardBefore = aliceMedia.call.statistics.datagramsReceived
            // alice re-keys: a re-INVITE with a fresh key; the room answers, and both sides apply the new keys.
            let renegotiated = try await aliceCall.rekey()
            try aliceMedia.call.updateMedia(renegotiated)
            try await Task.sleep(for: .seconds(2))
            let after = try #require(await aliceLeg())
            let aliceHeardAfter = aliceMedia.call.statistics.datagramsReceived

            await aliceCall.hangUp()
            await bobCall.hangUp()
            let aliceResult = await aliceMedia.call.stop()
            _ = await bobMedia.call.stop()
            #expect(await eventually { server.roomOccupancy().isEmpty })
            await server.close()
            try await alice.endpoint.close()
            try await bob.endpoint.close()

            let receivedSinceRekey = after.packetsReceived - before.packetsReceived
            let heardSinceRekey = aliceHeardAfter - aliceHeardBefore
            print(
                "re-key: the room received \(receivedSinceRekey) packets from alice in the 2 s after it (dropped \(before.dropped) before, "
                    + "\(after.dropped) after, re-keys \(after.rekeys)); alice received \(heardSinceRekey) datagrams, refused "
                    + "\(aliceResult.report.drops.counts.authenticationFailed) on authentication")
            #expect(renegotiated.srtp != nil)
            #expect(after.rekeys == 1, "the room did not apply alice's new keys")
            // Up to 50 packets a second (fewer in DTX pauses): the room keeps reading alice under her new key
            // (without the re-key it refuses every one after her 200 ms grace, ≈ 10 would pass) …
            #expect(
                receivedSinceRekey >= 40, "the room received \(receivedSinceRekey) packets from alice after her re-key")
            #expect(
                after.dropped == before.dropped,
                "the room refused \(after.dropped - before.dropped) of alice's datagrams")
            // … and alice keeps reading the room (RTP + RTCP), with no packet refused either way.
            #expect(heardSinceRekey >= 40, "alice received \(heardSinceRekey) datagrams after her re-key")
            #expect(aliceResult.report.drops.counts.authenticationFailed == 0)
            #expect(aliceResult.report.drops.counts.rtcpAuthenticationFailed == 0)
            let heard = try WAVFile.read(path: aliceMedia.speaker).int16Samples
            let tail = heard.suffix(32_000)
            let rms = (tail.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(tail.count, 1))).squareRoot()
            print("alice's speaker, last 2 s: RMS \(rms)")
            #expect(rms > 100, "alice heard silence after her re-key (bob through the room)")
        }
    }
}
