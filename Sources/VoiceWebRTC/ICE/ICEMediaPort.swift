import Foundation
import VoiceEngine

/// Full ICE (RFC 8445, with the SIP usage of RFC 8839) on a SIP call's media port: the ``ICEAgent`` driven over the
/// call's `UDPMediaTransport`, so the checks, the DTLS handshake and SRTP share one port as in a WebRTC call. Its
/// candidates go into the SDP (``sdp``); once the peer's are known, ``connect(to:timeout:)`` runs the connectivity
/// checks and returns the address of the selected pair, where the call's media then goes. The agent keeps answering
/// the peer's checks and sends its own consent checks (RFC 7675) until ``stop()``; when consent expires,
/// ``onFailure`` is told.
///
/// The transport must read with `UDPMediaTransport.ReceiveMode.consumerPolls`: ``connect(to:timeout:)`` polls it
/// until a pair is selected; afterwards whoever polls it (the DTLS handshake, the call's media thread) hands the
/// STUN messages to the agent through the transport's STUN hook.
public final class ICEMediaPort: @unchecked Sendable {
    private let agent: ICEAgent
    private let transport: UDPMediaTransport
    private let lock = NSLock()
    private let clock = MonotonicClock()
    private var ticker: Task<Void, Never>?
    private var failureHandler: (@Sendable (ICEError) -> Void)?
    private var failureReported = false
    /// Our credentials and candidates, as the SDP carries them.
    public let sdp: SDPICEParameters

    /// Gathers a host candidate for each of `hosts` on the transport's port (the transport bound to each of them or
    /// to a wildcard address); by default the address the transport is bound to. `consent` sets how often consent is
    /// checked and how long it lasts unanswered (RFC 7675's 5 s and 30 s by default).
    public init(
        transport: UDPMediaTransport, role: ICEAgent.Role, hosts: [TransportAddress]? = nil,
        consent: (interval: MediaTime, lifetime: MediaTime)? = nil
    ) {
        self.transport = transport
        let agent = ICEAgent(role: role)
        if let consent { (agent.consentInterval, agent.consentLifetime) = consent }
        self.agent = agent
        let bound = TransportAddress(transport.localEndpoint)
        let candidates = (hosts ?? [bound]).map { host in
            let address = TransportAddress(addressBytes: host.addressBytes, port: bound.port) ?? bound
            return agent.addLocalCandidate(kind: .host, address: address, base: address)
        }
        agent.localGatheringDone()
        sdp = SDPICEParameters(
            ufrag: agent.local.ufrag, password: agent.local.password,
            candidates: candidates.map { String($0.sdpValue.dropFirst("candidate:".count)) })
    }

    /// Told once when ICE fails after ``connect(to:timeout:)`` succeeded (consent expired: the peer is gone).
    public func onFailure(_ handler: @escaping @Sendable (ICEError) -> Void) {
        lock.withLock { failureHandler = handler }
    }

    /// Runs the connectivity checks against the peer's candidates until a pair is selected (nominated by the
    /// controlling side), every pair failed, or `timeout` passed (nil error then).
    /// - Returns: where the selected pair sends media.
    public func connect(to remote: SDPICEParameters, timeout: Duration) async -> Result<UDPEndpoint, ICEMediaPortError>
    {
        transport.setSTUNHandler { [weak self] datagram, source in self?.receive(datagram, from: source) }
        lock.withLock {
            agent.setRemoteCredentials(ICECredentials(ufrag: remote.ufrag, password: remote.password))
            for value in remote.candidates {
                if let candidate = ICECandidate(sdpValue: value) { agent.addRemoteCandidate(candidate) }
            }
            agent.remoteGatheringDone()
        }
        startTicking()
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            _ = transport.receiveFromSocket()
            let (state, selected) = lock.withLock { (agent.state, agent.selected) }
            switch state {
            case .connected:
                if let selected,
                    let endpoint = try? UDPEndpoint(host: selected.remote.host, port: Int(selected.remote.port))
                {
                    return .success(endpoint)
                }
            case .failed(let error): return .failure(.failed(error))
            case .checking: break
            }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return .failure(.timedOut)
    }

    /// Stops the checks and takes the hook off the transport (the call ended).
    public func stop() {
        transport.setSTUNHandler(nil)
        lock.withLock {
            ticker?.cancel()
            ticker = nil
            failureReported = true
        }
    }

    /// The pair media uses once ``connect(to:timeout:)`` succeeded.
    public var selectedPair: ICEAgent.Selected? { lock.withLock { agent.selected } }

    private func startTicking() {
        lock.withLock {
            guard ticker == nil else { return }
            ticker = Task.detached { [weak self] in
                while !Task.isCancelled, let self {
                    try? await Task.sleep(for: .nanoseconds(self.tick()))
                }
            }
        }
    }

    /// Runs the agent's timers and returns how long to sleep until the next tick, in nanoseconds: 20 ms while
    /// checks are paced (Ta 50 ms, RTO from 250 ms), then a quarter of the consent interval (at most 250 ms), which
    /// keeps consent checks and their retransmissions on time without waking the process 50 times a second for
    /// the whole call.
    private func tick() -> Int64 {
        let (failure, interval): ((ICEError, @Sendable (ICEError) -> Void)?, Int64) = lock.withLock {
            agent.tick(now: clock.now)
            sendTransmits()
            let interval =
                agent.state == .connected ? min(250_000_000, agent.consentInterval.nanoseconds / 4) : 20_000_000
            guard case .failed(let error) = agent.state, let handler = failureHandler, !failureReported else {
                return (nil, interval)
            }
            failureReported = true
            return ((error, handler), interval)
        }
        if let (error, handler) = failure { handler(error) }
        return interval
    }

    private func receive(_ datagram: UnsafeRawBufferPointer, from source: UDPEndpoint) {
        lock.withLock {
            let base = TransportAddress(transport.localEndpoint)
            agent.handle(Array(datagram), from: TransportAddress(source), base: base, now: clock.now)
            sendTransmits()
        }
    }

    /// Under the lock.
    private func sendTransmits() {
        for transmit in agent.takeTransmits() {
            guard
                let destination = try? UDPEndpoint(
                    host: transmit.destination.host, port: Int(transmit.destination.port))
            else { continue }
            _ = transmit.datagram.withUnsafeBytes { transport.send($0, to: destination) }
        }
    }
}

/// Why ICE on a media port found no pair.
public enum ICEMediaPortError: Error, Equatable, Sendable {
    /// The agent gave up (every pair failed).
    case failed(ICEError)
    /// No pair was selected within the time allowed.
    case timedOut
}
