import Foundation
import NIOCore
import NIOPosix
import Testing
import VoiceCore
import VoiceEngine
import VoiceSIP
import VoiceTestSupport

let baresipPath = "/usr/bin/baresip"

/// baresip (Debian's, v1.0) against the engine with real media: Opus (or only G.711, only G.722) with SDES-SRTP on
/// loopback, each side's speech from a file and what it heard recorded (the engine's file speaker; baresip's
/// `sndfile` dump of what it decoded), then the speech each side sent is looked for in what the other recorded. baresip does not multiplex RTCP, so each
/// side's reports must reach the other's RTCP port: the engine's round trip needs baresip's report blocks about the
/// engine's sender reports. Ports 25140–25149 are this suite's.
@Suite(
    "baresip calls with speech", .tags(.interop, .live), .scheduledByTags, .serialized, .timeLimit(.minutes(1)),
    .enabled(
        if: FileManager.default.isExecutableFile(atPath: baresipPath),
        "baresip is not installed (make test-deps installs it)"),
    .enabled(if: SharedTestData.isPresent, "the shared speech recordings (../shared/testdata/speech) are absent"))
struct BaresipTests {
    static let engineSpeech = SharedTestData.speech + "/jfk_16k_mono.wav"
    static let baresipSpeech = SharedTestData.speech + "/pjsip_input_16k.wav"
    /// Long enough for a report of baresip's to answer the engine's: baresip reports about 2 s and 7 s into its
    /// call (RFC 3550's 5 s interval), and only one after the engine's first sender report (1.25–3.75 s in)
    /// carries its LSR.
    static let seconds = 9.0

    @Test func engineCallsBaresip() async throws {
        try await withBaresip(port: 25140, dial: nil) { loop, directory in
            let (agent, _) = try await makeAgent("engine", on: loop)
            let media = try await EngineMedia.bind()
            let call = try await agent.call(
                SIPURI(user: "b", host: "127.0.0.1", port: 25140), offering: media.capabilities,
                headers: [("X-Interop", "baresip")])
            let log = CallEventLog(call)
            let negotiated = try await log.established()
            #expect(negotiated.srtp != nil && negotiated.remotePort != 0)
            #expect(!negotiated.rtcpMux && negotiated.remoteRTCPPort == negotiated.remotePort + 1, "\(negotiated)")
            try await talkAndHangUp(call, log, media: media, negotiated: negotiated, directory: directory)
            try await agent.endpoint.close()
        }
    }

    @Test func baresipCallsEngine() async throws {
        try await withEventLoop { loop in
            let (agent, _) = try await makeAgent("engine", on: loop)
            let port = try #require(await agent.endpoint.localAddress(.udp)?.port)
            try await withBaresip(port: 25142, dial: "sip:engine@127.0.0.1:\(port)", loop: loop) { _, directory in
                // Answering, the engine names its RTCP port (a=rtcp:, RFC 3605) and baresip must use it.
                let media = try await EngineMedia.bind(announcingRTCPPort: true)
                var incoming = agent.incomingCalls.makeAsyncIterator()
                let call = try #require(await incoming.next())
                let log = CallEventLog(call)
                #expect(call.remoteOffer?.audio.crypto.isEmpty == false)
                try await call.ring()
                let negotiated = try await call.answer(with: media.capabilities)
                #expect(!negotiated.rtcpMux, "baresip offered a=rtcp-mux")
                _ = try await log.established()
                try await talkAndHangUp(call, log, media: media, negotiated: negotiated, directory: directory)
            }
            try await agent.endpoint.close()
        }
    }

    /// baresip with only G.711 (PCMU, PCMA) or only G.722 loaded: the engine offers Opus, G.722, PCMU, PCMA and
    /// baresip answers its own codec; then baresip offers its codec and the engine answers it. Speech both ways.
    @Test(arguments: [("g711", AudioCodec.pcmu, 25144), ("g722", AudioCodec.g722, 25146)])
    func telephonyCodecCallsBothWays(module: String, codec: AudioCodec, port: Int) async throws {
        try await withBaresip(port: port, dial: nil, codec: module) { loop, directory in
            let (agent, _) = try await makeAgent("engine", on: loop)
            let media = try await EngineMedia.bind()
            let call = try await agent.call(
                SIPURI(user: "b", host: "127.0.0.1", port: port), offering: media.capabilities)
            let log = CallEventLog(call)
            let negotiated = try await log.established()
            #expect(negotiated.codec == codec && negotiated.payloadType == codec.staticPayloadType, "\(negotiated)")
            try await talkAndHangUp(call, log, media: media, negotiated: negotiated, directory: directory)
            try await agent.endpoint.close()
        }
        try await withEventLoop { loop in
            let (agent, _) = try await makeAgent("engine", on: loop)
            let enginePort = try #require(await agent.endpoint.localAddress(.udp)?.port)
            try await withBaresip(
                port: port + 1, dial: "sip:engine@127.0.0.1:\(enginePort)", loop: loop, codec: module
            ) { _, directory in
                let media = try await EngineMedia.bind(announcingRTCPPort: true)
                var incoming = agent.incomingCalls.makeAsyncIterator()
                let call = try #require(await incoming.next())
                let log = CallEventLog(call)
                try await call.refuseUnacceptableOffer(media.capabilities)
                try await call.ring()
                let negotiated = try await call.answer(with: media.capabilities)
                #expect(negotiated.codec == codec, "\(negotiated)")
                _ = try await log.established()
                try await talkAndHangUp(call, log, media: media, negotiated: negotiated, directory: directory)
            }
            try await agent.endpoint.close()
        }
    }

    /// Runs the established call's media for ``seconds``, hangs up, and checks the speech both ways.
    func talkAndHangUp(
        _ call: SIPCall, _ log: CallEventLog, media: EngineMedia, negotiated: NegotiatedAudio, directory: URL
    ) async throws {
        let heard = try await media.run(negotiated, directory: directory, seconds: Self.seconds)
        await call.hangUp()
        #expect(try await log.ended().cause == .localHangup)
        try verifySpeech(engineHeard: heard, baresipDirectory: directory)
    }

    /// The engine's speaker holds baresip's speech and baresip's decoded dump holds the engine's.
    func verifySpeech(engineHeard: [Int16], baresipDirectory directory: URL) throws {
        let dumps = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        let decoded = try #require(
            dumps.first { $0.hasSuffix("-dec.wav") }, "baresip's sndfile dump is missing: \(dumps)")
        // libsndfile writes the WAV header's sizes when baresip closes the dump at the end of its call.
        var baresipHeard = try WAVFile.read(path: directory.appendingPathComponent(decoded).path)
        for _ in 0..<50 where baresipHeard.frameCount == 0 {
            usleep(100_000)
            baresipHeard = try WAVFile.read(path: directory.appendingPathComponent(decoded).path)
        }
        let toEngine = SpeechMatch.median(
            sent: try WAVFile.read(path: Self.baresipSpeech).int16Samples, heard: engineHeard)
        let toBaresip = SpeechMatch.median(
            sent: try WAVFile.read(path: Self.engineSpeech).int16Samples,
            heard: SpeechMatch.to16k(baresipHeard.int16Samples, rate: baresipHeard.format.sampleRate))
        // The measure tells speech apart: baresip's own speech is not what it heard from us.
        let control = SpeechMatch.median(
            sent: try WAVFile.read(path: Self.baresipSpeech).int16Samples,
            heard: SpeechMatch.to16k(baresipHeard.int16Samples, rate: baresipHeard.format.sampleRate))
        print(
            "baresip → engine: median window correlation \(toEngine); engine → baresip: \(toBaresip); control \(control)"
        )
        #expect(control < 0.3, "the other speech correlates too (\(control)): the measure cannot tell them apart")
        #expect(toEngine > 0.5, "the engine did not hear baresip's speech (\(toEngine))")
        #expect(
            toBaresip > 0.5,
            "baresip did not hear the engine's speech (\(toBaresip)); its dump: \(baresipHeard.format), \(baresipHeard.frameCount) frames"
        )
    }

    /// baresip on `port` with auto-answer, SRTP mandatory, only `codec`'s module (`opus`, `g711`, `g722`), a long
    /// copy of `baresipSpeech` as microphone, an ALSA null speaker and the `sndfile` dump; dialing `dial` when given.
    func withBaresip(
        port: Int, dial: String?, loop given: (any EventLoop)? = nil, codec: String = "opus",
        _ body: (any EventLoop, URL) async throws -> Void
    ) async throws {
        let directory = try makeTemporaryDirectory("baresip")
        defer { try? FileManager.default.removeItem(at: directory) }
        // aufile plays its file once and baresip hangs up at its end: the file must outlast the call.
        let source = try BaresipPeer.repeated(Self.baresipSpeech, seconds: Self.seconds + 15, into: directory)
        var arguments = try BaresipPeer.configure(directory: directory, port: port, microphone: source, codec: codec)
        if let dial { arguments += ["-e", "/dial \(dial)"] }
        let baresip = try PeerProcess(
            name: "baresip", executable: baresipPath, arguments: arguments, directory: directory)
        defer { baresip.stop() }
        guard await waitUntilUDPPortBound(port), baresip.isRunning else {
            try Test.cancel("baresip did not start:\n\(baresip.logTail)")
        }
        do {
            if let given {
                try await body(given, directory)
            } else {
                try await withEventLoop { loop in try await body(loop, directory) }
            }
        } catch {
            Issue.record("baresip's log:\n\(baresip.logTail)")
            throw error
        }
    }
}

/// The engine's side of a call's media: an RTP socket bound before the offer or answer (its port goes in the SDP),
/// then a `LiveCall` on the negotiated stream with the speech file as microphone and a file speaker. Without
/// `announcingRTCPPort` the RTCP socket is bound at RTP + 1 once the negotiation says RTCP is not multiplexed;
/// with it, on any free port announced as `a=rtcp:`.
struct EngineMedia {
    let transport: UDPMediaTransport
    let capabilities: AudioCapabilities

    static func bind(announcingRTCPPort: Bool = false) async throws -> EngineMedia {
        let transport = try await UDPMediaTransport.bind(host: "127.0.0.1", port: 0)
        var send = OpusEncoderConfiguration()
        send.bitrate = 32_000
        let rtcpPort = announcingRTCPPort ? Int(try transport.bindRTCPPort(port: 0).port) : nil
        return EngineMedia(
            transport: transport,
            capabilities: AudioCapabilities(
                address: "127.0.0.1", port: Int(transport.localEndpoint.port), send: send, rtcpPort: rtcpPort))
    }

    /// Runs the call's media for `seconds` and returns what the speaker played.
    func run(_ media: NegotiatedAudio, directory: URL, seconds: Double) async throws -> [Int16] {
        try transport.setRemote(negotiated: media)
        let heardPath = directory.appendingPathComponent("engine-heard.wav").path
        let devices = try LiveDeviceName.openPair(
            microphone: .file(BaresipTests.engineSpeech), speaker: .file(heardPath))
        let call = try LiveCall(
            configuration: MediaStreamConfiguration(negotiated: media, voiceProcessing: false), transport: transport,
            capture: devices.capture, playout: devices.playout)
        try call.start()
        try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
        let result = await call.stop()
        #expect(result.wasEstablished, "media did not flow both ways: \(result.statistics)")
        #expect(
            result.report.rtp.received > Int(seconds * 40),
            "received \(result.report.rtp.received) RTP packets in \(seconds) s")
        if !media.rtcpMux {
            let rtcp = result.report.rtcp, counters = transport.rtcpCounters
            print(
                "RTCP: sent \(rtcp.sent), received \(rtcp.received), answering ours \(rtcp.senderReportsAnswered), RTT samples \(result.report.rtt.samples), drops \(result.report.drops.counts), on the RTCP port \(counters.map { "\($0)" } ?? "none")"
            )
            #expect(
                transport.remoteRTCP?.port == UInt16(media.remoteRTCPPort),
                "RTCP goes to \(transport.remoteRTCP.map { "\($0)" } ?? "the RTP port")")
            #expect(
                rtcp.received > 0,
                "no report of baresip's reached the engine's RTCP port: \(counters.map { "\($0)" } ?? "no RTCP socket")"
            )
            #expect(
                rtcp.senderReportsAnswered > 0,
                "no report of baresip's answers the engine's sender reports: they did not reach its RTCP port")
            #expect(result.report.drops.counts.rtcpAuthenticationFailed == 0)
            #expect(
                (counters?.receivedRTCP ?? 0) > 0 && result.transport.receivedRTCP == 0, "RTCP arrived on the RTP port")
        }
        return try WAVFile.read(path: heardPath).int16Samples
    }
}
