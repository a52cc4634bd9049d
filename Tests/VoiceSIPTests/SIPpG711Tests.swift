import Foundation
import Testing
import VoiceEngine
import VoiceSIP
import VoiceTestSupport

/// The G.711 A-law recording Debian's sip-tester ships (`g711a.pcap`), as RTP payloads in capture order.
enum PackagedG711Recording {
    static let path = "/usr/share/sip-tester/g711a.pcap"

    /// The RTP payloads of the capture's UDP packets (classic pcap, Ethernet, IPv4).
    static func payloads() throws -> [[UInt8]] {
        let data = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        guard data.count >= 24, data[0] == 0xD4, data[1] == 0xC3 else { throw SIPCallError("\(path): not pcap") }
        var payloads: [[UInt8]] = []
        var at = 24
        while at + 16 <= data.count {
            let captured = Int(data[at + 8]) | Int(data[at + 9]) << 8 | Int(data[at + 10]) << 16
            let packet = Array(data[(at + 16)..<min(data.count, at + 16 + captured)])
            at += 16 + captured
            guard packet.count > 14 + 20 + 8 + 12, packet[12] == 0x08, packet[13] == 0x00 else { continue }
            let udp = 14 + Int(packet[14] & 0x0F) * 4
            let udpLength = Int(packet[udp + 4]) << 8 | Int(packet[udp + 5])
            let rtp = udp + 8
            guard packet[rtp] >> 6 == 2, rtp + 12 <= udp + udpLength else { continue }
            payloads.append(Array(packet[(rtp + 12 + Int(packet[rtp] & 0x0F) * 4)..<(udp + udpLength)]))
        }
        return payloads
    }
}

extension SIPpTests {
    /// SIPp answers with PCMA only, as a trunk does, and plays sip-tester's packaged G.711 recording into the call:
    /// the engine negotiates PCMA from its offer of Opus, G.722, PCMU and PCMA and plays that speech.
    @Test(
        .enabled(
            if: FileManager.default.fileExists(atPath: PackagedG711Recording.path),
            "sip-tester's g711a.pcap is absent"))
    func packagedG711RecordingPlayedIntoTheEngineIsHeard() async throws {
        let directory = try makeTemporaryDirectory("sipp-g711")
        defer { try? FileManager.default.removeItem(at: directory) }
        let silence = directory.appendingPathComponent("silence.wav").path
        try WAVFile.write(
            pcm16: [Int16](repeating: 0, count: 16_000 * 10), format: AudioFormat(sampleRate: 16_000), to: silence)
        let heardPath = directory.appendingPathComponent("heard.wav").path
        try await withSIPp("uas-answer-pcma-play", port: 25076, arguments: ["-mp", "25126"]) { loop, server in
            let (agent, _) = try await makeAgent("engine", on: loop)
            let transport = try await UDPMediaTransport.bind(host: "127.0.0.1", port: 0)
            let capabilities = AudioCapabilities(
                address: "127.0.0.1", port: Int(transport.localEndpoint.port), srtp: .optional([.aesCM128HmacSHA1_80]))
            let call = try await agent.call(
                SIPURI(user: "sipp", host: "127.0.0.1", port: server.port), offering: capabilities)
            let log = CallEventLog(call)
            let negotiated = try await log.established()
            #expect(negotiated.codec == .pcma && negotiated.payloadType == 8 && negotiated.srtp == nil)
            #expect(negotiated.ptime == 20, "a=ptime:30 is not a frame duration we send; ours stays")
            try transport.setRemote(negotiated: negotiated)
            let devices = try LiveDeviceName.openPair(microphone: .file(silence), speaker: .file(heardPath))
            let live = try LiveCall(
                configuration: MediaStreamConfiguration(negotiated: negotiated, voiceProcessing: false),
                transport: transport, capture: devices.capture, playout: devices.playout)
            try live.start()
            try await Task.sleep(for: .milliseconds(8_000))
            let result = await live.stop()
            await call.hangUp()
            #expect(try await log.ended().cause == .localHangup)
            #expect(result.report.rtp.received >= 230, "received \(result.report.rtp.received) of 236 RTP packets")
            #expect(result.report.drops.total == 0, "\(result.report.drops.counts)")
            try await agent.endpoint.close()
        }
        // What the engine played is the recording: decode the capture's payloads here and look for them.
        let decoder = TelephonyDecoder(codec: .pcma)
        var recording: [Int16] = []
        var frame = [Int16](repeating: 0, count: 480)
        for payload in try PackagedG711Recording.payloads() {
            let n = try payload.withUnsafeBufferPointer { input in
                try frame.withUnsafeMutableBufferPointer { try decoder.decode(input, into: $0) }
            }
            recording += frame[0..<n]
        }
        #expect(recording.count == 236 * 240)
        let heard = try WAVFile.read(path: heardPath)
        let match = SpeechMatch.median(
            sent: SpeechMatch.to16k(recording, rate: 8_000),
            heard: SpeechMatch.to16k(heard.int16Samples, rate: heard.format.sampleRate))
        print("g711a.pcap → engine: median window correlation \(match)")
        #expect(match > 0.8, "the engine did not play the recording (\(match))")
    }
}
