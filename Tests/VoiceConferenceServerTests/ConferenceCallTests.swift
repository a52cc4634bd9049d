import Foundation
import Testing
import VoiceCore
import VoiceLab
import VoiceTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// A real SIP conference end to end. Three `voice-engine sip call` processes (the engine's SIP
/// user agent with live Opus + SDES-SRTP media, speech files as microphones, their speakers recorded) join room
/// `conf-talk` through Kamailio's dispatcher and a `voice-engine conference-server` node. Each must hear the two
/// others and not itself (mix-minus); speech nobody played is the control the measure must reject. Ports 28401
/// (Kamailio), 28421 (node), 28620–28649 (the node's media).
///
/// The talkers are real speech from ../shared when it is there; without it (a fresh CI machine) they are the
/// repository's speech-like vectors (`TestVectors/speech_like_16k.wav`, `speech_like_16k_b.wav`) and a third one
/// generated with another seed, and the control is a fourth seed, so `make test` runs the conference everywhere.
/// `CONFERENCE_SYNTHETIC_SPEECH=1` uses the synthetic material even when ../shared is present.
@Suite(
    "A real SIP conference through Kamailio", .tags(.interop, .live, .cli), .scheduledByTags, .serialized,
    .timeLimit(.minutes(2)),
    .enabled(
        if: FileManager.default.isExecutableFile(atPath: kamailioPath),
        "kamailio is not installed (make test-deps installs it)"),
    .enabled(if: BuiltExecutables.url("voice-engine") != nil, "voice-engine is not built"))
struct ConferenceCallTests {
    static let talkers = ConferenceTalkers.files
    static let seconds = 8.0

    static var usesRealSpeech: Bool { ConferenceTalkers.usesRealSpeech }

    /// The three talkers' microphones and the control nobody played (``ConferenceTalkers``), as 16 kHz samples
    /// (not yet normalised). Seeds 7 and 23 are the repository's two vectors; 41 and 59 are two more of that kind.
    static func material() throws -> (talkers: [[Int16]], unrelated: [Int16]) {
        try ConferenceTalkers.material { seed in
            SignalGenerator.toInt16(SignalGenerator.speechLike(sampleRate: 16_000, seconds: 10, seed: seed))
        }
    }

    static func normalised(_ samples: [Int16]) -> [Int16] { ConferenceTalkers.normalised(samples) }

    @Test func threeEnginesHearEachOtherButNotThemselves() async throws {
        let directory = try makeTemporaryDirectory("conference-call")
        defer {
            if ProcessInfo.processInfo.environment["KEEP_CONFERENCE_FILES"] == nil {
                try? FileManager.default.removeItem(at: directory)
            }
        }
        let binary = try #require(BuiltExecutables.url("voice-engine"))
        // Microphones: each talker's recording at one level (the recordings differ by 15 dB; a client's AGC would
        // even them out), repeated to outlast the call, so everyone talks all along.
        let material = try Self.material()
        print("talkers: \(Self.usesRealSpeech ? "real speech from ../shared" : "the repository's speech-like signals")")
        var speech: [[Int16]] = []
        for (index, original) in material.talkers.enumerated() {
            let samples = Self.normalised(original)
            let looped = Array(
                repeatElement(samples, count: Int(Self.seconds + 4) * 16_000 / samples.count + 1).joined())
            try WAVFile.write(
                pcm16: looped, format: AudioFormat(sampleRate: 16_000, channels: 1),
                to: directory.appendingPathComponent("mic\(index).wav").path)
            speech.append(looped)
        }
        let node = try startConferenceNode(sipPort: 28421, rtpPorts: 28620...28649, directory: directory, name: "node")
        defer { node.stop() }
        let proxy = try DispatcherProxy(port: 28401, nodes: [28421])
        defer { proxy.stop() }
        let ready = try await eventually(.seconds(15)) { try proxy.nodeStates()[28421]?.hasPrefix("A") == true }
        try #require(ready, "the node is not active in the dispatcher\n\(proxy.process.logTail)\n\(node.logTail)")

        let started = ContinuousClock.now
        print("node active in the dispatcher")
        var participants: [ChildProcessGroup] = []
        defer { participants.forEach { $0.stop() } }
        for index in Self.talkers.indices {
            participants.append(
                try ChildProcessGroup(
                    binary.path,
                    [
                        "sip", "call", "sip:conf-talk@\(conferenceDomain)", "--from",
                        "sip:talker\(index)@participants.test",
                        "--server", "127.0.0.1:28401", "--bind", "127.0.0.1:0", "--mic",
                        "file:\(directory.path)/mic\(index).wav",
                        "--speaker", "file:\(directory.path)/heard\(index).wav", "--rate", "16000",
                        "--no-voice-processing",
                        "--duration", "\(Self.seconds)"
                    ],
                    log: directory.appendingPathComponent("talker\(index).log")))
        }
        for (index, participant) in participants.enumerated() {
            let status = await participant.wait(timeout: .seconds(Self.seconds + 20))
            #expect(status == 0, "talker \(index) exited \(status.map(String.init) ?? "late"):\n\(participant.logTail)")
        }
        print("participants done after \(ContinuousClock.now - started)")
        // The room closed after the last one left; its report names all three.
        let report = directory.appendingPathComponent("node-stats/talk.json")
        #expect(
            await eventually(.seconds(5)) { FileManager.default.fileExists(atPath: report.path) }, "\(node.logTail)")
        print("report after \(ContinuousClock.now - started)")
        let unrelated = material.unrelated
        for index in Self.talkers.indices {
            let heard = try WAVFile.read(path: directory.appendingPathComponent("heard\(index).wav").path)
            let recorded = SpeechMatch.to16k(heard.int16Samples, rate: heard.format.sampleRate)
            #expect(
                Double(recorded.count) > (Self.seconds - 1) * 16_000,
                "talker \(index) recorded \(recorded.count) samples")
            // Without the first 0.5 s (silence until the mix arrives, the join tones) and the last 0.3 s: the jump
            // from silence to speech that every recording starts with would line up any talker at lag 0.
            let samples = Array(recorded.dropFirst(8_000).dropLast(4_800))
            // The participants start within a second of each other; the shortest loop is 4.2 s.
            func match(_ sent: [Int16]) -> Double {
                SpeechMatch.median(sent: sent, heard: samples, maximumOffsetSeconds: 2)
            }
            let others = Self.talkers.indices.filter { $0 != index }.map { match(speech[$0]) }
            let own = match(speech[index])
            let control = match(Self.normalised(unrelated))
            print(
                "after \(ContinuousClock.now - started): talker \(index) heard: others \(others), itself \(own), unrelated speech \(control)"
            )
            for (other, match) in zip(Self.talkers.indices.filter { $0 != index }, others) {
                #expect(
                    match > 0.3 && match > control + 0.2,
                    "talker \(index) did not hear talker \(other) (\(match), control \(control))")
            }
            #expect(own < 0.25, "talker \(index) heard itself (\(own)): no mix-minus")
            #expect(control < 0.3, "the unrelated speech matches (\(control)): the measure cannot tell speech apart")
        }
    }
}
