import Foundation
import NIOCore
import Testing
import VoiceCore
import VoiceEngine
import VoiceSIP
import VoiceTestSupport

/// linphonec (Debian's `linphone-cli`: liblinphone, belle-sip, mediastreamer2), a second independent softphone
/// beside baresip, offering and answering only G.711 with `telephone-event`, SDES-SRTP and RTCP on its own port.
/// The engine calls it and it calls the engine; in each call both sides speak from a file while keys go each way
/// (the engine's `sendDTMF`, linphonec's typed digits), then each side's speech is looked for in what the other
/// recorded and each side's keys in what the other reported. Ports 25230–25239 are this suite's.
@Suite(
    "linphonec calls with speech and DTMF", .tags(.interop, .live), .scheduledByTags, .serialized,
    .timeLimit(.minutes(1)),
    .enabled(if: LinphonePeer.isInstalled, "linphonec is not installed (make test-deps installs linphone-cli)"),
    .enabled(if: SharedTestData.isPresent, "the shared speech recordings (../shared/testdata/speech) are absent"))
struct LinphoneTests {
    static let engineSpeech = SharedTestData.speech + "/jfk_16k_mono.wav"
    static let linphoneSpeech = SharedTestData.speech + "/pjsip_input_16k.wav"
    static let seconds = 9.0

    @Test func engineCallsLinphone() async throws {
        try await withLinphone(sipPort: 25230, rtpPort: 25232) { linphone, directory in
            try await withEventLoop { loop in
                let (agent, _) = try await makeAgent("engine", on: loop)
                let media = try await EngineMedia.bind()
                let call = try await agent.call(
                    SIPURI(user: "linphone", host: "127.0.0.1", port: 25230), offering: media.capabilities)
                let log = CallEventLog(call)
                let negotiated = try await log.established()
                #expect(negotiated.codec == .pcmu && negotiated.payloadType == 0, "\(negotiated)")
                #expect(negotiated.srtp != nil && !negotiated.rtcpMux, "\(negotiated)")
                #expect(negotiated.telephoneEventClockRate == 8_000, "\(negotiated)")
                try await talk(negotiated, media: media, linphone: linphone, directory: directory)
                await call.hangUp()
                #expect(try await log.ended().cause == .localHangup)
                try await verifySpeech(linphone: linphone, directory: directory)
                try await agent.endpoint.close()
            }
        }
    }

    @Test func linphoneCallsEngine() async throws {
        try await withLinphone(sipPort: 25234, rtpPort: 25236) { linphone, directory in
            try await withEventLoop { loop in
                let (agent, _) = try await makeAgent("engine", on: loop)
                let port = try #require(await agent.endpoint.localAddress(.udp)?.port)
                let media = try await EngineMedia.bind(announcingRTCPPort: true)
                linphone.send("call sip:engine@127.0.0.1:\(port)")
                var incoming = agent.incomingCalls.makeAsyncIterator()
                let call = try #require(await incoming.next())
                let log = CallEventLog(call)
                let offer = try #require(call.remoteOffer?.audio)
                let codecs = offer.formats.filter { $0.rtpmap?.encodingName.lowercased() != "telephone-event" }
                #expect(codecs.map(\.payloadType) == [0, 8], "linphonec offered more than G.711: \(offer.formats)")
                #expect(!offer.crypto.isEmpty && !offer.rtcpMux, "\(offer)")
                try await call.refuseUnacceptableOffer(media.capabilities)
                try await call.ring()
                let negotiated = try await call.answer(with: media.capabilities)
                #expect(negotiated.codec == .pcmu && negotiated.telephoneEventClockRate == 8_000, "\(negotiated)")
                _ = try await log.established()
                try await talk(negotiated, media: media, linphone: linphone, directory: directory)
                await call.hangUp()
                #expect(try await log.ended().cause == .localHangup)
                try await verifySpeech(linphone: linphone, directory: directory)
                try await agent.endpoint.close()
            }
        }
    }

    /// Runs the call's media for ``seconds`` with the engine's speech and a file speaker; two seconds in, the
    /// engine sends `159#` and linphonec `2580`, and each side must report the other's keys in order.
    func talk(_ negotiated: NegotiatedAudio, media: EngineMedia, linphone: LinphonePeer, directory: URL) async throws {
        try media.transport.setRemote(negotiated: negotiated)
        let heardPath = directory.appendingPathComponent("engine-heard.wav").path
        let devices = try LiveDeviceName.openPair(microphone: .file(Self.engineSpeech), speaker: .file(heardPath))
        let live = try LiveCall(
            configuration: MediaStreamConfiguration(negotiated: negotiated, voiceProcessing: false),
            transport: media.transport, capture: devices.capture, playout: devices.playout)
        let keys = KeyLog()
        let events = live.events
        Task { for await event in events { if case .dtmfReceived(let digit) = event { keys.append(digit) } } }
        try live.start()
        try await Task.sleep(for: .seconds(2))
        try live.sendDTMF("159#")
        linphone.send("2580")
        try await Task.sleep(for: .milliseconds(Int((Self.seconds - 2) * 1000)))
        let result = await live.stop()
        #expect(result.wasEstablished, "media did not flow both ways: \(result.statistics)")
        #expect(result.report.rtp.received > Int(Self.seconds * 40), "received \(result.report.rtp.received) RTP")
        #expect(result.report.rtcp.received > 0, "no RTCP of linphonec's reached the engine's RTCP port")
        #expect(keys.text == "2580", "the engine received \(keys.text); linphonec:\n\(linphone.logTail)")
        #expect(linphone.receivedKeys == "159#", "linphonec reported \(linphone.receivedKeys)")
    }

    /// The engine's speaker holds linphonec's speech and linphonec's recording holds the engine's.
    func verifySpeech(linphone: LinphonePeer, directory: URL) async throws {
        #expect(await linphone.waitForOutput("ended", timeout: .seconds(5)), "linphonec:\n\(linphone.logTail)")
        let linphoneHeard = try await linphone.heard()
        let engineHeard = try WAVFile.read(path: directory.appendingPathComponent("engine-heard.wav").path)
            .int16Samples
        let linphoneSent = try WAVFile.read(path: Self.linphoneSpeech).int16Samples
        let toEngine = SpeechMatch.median(sent: linphoneSent, heard: engineHeard)
        let toLinphone = SpeechMatch.median(
            sent: try WAVFile.read(path: Self.engineSpeech).int16Samples, heard: linphoneHeard)
        let control = SpeechMatch.median(sent: linphoneSent, heard: linphoneHeard)
        print(
            "linphonec → engine: median window correlation \(toEngine); engine → linphonec: \(toLinphone); control \(control)"
        )
        #expect(control < 0.3, "the other speech correlates too (\(control)): the measure cannot tell them apart")
        #expect(toEngine > 0.5, "the engine did not hear linphonec's speech (\(toEngine))")
        #expect(
            toLinphone > 0.5,
            "linphonec did not hear the engine's speech (\(toLinphone)), \(linphoneHeard.count) samples")
    }

    /// linphonec on `sipPort` with auto-answer and a long copy of ``linphoneSpeech`` as its microphone.
    func withLinphone(
        sipPort: Int, rtpPort: Int, _ body: (LinphonePeer, URL) async throws -> Void
    ) async throws {
        let directory = try makeTemporaryDirectory("linphonec")
        defer { try? FileManager.default.removeItem(at: directory) }
        let microphone = try BaresipPeer.repeated(Self.linphoneSpeech, seconds: Self.seconds + 20, into: directory)
        let linphone = try LinphonePeer(
            directory: directory, sipPort: sipPort, rtpPort: rtpPort, microphone: microphone)
        defer { linphone.stop() }
        guard await linphone.waitUntilListening() else {
            try Test.cancel("linphonec did not open its SIP port:\n\(linphone.logTail)")
        }
        do {
            try await body(linphone, directory)
        } catch {
            Issue.record("linphonec's output:\n\(linphone.logTail)")
            throw error
        }
    }
}
