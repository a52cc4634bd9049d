import Foundation
import Testing
import VoiceConferenceServer
import VoiceEngine
import VoiceSIP
import VoiceTestSupport

/// A telephony leg in a conference room: Debian's baresip with only G.711 (PCMU, PCMA) or only G.722 loaded joins a
/// room (the server answers its codec instead of refusing the offer), then an engine participant speaking Opus;
/// each hears the other's speech through the room, whose mixer runs at 16 kHz while the G.711 leg's stream decodes
/// and encodes at 8 kHz and resamples. Server in process, SIP on an ephemeral port, media 28760–28769 (G.711) and
/// 28810–28819 (G.722), baresip's SIP on 28770 and 28820.
@Suite(
    "G.711 and G.722 legs in a conference room", .tags(.interop, .live), .scheduledByTags, .serialized,
    .timeLimit(.minutes(2)),
    .enabled(if: BaresipPeer.isInstalled, "baresip is not installed (make test-deps installs it)"))
struct ConferenceTelephonyCodecTests {
    static let seconds = 8.0

    @Test(arguments: [("g711", 28_760...28_769, 28_770), ("g722", 28_810...28_819, 28_820)])
    func telephonyLegAndOpusEngineHearEachOther(codec: String, rtpPorts: ClosedRange<Int>, baresipPort: Int)
        async throws
    {
        let directory = try makeTemporaryDirectory("conference-\(codec)")
        defer {
            if ProcessInfo.processInfo.environment["KEEP_CONFERENCE_FILES"] == nil {
                try? FileManager.default.removeItem(at: directory)
            }
        }
        let mics = try ConferenceDTLSTests.microphones(in: directory)
        // baresip with G.711 runs at 8 kHz from an 8 kHz copy of its microphone (speexdsp's resampler): its own
        // 16 → 8 kHz resampler takes some 13 dB off 1.3–1.6 kHz against 700 Hz (measured on its encoder's dump),
        // which is baresip's sound, not the room's.
        let audioRate = codec == "g711" ? 8_000 : 16_000
        var microphones = mics.paths
        if audioRate == 8_000 {
            microphones[1] = directory.appendingPathComponent("baresip-8k.wav").path
            try WAVFile.write(
                pcm16: try Self.narrowband(WAVFile.read(path: mics.paths[1]).int16Samples),
                format: AudioFormat(sampleRate: 8_000), to: microphones[1])
        }
        let room = try await ConferenceRTCPTests.baresipAndEngineInRoom(
            "tel-\(codec)", rtpPorts: rtpPorts, baresipPort: baresipPort, codec: codec, audioRate: audioRate,
            microphones: microphones, seconds: Self.seconds, directory: directory)
        let (baresipLeg, result) = (room.baresipLeg, room.engine)
        #expect(baresipLeg.failure == nil, "baresip's leg: \(baresipLeg)")
        #expect(
            baresipLeg.packetsReceived > Int(Self.seconds * 40),
            "the room received \(baresipLeg.packetsReceived) packets from baresip")
        // Half the packet rate at least: a room ticking late on a loaded machine sends fewer (seen: 303 in 8 s).
        #expect(baresipLeg.packetsSent > Int(Self.seconds * 25), "the room sent baresip \(baresipLeg.packetsSent)")
        #expect(result.report.drops.counts.authenticationFailed == 0)

        let engineHeard = try ConferenceDTLSTests.recorded(room.engineSpeaker)
        let baresipHeard = try BaresipPeer.heard(in: directory.appendingPathComponent("baresip"))
        ConferenceDTLSTests.expectHeardEachOther(
            mics: mics, engineHeard: engineHeard, baresipHeard: baresipHeard,
            label: "baresip (\(codec)) → room → engine (Opus), engine → room → baresip")
    }

    /// 16 kHz speech at 8 kHz.
    static func narrowband(_ samples: [Int16]) throws -> [Int16] {
        let resampler = try Resampler(inputRate: 16_000, outputRate: 8_000)
        var output = [Int16](repeating: 0, count: resampler.maximumOutputCount(forInput: samples.count) + 256)
        let produced = try samples.withUnsafeBufferPointer { input in
            try output.withUnsafeMutableBufferPointer { out in
                let first = try resampler.process(input, into: out).produced
                return first + (try resampler.drain(into: UnsafeMutableBufferPointer(rebasing: out[first...])))
            }
        }
        return Array(output[0..<produced])
    }
}
