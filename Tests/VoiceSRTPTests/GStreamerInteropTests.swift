import Foundation
import Testing
import VoiceCodec
import VoiceRTP
import VoiceSRTP
import VoiceTestSupport

/// Interoperability with software nobody here wrote (ARCHITECTURE.md §6): Debian's GStreamer
/// `srtpenc`/`srtpdec` (gstreamer1.0-plugins-bad), `rtpopuspay`/`rtpopusdepay` (-good) and `opusenc`/`opusdec`
/// (-base), run by `gst-launch-1.0` (-tools) as a child process talking real UDP on 127.0.0.1.
///
/// Every child process is bounded (`GStreamer.processTimeout`, then SIGKILL and a failure carrying its stderr)
/// and killed when its owner goes away, so a stuck pipeline can neither hang the run nor outlive the test.
/// Serialized: one pipeline at a time on a small machine.
@Suite(
    .tags(.interop), .scheduledByTags, .serialized,
    .enabled(if: GStreamer.isAvailable, "GStreamer not usable: \(GStreamer.missingRequirement ?? "")"))
struct GStreamerInteropTests {
    static let payloadType: UInt8 = 96
    static let frameSamples = 960  // 20 ms at 48 kHz
    static let frameCount = 50  // 1 s
    /// First sequence number: the 16-bit sequence wraps (and the SRTP rollover counter advances) mid-stream, the
    /// case implementations most often get wrong between each other.
    static let wrappingSequenceStart: UInt16 = 65_520

    /// The srtpdec / rtpopusdepay input caps for our stream (RFC 7587: clock rate 48000, encoding name OPUS).
    static func receiveCaps(suite: SRTPCryptoSuite?, key: SRTPMasterKey?, ssrc: UInt32) -> String {
        let rtp = "media=audio,clock-rate=48000,encoding-name=OPUS,payload=\(payloadType),ssrc=(uint)\(ssrc)"
        guard let suite, let key else { return "application/x-rtp," + rtp }
        let parameters = GStreamer.srtpParameters(suite)
        return "application/x-srtp," + rtp + ",srtp-key=(buffer)\(GStreamer.hexString(key.bytes))"
            + ",srtp-cipher=\(parameters.cipher),srtp-auth=\(parameters.rtpAuth)"
            + ",srtcp-cipher=\(parameters.cipher),srtcp-auth=\(parameters.rtcpAuth)"
    }

    /// The guard the other tests rely on: a pipeline that never ends by itself (udpsrc with no EOS) is ended at
    /// the timeout, and neither gst-launch-1.0 nor its `timeout` wrapper is left running.
    @Test func boundedProcessEndsAPipelineThatNeverFinishes() async throws {
        let port = try LoopbackUDPSocket.freePort()
        let marker = "port=\(port)"
        let gst = try BoundedProcess(
            executable: GStreamer.launchPath!, arguments: ["udpsrc", "address=127.0.0.1", marker, "!", "fakesink"])
        let deadline = ContinuousClock.now + GStreamer.processTimeout
        while !udpPortIsBound(port) && gst.isRunning && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(udpPortIsBound(port), "\(gst.diagnostics("pipeline did not start"))")
        let status = await gst.wait(timeout: .milliseconds(300))
        #expect(status == nil, "a udpsrc pipeline should not end by itself")
        #expect(!gst.isRunning)
        #expect(processIDs(withCommandLineContaining: marker).isEmpty, "gst-launch-1.0 outlived its BoundedProcess")
        #expect(!udpPortIsBound(port))
    }

    // MARK: engine → GStreamer

    /// What came out of `udpsrc ! [srtpdec !] rtpopusdepay ! opusdec` for a stream the engine sent.
    struct GStreamerDecode {
        /// GStreamer's decoded PCM (mono, 48 kHz).
        var pcm: [Int16]
        /// The same Opus packets decoded by the engine's own decoder, for comparison.
        var engineDecode: [Int16]
        /// The source tone.
        var source: [Int16]
    }

    /// Encodes a tone with the engine's Opus encoder, packetizes it (RFC 7587), protects it with `senderKey`
    /// (unless `suite` is nil: plain RTP) and sends it over UDP to a gst-launch pipeline configured with
    /// `receiverKey`. Returns nil (after recording an issue) when the pipeline failed or timed out.
    func sendEngineStreamToGStreamer(
        suite: SRTPCryptoSuite?, senderKey: SRTPMasterKey?, receiverKey: SRTPMasterKey?, frequency: Double
    ) async throws -> GStreamerDecode? {
        let ssrc = UInt32.random(in: 1 ... .max)
        let source = gstTestTone(
            frequency: frequency, amplitude: 12_000, count: Self.frameCount * Self.frameSamples)

        // Encode, packetize, protect.
        let encoder = try OpusEncoder(configuration: OpusEncoderConfiguration(application: .audio, bitrate: 64_000))
        let engineDecoder = try OpusDecoder(sampleRate: 48_000, channels: 1)
        var packetizer = RTPPacketizer(
            payloadType: Self.payloadType, ssrc: ssrc, initialSequenceNumber: Self.wrappingSequenceStart,
            initialTimestamp: UInt32.random(in: 0 ... .max))
        let sender = try suite.map { try SRTPSession(suite: $0, key: senderKey!, direction: .outbound) }
        var datagrams: [[UInt8]] = []
        var engineDecode: [Int16] = []
        var opus = [UInt8](repeating: 0, count: OpusEncoder.maxPacketBytes)
        var pcm = [Int16](repeating: 0, count: engineDecoder.maxFrameSamples)
        for frame in 0..<Self.frameCount {
            let input = Array(source[frame * Self.frameSamples..<(frame + 1) * Self.frameSamples])
            let opusLength = try encoder.encode(input, into: &opus)
            let payload = Array(opus[0..<opusLength])
            let decoded = try engineDecoder.decode(payload, into: &pcm)
            engineDecode += pcm[0..<decoded]

            var packet = [UInt8](repeating: 0, count: 12 + opusLength + (sender?.rtpOverhead ?? 0))
            let ticks = OpusRTP.ticks(samples: Self.frameSamples, codingRate: 48_000)
            var length = payload.withUnsafeBytes { payloadBytes in
                packet.withUnsafeMutableBytes { packetizer.packetize(payload: payloadBytes, ticks: ticks, into: $0) }
            }
            if let sender {
                length = try packet.withUnsafeMutableBytes { try sender.protect($0, length: length) }
            }
            datagrams.append(Array(packet[0..<length]))
        }

        // Start the receiving pipeline; udpsrc ends the stream (EOS) after exactly our packet count.
        let port = try LoopbackUDPSocket.freePort()
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("voice-gst-\(UUID().uuidString).raw")
        defer { try? FileManager.default.removeItem(at: output) }
        let caps = Self.receiveCaps(suite: suite, key: receiverKey, ssrc: ssrc)
        var pipeline = [
            "-e", "udpsrc", "address=127.0.0.1", "port=\(port)", "num-buffers=\(datagrams.count)", "caps=\(caps)",
            "!"
        ]
        if suite != nil { pipeline += ["srtpdec", "!"] }
        pipeline += [
            "rtpopusdepay", "!", "opusdec", "!", "audioconvert", "!", "audio/x-raw,format=S16LE,rate=48000,channels=1",
            "!", "filesink", "location=\(output.path)"
        ]
        let gst = try BoundedProcess(executable: GStreamer.launchPath!, arguments: pipeline)
        defer { gst.kill() }

        // Feed udpsrc once it has bound its port (so no packet goes to a closed port); wait (bounded) for the end.
        let deadline = ContinuousClock.now + GStreamer.processTimeout
        guard try await gst.feedUDPSource(port: port, datagrams, deadline: deadline), await gst.exitsCleanly() else {
            return nil
        }
        let data = try Data(contentsOf: output)
        return GStreamerDecode(pcm: gstSamplesFromS16LE(data), engineDecode: engineDecode, source: source)
    }

    /// Checks GStreamer's decode of the engine's stream: every packet came through, the Opus frames are exactly
    /// the ones the engine sent (bit-exact against the engine's own decode of them, both being libopus), and
    /// the audio is the source tone.
    func expectMatchesSource(_ result: GStreamerDecode, frequency: Double, label: String) {
        #expect(
            result.pcm.count == Self.frameCount * Self.frameSamples,
            "\(label): GStreamer decoded \(result.pcm.count) samples, expected every packet's \(Self.frameSamples)")
        guard result.pcm.count == result.engineDecode.count else { return }
        let agreement = gstSignalToDifferenceDB(result.engineDecode, result.pcm)
        #expect(agreement >= 60, "\(label): GStreamer's decode differs from the engine's: \(agreement) dB")
        // Skip the first 5 frames (encoder start-up) when measuring the tone.
        let fit = ToneFit(result.pcm[(5 * Self.frameSamples)...], frequency: frequency)
        let sourceFit = ToneFit(result.source[...], frequency: frequency)
        #expect(fit.snrDB >= 20, "\(label): tone SNR \(fit.snrDB) dB")
        #expect(
            abs(20 * log10(fit.amplitude / sourceFit.amplitude)) <= 1,
            "\(label): tone amplitude \(fit.amplitude), source \(sourceFit.amplitude)")
        let level = 20 * log10(fit.amplitude / sourceFit.amplitude)
        let versus = agreement.isInfinite ? "bit-exact" : String(format: "%.1f dB", agreement)
        print(
            "GStreamer interop \(label): engine→GStreamer \(result.pcm.count) samples, "
                + String(format: "tone SNR %.1f dB, level %+.2f dB, ", fit.snrDB, level)
                + "vs engine decode \(versus)")
    }

    @Test(arguments: SRTPCryptoSuite.allCases)
    func gstreamerDecryptsAndDecodesEngineSRTPStream(suite: SRTPCryptoSuite) async throws {
        let key = SRTPMasterKey.random(for: suite)
        let result = try await sendEngineStreamToGStreamer(
            suite: suite, senderKey: key, receiverKey: key, frequency: 1_000)
        guard let result else { return }
        expectMatchesSource(result, frequency: 1_000, label: suite.rawValue)
    }

    @Test func gstreamerDecodesEnginePlainRTPOpusStream() async throws {
        let result = try await sendEngineStreamToGStreamer(
            suite: nil, senderKey: nil, receiverKey: nil, frequency: 440)
        guard let result else { return }
        expectMatchesSource(result, frequency: 440, label: "plain RTP")
    }

    /// The control for the tests above: srtpdec given a different key authenticates none of the engine's packets,
    /// so nothing is decoded (the match above is not GStreamer passing bytes through unchecked).
    @Test(arguments: [SRTPCryptoSuite.aesCM128HmacSHA1_80, .aeadAES128GCM])
    func gstreamerRejectsEngineStreamUnderAnotherKey(suite: SRTPCryptoSuite) async throws {
        let result = try await sendEngineStreamToGStreamer(
            suite: suite, senderKey: SRTPMasterKey.random(for: suite),
            receiverKey: SRTPMasterKey.random(for: suite), frequency: 1_000)
        guard let result else { return }
        #expect(result.pcm.isEmpty, "srtpdec decoded \(result.pcm.count) samples under the wrong key")
    }
}
