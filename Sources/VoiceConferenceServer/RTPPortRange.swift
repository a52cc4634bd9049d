import Foundation
import VoiceEngine

/// The UDP ports participants' media may use (`--rtp-ports A-B`, one port per participant, RTP and RTCP muxed):
/// what a firewall in front of a conference node opens. Ports are handed out round-robin, so a port just freed
/// (whose late packets may still arrive) is the last to be reused; a port some other program holds is skipped.
public final class RTPPortRange: @unchecked Sendable {
    public let ports: ClosedRange<Int>
    private let lock = NSLock()
    private var next: Int
    private var inUse: Set<Int> = []

    public init(_ ports: ClosedRange<Int>) {
        precondition(ports.lowerBound > 0 && ports.upperBound <= 65_535, "UDP ports are 1…65535")
        self.ports = ports
        next = ports.lowerBound
    }

    /// Binds a media transport on `host` at the next free port of the range; throws when every port is taken.
    public func bind(host: String) async throws -> (transport: UDPMediaTransport, port: Int) {
        for _ in 0..<ports.count {
            guard let port = reserveNext() else { break }
            do {
                // Read by the room's media thread at its tick (no wake-up per packet), as a live call does.
                let transport = try await UDPMediaTransport.bind(
                    host: host, port: port, configuration: UDPMediaTransport.Configuration(receive: .consumerPolls))
                return (transport, port)
            } catch {
                release(port)  // held by another program: try the next one
            }
        }
        throw ConferenceServerError("no free RTP port in \(ports.lowerBound)-\(ports.upperBound) on \(host)")
    }

    /// Gives `port` back (after its transport was closed).
    public func release(_ port: Int) {
        lock.withLock { _ = inUse.remove(port) }
    }

    public var portsInUse: Int { lock.withLock { inUse.count } }

    private func reserveNext() -> Int? {
        lock.withLock {
            for _ in 0..<ports.count {
                let candidate = next
                next = next == ports.upperBound ? ports.lowerBound : next + 1
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
