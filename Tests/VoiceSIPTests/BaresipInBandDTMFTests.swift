import Foundation
import Testing
import VoiceCore
import VoiceEngine
import VoiceSIP
import VoiceTestSupport

/// Keys that arrive as tones in the audio from a real peer: baresip (Debian's) with only G.711 plays a file holding
/// DTMF tones the engine's tone generator made, as its microphone; the engine calls it with in-band detection on
/// (``MediaStreamConfiguration/detectsInBandDTMF``) and reports the keys in order, once each, although no
/// telephone-event carried them. baresip runs at 8 kHz here: its 16 → 8 kHz resampler attenuates 1.3–1.6 kHz by
/// some 13 dB against 700 Hz (measured on its encoder's dump), more twist than a Q.24 receiver accepts, so at 16 kHz
/// only keys of the 1209 Hz column come through. Ports 25240–25241 are this suite's.
@Suite(
    "In-band DTMF from baresip", .tags(.interop, .live), .scheduledByTags, .serialized, .timeLimit(.minutes(1)),
    .enabled(if: BaresipPeer.isInstalled, "baresip is not installed (make test-deps installs it)"))
struct BaresipInBandDTMFTests {
    @Test func tonesInBaresipsAudioAreReportedAsKeys() async throws {
        let directory = try makeTemporaryDirectory("baresip-inband")
        defer { try? FileManager.default.removeItem(at: directory) }
        let keys = "2580#*"
        let second = [Int16](repeating: 0, count: 8_000)
        let tones = try #require(ToneSpec.dtmfSamples(keys, sampleRate: 8_000))
        let microphone = directory.appendingPathComponent("tones.wav").path
        try WAVFile.write(
            // Three seconds first: baresip plays from when its media starts, the engine listens once its call runs.
            pcm16: Array(repeatElement(second, count: 3).joined()) + tones
                + Array(repeatElement(second, count: 30).joined()),
            format: AudioFormat(sampleRate: 8_000), to: microphone)
        let arguments = try BaresipPeer.configure(
            directory: directory, port: 25240, microphone: microphone, codec: "g711", audioRate: 8_000)
        let baresip = try PeerProcess(
            name: "baresip", executable: BaresipPeer.executable, arguments: arguments, directory: directory)
        defer { baresip.stop() }
        guard await waitUntilUDPPortBound(25240), baresip.isRunning else {
            try Test.cancel("baresip did not start:\n\(baresip.logTail)")
        }
        try await withEventLoop { loop in
            let (agent, _) = try await makeAgent("engine", on: loop)
            let transport = try await UDPMediaTransport.bind(host: "127.0.0.1", port: 0)
            let capabilities = AudioCapabilities(address: "127.0.0.1", port: Int(transport.localEndpoint.port))
            let call = try await agent.call(SIPURI(user: "b", host: "127.0.0.1", port: 25240), offering: capabilities)
            let log = CallEventLog(call)
            let negotiated = try await log.established()
            #expect(negotiated.codec == .pcmu, "\(negotiated)")
            try transport.setRemote(negotiated: negotiated)
            let (live, heard) = try KeyLog.startCall(
                negotiated: negotiated, transport: transport, detectsInBandDTMF: true)
            let deadline = ContinuousClock.now + .seconds(8)
            while ContinuousClock.now < deadline, heard.text.count < keys.count {
                try await Task.sleep(for: .milliseconds(50))
            }
            // Another second: a key heard twice would show now.
            try await Task.sleep(for: .seconds(1))
            await call.hangUp()
            _ = await live.stop()
            #expect(heard.text == keys, "baresip's log:\n\(baresip.logTail)")
            try await agent.endpoint.close()
        }
    }
}
