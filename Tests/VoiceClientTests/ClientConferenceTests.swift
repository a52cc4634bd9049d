import Foundation
import Testing
import VoiceClient
import VoiceLab
import VoiceTestSupport

/// `VoiceClient.callConference(_:)` against the real conference server: the repository's Kamailio (the service
/// configuration the clients register with) routes `conf-<room>` to a `voice-engine conference-server` process, and
/// three clients join one room with file microphones (``ConferenceTalkers``: real speech from ../shared when
/// present, else the repository's speech-like talkers). Each client's speaker must hold the two others and not
/// itself (mix-minus), and the room's JSON report (`--stats-dir`) names all three. Ports: Kamailio 28350, the
/// server 28351, its media 28360–28389.
@Suite(
    "VoiceClient users in a room of the real conference server", .tags(.interop, .live, .cli), .scheduledByTags,
    .serialized, .timeLimit(.minutes(2)),
    .enabled(if: serviceUnavailableReason == nil, "\(serviceUnavailableReason ?? "")"),
    .enabled(if: BuiltExecutables.url("voice-engine") != nil, "voice-engine is not built"))
struct ClientConferenceTests {
    static let users = ["alice", "bob", "carol"]
    static let seconds = 8.0

    @Test func threeClientsInOneRoomHearTheOthersButNotThemselves() async throws {
        let binary = try #require(BuiltExecutables.url("voice-engine"))
        try await withService(sipPort: 28_350, conferenceServer: "sip:127.0.0.1:28351") { service in
            let directory = service.directory
            let stats = directory.appendingPathComponent("stats")
            let node = try ChildProcessGroup(
                binary.path,
                [
                    "conference-server", "--bind", "127.0.0.1:28351", "--rtp-ports", "28360-28389", "--stats-dir",
                    stats.path
                ],
                log: directory.appendingPathComponent("conference-server.log"))
            defer { node.stop() }
            guard await waitUntilUDPBound(28_351) else {
                try Test.cancel("the conference server did not start:\n\(node.logTail)")
            }

            let material = try ConferenceTalkers.material { seed in
                SignalGenerator.toInt16(SignalGenerator.speechLike(sampleRate: 16_000, seconds: 10, seed: seed))
            }
            print(
                "talkers: \(ConferenceTalkers.usesRealSpeech ? "real speech from ../shared" : "the repository's speech-like signals")"
            )
            var speech: [[Int16]] = []
            var clients: [VoiceClient] = []
            for (index, user) in Self.users.enumerated() {
                let looped = ConferenceTalkers.looped(material.talkers[index], seconds: Self.seconds + 6)
                let microphone = directory.appendingPathComponent("\(user)-mic.wav").path
                try WAVFile.write(pcm16: looped, format: AudioFormat(sampleRate: 16_000, channels: 1), to: microphone)
                speech.append(looped)
                let heard = directory.appendingPathComponent("\(user)-heard.wav").path
                let client = try service.client(
                    user,
                    audio: CallAudioDevices(
                        microphone: "file:" + microphone, speaker: "file:" + heard, sampleRate: 16_000,
                        voiceProcessing: false))
                await client.start()
                clients.append(client)
            }
            var calls: [Call] = []
            for client in clients {
                let call = try await client.callConference("standup")
                try await waitFor(call, .established)
                calls.append(call)
            }
            try await Task.sleep(for: .seconds(Self.seconds))
            for call in calls { try await call.hangup() }
            for call in calls { #expect(await call.details.endCause == .localHangup) }
            for client in clients { await client.terminate() }

            // The room closed after the last one left: its report names the three, each received and sent to.
            let reportURL = stats.appendingPathComponent("standup.json")
            let deadline = ContinuousClock.now + .seconds(5)
            while !FileManager.default.fileExists(atPath: reportURL.path), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            let report = try #require(
                try JSONSerialization.jsonObject(with: Data(contentsOf: reportURL)) as? [String: Any],
                "no room report:\n\(node.logTail)")
            let participants = try #require(report["participants"] as? [[String: Any]])
            print(
                "room report: peak \(report["peakParticipants"] ?? "?"), participants "
                    + participants.map {
                        "\($0["name"] ?? "?") received \($0["packetsReceived"] ?? "?") sent \($0["packetsSent"] ?? "?")"
                    }.joined(separator: "; "))
            #expect(report["peakParticipants"] as? Int == 3)
            for user in Self.users {
                let leg = participants.first { ($0["name"] as? String)?.contains(user) == true }
                #expect(leg != nil, "\(user) is not in the room's report")
                #expect(
                    (leg?["packetsReceived"] as? Int ?? 0) > Int(Self.seconds * 40),
                    "the room received little from \(user): \(leg ?? [:])")
                #expect(
                    (leg?["packetsSent"] as? Int ?? 0) > Int(Self.seconds * 40),
                    "the room sent little to \(user): \(leg ?? [:])")
            }

            let control = ConferenceTalkers.normalised(material.unrelated)
            for (index, user) in Self.users.enumerated() {
                let heard = try WAVFile.read(path: directory.appendingPathComponent("\(user)-heard.wav").path)
                let recorded = SpeechMatch.to16k(heard.int16Samples, rate: heard.format.sampleRate)
                #expect(
                    Double(recorded.count) > (Self.seconds - 1) * 16_000, "\(user) recorded \(recorded.count) samples")
                // Without the first second (the join tones, the others joining) and the last 0.3 s.
                let samples = Array(recorded.dropFirst(16_000).dropLast(4_800))
                func match(_ sent: [Int16]) -> Double {
                    SpeechMatch.median(sent: sent, heard: samples, maximumOffsetSeconds: 2)
                }
                let others = Self.users.indices.filter { $0 != index }.map { match(speech[$0]) }
                let own = match(speech[index])
                let unrelated = match(control)
                print("\(user) heard: others \(others), itself \(own), unrelated speech \(unrelated)")
                for (other, value) in zip(Self.users.indices.filter { $0 != index }, others) {
                    #expect(
                        value > 0.3 && value > unrelated + 0.2,
                        "\(user) did not hear \(Self.users[other]) (\(value), control \(unrelated))")
                }
                #expect(own < 0.25, "\(user) heard itself (\(own)): no mix-minus")
                #expect(
                    unrelated < 0.3, "the unrelated speech matches (\(unrelated)): the measure cannot tell speech apart"
                )
            }
        }
    }
}
