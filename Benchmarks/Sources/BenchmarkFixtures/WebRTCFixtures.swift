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

    /// With `relay` (a TURN server and its REST secret), both engines gather only a relayed candidate there, so the
    /// selected pair is relay to relay and media goes as ChannelData once each transport bound its channel
    /// (``WebRTCTransport/sentChannelData`` counts it).
    public init(relay: (server: TransportAddress, secret: String)? = nil) throws {
        let certA = try DTLSCertificate(), certB = try DTLSCertificate()
        let agentA = ICEAgent(role: .controlling), agentB = ICEAgent(role: .controlled)
        let socketA = try DatagramSocket(bind: TransportAddress("127.0.0.1", port: 0)!)
        let socketB = try DatagramSocket(bind: TransportAddress("127.0.0.1", port: 0)!)
        var turnA: TURNClient?, turnB: TURNClient?
        let offer: [ICECandidate], answer: [ICECandidate]
        if let relay {
            let credentials = TURNCredentials.restAPI(secret: relay.secret, user: "bench")
            turnA = TURNClient(socket: socketA, server: relay.server, credentials: credentials)
            turnB = TURNClient(socket: socketB, server: relay.server, credentials: credentials)
            offer = try agentA.gather(sockets: [], turn: turnA)
            answer = try agentB.gather(sockets: [], turn: turnB)
            try turnA!.createPermission(for: answer[0].address!)
            try turnB!.createPermission(for: offer[0].address!)
        } else {
            offer = try agentA.gather(sockets: [socketA])
            answer = try agentB.gather(sockets: [socketB])
        }
        agentA.setRemoteCredentials(agentB.local)
        agentB.setRemoteCredentials(agentA.local)
        answer.forEach(agentA.addRemoteCandidate)
        offer.forEach(agentB.addRemoteCandidate)
        sender = WebRTCTransport(
            sockets: [socketA], ice: .full(agentA),
            dtls: try DTLSSRTPAssociation(certificate: certA, role: .server, remoteFingerprint: certB.fingerprint))
        receiver = WebRTCTransport(
            sockets: [socketB], ice: .full(agentB),
            dtls: try DTLSSRTPAssociation(certificate: certB, role: .client, remoteFingerprint: certA.fingerprint))
        sender.relay = turnA
        receiver.relay = turnB
        let clock = MonotonicClock()
        sender.start { clock.now }
        receiver.start { clock.now }
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline, sender.keys == nil || receiver.keys == nil { Thread.sleep(forTimeInterval: 0.005) }
        // Each side asked for its channel when its relayed pair was selected (before DTLS); coturn on loopback
        // answers within milliseconds. The bound channels are read once the threads stopped (theirs until then).
        if relay != nil { Thread.sleep(forTimeInterval: 0.3) }
        sender.stop()
        receiver.stop()
        guard let keys = sender.keys, receiver.keys != nil else { fatalError("ICE/DTLS did not complete on loopback") }
        if let turnA, let turnB, turnA.boundChannels.isEmpty || turnB.boundChannels.isEmpty {
            fatalError("the TURN channels were not bound (\(turnA.boundChannels), \(turnB.boundChannels))")
        }
        now = clock.now  // frozen: consent (30 s from the last check) stays fresh for the whole run
        suite = keys.suite
        outbound = try SRTPSession(suite: keys.suite, key: keys.localKey, direction: .outbound)
        inbound = try SRTPSession(suite: keys.suite, key: keys.localKey, direction: .inbound)
        packet = try Fixtures.opusRTPPacket()
        receiver.onSRTP = { [inbound, unowned self] datagram, _ in
            do { unprotected &+= try inbound.unprotect(datagram, length: datagram.count) } catch {
                fatalError("unprotect: \(error)")
            }
        }
    }

    /// Media datagrams the sender sent as ChannelData (all of them on the relayed path).
    public var sentChannelData: Int { sender.sentChannelData }

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
            // A lost packet is a broken setup (a relay that stopped forwarding), not something to wait for forever.
            var waited = 0
            while receiver.pump(now: now, timeoutMilliseconds: 100) == 0 {
                waited += 1
                if waited == 20 { fatalError("packet \(sequence &- 1) did not arrive within 2 s") }
            }
        }
        return unprotected
    }
}

/// coturn on loopback for the relayed benchmark (listening on 27900–27939, one port per benchmark process since
/// package-benchmark runs the target several times; relay ports 27940–27999; loopback peers allowed), killed and
/// reaped when the process exits, so no server outlives the run. Nil when coturn is not installed.
public enum BenchmarkTURNServer {
    public static let secret = "voiceengine-bench-secret"
    nonisolated(unsafe) private static var process: Process?

    public static func start() throws -> TransportAddress? {
        let path = "/usr/bin/turnserver"
        guard FileManager.default.isExecutableFile(atPath: path) else { return nil }
        let port = 27900 + Int(getpid() % 40)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path)
        p.arguments = [
            "-n", "--listening-ip=127.0.0.1", "--listening-port=\(port)", "--relay-ip=127.0.0.1",
            "--min-port=27940", "--max-port=27999", "--use-auth-secret", "--static-auth-secret=\(secret)",
            "--realm=voiceengine.bench", "--no-tls", "--no-dtls", "--no-cli", "--no-tcp-relay",
            "--allow-loopback-peers", "--no-stdout-log", "--log-file=/dev/null"
        ]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        process = p
        atexit {
            guard let pid = BenchmarkTURNServer.process?.processIdentifier else { return }
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
        Thread.sleep(forTimeInterval: 0.3)  // listening (the first Binding would be retransmitted anyway)
        return TransportAddress("127.0.0.1", port: UInt16(port))
    }
}
