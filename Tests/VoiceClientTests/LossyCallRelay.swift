import Foundation
import VoiceCore
import VoiceNetSim

#if canImport(Glibc)
import Glibc
#endif

/// A bad network between a client and a SIP peer on loopback, where the kernel has no `netem`: a stateless SIP
/// proxy in front of the peer that points both sides' SDP at a UDP media relay, and the relay, which forwards the
/// media both ways and drops the peer's RTP towards the client as a VoiceNetSim ``NetworkSimulator`` decides.
///
/// The proxy takes the INVITE on ``sipPort`` (the Request-URI's port), adds its own Via so the responses come back
/// through it, and rewrites the offer's and the answer's `c=`/`m=` to the relay's two sockets (ICE candidates
/// are removed; both sides see the relay as their peer, DTLS included). Requests inside the dialog (ACK, BYE) go
/// to the peer's Contact as usual. The relay expects RTCP multiplexed with RTP (`a=rtcp-mux`); RTCP, DTLS and
/// STUN pass without loss, as in ``UDPCallPacketPath``, so reports and RTT keep working on a lossy media path.
/// Only loss is simulated (a datagram the simulator keeps is forwarded at once). Test code: one thread, polling.
final class LossyCallRelay: @unchecked Sendable {
    /// What the relay forwarded from the peer towards the client.
    struct Counters: Sendable, Hashable {
        var rtpForwarded = 0
        var rtpDropped = 0
        var otherForwarded = 0
        var fromClient = 0
    }

    let sipPort: Int
    private let peerSIP: sockaddr_in
    private let sip: Int32, towardsPeer: Int32, towardsClient: Int32
    private let lock = NSLock()
    private var simulator: NetworkSimulator
    private var clientMedia: sockaddr_in?
    private var peerMedia: sockaddr_in?
    private var proxySource: sockaddr_in?
    private var counters = Counters()
    private var running = true
    private var thread: Thread?
    private let started = MonotonicClock().now

    /// Binds the proxy on `sipPort` and the relay's two sockets on free ports, and starts forwarding to the peer's
    /// SIP port `peerSIPPort` on 127.0.0.1.
    init(sipPort: Int, peerSIPPort: Int) throws {
        self.sipPort = sipPort
        peerSIP = Self.address(port: peerSIPPort)
        sip = try Self.bind(port: sipPort)
        towardsPeer = try Self.bind(port: 0)
        towardsClient = try Self.bind(port: 0)
        simulator = try NetworkSimulator(conditions: NetworkConditions(baseDelayMilliseconds: 0))
        let thread = Thread { [self] in run() }
        thread.name = "lossy-call-relay"
        self.thread = thread
        thread.start()
    }

    deinit { for fd in [sip, towardsPeer, towardsClient] { close(fd) } }

    func stop() { lock.withLock { running = false } }

    /// From now on, the peer's RTP towards the client is lost with this probability (0: none).
    func setLoss(_ probability: Double, seed: UInt64 = 33) throws {
        let conditions = NetworkConditions(
            baseDelayMilliseconds: 0, loss: probability > 0 ? .bernoulli(probability: probability) : .none, seed: seed)
        let next = try NetworkSimulator(conditions: conditions)
        lock.withLock { simulator = next }
    }

    var snapshot: Counters { lock.withLock { counters } }

    // MARK: The loop

    private func run() {
        var fds = [sip, towardsPeer, towardsClient].map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while lock.withLock({ running }) {
            guard poll(&fds, nfds_t(fds.count), 50) > 0 else { continue }
            for index in fds.indices where fds[index].revents & Int16(POLLIN) != 0 {
                var source = sockaddr_in()
                var length = socklen_t(MemoryLayout<sockaddr_in>.size)
                let count = buffer.withUnsafeMutableBytes { bytes in
                    withUnsafeMutablePointer(to: &source) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            recvfrom(fds[index].fd, bytes.baseAddress, bytes.count, 0, $0, &length)
                        }
                    }
                }
                guard count > 0 else { continue }
                let datagram = Array(buffer[0..<count])
                switch fds[index].fd {
                case sip: proxy(datagram, from: source)
                case towardsPeer: fromPeer(datagram)
                default: fromClient(datagram)
                }
            }
        }
    }

    private func fromPeer(_ datagram: [UInt8]) {
        guard let destination = lock.withLock({ clientMedia }) else { return }
        // RTP: version 2 and not an RTCP packet type (RFC 5761 §4); everything else passes.
        let isRTP = datagram.count >= 12 && datagram[0] & 0xC0 == 0x80 && !(200...223).contains(datagram[1])
        if isRTP {
            let now = MonotonicClock().now - started
            let lost = lock.withLock { simulator.nextFate(nominalSendTime: now).arrival == nil }
            lock.withLock {
                if lost { counters.rtpDropped += 1 } else { counters.rtpForwarded += 1 }
            }
            if lost { return }
        } else {
            lock.withLock { counters.otherForwarded += 1 }
        }
        send(datagram, on: towardsClient, to: destination)
    }

    private func fromClient(_ datagram: [UInt8]) {
        guard let destination = lock.withLock({ peerMedia }) else { return }
        lock.withLock { counters.fromClient += 1 }
        send(datagram, on: towardsPeer, to: destination)
    }

    // MARK: The SIP proxy

    private func proxy(_ datagram: [UInt8], from source: sockaddr_in) {
        guard var text = String(bytes: datagram, encoding: .utf8) else { return }
        let fromPeer = source.sin_port == peerSIP.sin_port
        if text.hasPrefix("SIP/2.0") {
            guard fromPeer, let client = lock.withLock({ proxySource }) else { return }
            // A response of the peer: our Via off, the answer's media through the relay.
            text = removingFirstVia(text)
            text = rewritingSDP(text, to: Self.port(of: towardsClient)) { address in
                lock.withLock { peerMedia = address }
            }
            send(Array(text.utf8), on: sip, to: client)
        } else if fromPeer {
            if let client = lock.withLock({ proxySource }) { send(datagram, on: sip, to: client) }
        } else {
            lock.withLock { proxySource = source }
            // The transaction's branch, derived from the previous hop's, so retransmissions and CANCEL match.
            let topVia = text.components(separatedBy: "\r\n").first { $0.lowercased().hasPrefix("via:") } ?? ""
            let previous = topVia.range(of: "branch=").map {
                topVia[$0.upperBound...].prefix { $0 != ";" && $0 != "," }
            }
            text = addingVia(
                "Via: SIP/2.0/UDP 127.0.0.1:\(sipPort);branch=z9hG4bKlossyrelay-\(previous ?? "")", to: text)
            text = rewritingSDP(text, to: Self.port(of: towardsPeer)) { address in
                lock.withLock { clientMedia = address }
            }
            send(Array(text.utf8), on: sip, to: peerSIP)
        }
    }

    private func addingVia(_ via: String, to message: String) -> String {
        var lines = message.components(separatedBy: "\r\n")
        let index = lines.firstIndex { $0.lowercased().hasPrefix("via:") || $0.hasPrefix("v:") } ?? 1
        lines.insert(via, at: index)
        return lines.joined(separator: "\r\n")
    }

    private func removingFirstVia(_ message: String) -> String {
        var lines = message.components(separatedBy: "\r\n")
        guard let index = lines.firstIndex(where: { $0.lowercased().hasPrefix("via:") || $0.hasPrefix("v:") }) else {
            return message
        }
        // A Via header may list several values; ours is the first.
        let values = lines[index].split(separator: ",", maxSplits: 1)
        if values.count == 2, values[0].contains("lossyrelay") {
            let name = lines[index].prefix { $0 != ":" }
            lines[index] = "\(name): " + values[1].trimmingCharacters(in: .whitespaces)
        } else {
            lines.remove(at: index)
        }
        return lines.joined(separator: "\r\n")
    }

    /// Points the body's media at `relayPort` on 127.0.0.1, gives `found` the address it had, and fixes the
    /// Content-Length.
    private func rewritingSDP(_ message: String, to relayPort: UInt16, found: (sockaddr_in) -> Void) -> String {
        guard let split = message.range(of: "\r\n\r\n") else { return message }
        let head = String(message[..<split.lowerBound])
        let body = String(message[split.upperBound...])
        guard body.contains("m=audio ") else { return message }
        var host = "127.0.0.1"
        var port = 0
        var lines: [String] = []
        for line in body.components(separatedBy: "\r\n") {
            if line.hasPrefix("c=IN IP4 ") {
                host = String(line.dropFirst("c=IN IP4 ".count))
                lines.append("c=IN IP4 127.0.0.1")
            } else if line.hasPrefix("m=audio ") {
                var fields = line.split(separator: " ").map(String.init)
                port = Int(fields[1]) ?? 0
                fields[1] = "\(relayPort)"
                lines.append(fields.joined(separator: " "))
            } else if line.hasPrefix("a=candidate:") || line == "a=end-of-candidates" || line.hasPrefix("a=rtcp:") {
                continue
            } else {
                lines.append(line)
            }
        }
        var address = Self.address(port: port)
        inet_pton(AF_INET, host, &address.sin_addr)
        found(address)
        let newBody = lines.joined(separator: "\r\n")
        let headLines = head.components(separatedBy: "\r\n").map { line in
            let lower = line.lowercased()
            return lower.hasPrefix("content-length:") || lower.hasPrefix("l:")
                ? "Content-Length: \(newBody.utf8.count)" : line
        }
        return headLines.joined(separator: "\r\n") + "\r\n\r\n" + newBody
    }

    // MARK: Sockets

    private func send(_ datagram: [UInt8], on fd: Int32, to destination: sockaddr_in) {
        var destination = destination
        _ = datagram.withUnsafeBytes { bytes in
            withUnsafePointer(to: &destination) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, bytes.baseAddress, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
    }

    private static func address(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    private static func bind(port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var address = address(port: port)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            close(fd)
            throw POSIXError(.init(rawValue: code) ?? .EADDRINUSE)
        }
        return fd
    }

    private static func port(of fd: Int32) -> UInt16 {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return UInt16(bigEndian: address.sin_port)
    }
}
