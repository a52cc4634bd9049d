// libFuzzer target: one datagram on the WebRTC port. RFC 7983 classification, then STUN parsing with every typed
// attribute reader, MESSAGE-INTEGRITY verification, re-serialization (which must parse back), TURN ChannelData
// parsing, the ICE-lite agent answering it (its responses must parse), and — when the first byte says DTLS — a
// fresh DTLS-SRTP server association (OpenSSL's record and handshake parsing) fed the datagram; then the full
// ICE agent handles it and ticks (what it sends must parse: responses, triggered checks); last, a TURN client's
// non-blocking gathering takes it as the answer to its Binding or Allocate (the input's transaction ID replaced by
// the pending request's, so the answer handling runs, not only the ID lookup; what it sends must parse).
import FuzzSupport
import VoiceEngine
import VoiceWebRTC

@main enum STUNFuzzer {
    static func main() { runLibFuzzer(fuzz) }
}

// libFuzzer calls the target from one thread.
nonisolated(unsafe) private let agent = ICELiteAgent(
    local: ICECredentials(ufrag: "engn", password: "enginepasswordengine12"),
    remote: ICECredentials(ufrag: "brws", password: "browserpasswordbrowser"))
private let source = TransportAddress("127.0.0.1", port: 27_000)!
private let base = TransportAddress("127.0.0.1", port: 27_001)!
nonisolated(unsafe) private var clock = MediaTime.zero
nonisolated(unsafe) private let fullAgent: ICEAgent = {
    let agent = ICEAgent(
        role: .controlling, local: ICECredentials(ufrag: "engn", password: "enginepasswordengine12"),
        remote: ICECredentials(ufrag: "brws", password: "browserpasswordbrowser"), tieBreaker: 7)
    agent.addLocalCandidate(kind: .host, address: base, base: base)
    return agent
}()
nonisolated(unsafe) private let certificate = try! DTLSCertificate()
nonisolated(unsafe) private let turn = TURNClient(
    socket: try! DatagramSocket(bind: TransportAddress("127.0.0.1", port: 0)!),
    server: TransportAddress("127.0.0.1", port: 27_002)!, credentials: TURNCredentials(username: "u", password: "p"))
private let peerFingerprint = DTLSFingerprint(bytes: [UInt8](repeating: 0x5A, count: 32))

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: size > 0 ? data : nil, count: size))
    _ = bytes.withUnsafeBytes { PacketKind($0) }
    if let message = try? STUNMessage(parsing: bytes) {
        _ = try? message.xorAddress()
        _ = try? message.xorAddress(STUNAttribute.Kind.xorRelayedAddress)
        _ = try? message.mappedAddress()
        _ = try? message.errorCode()
        _ = try? message.uint32(STUNAttribute.Kind.priority)
        _ = try? message.uint64(STUNAttribute.Kind.iceControlling)
        _ = message.string(STUNAttribute.Kind.username)
        _ = message.verifyIntegrity(key: STUNMessage.shortTermKey(password: "enginepasswordengine12"))
        if message.attributes.allSatisfy({ $0.value.count < 60_000 }) {
            let again = message.serialize(integrityKey: [1, 2, 3], fingerprint: true)
            guard (try? STUNMessage(parsing: again)) != nil else {
                preconditionFailure("re-serialized STUN does not parse")
            }
        }
    }
    _ = try? TURNChannelData(parsing: bytes)
    if bytes.withUnsafeBytes({ PacketKind($0) }) == .dtls,
        let server = try? DTLSSRTPAssociation(
            certificate: certificate, role: .server, remoteFingerprint: peerFingerprint)
    {
        _ = bytes.withUnsafeBytes { server.receive($0) }
        _ = bytes.withUnsafeBytes { server.receive($0) }
    }
    if let reply = agent.handle(bytes, from: source, now: .zero) {
        guard (try? STUNMessage(parsing: reply)) != nil else { preconditionFailure("agent reply does not parse") }
    }
    clock += .milliseconds(20)  // so retransmissions, pair failures and consent run too
    fullAgent.handle(bytes, from: source, base: base, now: clock)
    fullAgent.tick(now: clock)
    for t in fullAgent.takeTransmits() {
        guard (try? STUNMessage(parsing: t.datagram)) != nil else {
            preconditionFailure("ICE agent output does not parse")
        }
    }
    // Binding (even last byte) or Allocate (odd): the two requests startGathering sends, in that order.
    let requests = turn.startGathering(now: clock)
    if bytes.count >= 20 {
        var answer = bytes
        let request = requests[Int(bytes[bytes.count - 1] & 1)]
        answer.replaceSubrange(8..<20, with: request[8..<20])
        if let (send, _) = turn.handleGatheringAnswer(answer, now: clock) {
            for d in send {
                guard (try? STUNMessage(parsing: d)) != nil else {
                    preconditionFailure("TURN gathering output does not parse")
                }
            }
        }
        _ = turn.gatheringTimers(now: clock + .seconds(20))
    }
    return 0
}
