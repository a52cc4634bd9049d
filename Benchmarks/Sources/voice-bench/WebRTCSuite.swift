import ArgumentParser
import BenchmarkFixtures
import CBaseline
import VoiceEngine
import VoiceWebRTC

/// `voice-bench webrtc`: the WebRTC transport's per-packet path after the ICE/DTLS handshake — protect, send on
/// the ICE-selected socket, poll, read, demultiplex (RFC 7983), unprotect — against a C loop making the same
/// libsrtp and socket calls (`cb_srtp_udp_loop`: protect, sendto, poll, recvfrom, first-byte check, unprotect) on
/// loopback, with the suite DTLS negotiated (AEAD_AES_128_GCM). Both sides cross the kernel twice per packet.
struct WebRTCSuite: SideBySideSuite {
    static let suiteName = "webrtc"
    static let configuration = CommandConfiguration(
        commandName: "webrtc",
        abstract: "The WebRTC transport's SRTP path after the handshake (ICE-selected socket, demux) vs a plain C loop."
    )

    @OptionGroup var options: SideBySideOptions

    func makeCases() throws -> [SideBySideCase] {
        let workload = try WebRTCPathWorkload()
        guard let suiteIndex = SRTPCryptoSuite.allCases.firstIndex(of: workload.suite) else { return [] }
        let key = Fixtures.srtpKey(workload.suite)
        let out = CHandle(
            key.withUnsafeBytes { cb_srtp_create(Int32(suiteIndex), $0.baseAddress, Int32($0.count), 1) },
            "cb_srtp_create", destroy: cb_srtp_destroy)
        let inbound = CHandle(
            key.withUnsafeBytes { cb_srtp_create(Int32(suiteIndex), $0.baseAddress, Int32($0.count), 0) },
            "cb_srtp_create", destroy: cb_srtp_destroy)
        let tx = try DatagramSocket(bind: TransportAddress("127.0.0.1", port: 0)!)
        let rx = try DatagramSocket(bind: TransportAddress("127.0.0.1", port: 0)!)
        let packet = try Fixtures.opusRTPPacket()
        let buffer = FixedBuffer<UInt8>(count: 1_500, repeating: 0)
        let received = FixedBuffer<UInt8>(count: 1_500, repeating: 0)
        var sequence: UInt16 = 0
        _ = workload.run(100)  // libsrtp creates the inbound stream on the first packet
        return [
            SideBySideCase(
                name: "WebRTC.srtpPath.\(workload.suite.rawValue)",
                swift: { n in workload.run(n) },
                c: { n in
                    let total = cb_srtp_udp_loop(
                        out.pointer, inbound.pointer, tx.descriptor, rx.descriptor, rx.localAddress.port,
                        packet.pointer.baseAddress, Int32(packet.count), &sequence, Int64(n),
                        buffer.pointer.baseAddress,
                        received.pointer.baseAddress, Int32(received.count))
                    precondition(total >= 0, "C loop failed: \(total)")
                    return Int(total)
                })
        ]
    }
}
