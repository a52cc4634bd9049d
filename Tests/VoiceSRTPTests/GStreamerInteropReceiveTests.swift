import Foundation
import Testing
import VoiceCodec
import VoiceRTP
import VoiceSRTP

// GStreamer → engine: `audiotestsrc ! opusenc ! rtpopuspay ! [srtpenc !] udpsink` sends to the engine's socket;
// the engine unprotects, parses and decodes.
extension GStreamerInteropTests {
    /// What the engine made of GStreamer's stream.
    struct EngineReceive {
        var packets = 0
        /// Packets a session holding a different key rejected, and how (all must be authentication failures).
        var rejectedByWrongKey = 0
        var wrongKeyErrors: [SRTPError] = []
        var pcm: [Int16] = []
    }

    /// Runs GStreamer's sending pipeline into a loopback socket of ours and processes every datagram: returns nil
    /// (after recording an issue) when the pipeline failed or timed out.
    func receiveGStreamerStream(suite: SRTPCryptoSuite?, frequency: Double) async throws -> EngineReceive? {
        let ssrc = UInt32.random(in: 1 ... .max)
        let firstTimestamp = UInt32.random(in: 0 ... .max)
        let key = suite.map { SRTPMasterKey.random(for: $0) }
        let socket = try LoopbackUDPSocket()

        var pipeline = [
            "audiotestsrc", "num-buffers=\(Self.frameCount)", "samplesperbuffer=\(Self.frameSamples)",
            "freq=\(Int(frequency))", "volume=0.5", "!", "audio/x-raw,format=S16LE,rate=48000,channels=1", "!",
            "opusenc", "frame-size=20", "!",
            "rtpopuspay", "pt=\(Self.payloadType)", "ssrc=\(ssrc)", "seqnum-offset=\(Self.wrappingSequenceStart)",
            "timestamp-offset=\(firstTimestamp)", "!"
        ]
        if let suite, let key {
            let parameters = GStreamer.srtpParameters(suite)
            pipeline += [
                "srtpenc", "key=\(GStreamer.hexString(key.bytes))", "rtp-cipher=\(parameters.cipher)",
                "rtp-auth=\(parameters.rtpAuth)", "rtcp-cipher=\(parameters.cipher)",
                "rtcp-auth=\(parameters.rtcpAuth)", "!"
            ]
        }
        pipeline += ["udpsink", "host=127.0.0.1", "port=\(socket.port)", "sync=false"]
        let gst = try BoundedProcess(executable: GStreamer.launchPath!, arguments: pipeline)
        defer { gst.kill() }

        // Collect datagrams while the sender runs; after it exits everything it sent is already queued.
        let deadline = ContinuousClock.now + GStreamer.processTimeout
        guard let datagrams = try await gst.collectDatagrams(on: socket, deadline: deadline) else { return nil }

        // Unprotect, parse, check RFC 7587 framing, decode.
        let receiver = try suite.map { try SRTPSession(suite: $0, key: key!, direction: .inbound) }
        let stranger = try suite.map {
            try SRTPSession(suite: $0, key: SRTPMasterKey.random(for: $0), direction: .inbound)
        }
        let decoder = try OpusDecoder(sampleRate: 48_000, channels: 1)
        var pcm = [Int16](repeating: 0, count: decoder.maxFrameSamples)
        var result = EngineReceive()
        var previous: (sequence: UInt16, timestamp: UInt32)?
        for (index, datagram) in datagrams.enumerated() {
            if let stranger {
                var copy = datagram
                do {
                    _ = try copy.withUnsafeMutableBytes { try stranger.unprotect($0, length: datagram.count) }
                } catch {
                    result.rejectedByWrongKey += 1
                    result.wrongKeyErrors.append(error as? SRTPError ?? .other(code: -1, call: "\(error)"))
                }
            }
            var packet = datagram
            var length = packet.count
            if let receiver {
                length = try packet.withUnsafeMutableBytes { try receiver.unprotect($0, length: length) }
            }
            let payload = try packet.withUnsafeBytes { bytes in
                let view = try RTPPacketView(UnsafeRawBufferPointer(rebasing: bytes[0..<length]))
                #expect(view.version == 2 && view.payloadType == Self.payloadType && view.ssrc == ssrc)
                if let previous {
                    #expect(view.sequenceNumber == previous.sequence &+ 1, "sequence gap or reorder")
                    let advance = view.timestamp &- previous.timestamp
                    if index > 1 {
                        #expect(
                            advance == OpusRTP.ticks(samples: Self.frameSamples, codingRate: 48_000),
                            "RTP timestamp must advance 960 (48 kHz units) per 20 ms packet, got \(advance)")
                    } else {
                        // opusenc stamps its first packet one encoder lookahead (312 samples) early and the next
                        // one at the first real sample, so only the first advance is short (648 measured).
                        #expect(advance > 0 && advance <= 960, "first timestamp advance \(advance)")
                    }
                } else {
                    #expect(view.sequenceNumber == Self.wrappingSequenceStart)
                    #expect(view.timestamp == firstTimestamp)
                }
                previous = (view.sequenceNumber, view.timestamp)
                return Array(view.payload)
            }
            let decoded = try decoder.decode(payload, into: &pcm)
            result.pcm += pcm[0..<decoded]
            result.packets += 1
        }
        return result
    }

    /// Checks the engine's decode of GStreamer's stream: at least one packet per source buffer, and the audio is
    /// audiotestsrc's tone (volume 0.5 → amplitude 16384) at the right frequency and level.
    func expectGStreamerTone(_ result: EngineReceive, frequency: Double, label: String) {
        #expect(result.packets >= Self.frameCount, "\(label): \(result.packets) packets for \(Self.frameCount) frames")
        guard result.pcm.count >= Self.frameCount * Self.frameSamples else {
            Issue.record("\(label): only \(result.pcm.count) samples decoded")
            return
        }
        let fit = ToneFit(
            result.pcm[(5 * Self.frameSamples)..<(Self.frameCount * Self.frameSamples)], frequency: frequency)
        let level = 20 * log10(fit.amplitude / 16_384)
        #expect(fit.snrDB >= 20, "\(label): tone SNR \(fit.snrDB) dB")
        #expect(abs(level) <= 1, "\(label): tone amplitude \(fit.amplitude), expected 16384")
        print(
            "GStreamer interop \(label): GStreamer→engine \(result.packets) packets, \(result.pcm.count) samples, "
                + String(format: "tone SNR %.1f dB, level %+.2f dB", fit.snrDB, level))
    }

    @Test(arguments: SRTPCryptoSuite.allCases)
    func engineDecryptsAndDecodesGStreamerSRTPStream(suite: SRTPCryptoSuite) async throws {
        guard let result = try await receiveGStreamerStream(suite: suite, frequency: 660) else { return }
        expectGStreamerTone(result, frequency: 660, label: suite.rawValue)
        // Control: a session with another key authenticates none of srtpenc's packets.
        #expect(result.rejectedByWrongKey == result.packets)
        #expect(result.wrongKeyErrors.allSatisfy { $0 == .authenticationFailed }, "\(result.wrongKeyErrors.prefix(3))")
    }

    @Test func engineDecodesGStreamerPlainRTPOpusStream() async throws {
        guard let result = try await receiveGStreamerStream(suite: nil, frequency: 660) else { return }
        expectGStreamerTone(result, frequency: 660, label: "plain RTP")
    }
}
