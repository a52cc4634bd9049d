import Foundation
import VoiceEngine
import VoiceWebRTC

/// The WebRTC media path after the handshake, as a call runs it on its transport thread: two engines with full
/// ICE agents on loopback complete ICE and DTLS-SRTP (their threads running), then stop their threads; each
/// iteration protects one 20 ms Opus RTP packet with the DTLS-exported key, sends it with
/// `sendOnTransportThread` (the selected pair's socket: one `sendto`), and the other side's `pump` polls, reads,
/// demultiplexes (RFC 7983) and hands it to `onSRTP`, which unprotects it in place. Used by the allocation suite
/// (`WebRTCBenchmarks`) and by `voice-bench webrtc` (against a C loop).
public final class WebRTCPathWorkload {
    let sender: WebRTCTransport
    let receiver: WebRTCTransport
    let outbound: SRTPSession
    let inbound: SRTPSession
    let packet: FixedBuffer<UInt8>
    let buffer = FixedBuffer<UInt8>(count: 1_500, repeating: 0)
    let now: MediaTime
    /// The suite DTLS negotiated (the C loop uses the same).
    public let suite: SRTPCryptoSuite
    private var sequence: UInt16 = 0
    private var unprotected = 0

    public init() throws {
        let certA = try DTLSCertificate(), certB = try DTLSCertificate()
        let agentA = ICEAgent(role: .controlling), agentB = ICEAgent(role: .controlled)
        let socketA = try DatagramSocket(bind: TransportAddress("127.0.0.1", port: 0)!)
        let socketB = try DatagramSocket(bind: TransportAddress("127.0.0.1", port: 0)!)
        let offer = try agentA.gather(sockets: [socketA]), answer = try agentB.gather(sockets: [socketB])
        agentA.setRemoteCredentials(agentB.local)
        agentB.setRemoteCredentials(agentA.local)
        answer.forEach(agentA.addRemoteCandidate)
        offer.forEach(agentB.addRemoteCandidate)
        sender = WebRTCTransport(sockets: [socketA], ice: .full(agentA),
                                 dtls: try DTLSSRTPAssociation(certificate: certA, role: .server, remoteFingerprint: certB.fingerprint))
        receiver = WebRTCTransport(sockets: [socketB], ice: .full(agentB),
                                   dtls: try DTLSSRTPAssociation(certificate: certB, role: .client, remoteFingerprint: certA.fingerprint))
        let clock = MonotonicClock()
        sender.start { clock.now }
        receiver.start { clock.now }
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline, sender.keys == nil || receiver.keys == nil { Thread.sleep(forTimeInterval: 0.005) }
        sender.stop()
        receiver.stop()
        guard let keys = sender.keys, receiver.keys != nil else { fatalError("ICE/DTLS did not complete on loopback") }
        now = clock.now  // frozen: consent (30 s from the last check) stays fresh for the whole run
        suite = keys.suite
        outbound = try SRTPSession(suite: keys.suite, key: keys.localKey, direction: .outbound)
        inbound = try SRTPSession(suite: keys.suite, key: keys.localKey, direction: .inbound)
        packet = try Fixtures.opusRTPPacket()
        receiver.onSRTP = { [inbound, unowned self] datagram, _ in
            do { unprotected &+= try inbound.unprotect(datagram, length: datagram.count) } catch { fatalError("unprotect: \(error)") }
        }
    }

    /// Sends and receives `iterations` packets; returns the bytes unprotected so far (a checksum).
    public func run(_ iterations: Int) -> Int {
        let bytes = UnsafeMutableRawBufferPointer(buffer.pointer)
        let template = UnsafeRawBufferPointer(packet.pointer)
        for _ in 0..<iterations {
            Fixtures.copyRTPPacket(template, into: bytes, sequence: sequence)
            sequence &+= 1
            do {
                let n = try outbound.protect(bytes, length: template.count)
                guard sender.sendOnTransportThread(UnsafeRawBufferPointer(rebasing: bytes[0..<n]), now: now) else {
                    fatalError("send refused (no selected pair or consent)")
                }
            } catch {
                fatalError("protect: \(error)")
            }
            while receiver.pump(now: now, timeoutMilliseconds: 100) == 0 {}
        }
        return unprotected
    }
}
