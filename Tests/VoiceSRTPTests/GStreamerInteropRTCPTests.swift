import Foundation
import Testing
import VoiceSRTP

// SRTCP both ways. engine → GStreamer: receiver reports protected by `protectRTCP` go through srtpdec's RTCP pads
// (`udpsrc ! srtpdec.rtcp_sink … srtpdec.rtcp_src ! filesink`) and must come out byte for byte as sent.
// GStreamer → engine: plain reports sent to `udpsrc ! srtpenc.rtcp_sink_0 … srtpenc.rtcp_src_0 ! udpsink` come
// back protected, and `unprotectRTCP` must restore them byte for byte.
extension GStreamerInteropTests {
    static let rtcpPacketCount = 20

    /// Sends `rtcpPacketCount` SRTCP packets to srtpdec and returns what its RTCP source pad wrote, or nil after
    /// recording an issue.
    func sendEngineSRTCPToGStreamer(
        suite: SRTPCryptoSuite, senderKey: SRTPMasterKey, receiverKey: SRTPMasterKey, ssrc: UInt32,
        plain: [[UInt8]]
    ) async throws -> [UInt8]? {
        let sender = try SRTPSession(suite: suite, key: senderKey, direction: .outbound)
        let datagrams = try plain.map { try sender.protectedRTCP($0) }

        let port = try LoopbackUDPSocket.freePort()
        let output = FileManager.default.temporaryDirectory.appendingPathComponent(
            "voice-gst-\(UUID().uuidString).rtcp")
        defer { try? FileManager.default.removeItem(at: output) }
        let parameters = GStreamer.srtpParameters(suite)
        let caps =
            "application/x-srtcp,ssrc=(uint)\(ssrc),srtp-key=(buffer)\(GStreamer.hexString(receiverKey.bytes))"
            + ",srtp-cipher=\(parameters.cipher),srtp-auth=\(parameters.rtpAuth)"
            + ",srtcp-cipher=\(parameters.cipher),srtcp-auth=\(parameters.rtcpAuth)"
        let gst = try BoundedProcess(
            executable: GStreamer.launchPath!,
            arguments: [
                "udpsrc", "address=127.0.0.1", "port=\(port)", "num-buffers=\(datagrams.count)", "caps=\(caps)", "!",
                "d.rtcp_sink", "srtpdec", "name=d", "d.rtcp_src", "!", "filesink", "location=\(output.path)"
            ])
        defer { gst.kill() }

        let deadline = ContinuousClock.now + GStreamer.processTimeout
        guard try await gst.feedUDPSource(port: port, datagrams, deadline: deadline), await gst.exitsCleanly() else {
            return nil
        }
        return [UInt8](try Data(contentsOf: output))
    }

    /// Receiver reports from `ssrc`, each different (the report block's bytes carry the packet's index).
    static func distinctReceiverReports(ssrc: UInt32) -> [[UInt8]] {
        (0..<rtcpPacketCount).map { index in
            var report = rtcpReceiverReport(ssrc: ssrc)
            report[report.count - 1] = UInt8(index)
            return report
        }
    }

    @Test(arguments: SRTPCryptoSuite.allCases)
    func gstreamerUnprotectsEngineSRTCP(suite: SRTPCryptoSuite) async throws {
        let ssrc = UInt32.random(in: 1 ... .max)
        let key = SRTPMasterKey.random(for: suite)
        let plain = Self.distinctReceiverReports(ssrc: ssrc)
        guard
            let received = try await sendEngineSRTCPToGStreamer(
                suite: suite, senderKey: key, receiverKey: key, ssrc: ssrc, plain: plain)
        else { return }
        #expect(received == plain.flatMap { $0 }, "srtpdec's RTCP output differs from the reports sent")
    }

    /// Control: under another key srtpdec passes none of the engine's SRTCP packets.
    @Test func gstreamerRejectsEngineSRTCPUnderAnotherKey() async throws {
        let suite = SRTPCryptoSuite.aesCM128HmacSHA1_80
        let ssrc = UInt32.random(in: 1 ... .max)
        guard
            let received = try await sendEngineSRTCPToGStreamer(
                suite: suite, senderKey: .random(for: suite), receiverKey: .random(for: suite), ssrc: ssrc,
                plain: Self.distinctReceiverReports(ssrc: ssrc))
        else { return }
        #expect(received.isEmpty, "srtpdec passed \(received.count) bytes of RTCP under the wrong key")
    }

    @Test(arguments: SRTPCryptoSuite.allCases)
    func engineUnprotectsGStreamerSRTCP(suite: SRTPCryptoSuite) async throws {
        let ssrc = UInt32.random(in: 1 ... .max)
        let key = SRTPMasterKey.random(for: suite)
        let plain = Self.distinctReceiverReports(ssrc: ssrc)
        let receiveSocket = try LoopbackUDPSocket()
        let gstPort = try LoopbackUDPSocket.freePort()
        let parameters = GStreamer.srtpParameters(suite)
        let gst = try BoundedProcess(
            executable: GStreamer.launchPath!,
            arguments: [
                "udpsrc", "address=127.0.0.1", "port=\(gstPort)", "num-buffers=\(plain.count)",
                "caps=application/x-rtcp", "!", "e.rtcp_sink_0", "srtpenc", "name=e",
                "key=\(GStreamer.hexString(key.bytes))", "rtp-cipher=\(parameters.cipher)",
                "rtp-auth=\(parameters.rtpAuth)", "rtcp-cipher=\(parameters.cipher)",
                "rtcp-auth=\(parameters.rtcpAuth)", "e.rtcp_src_0", "!", "udpsink", "host=127.0.0.1",
                "port=\(receiveSocket.port)", "sync=false", "async=false"
            ])
        defer { gst.kill() }

        let deadline = ContinuousClock.now + GStreamer.processTimeout
        guard try await gst.feedUDPSource(port: gstPort, plain, deadline: deadline),
            let datagrams = try await gst.collectDatagrams(on: receiveSocket, deadline: deadline)
        else { return }

        let receiver = try SRTPSession(suite: suite, key: key, direction: .inbound)
        let stranger = try SRTPSession(suite: suite, key: .random(for: suite), direction: .inbound)
        #expect(datagrams.count == plain.count, "srtpenc sent \(datagrams.count) of \(plain.count) reports")
        var unprotected: [[UInt8]] = []
        for datagram in datagrams {
            #expect(datagram.count == plain[0].count + suite.rtcpTrailerLength, "SRTCP trailer length")
            #expect(srtpError { _ = try stranger.unprotectedRTCP(datagram) } == .authenticationFailed)
            unprotected.append(try receiver.unprotectedRTCP(datagram))
        }
        #expect(unprotected == Array(plain.prefix(unprotected.count)), "unprotected reports differ from those sent")
    }
}
