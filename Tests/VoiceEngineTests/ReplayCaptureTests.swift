import Foundation
import Testing
import VoiceEngine
import VoiceLab
import VoiceTestSupport

/// A simulated SRTP call written to a capture with PcapWriter, then replayed through the receive chain.
@Suite struct ReplayCaptureTests {
    struct Call {
        var capture: [UInt8]
        var input: [Int16]
        var live: MediaStreamStatistics
        var senderKey: SRTPMasterKey
        var senderSSRC: UInt32
    }

    /// A → B over a lossy, jittery path; everything that arrived at B (and B's RTCP) captured at B.
    static func recordCall(srtp: Bool, format: PcapWriter.Format = .pcapng) throws -> Call {
        let (srtpA, srtpB) = StreamTestSupport.srtpPair(seed: 5)
        let input = StreamTestSupport.speech(seconds: 5, seed: 21)
        let conditions = NetworkConditions(
            baseDelayMilliseconds: 30,
            jitter: .normal(meanMilliseconds: 8, standardDeviationMilliseconds: 8),
            loss: .bernoulli(probability: 0.03), seed: 12)
        let path = try SimulatedPacketPath(
            aToB: .conditions(conditions), bToA: .clean(), recordsDeliveries: true)
        let sim = try CallSimulation(
            configuration: .init(
                streamA: StreamTestSupport.configuration(seed: 80, srtp: srtp ? srtpA : nil),
                streamB: StreamTestSupport.configuration(seed: 81, srtp: srtp ? srtpB : nil), inputA: input,
                inputB: []),
            path: path)
        sim.streamB.isOnHold = true
        let result = sim.run()
        let a = PcapEndpoint(address: IPAddress("192.0.2.1")!, port: 40_000)
        let b = PcapEndpoint(address: IPAddress("192.0.2.2")!, port: 50_000)
        var writer = PcapWriter(format: format)
        let base: Int64 = 1_700_000_000
        // Some unrelated traffic first: a datagram that is not RTP and another RTP source on another flow.
        writer.write(
            PcapUDPPacket(seconds: base, nanoseconds: 0, source: b, destination: a, payload: [1, 2, 3]))
        for d in path.delivered[.b]! {
            let t = d.arrival.nanoseconds
            writer.write(
                PcapUDPPacket(
                    seconds: base + t / 1_000_000_000, nanoseconds: UInt32(t % 1_000_000_000), source: a,
                    destination: b,
                    payload: d.bytes))
        }
        return Call(
            capture: writer.bytes, input: input, live: result.statisticsB, senderKey: srtpA.localKey,
            senderSSRC: sim.streamA.ssrc)
    }

    @Test func replayedSRTPCaptureDecodesTheCallWithTheLiveCounters() throws {
        let call = try Self.recordCall(srtp: true)
        let result = try CaptureReplay.run(
            capture: call.capture,
            options: .init(srtp: (.aesCM128HmacSHA1_80, call.senderKey), sampleRate: 16_000))
        #expect(result.ssrc == call.senderSSRC)
        let s = result.statistics
        print(
            "replay: received \(s.packetsReceived) lost \(s.lostPackets) expected \(s.expectedPackets); live \(call.live.packetsReceived)/\(call.live.lostPackets)/\(call.live.expectedPackets)"
        )
        #expect(s.packetsReceived == call.live.packetsReceived)
        #expect(s.expectedPackets == call.live.expectedPackets)
        #expect(s.lostPackets == call.live.lostPackets)
        #expect(s.lostPackets > 0)
        #expect(abs(s.jitterMilliseconds - call.live.jitterMilliseconds) < 0.01)
        #expect(s.drops.authenticationFailed == 0 && s.drops.malformedRTP == 0)
        let snr = StreamTestSupport.alignedSegmentalSNR(
            reference: call.input, test: result.output, sampleRate: 16_000)
        // The replayed buffer raises its delay by one packet mid-call once losses start (FEC look-ahead), which a
        // single-lag SNR reads as noise; the spectral distance follows the moving delay.
        let distance = SpectralDistance.measure(reference: call.input, degraded: result.output, sampleRate: 16_000)
        print("replay segSNR \(snr.snr) dB, spectral distance to the input \(distance.decibels) dB")
        #expect(distance.decibels < 3)
        #expect(result.report.rtp.received + result.report.rtp.lost == result.report.rtp.expected)
    }

    @Test func aKeyThatAuthenticatesNothingOrNoKeyOnSRTPIsAnErrorNotASilentSuccess() throws {
        let call = try Self.recordCall(srtp: true)
        var g = SeededGenerator(seed: 999)
        let wrongKey = SRTPMasterKey.random(for: .aesCM128HmacSHA1_80, using: &g)
        #expect {
            _ = try CaptureReplay.run(
                capture: call.capture, options: .init(srtp: (.aesCM128HmacSHA1_80, wrongKey), sampleRate: 16_000))
        } throws: { error in
            guard case .keyAuthenticatesNothing(let ssrcs, let plainOpus) = error as? CaptureReplayError else {
                return false
            }
            return ssrcs.contains(call.senderSSRC) && !plainOpus
        }
        // Without a key the ciphertext does not parse as Opus: refused instead of decoded as noise.
        #expect {
            _ = try CaptureReplay.run(capture: call.capture, options: .init(sampleRate: 16_000))
        } throws: { error in
            guard case .looksEncrypted(let ssrc, _, _, _) = error as? CaptureReplayError else { return false }
            return ssrc == call.senderSSRC
        }
        // A plain-RTP capture with a key: the stream parses as Opus, so the error says to omit the key.
        let plain = try Self.recordCall(srtp: false)
        #expect {
            _ = try CaptureReplay.run(
                capture: plain.capture, options: .init(srtp: (.aesCM128HmacSHA1_80, wrongKey), sampleRate: 16_000))
        } throws: { error in
            guard case .keyAuthenticatesNothing(_, let plainOpus) = error as? CaptureReplayError else { return false }
            return plainOpus
        }
    }

    @Test func plainRTPCaptureInClassicPcapReplaysAndUnknownSSRCIsAClearError() throws {
        let call = try Self.recordCall(srtp: false, format: .pcap(nanosecondTimestamps: false))
        let result = try CaptureReplay.run(
            capture: call.capture, options: .init(ssrc: call.senderSSRC, sampleRate: 16_000))
        #expect(result.statistics.packetsReceived == call.live.packetsReceived)
        #expect(throws: CaptureReplayError.self) {
            _ = try CaptureReplay.run(capture: call.capture, options: .init(ssrc: 42))
        }
        #expect(throws: CaptureReplayError.self) {
            _ = try CaptureReplay.run(capture: [0, 1, 2, 3], options: .init())
        }
    }

    @Test(
        .tags(.cli), .scheduledByTags,
        .enabled(if: BuiltExecutables.url("voice-engine") != nil, "voice-engine is not built"))
    func theCommandExitsWith65AndSaysWhyWhenNothingCanBeDecoded() throws {
        let call = try Self.recordCall(srtp: true)
        let file = try TestFiles.temporaryFile(call.capture, name: "srtp.pcapng")
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("\(UUID().uuidString).wav")
        defer { for f in [file, out] { try? FileManager.default.removeItem(at: f) } }
        let wrong = Data(SRTPMasterKey.random(for: .aesCM128HmacSHA1_80).bytes).base64EncodedString()
        let right = Data(call.senderKey.bytes).base64EncodedString()
        for (arguments, fragment) in [
            ([] as [String], "looks SRTP-protected"),
            (["--srtp-key", "inline:" + wrong], "authenticates no RTP packet")
        ] {
            let (status, _, stderr) = try BuiltExecutables.run(
                "voice-engine", ["replay", file.path, "--out", out.path] + arguments)
            #expect(status == 65 && stderr.hasPrefix("error: ") && stderr.contains(fragment), "\(stderr)")
            #expect(!FileManager.default.fileExists(atPath: out.path), "no WAV written for nothing decoded")
        }
        let (status, stdout, stderr) = try BuiltExecutables.run(
            "voice-engine",
            [
                "replay", file.path, "--out", out.path, "--srtp-key", "inline:" + right, "--rate", "16000"
            ])
        #expect(status == 0, "\(stderr)")
        #expect(
            stdout.contains("0x" + String(call.senderSSRC, radix: 16))
                && stdout.contains("the one the key authenticates"))
    }

    @Test func srtpKeyArgumentAcceptsInlineBareAndCryptoLines() throws {
        var g = SeededGenerator(seed: 3)
        let attribute = SDESCryptoAttribute(
            tag: 1, suite: .aesCM128HmacSHA1_32,
            key: SRTPMasterKey.random(for: .aesCM128HmacSHA1_32, using: &g))
        let value = attribute.attributeValue
        let inline = String(value[value.range(of: "inline:")!.lowerBound...])
        let base64 = String(inline.dropFirst("inline:".count))
        let fromLine = try CaptureReplay.parseKey(attribute.attributeLine, suite: .aesCM128HmacSHA1_80)
        #expect(fromLine.suite == .aesCM128HmacSHA1_32 && fromLine.key == attribute.key)
        #expect(try CaptureReplay.parseKey(inline, suite: .aesCM128HmacSHA1_32).key == attribute.key)
        #expect(try CaptureReplay.parseKey(base64, suite: .aesCM128HmacSHA1_32).key == attribute.key)
        #expect(throws: CaptureReplayError.self) {
            _ = try CaptureReplay.parseKey("inline:!!!", suite: .aesCM128HmacSHA1_80)
        }
    }
}
