import Foundation
import Testing
import VoiceCodec
import VoiceTestSupport

/// In-band FEC, concealment and DTX with real libopus.
@Suite struct OpusFECAndDTXTests {
    static let rate = 16_000
    static let frame = 320  // 20 ms at 16 kHz
    static let fecConfiguration = OpusEncoderConfiguration(
        sampleRate: rate, channels: 1, application: .voip, frameDuration: .ms20, bitrate: 24_000,
        inbandFEC: true, expectedLossPercent: 20)

    /// Seeded single-packet losses (never two in a row, never the first frames or the last packet) so that each
    /// lost frame has a next packet to recover from.
    static func lossPattern(frames: Int, seed: UInt64) -> Set<Int> {
        var rng = SplitMix64(seed: seed)
        var lost = Set<Int>()
        var index = 5
        while index < frames - 1 {
            if Double.random(in: 0..<1, using: &rng) < 0.2 {
                lost.insert(index)
                index += 2
            } else {
                index += 1
            }
        }
        return lost
    }

    @Test func decodesFECWhenPacketLostBetterThanConcealment() throws {
        let input = CodecTestSignals.speechLike(sampleRate: Self.rate, samplesPerChannel: Self.rate * 4)
        let packets = try encodeAll(input, configuration: Self.fecConfiguration)
        let lost = Self.lossPattern(frames: packets.count, seed: 0x5EED_F00D)
        #expect(lost.count >= 15)

        // Reference: every packet decoded.
        let clean = try OpusDecoder(sampleRate: Self.rate, channels: 1)
        let withFEC = try OpusDecoder(sampleRate: Self.rate, channels: 1)
        let withPLC = try OpusDecoder(sampleRate: Self.rate, channels: 1)
        var cleanOut: [Int16] = []
        var fecOut: [Int16] = []
        var plcOut: [Int16] = []
        var pcm = [Int16](repeating: 0, count: Self.frame)
        for (index, packet) in packets.enumerated() {
            #expect(try clean.decode(packet, into: &pcm) == Self.frame)
            cleanOut += pcm
            if lost.contains(index) {
                #expect(
                    try withFEC.decodeFEC(from: packets[index + 1], frameSamples: Self.frame, into: &pcm) == Self.frame)
                fecOut += pcm
                #expect(try withPLC.conceal(frameSamples: Self.frame, into: &pcm) == Self.frame)
                plcOut += pcm
            } else {
                #expect(try withFEC.decode(packet, into: &pcm) == Self.frame)
                fecOut += pcm
                #expect(try withPLC.decode(packet, into: &pcm) == Self.frame)
                plcOut += pcm
            }
        }

        // SNR against the clean decode, over the lost frames only (pooled energy).
        func snrOverLostFrames(_ output: [Int16]) -> Double {
            var signal = 0.0
            var error = 0.0
            for index in lost {
                for n in index * Self.frame..<(index + 1) * Self.frame {
                    let r = Double(cleanOut[n])
                    signal += r * r
                    error += (r - Double(output[n])) * (r - Double(output[n]))
                }
            }
            return 10 * log10(signal / max(error, 1e-9))
        }
        let fecSNR = snrOverLostFrames(fecOut)
        let plcSNR = snrOverLostFrames(plcOut)
        // Measured on libopus 1.3.1 (32 lost frames): FEC 10.8 dB, PLC 1.9 dB.
        #expect(fecSNR > plcSNR + 4, "FEC \(fecSNR) dB vs PLC \(plcSNR) dB")
        #expect(fecSNR > 7, "FEC recovery SNR \(fecSNR) dB")
    }

    @Test func packetHasFECOnlyWhenTheEncoderAddsIt() throws {
        let input = CodecTestSignals.speechLike(sampleRate: Self.rate, samplesPerChannel: Self.rate * 2)
        let withFEC = try encodeAll(input, configuration: Self.fecConfiguration)
        var noFECConfiguration = Self.fecConfiguration
        noFECConfiguration.inbandFEC = false
        let withoutFEC = try encodeAll(input, configuration: noFECConfiguration)

        #expect(!OpusPacket.hasFEC(withFEC[0]), "the first packet has no previous frame to protect")
        let flagged = withFEC.filter { OpusPacket.hasFEC($0) }.count
        #expect(flagged > withFEC.count / 2, "\(flagged) of \(withFEC.count) packets carry FEC")
        #expect(withoutFEC.allSatisfy { !OpusPacket.hasFEC($0) })
        #expect(withFEC[1].withUnsafeBufferPointer { OpusDecoder.packetHasFEC($0) } == OpusPacket.hasFEC(withFEC[1]))
        // FEC costs bits.
        let fecBytes = withFEC.reduce(0) { $0 + $1.count }
        let plainBytes = withoutFEC.reduce(0) { $0 + $1.count }
        #expect(fecBytes > plainBytes)
    }

    /// `durationAndFEC` (one opus_packet_parse, what the jitter buffer reads per packet) gives what the two
    /// separate reads give — `samplesPerChannel` (opus_packet_get_nb_samples) and `hasFEC` — for real packets
    /// (SILK with FEC, CELT) and for every TOC byte (stereo and code 3 included) with random or short bodies,
    /// malformed ones included, at every Opus rate.
    @Test func durationAndFECMatchesTheSeparateReads() throws {
        let input = CodecTestSignals.speechLike(sampleRate: Self.rate, samplesPerChannel: Self.rate * 2)
        var packets = try encodeAll(input, configuration: Self.fecConfiguration)
        var celt = Self.fecConfiguration
        celt.application = .restrictedLowDelay
        celt.frameDuration = .ms10
        packets += try encodeAll(input, configuration: celt)
        var generator = SystemRandomNumberGenerator()
        for toc in 0...255 {
            for length in [1, 2, 3, 5, 17, 61, 200] {
                var p = [UInt8](repeating: 0, count: length)
                for i in 1..<length { p[i] = UInt8.random(in: 0...255, using: &generator) }
                p[0] = UInt8(toc)
                packets.append(p)
                if length > 1 {
                    p[1] = UInt8(toc & 0x3F) | 0x80  // code 3: a frame count and VBR/padding flags from the TOC
                    packets.append(p)
                }
            }
        }
        var parsed = 0
        var withFEC = 0
        for rate in [8_000, 12_000, 16_000, 24_000, 48_000] {
            for packet in packets {
                packet.withUnsafeBufferPointer { b in
                    let separate = (try? OpusPacket.samplesPerChannel(in: b, sampleRate: rate)).map {
                        ($0, OpusPacket.hasFEC(b))
                    }
                    let combined = OpusPacket.durationAndFEC(of: b, sampleRate: rate)
                    #expect(
                        combined?.samples == separate?.0 && combined?.hasFEC == separate?.1,
                        "packet \(Array(b.prefix(4)))")
                    if combined != nil { parsed += 1 }
                    if combined?.hasFEC == true { withFEC += 1 }
                }
            }
        }
        #expect(parsed > packets.count && withFEC > 100, "\(parsed) read, \(withFEC) with FEC")
        #expect(OpusPacket.durationAndFEC(of: UnsafeBufferPointer(start: nil, count: 0), sampleRate: 16_000) == nil)
    }

    @Test func fecFromAPacketWithoutFECFallsBackToConcealment() throws {
        var configuration = Self.fecConfiguration
        configuration.inbandFEC = false
        let input = CodecTestSignals.speechLike(sampleRate: Self.rate, samplesPerChannel: Self.rate / 2)
        let packets = try encodeAll(input, configuration: configuration)
        let viaFEC = try OpusDecoder(sampleRate: Self.rate, channels: 1)
        let viaPLC = try OpusDecoder(sampleRate: Self.rate, channels: 1)
        var a = [Int16](repeating: 0, count: Self.frame)
        var b = [Int16](repeating: 0, count: Self.frame)
        for packet in packets[0..<10] {
            _ = try viaFEC.decode(packet, into: &a)
            _ = try viaPLC.decode(packet, into: &b)
        }
        #expect(!OpusPacket.hasFEC(packets[11]))
        _ = try viaFEC.decodeFEC(from: packets[11], frameSamples: Self.frame, into: &a)
        _ = try viaPLC.conceal(frameSamples: Self.frame, into: &b)
        #expect(a == b)
    }

    @Test func dtxSendsTinyPacketsDuringSilence() throws {
        var configuration = OpusEncoderConfiguration(sampleRate: Self.rate, bitrate: 24_000, dtx: true)
        let speech = CodecTestSignals.speechLike(sampleRate: Self.rate, samplesPerChannel: Self.rate)
        let input = speech + [Int16](repeating: 0, count: Self.rate * 2)  // 1 s speech, 2 s silence
        let encoder = try OpusEncoder(configuration: configuration)
        let packets = try encodeAll(input, with: encoder)
        #expect(packets.count == 150)
        #expect(try encoder.isInDTX)
        #expect(packets[0..<50].allSatisfy { $0.count > 2 }, "speech is coded normally")
        // libopus enters DTX after 200 ms of silence; then 1-byte packets, with a short comfort-noise update
        // every 400 ms.
        let silentTail = packets[70...]
        let tiny = silentTail.filter { $0.count <= 2 }.count
        #expect(tiny >= silentTail.count * 9 / 10, "\(tiny) of \(silentTail.count) silent packets are ≤ 2 bytes")

        configuration.dtx = false
        let continuous = try encodeAll(input, configuration: configuration)
        #expect(continuous[70...].allSatisfy { $0.count > 2 }, "without DTX silence is still coded")

        // The decoder accepts DTX packets and plays silence-level output.
        let decoder = try OpusDecoder(sampleRate: Self.rate, channels: 1)
        var pcm = [Int16](repeating: 0, count: Self.frame)
        var peak = 0
        for (index, packet) in packets.enumerated() {
            #expect(try decoder.decode(packet, into: &pcm) == Self.frame)
            if index >= 100 { peak = max(peak, pcm.map { abs(Int($0)) }.max()!) }
        }
        #expect(peak < 100, "DTX output peak \(peak)")
    }
}
