import Foundation
import VoiceEngine

/// The UDP ports participants' media may use (`--rtp-ports A-B`): what a firewall in front of a conference node
/// opens. Each participant gets a pair, RTP on an even port and RTCP on the next (RFC 3550 §11), so a participant
/// that does not multiplex RTCP sends its reports to its own leg and never onto another participant's media port.
/// Pairs are handed out round-robin, so a pair just freed (whose late packets may still arrive) is the last to be
/// reused; a pair with a port some other program holds is skipped.
public final class RTPPortRange: @unchecked Sendable {
    public let ports: ClosedRange<Int>
    private let lock = NSLock()
    private var next: Int
    private var inUse: Set<Int> = []

    /// The even ports whose pair lies in ``ports``.
    private let rtpPorts: [Int]

    public init(_ ports: ClosedRange<Int>) {
        precondition(ports.lowerBound > 0 && ports.upperBound <= 65_535, "UDP ports are 1…65535")
        self.ports = ports
        rtpPorts = Array(stride(from: (ports.lowerBound + 1) & ~1, to: ports.upperBound, by: 2))
        next = 0
    }

    /// Binds a media transport on `host` at the next free pair of the range (its RTCP socket on the odd port);
    /// returns the RTP port. Throws when every pair is taken.
    public func bind(host: String) async throws -> (transport: UDPMediaTransport, port: Int) {
        for _ in 0..<rtpPorts.count {
            guard let port = reserveNext() else { break }
            // Read by the room's media thread at its tick (no wake-up per packet), as a live call does.
            guard
                let transport = try? await UDPMediaTransport.bind(
                    host: host, port: port, configuration: UDPMediaTransport.Configuration(receive: .consumerPolls))
            else {
                release(port)  // held by another program: try the next pair
                continue
            }
            do {
                try transport.bindRTCPPort(port: port + 1)
                return (transport, port)
            } catch {
                await transport.close()
                release(port)
            }
        }
        throw ConferenceServerError("no free RTP port in \(ports.lowerBound)-\(ports.upperBound) on \(host)")
    }

    /// Gives the pair of RTP port `port` back (after its transport was closed).
    public func release(_ port: Int) {
        lock.withLock { _ = inUse.remove(port) }
    }

    /// Pairs handed out and not yet given back.
    public var portsInUse: Int { lock.withLock { inUse.count } }

    private func reserveNext() -> Int? {
        lock.withLock {
            for _ in 0..<rtpPorts.count {
                let candidate = rtpPorts[next]
                next = (next + 1) % rtpPorts.count
                if inUse.insert(candidate).inserted { return candidate }
            }
            return nil
        }
    }
}

/// A conference server failure that is not a SIP status: a port range used up, a listener that cannot bind.
public struct ConferenceServerError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
