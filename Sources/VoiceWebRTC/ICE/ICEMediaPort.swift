import Foundation
import VoiceEngine

/// Full ICE (RFC 8445, with the SIP usage of RFC 8839) on a SIP call's media port: the ``ICEAgent`` driven over the
/// call's `UDPMediaTransport`, so the checks, the TURN exchanges, the DTLS handshake and SRTP share one port as in a
/// WebRTC call.
///
/// Candidates, gathered as pjnath's ICE stream transport does on one socket: a host candidate for each address of
/// every interface (IPv4 and IPv6) when the transport is bound to a wildcard address — checks leave from the
/// address the route to the peer gives, which is their base —, else the bound address; with a STUN/TURN server
/// (``gather(turn:timeout:)``) a server-reflexive candidate (the NAT's mapping of this very port) and a relayed
/// one (a TURN allocation made from this port). The candidates go into the SDP (``sdp``); once the peer's are
/// known, ``connect(to:timeout:)`` runs the connectivity checks and returns the address of the selected pair,
/// where the call's media then goes. When our side of that pair is the relay, the port binds a TURN channel to
/// the peer first and the transport relays media as ChannelData (`UDPMediaTransport.relay(to:through:channel:)`);
/// the allocation, its permissions and the channel are refreshed every minute. The agent keeps answering the
/// peer's checks and sends its own consent checks (RFC 7675) until ``stop()``; when consent expires,
/// ``onFailure`` is told. When the agent later selects another pair (``ICEAgent/renomination``: a direct pair
/// that answered after a relayed one was nominated), the port moves the media there itself: the transport's
/// remote, and relaying through our relay (a channel bound to the new remote first) or not; the media thread
/// reads the transport's remote at each send, so it follows without being told.
///
/// The transport must read with `UDPMediaTransport.ReceiveMode.consumerPolls`: ``gather(turn:timeout:)`` and
/// ``connect(to:timeout:)`` poll it; afterwards whoever polls it (the DTLS handshake, the call's media thread)
/// hands the STUN messages to the agent through the transport's STUN hook.
///
/// An ICE restart (RFC 8445 §9) keeps the port, its socket and the media on it: ``restart(turn:timeout:)`` when
/// our address changed (a new agent with new credentials, host candidates on the interfaces there are now, a new
/// TURN allocation from the new address; the old one is released), ``prepareRestart()`` on the side that answers
/// one (new credentials offered in the answer, taken up by the first check that uses them); ``connect(to:timeout:)``
/// then runs the new checks while the media thread keeps polling the socket.
public final class ICEMediaPort: @unchecked Sendable {
    private var agent: ICEAgent
    private let role: ICEAgent.Role
    private let consent: (interval: MediaTime, lifetime: MediaTime)?
    private let includeLoopback: Bool
    /// Hosts given at init; nil: the interfaces' addresses, looked up again at each restart.
    private let fixedHosts: [TransportAddress]?
    /// The credentials of an ICE restart the peer may start (our answer to its re-offer names them).
    private var pendingRestart: ICECredentials?
    /// Someone else (the call's media thread) polls the socket: the port waits instead of polling.
    private var mediaPolls = false
    private let transport: UDPMediaTransport
    private let lock = NSLock()
    private let clock = MonotonicClock()
    private var ticker: Task<Void, Never>?
    /// When the ticker wakes next (``tick()``).
    private var tickerWake: MediaTime?
    private var failureHandler: (@Sendable (ICEError) -> Void)?
    private var failureReported = false
    /// The transport's address; all zeros when bound to a wildcard address.
    private let bound: TransportAddress
    private let wildcard: Bool
    /// Bases by remote address, for a wildcard socket (``HostCandidates/routedSource(towards:)``).
    private var routedBases: [TransportAddress: TransportAddress] = [:]
    /// The STUN/TURN server's client and address, after ``gather(turn:timeout:)``.
    private var turn: (client: TURNClient, server: UDPEndpoint)?
    private var gatheringFailures: [TURNError] = []
    private var nextRefresh: MediaTime?
    /// The channel bound (or being bound) to the selected pair's remote when our side of it is the relay.
    private var channel: (number: UInt16, peer: TransportAddress, requested: MediaTime)?
    /// The pair the transport's media goes to, from ``connect(to:timeout:)``'s success until ``stop()``; when the
    /// agent selects another pair, ``followSelection()`` moves the media and this (counted in `mediaMoves`).
    private var mediaPair: (local: TransportAddress, remote: TransportAddress)?
    private var mediaMoves = 0
    /// The peer's c=/m= address when it does no ICE and media goes to it through our relay
    /// (``relayWithoutICE(to:timeout:)``).
    private var peerWithoutICE: TransportAddress?
    private static let channelNumber: UInt16 = 0x4000

    /// Gathers a host candidate for each of `hosts` on the transport's port; by default the address the transport
    /// is bound to, or every interface's (``HostCandidates/addresses(includeLoopback:)``, loopback only when
    /// `includeLoopback`) when it is bound to a wildcard address. `consent` sets how often consent is checked and
    /// how long it lasts unanswered (RFC 7675's 5 s and 30 s by default).
    public init(
        transport: UDPMediaTransport, role: ICEAgent.Role, hosts: [TransportAddress]? = nil,
        includeLoopback: Bool = false, consent: (interval: MediaTime, lifetime: MediaTime)? = nil
    ) {
        self.transport = transport
        (self.role, self.consent, self.includeLoopback, fixedHosts) = (role, consent, includeLoopback, hosts)
        let bound = TransportAddress(transport.localEndpoint)
        self.bound = bound
        wildcard = bound.addressBytes.allSatisfy { $0 == 0 }
        agent = ICEAgent(role: role)
        agent = newAgent()
    }

    /// An agent in our role with new credentials and a host candidate per host address there is now.
    private func newAgent() -> ICEAgent {
        let agent = ICEAgent(role: role)
        if let consent { (agent.consentInterval, agent.consentLifetime) = consent }
        var addresses = fixedHosts ?? [bound]
        if fixedHosts == nil, wildcard {
            // An IPv6 wildcard socket is dual-stack (UDPMediaTransport): both families; an IPv4 one only IPv4.
            addresses = HostCandidates.addresses(includeLoopback: includeLoopback).filter {
                bound.family == .ipv6 || $0.family == .ipv4
            }
            if addresses.isEmpty {
                addresses = HostCandidates.addresses(includeLoopback: true).filter {
                    bound.family == .ipv6 || $0.family == .ipv4
                }
            }
        }
        for host in addresses {
            let address = TransportAddress(addressBytes: host.addressBytes, port: bound.port) ?? bound
            agent.addLocalCandidate(kind: .host, address: address, base: address)
        }
        return agent
    }

    /// Restarts ICE from our side (RFC 8445 §9): our address changed, so the port starts over with a new agent
    /// (new credentials, a host candidate per address the interfaces have now) and, with `turn`, gathers a
    /// server-reflexive and a relayed candidate again from the address the route now gives. The old allocation is
    /// released (its deallocation leaves from wherever the route now sends it; an allocation whose address is gone
    /// cannot be reached any more and expires at its lifetime on the server). Media goes on to the old pair until
    /// ``connect(to:timeout:)`` selects a new one; failures of the new checks are that call's result, not
    /// ``onFailure``. The call's media thread must be polling the transport.
    /// - Returns: what ``gather(turn:timeout:)`` returns; empty without `turn`.
    @discardableResult
    public func restart(turn server: TURNServer?, timeout: Duration = .seconds(3)) async -> [TURNError] {
        lock.withLock {
            mediaPolls = true
            failureReported = true
            if let turn, let request = turn.client.deallocationRequest() { send(request, to: turn.server) }
            (turn, channel, nextRefresh, pendingRestart) = (nil, nil, nil, nil)
            routedBases = [:]
            gatheringFailures = []
            agent = newAgent()
        }
        guard let server else { return [] }
        return await gather(turn: server, timeout: timeout)
    }

    /// Our side of an ICE restart the peer starts: new credentials for the answer to its re-offer, with the
    /// candidates we have (our addresses did not change). The agent restarts with them when the first check using
    /// them arrives (the peer checks as soon as it has our answer, which may be before its ACK reaches us) or at
    /// ``connect(to:timeout:)``, whichever comes first; until then the current pair keeps its consent.
    public func prepareRestart() -> SDPICEParameters {
        lock.withLock {
            let credentials = pendingRestart ?? .random()
            pendingRestart = credentials
            mediaPolls = true
            return SDPICEParameters(
                ufrag: credentials.ufrag, password: credentials.password,
                candidates: agent.localCandidates.map { String($0.candidate.sdpValue.dropFirst("candidate:".count)) })
        }
    }

    /// Restarts the agent with the prepared credentials when `datagram` is a Binding request naming them (under
    /// the lock).
    private func takeUpRestart(_ datagram: [UInt8]) {
        guard let pending = pendingRestart, datagram.first.map({ $0 < 2 }) == true,
            let message = try? STUNMessage(parsing: datagram), message.method == .binding,
            message.messageClass == .request,
            message.string(STUNAttribute.Kind.username)?.hasPrefix(pending.ufrag + ":") == true
        else { return }
        pendingRestart = nil
        agent.restart(local: pending)
    }

    /// Our credentials and candidates, as the SDP carries them.
    public var sdp: SDPICEParameters {
        lock.withLock {
            SDPICEParameters(
                ufrag: agent.local.ufrag, password: agent.local.password,
                candidates: agent.localCandidates.map { String($0.candidate.sdpValue.dropFirst("candidate:".count)) })
        }
    }

    /// Every local candidate as gathered (host, srflx, relay).
    public var localCandidates: [ICECandidate] { lock.withLock { agent.localCandidates.map(\.candidate) } }

    /// Asks `turn` for our server-reflexive address (a Binding) and a relayed one (an Allocate with its
    /// credentials) from the media port, polling the transport until both answered or `timeout` passed, and adds
    /// them as candidates (the srflx one only when it differs from its base, i.e. behind a NAT).
    /// - Returns: why a request failed (a refused allocation: ``TURNError/rejected(code:reason:)`` with the
    ///   server's 401 or 403; no answer: ``TURNError/timedOut``); empty when both succeeded.
    @discardableResult
    public func gather(turn server: TURNServer, timeout: Duration = .seconds(3)) async -> [TURNError] {
        guard let endpoint = try? UDPEndpoint(host: server.address.host, port: Int(server.address.port)) else {
            return [.badResponse("the TURN server \(server.address) is not an IP address")]
        }
        transport.setSTUNHandler { [weak self] datagram, source in self?.receive(datagram, from: source) }
        let client = TURNClient(server: server.address, credentials: server.credentials)
        let requests = lock.withLock {
            turn = (client, endpoint)
            let nanoseconds =
                timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
            return client.startGathering(now: clock.now, timeout: MediaTime(nanoseconds: nanoseconds))
        }
        for request in requests { send(request, to: endpoint) }
        while lock.withLock({ client.isGathering }) {
            if !lock.withLock({ mediaPolls }) { _ = transport.receiveFromSocket() }
            lock.withLock { gatheringTimers(client) }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return lock.withLock {
            nextRefresh = clock.now + .seconds(60)
            return gatheringFailures
        }
    }

    /// The candidate for the SDP's c=/m= line, where a peer without ICE sends its media (RFC 8445 §5.1.4,
    /// RFC 8839 §4.2.1.2): the relayed one when there is one, else the server-reflexive one, the ones most likely to
    /// reach us from anywhere (pjnath's ICE stream transport and Linphone choose so too); nil with host candidates
    /// only, when the address the call's signalling uses is the best guess.
    public var defaultCandidate: ICECandidate? {
        lock.withLock {
            let candidates = agent.localCandidates.map(\.candidate)
            return candidates.first { $0.kind == .relay } ?? candidates.first { $0.kind == .srflx }
        }
    }

    /// For a peer that does no ICE while our c=/m= is the relayed candidate (``defaultCandidate``): the peer sends
    /// its media to the relay, so ours reaches it from there too. Permits `peer` on the relay, binds a channel to
    /// it and, once the server confirmed the channel, has the transport relay the call's datagrams to it
    /// (`UDPMediaTransport.relay(to:through:channel:)`); the allocation, the permission and the channel are
    /// refreshed every minute until ``stop()``.
    /// - Returns: ``ICEMediaPortError/timedOut`` when there is no allocation or the server did not confirm the
    ///   channel within `timeout`.
    public func relayWithoutICE(to peer: UDPEndpoint, timeout: Duration) async -> Result<Void, ICEMediaPortError> {
        transport.setSTUNHandler { [weak self] datagram, source in self?.receive(datagram, from: source) }
        let remote = TransportAddress(peer)
        guard
            lock.withLock({
                guard let turn, turn.client.relayedAddress != nil else { return false }
                peerWithoutICE = remote
                for request in turn.client.permissionRequests(for: [remote]) { send(request, to: turn.server) }
                return true
            })
        else { return .failure(.timedOut) }
        startTicking()
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            _ = transport.receiveFromSocket()
            if lock.withLock({ turn.map { channelReady(to: remote, turn: $0) } ?? false }) { return .success(()) }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return .failure(.timedOut)
    }

    /// Told once when ICE fails after ``connect(to:timeout:)`` succeeded (consent expired: the peer is gone).
    public func onFailure(_ handler: @escaping @Sendable (ICEError) -> Void) {
        lock.withLock { failureHandler = handler }
    }

    /// Runs the connectivity checks against the peer's candidates until a pair is selected (nominated by the
    /// controlling side), every pair failed, or `timeout` passed (nil error then). When our side of the selected
    /// pair is the relay, it returns once the TURN server confirmed the channel to the peer and the transport
    /// relays media to it. The transport's remote is then the selected pair's, and follows the selection from
    /// then on (a renomination moves it).
    /// - Returns: where the selected pair sends media (the transport's remote).
    public func connect(to remote: SDPICEParameters, timeout: Duration) async -> Result<UDPEndpoint, ICEMediaPortError>
    {
        transport.setSTUNHandler { [weak self] datagram, source in self?.receive(datagram, from: source) }
        let polls = lock.withLock {
            // The peer restarted ICE (new credentials in its re-offer) and no check of it arrived yet.
            if let pending = pendingRestart, let known = agent.remote, known.ufrag != remote.ufrag {
                pendingRestart = nil
                agent.restart(local: pending)
            }
            agent.localGatheringDone()
            agent.setRemoteCredentials(ICECredentials(ufrag: remote.ufrag, password: remote.password))
            for value in remote.candidates {
                if let candidate = ICECandidate(sdpValue: value) { agent.addRemoteCandidate(candidate) }
            }
            agent.remoteGatheringDone()
            permitRemoteCandidates()
            wakeTickerIfDue()
            return !mediaPolls
        }
        startTicking()
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if polls { _ = transport.receiveFromSocket() }
            let (state, selected, credentials) = lock.withLock { (agent.state, agent.selected, agent.local) }
            switch state {
            case .connected:
                // After a restart the pair selected before stays until one is nominated with the new credentials.
                if let selected, selected.localCredentials == credentials,
                    let endpoint = try? UDPEndpoint(host: selected.remote.host, port: Int(selected.remote.port)),
                    lock.withLock({ moveMedia(to: selected) })
                {
                    lock.withLock { failureReported = false }
                    return .success(endpoint)
                }
            case .failed(let error): return .failure(.failed(error))
            case .checking: break
            }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return .failure(.timedOut)
    }

    /// Stops the checks and relaying, frees the TURN allocation and takes the hook off the transport (the call
    /// ended).
    public func stop() {
        transport.setSTUNHandler(nil)
        transport.forgetChannels()
        lock.withLock {
            ticker?.cancel()
            ticker = nil
            mediaPair = nil
            failureReported = true
            if let turn, let request = turn.client.deallocationRequest() { send(request, to: turn.server) }
            turn = nil
        }
    }

    /// The pair media uses once ``connect(to:timeout:)`` succeeded.
    public var selectedPair: ICEAgent.Selected? { lock.withLock { agent.selected } }

    /// Times media moved to another selected pair after ``connect(to:timeout:)`` succeeded (renomination, or the
    /// pair of an ICE restart).
    public var selectionChanges: Int { lock.withLock { mediaMoves } }

    /// Whether our side of the selected pair is the TURN relay.
    public var selectedPairIsRelayed: Bool {
        lock.withLock { agent.selected.map { $0.local == turn?.client.relayedAddress } ?? false }
    }

    /// The kinds of the selected pair's candidates: ours (host or relay; a srflx candidate is checked through its
    /// host base) and the peer's (as it signalled it, or prflx when learnt from its checks). Media crosses a relay
    /// when either is `.relay`.
    public var selectedPairKinds: (local: ICECandidate.Kind, remote: ICECandidate.Kind)? {
        lock.withLock {
            guard let selected = agent.selected else { return nil }
            let local: ICECandidate.Kind = selected.local == turn?.client.relayedAddress ? .relay : .host
            let remote = agent.remoteCandidates.first { $0.address == selected.remote }?.kind ?? .prflx
            return (local, remote)
        }
    }

    // MARK: Under the lock

    /// The relay forwards only from permitted peers (RFC 8656 §9): every remote candidate's address the relay may
    /// send to (``relayMaySend(to:)``).
    private func permitRemoteCandidates() {
        guard let turn, let relayed = turn.client.relayedAddress else { return }
        let peers = Set(
            agent.remoteCandidates.compactMap(\.address).filter { $0.family == relayed.family && relayMaySend(to: $0) })
        for request in turn.client.permissionRequests(for: Array(peers)) { send(request, to: turn.server) }
    }

    /// Whether checks leave our relay for `remote`: not for the peer's host candidates on private addresses
    /// (RFC 1918, 100.64/10, link-local, fc00::/7), which sit behind its NAT, out of the relay's reach. Datagrams
    /// the relay sends there come back as ICMP unreachable, and coturn then stops relaying for the allocation
    /// altogether; the peer's srflx and relay candidates reach it from the relay instead.
    private func relayMaySend(to remote: TransportAddress) -> Bool {
        guard agent.remoteCandidates.first(where: { $0.address == remote })?.kind == .host else { return true }
        let b = remote.addressBytes
        if remote.family == .ipv4 {
            return
                !(b[0] == 10 || b[0] == 172 && b[1] & 0xF0 == 16 || b[0] == 192 && b[1] == 168
                || b[0] == 169 && b[1] == 254 || b[0] == 100 && b[1] & 0xC0 == 64)
        }
        return !(b[0] & 0xFE == 0xFC || b[0] == 0xFE && b[1] & 0xC0 == 0x80)
    }

    /// Points the transport's media at `selected` when it can (``relayReady(for:)``) and returns whether it did.
    private func moveMedia(to selected: ICEAgent.Selected) -> Bool {
        guard let endpoint = try? UDPEndpoint(host: selected.remote.host, port: Int(selected.remote.port)),
            relayReady(for: selected)
        else { return false }
        if let current = mediaPair, current != (selected.local, selected.remote) { mediaMoves += 1 }
        transport.setRemote(endpoint)
        mediaPair = (selected.local, selected.remote)
        return true
    }

    /// The pair the agent selected after ``connect(to:timeout:)`` when media goes to another one.
    private var selectionToFollow: ICEAgent.Selected? {
        guard let current = mediaPair, let selected = agent.selected, current != (selected.local, selected.remote)
        else { return nil }
        return selected
    }

    /// Moves the media to a pair selected later (a renomination, the pair of an ICE restart); a pair of our relay
    /// waits for its channel, asked for again at the next tick.
    private func followSelection() { if let selected = selectionToFollow { _ = moveMedia(to: selected) } }

    /// True when media may go to the selected pair: at once for a pair of our own addresses; for our relay once
    /// the channel to the peer is bound (asked for here, again every 300 ms until the server confirms).
    private func relayReady(for selected: ICEAgent.Selected) -> Bool {
        guard let turn, selected.local == turn.client.relayedAddress else {
            // A restart may leave a relayed pair for a direct one: media goes straight from now on.
            if transport.relayedPeer != nil { transport.stopRelaying() }
            return true
        }
        return channelReady(to: selected.remote, turn: turn)
    }

    /// True once the channel to `remote` is bound and the transport relays to it (asked for here, again every
    /// 300 ms until the server confirms).
    private func channelReady(to remote: TransportAddress, turn: (client: TURNClient, server: UDPEndpoint)) -> Bool {
        // A channel stays bound to its peer for its lifetime (RFC 8656 §12): a new peer (the pair of an ICE
        // restart) gets the next free number.
        let number =
            turn.client.boundChannels.first { $0.value == remote }?.key
            ?? channel.flatMap { $0.peer == remote ? $0.number : nil }
            ?? (Self.channelNumber...0x4FFF).first { turn.client.boundChannels[$0] == nil && $0 != channel?.number }
            ?? Self.channelNumber
        if turn.client.boundChannels[number] == remote,
            let peer = try? UDPEndpoint(host: remote.host, port: Int(remote.port))
        {
            transport.relay(to: peer, through: turn.server, channel: number)
            return true
        }
        let now = clock.now
        let due = channel.map { $0.peer != remote || now - $0.requested >= .milliseconds(300) } ?? true
        if due, let request = turn.client.channelBindRequest(number, to: remote) {
            channel = (number, remote, now)
            send(request, to: turn.server)
        }
        return false
    }

    private func gatheringTimers(_ client: TURNClient) {
        guard let turn, client.isGathering else { return }
        let (resend, events) = client.gatheringTimers(now: clock.now)
        for d in resend { send(d, to: turn.server) }
        for e in events { gathered(e) }
    }

    private func gathered(_ event: TURNClient.GatheringEvent) {
        guard let turn else { return }
        let server = turn.client.server
        switch event {
        case .mapped(let mapped):
            let base = routedBase(towards: server)
            guard mapped != base else { return }
            agent.addLocalCandidate(
                kind: .srflx, address: mapped, base: base, related: base, server: server.description)
        case .relayed(let relayed):
            agent.addLocalCandidate(
                kind: .relay, address: relayed, base: relayed, related: turn.client.mappedAddress,
                server: server.description)
        case .failed(_, let error):
            gatheringFailures.append(error)
        }
    }

    /// The host candidate a datagram to `remote` leaves from.
    private func routedBase(towards remote: TransportAddress) -> TransportAddress {
        guard wildcard else { return bound }
        if let known = routedBases[remote] { return known }
        let source = HostCandidates.routedSource(towards: remote)
        let base = source.flatMap { TransportAddress(addressBytes: $0.addressBytes, port: bound.port) } ?? bound
        routedBases[remote] = base
        return base
    }

    private func send(_ datagram: [UInt8], to destination: UDPEndpoint) {
        _ = datagram.withUnsafeBytes { transport.send($0, to: destination) }
    }

    /// Sends what the agent queued: from our relay as ChannelData once the channel is bound, as Send indications
    /// before; from a host base straight.
    private func sendTransmits() {
        for transmit in agent.takeTransmits() {
            guard
                let destination = try? UDPEndpoint(
                    host: transmit.destination.host, port: Int(transmit.destination.port))
            else { continue }
            if let turn, transmit.base == turn.client.relayedAddress {
                guard relayMaySend(to: transmit.destination) else { continue }  // the pair fails by its timeout
                if transport.relayedPeer?.peer == destination {
                    send(transmit.datagram, to: destination)  // ChannelData (the transport frames it)
                } else {
                    send(TURNClient.sendIndication(transmit.datagram, to: transmit.destination), to: turn.server)
                }
            } else {
                send(transmit.datagram, to: destination)
            }
        }
    }

    // MARK: Driving

    private func startTicking() {
        lock.withLock {
            guard ticker == nil else { return }
            startTicker()
        }
    }

    /// Under the lock: a new ticker task, which ticks at once and then sleeps as ``tick()`` says.
    private func startTicker() {
        ticker = Task.detached { [weak self] in
            while !Task.isCancelled, let self {
                try? await Task.sleep(for: .nanoseconds(self.tick()))
            }
        }
    }

    /// Under the lock, after something arrived or changed: when the agent now has work due before the sleeping
    /// ticker wakes (a triggered check, a nomination, the checks of an ICE restart), the ticker starts over.
    private func wakeTickerIfDue() {
        guard let ticker, let wake = tickerWake, let due = agent.nextTimer(now: clock.now), due < wake else { return }
        ticker.cancel()
        startTicker()
    }

    /// Runs the agent's timers and the TURN refreshes and returns how long to sleep until the next tick, in
    /// nanoseconds: at most 20 ms until a pair is selected (checks are paced at Ta 50 ms, RTO from 250 ms), then
    /// until the agent's next timer (a consent check every 4–6 s, its retransmissions) or the next TURN refresh
    /// (only the latter for a peer without ICE).
    /// A connected call's port thus wakes the process about once per consent check instead of several times a
    /// second; what arrives in between and needs an earlier tick wakes it (``wakeTickerIfDue()``).
    private func tick() -> Int64 {
        let (failure, interval): ((ICEError, @Sendable (ICEError) -> Void)?, Int64) = lock.withLock {
            let now = clock.now
            agent.tick(now: now)
            sendTransmits()
            followSelection()
            if let turn {
                gatheringTimers(turn.client)
                if let due = nextRefresh, now >= due {
                    // Allocation (600 s), permissions (300 s) and the channel (600 s), renewed well before.
                    nextRefresh = now + .seconds(60)
                    for request in turn.client.refreshRequests() { send(request, to: turn.server) }
                }
            }
            let paced = agent.state != .connected && peerWithoutICE == nil || selectionToFollow != nil
            var wake = now + (paced ? .milliseconds(20) : agent.consentInterval)
            if let due = agent.nextTimer(now: now) { wake = min(wake, due) }
            if turn != nil, let due = nextRefresh { wake = min(wake, due) }
            wake = max(wake, now + .milliseconds(1))
            tickerWake = wake
            let interval = (wake - now).nanoseconds
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
        let relayedData: (data: [UInt8], peer: UDPEndpoint)? = lock.withLock {
            let from = TransportAddress(source)
            if let turn, from == turn.client.server {
                return fromServer(Array(datagram), turn: turn)
            }
            takeUpRestart(Array(datagram))
            // STUN the transport unwrapped from the relay's ChannelData arrived on the relayed address.
            let base =
                transport.relayedPeer?.peer == source
                ? turn?.client.relayedAddress ?? routedBase(towards: from) : routedBase(towards: from)
            agent.handle(Array(datagram), from: from, base: base, now: clock.now)
            sendTransmits()
            followSelection()
            wakeTickerIfDue()
            return nil
        }
        // DTLS or media the relay forwarded in a Data indication: the transport takes it as the peer's datagram.
        if let (data, peer) = relayedData { data.withUnsafeBytes { transport.deliverRelayed($0, from: peer) } }
    }

    /// Has the transport take the data of every channel the server confirmed, at once: from then on the server
    /// sends the peer's datagrams only as ChannelData, and the first (the peer's DTLS flight) may be read right
    /// after the confirmation, before ``connect(to:timeout:)`` or the ticker points media at the channel.
    private func acceptBoundChannels(_ turn: (client: TURNClient, server: UDPEndpoint)) {
        for (number, peer) in turn.client.boundChannels {
            guard let endpoint = try? UDPEndpoint(host: peer.host, port: Int(peer.port)) else { continue }
            transport.acceptChannel(number, from: endpoint, through: turn.server)
        }
    }

    /// A datagram from the TURN server: a gathering answer, a refresh/permission/channel answer, or a Data
    /// indication (a check for the agent on the relayed base, or other data to deliver, returned).
    private func fromServer(_ bytes: [UInt8], turn: (client: TURNClient, server: UDPEndpoint)) -> (
        data: [UInt8], peer: UDPEndpoint
    )? {
        let now = clock.now
        if turn.client.isGathering, let (resend, event) = turn.client.handleGatheringAnswer(bytes, now: now) {
            for d in resend { send(d, to: turn.server) }
            if let event { gathered(event) }
            return nil
        }
        var resend = false
        if turn.client.handleRefreshAnswer(bytes, resend: &resend) {
            if resend { for d in turn.client.refreshRequests() { send(d, to: turn.server) } }
            acceptBoundChannels(turn)
            followSelection()  // a confirmed channel lets media move to a newly selected pair of our relay
            return nil
        }
        guard let (peer, data) = TURNClient.unwrapData(bytes), let relayed = turn.client.relayedAddress,
            let first = data.first
        else { return nil }
        if first < 4 {
            takeUpRestart(data)
            agent.handle(data, from: peer, base: relayed, now: now)
            sendTransmits()
            followSelection()
            wakeTickerIfDue()
            return nil
        }
        return (try? UDPEndpoint(host: peer.host, port: Int(peer.port))).map { (data, $0) }
    }
}

/// Why ICE on a media port found no pair.
public enum ICEMediaPortError: Error, Equatable, Sendable {
    /// The agent gave up (every pair failed).
    case failed(ICEError)
    /// No pair was selected within the time allowed.
    case timedOut
}
