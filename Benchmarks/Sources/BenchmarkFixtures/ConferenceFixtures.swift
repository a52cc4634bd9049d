import Foundation
import VoiceConference
import VoiceEngine
import VoiceLab

/// The workload of `voice-bench conference` and `ConferenceBenchmarks`: a room of N participants, the first
/// `talkers` of them speaking (real speech, looped), the rest silent with Opus DTX, Opus 16 kHz 20 ms 24 kb/s
/// complexity 5, SRTP (AES_CM_128_HMAC_SHA1_80) on every leg.
///
/// Every participant's uplink is produced once, up front, by a real client `MediaStream` (so DTX, sequence numbers
/// and SRTP are exactly what an engine sends), and stored per tick; the Swift room and the C loop are then fed the
/// identical datagrams. A fresh room (its SRTP replay windows and jitter buffers new) is built per run.
public final class ConferenceWorkload: @unchecked Sendable {
    public let participants: Int
    public let talkers: Int
    public let ticks: Int
    /// Room-side keys of participant i: it protects with `localKeys[i]`, unprotects with `remoteKeys[i]`.
    public let localKeys: [SRTPMasterKey]
    public let remoteKeys: [SRTPMasterKey]
    /// All datagrams back to back; datagram k: `data[offsets[k] ..< offsets[k] + lengths[k]]`, from `owners[k]`.
    public let data: [UInt8]
    public let offsets: [Int32]
    public let lengths: [Int32]
    public let owners: [Int32]
    /// Datagrams of tick t: `tickStart[t] ..< tickStart[t + 1]`.
    public let tickStart: [Int]

    public static let opus = OpusEncoderConfiguration(
        sampleRate: 16_000, channels: 1, application: .voip, frameDuration: .ms20, bitrate: 24_000, complexity: 5,
        variableBitrate: true, inbandFEC: false, expectedLossPercent: 0, dtx: true)
    public static let suite = SRTPCryptoSuite.aesCM128HmacSHA1_80
    public static let room = ConferenceRoomConfiguration()

    /// Whether the uplink datagrams are SRTP (the room's case) or plain RTP (for a peer driven without keys).
    public let srtp: Bool

    /// - Parameters:
    ///   - speech: one recording per talker (16 kHz mono), looped to fill the run.
    ///   - srtp: protect every leg (false: plain RTP, for Janus AudioBridge's plain-RTP participants).
    public init(participants: Int, talkers: Int, ticks: Int, speech: [[Int16]], srtp: Bool = true) throws {
        self.srtp = srtp
        precondition(talkers <= participants && speech.count >= min(talkers, 1) && speech.allSatisfy { !$0.isEmpty })
        self.participants = participants
        self.talkers = talkers
        self.ticks = ticks
        var random = SeededGenerator(seed: 20)
        var clientKeys: [SRTPMasterKey] = []
        var roomKeys: [SRTPMasterKey] = []
        for _ in 0..<participants {
            clientKeys.append(.random(for: Self.suite, using: &random))
            roomKeys.append(.random(for: Self.suite, using: &random))
        }
        localKeys = roomKeys
        remoteKeys = clientKeys
        var data: [UInt8] = []
        var offsets: [Int32] = []
        var lengths: [Int32] = []
        var owners: [Int32] = []
        var tickStart = [0]
        var owner: Int32 = 0
        let sink = ClosurePacketSink { bytes, kind, _ in
            guard kind == .rtp else { return }
            offsets.append(Int32(data.count))
            lengths.append(Int32(bytes.count))
            owners.append(owner)
            data.append(contentsOf: bytes)
        }
        let format = AudioFormat(sampleRate: 16_000)
        let clients = try (0..<participants).map { i in
            try MediaStream(
                configuration: MediaStreamConfiguration(
                    opus: Self.opus, deviceFormat: format,
                    srtp: srtp
                        ? MediaStreamSRTP(suite: Self.suite, localKey: clientKeys[i], remoteKey: roomKeys[i]) : nil,
                    voiceProcessing: false, seed: UInt64(1_000 + i)),
                sink: sink)
        }
        var frame = AudioFrame(format: format)
        var position = [Int](repeating: 0, count: talkers)
        for t in 0..<ticks {
            for i in 0..<participants {
                owner = Int32(i)
                for _ in 0..<2 {
                    frame.withUnsafeMutableSamples { s in
                        if i < talkers {
                            let source = speech[i % speech.count]
                            for k in 0..<s.count {
                                s[k] = source[position[i] % source.count]
                                position[i] += 1
                            }
                        } else {
                            s.update(repeating: 0)
                        }
                    }
                    clients[i].processCapture(frame, now: .milliseconds(Int64(t * 20)))
                }
            }
            tickStart.append(offsets.count)
        }
        self.data = data
        self.offsets = offsets
        self.lengths = lengths
        self.owners = owners
        self.tickStart = tickStart
    }

    /// A fresh room with every participant joined (its sends go to a null sink, as the C loop drops its packets).
    public func makeRoom(configuration: ConferenceRoomConfiguration = ConferenceWorkload.room) throws -> (
        ConferenceRoom, [ConferenceParticipant]
    ) {
        let room = try ConferenceRoom(id: "bench", configuration: configuration)
        let format = AudioFormat(sampleRate: 16_000)
        let sink = NullPacketSink()
        let members = try (0..<participants).map { i in
            try room.addParticipant(
                label: "p\(i)",
                configuration: MediaStreamConfiguration(
                    opus: Self.opus, deviceFormat: format,
                    srtp: srtp
                        ? MediaStreamSRTP(suite: Self.suite, localKey: localKeys[i], remoteKey: remoteKeys[i]) : nil,
                    voiceProcessing: false, seed: UInt64(5_000 + i)),
                sink: sink, now: .zero)
        }
        return (room, members)
    }

    /// Runs ticks `range` of the workload through `room`; returns the datagrams handed in (a checksum).
    public func run(_ room: ConferenceRoom, _ members: [ConferenceParticipant], ticks range: Range<Int>) -> Int {
        var handed = 0
        data.withUnsafeBytes { bytes in
            for t in range {
                let now = MediaTime.milliseconds(Int64(t * 20))
                for k in tickStart[t]..<tickStart[t + 1] {
                    let start = Int(offsets[k])
                    room.receive(
                        UnsafeRawBufferPointer(rebasing: bytes[start..<(start + Int(lengths[k]))]),
                        from: members[Int(owners[k])], arrival: now)
                    handed += 1
                }
                room.tick(now: now)
            }
        }
        return handed
    }

    /// Writes the datagrams for a replay tool: "VCWL", then little-endian u32 participants, ticks, datagrams, then
    /// per datagram u32 tick, u32 participant, u16 length and the bytes.
    public func write(to path: String) throws {
        var out: [UInt8] = Array("VCWL".utf8)
        func u32(_ v: Int) { for k in 0..<4 { out.append(UInt8(truncatingIfNeeded: v >> (8 * k))) } }
        u32(participants)
        u32(ticks)
        u32(offsets.count)
        for t in 0..<ticks {
            for k in tickStart[t]..<tickStart[t + 1] {
                u32(t)
                u32(Int(owners[k]))
                out.append(UInt8(lengths[k] & 0xFF))
                out.append(UInt8(lengths[k] >> 8))
                out.append(contentsOf: data[Int(offsets[k])..<Int(offsets[k] + lengths[k])])
            }
        }
        try Data(out).write(to: URL(fileURLWithPath: path))
    }

    /// The key bytes of all participants back to back (30 each), for the C loop.
    public static func concatenated(_ keys: [SRTPMasterKey]) -> [UInt8] { keys.flatMap(\.bytes) }

    /// 16 kHz mono speech recordings under `folder` (the shared test data's `speech`), in a fixed order; nil when
    /// the folder is absent.
    public static func speech(in folder: String) -> [[Int16]]? {
        let names = ["jfk_16k_mono.wav", "pjsip_input_16k.wav", "pystoi_clean_16k.wav", "mediastreamer2_hello_16k.wav"]
        let loaded = names.compactMap { name -> [Int16]? in
            guard let wav = try? WAVFile.read(path: folder + "/" + name), wav.format.sampleRate == 16_000,
                wav.format.channels == 1
            else { return nil }
            return wav.int16Samples
        }
        return loaded.isEmpty ? nil : loaded
    }
}
