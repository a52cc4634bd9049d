import Atomics
import Foundation
import VoiceCore
import VoiceSRTP

/// One WebRTC media transport: a UDP port on which ICE checks, the DTLS-SRTP handshake and SRTP/SRTCP travel
/// together (RFC 7983), demultiplexed by first byte.
///
/// ICE side: as ICE-lite answerer (the browser case) it answers checks through ``ICELiteAgent``; as a full agent
/// (``ICEAgent``, RFC 8445) it owns one socket per gathered host address plus, optionally, a TURN allocation,
/// and sends each of the agent's datagrams from the base it names; the minimal `controlling` role (nominating
/// checks to one known candidate) remains for the tests that predate the full agent.
/// DTLS starts once a pair is selected (client role) or when the first DTLS record arrives (server role); when it
/// completes, ``keys`` holds the SRTP keys and ``onConnected`` fires on the transport thread. SRTP datagrams go to
/// ``onSRTP`` — the caller's stream unprotects them.
///
/// Threads: one transport thread (`start(clock:)`…`stop()`) owns the ICE agent, the DTLS association and the
/// selected pair, and runs the callbacks; on it, receiving, demultiplexing and ``sendOnTransportThread(_:now:)``
/// take no lock. Other threads see snapshots (``remoteAddress``, ``keys``) published under a lock when they change
/// (a few times per call), and may send with ``send(_:now:)``.
public final class WebRTCTransport: @unchecked Sendable {
    public enum ICERole {
        /// Answers checks; the peer nominates.
        case liteControlled(ICELiteAgent)
        /// Sends nominating checks to `remote` with these credentials.
        case controlling(local: ICECredentials, remote: ICECredentials, candidate: TransportAddress)
        /// A full agent whose host candidates' bases are the transport's `sockets` (and whose relay candidate's
        /// base is ``relay``'s relayed address).
        case full(ICEAgent)
    }

    /// Which way a datagram leaves: a socket, or the TURN allocation.
    enum Route: Equatable {
        case socket(Int)
        case relay
        /// The relay, media as ChannelData on this channel (bound to the selected remote; control stays in Send
        /// indications).
        case channel(UInt16)
    }

    /// The first socket (the only one except for a full agent gathering on several interfaces).
    public let socket: DatagramSocket
    public let sockets: [DatagramSocket]
    private let pollDescriptors: UnsafeMutablePointer<pollfd>
    /// Driven on the transport thread only; read ``keys`` from elsewhere.
    public let dtls: DTLSSRTPAssociation
    private let ice: ICERole
    private var thread: Thread?
    private let running = ManagedAtomic<Bool>(false)

    // Transport thread only.
    private var selected: TransportAddress?
    private var selectedRoute: Route?
    private var checkTransaction: [UInt8]?
    private var dtlsStarted = false
    private var handshakeReported = false
    private var consentUntil: MediaTime?

    // Published for other threads (under `lock`, written on change).
    private let lock = NSLock()
    private var publishedSelected: TransportAddress?
    private var publishedRoute: Route?
    private var publishedKeys: DTLSSRTPKeys?
    private var publishedConsentUntil: MediaTime?

    /// Called on the transport thread with each SRTP/SRTCP datagram (valid during the call only).
    public var onSRTP: ((UnsafeMutableRawBufferPointer, MediaTime) -> Void)?
    /// Called once on the transport thread when DTLS completes (keys) or fails (error).
    public var onConnected: ((Result<DTLSSRTPKeys, DTLSError>) -> Void)?
    /// When set (before ``start(clock:)``), every datagram goes through this TURN allocation (Send indications to
    /// the peer's address; Data indications from the server are unwrapped): a relay-only call. Its socket must be
    /// ``socket``, its allocation made and the peer permitted. (Send indications allocate per packet; ChannelData
    /// does not: a full agent whose selected pair is relayed binds a channel to the remote without blocking and
    /// sends media as ChannelData once the server confirms, see ``sentChannelData``.)
    public var relay: TURNClient?
    /// With ``relay``: how often its allocation and permissions are refreshed (they expire after 10 and 5 min).
    public var relayRefreshInterval = MediaTime.seconds(60)
    private var nextRelayRefresh: MediaTime?
    /// A full agent's channel for its selected relayed pair (transport thread only): asked for when the pair is
    /// selected, used for media once ``TURNClient/boundChannels`` confirms it.
    private var fullChannel: (number: UInt16, peer: TransportAddress)?
    private var nextChannelNumber: UInt16 = 0x4000
    /// Media datagrams sent as ChannelData (the rest of the relayed ones went as Send indications).
    public var sentChannelData: Int { sentChannelDataCount.load(ordering: .relaxed) }
    private let sentChannelDataCount = ManagedAtomic<Int>(0)
    /// With ``relay``: the channel bound to the selected peer (``TURNClient/bindChannel(_:to:timeout:)``); media
    /// then goes as ChannelData, framed in a preallocated buffer (no allocation per packet).
    public var relayChannel: (number: UInt16, peer: TransportAddress)?
    private let channelBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048 + 4, alignment: 16)
    /// Where datagrams are read into (the transport thread's, or ``pump(now:timeoutMilliseconds:)``'s caller's).
    private let receiveBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)
    /// Trickle ICE of our own candidates (RFC 8838), for a full agent: set before ``start(clock:)``. The transport
    /// then announces the agent's host candidates through ``onLocalCandidate`` at once and, with ``relay`` (a
    /// TURN client without an allocation yet), gathers the srflx and relay candidates on its own thread without
    /// blocking — checks on the host pairs (and media, once one is selected) go on meanwhile — announcing each as
    /// its answer arrives, then end-of-candidates (nil) when gathering finished or failed (``gatheringErrors``).
    public var trickleLocalCandidates = false
    /// With ``trickleLocalCandidates``: each local candidate as gathered, nil once there are no more (transport
    /// thread; signal them to the peer).
    public var onLocalCandidate: ((ICECandidate?) -> Void)?
    /// With ``trickleLocalCandidates``: how long the TURN server may take to answer the Binding and the Allocate
    /// (media on host pairs does not wait for it, so longer than a blocking gathering's 3 s).
    public var gatheringTimeout = MediaTime.seconds(10)
    /// Why srflx or relay gathering failed (no answer, refused credentials), published when it happens.
    public var gatheringErrors: [TURNError] { lock.withLock { publishedGatheringErrors } }
    private var publishedGatheringErrors: [TURNError] = []
    private var trickleStarted = false
    private var trickleEnded = false
    /// Remote candidates trickled in from another thread (signalling), taken by the transport thread; the count
    /// lets the thread skip the lock when nothing waits.
    private var pendingRemote: [ICECandidate?] = []
    private let pendingRemoteCount = ManagedAtomic<Int>(0)
    /// Called every 10 ms on the transport thread (the media tick: one thread per call for network and media, so
    /// the stream needs no lock or hand-off); nil for none.
    public var onTick: ((MediaTime) -> Void)?

    /// Counters (transport thread writes; read them after `stop()` or accept a torn read).
    public private(set) var received = (stun: 0, dtls: 0, srtp: 0, dropped: 0)
    /// Datagrams that came through the relay as ChannelData (the rest of the relayed ones were Data indications).
    public private(set) var receivedChannelData = 0

    public convenience init(socket: DatagramSocket, ice: ICERole, dtls: DTLSSRTPAssociation) {
        self.init(sockets: [socket], ice: ice, dtls: dtls)
    }

    /// `sockets`: at least one; for a full agent, one per host candidate's base.
    public init(sockets: [DatagramSocket], ice: ICERole, dtls: DTLSSRTPAssociation) {
        precondition(!sockets.isEmpty, "a transport needs a socket")
        self.socket = sockets[0]
        self.sockets = sockets
        self.ice = ice
        self.dtls = dtls
        pollDescriptors = .allocate(capacity: sockets.count)
        for (i, s) in sockets.enumerated() {
            pollDescriptors[i] = pollfd(fd: s.descriptor, events: Int16(POLLIN), revents: 0)
        }
    }

    deinit {
        channelBuffer.deallocate()
        receiveBuffer.deallocate()
        pollDescriptors.deallocate()
    }

    /// The way the non-full roles send: everything through the relay when there is one.
    private var defaultRoute: Route { relay == nil ? .socket(0) : .relay }

    /// The route for a full agent's base: the socket bound to it, or the relay for the relayed address.
    private func route(forBase base: TransportAddress) -> Route? {
        if let relay, relay.relayedAddress == base { return .relay }
        return sockets.firstIndex { $0.localAddress == base }.map { .socket($0) }
    }

    /// Where media goes (the nominated pair's remote address), once ICE selected one.
    public var remoteAddress: TransportAddress? { lock.withLock { publishedSelected } }

    /// The SRTP keys, once DTLS completed.
    public var keys: DTLSSRTPKeys? { lock.withLock { publishedKeys } }

    /// Sends a datagram (SRTP) from any thread to the selected address; false before ICE selected one, or when an
    /// ICE-lite agent's consent expired (RFC 7675: media stops). Takes the snapshot lock: from the transport
    /// thread use ``sendOnTransportThread(_:now:)``.
    @discardableResult
    public func send(_ datagram: UnsafeRawBufferPointer, now: MediaTime) -> Bool {
        let (target, route, consent) = lock.withLock { (publishedSelected, publishedRoute, publishedConsentUntil) }
        return deliver(datagram, to: target, route: route, consentUntil: consent, now: now)
    }

    /// The same on the transport thread (from ``onTick`` or ``onSRTP``): no lock, no allocation (without relay).
    @discardableResult
    public func sendOnTransportThread(_ datagram: UnsafeRawBufferPointer, now: MediaTime) -> Bool {
        deliver(datagram, to: selected, route: selectedRoute, consentUntil: consentUntil, now: now)
    }

    private func deliver(
        _ datagram: UnsafeRawBufferPointer, to target: TransportAddress?, route: Route?,
        consentUntil: MediaTime?, now: MediaTime
    ) -> Bool {
        guard let target, let route else { return false }
        switch ice {
        case .liteControlled, .full:
            guard let consentUntil, now < consentUntil else { return false }
        case .controlling:
            break
        }
        if case .socket(let index) = route { return sockets[index].send(datagram, to: target) }
        if let relay {
            let channel: (UInt16, TransportAddress)? =
                switch route {
                case .channel(let number): (number, target)
                default: relayChannel
                }
            if let (channel, peer) = channel, peer == target, datagram.count <= channelBuffer.count - 4 {
                // ChannelData (RFC 8656 §12.4): channel, length, data; padding is optional over UDP.
                channelBuffer[0] = UInt8(channel >> 8)
                channelBuffer[1] = UInt8(channel & 0xFF)
                channelBuffer[2] = UInt8(datagram.count >> 8)
                channelBuffer[3] = UInt8(datagram.count & 0xFF)
                UnsafeMutableRawBufferPointer(rebasing: channelBuffer[4..<4 + datagram.count]).copyMemory(
                    from: datagram)
                sentChannelDataCount.wrappingIncrement(ordering: .relaxed)
                return socket.send(
                    UnsafeRawBufferPointer(rebasing: channelBuffer[0..<4 + datagram.count]), to: relay.server)
            }
            relay.send(Array(datagram), to: target)
            return true
        }
        return false
    }

    /// Control traffic (checks, DTLS) along a route.
    private func transmit(_ datagram: [UInt8], to target: TransportAddress, route: Route) {
        switch route {
        case .socket(let index): sockets[index].send(datagram, to: target)
        case .relay, .channel: relay?.send(datagram, to: target)
        }
    }

    private func transmit(_ datagram: [UInt8], to target: TransportAddress) {
        transmit(datagram, to: target, route: defaultRoute)
    }

    /// A candidate the peer trickled (nil: its end-of-candidates), from any thread; a full agent takes it on the
    /// transport thread (others ignore it: an ICE-lite agent learns the peer's addresses from its checks).
    public func addRemoteCandidate(_ candidate: ICECandidate?) {
        lock.withLock { pendingRemote.append(candidate) }
        pendingRemoteCount.wrappingIncrement(ordering: .releasing)
    }

    public func start(clock: @escaping @Sendable () -> MediaTime) {
        running.store(true, ordering: .releasing)
        let thread = Thread { [self] in run(clock: clock) }
        thread.name = "webrtc-transport"
        self.thread = thread
        thread.start()
    }

    public func stop() {
        running.store(false, ordering: .releasing)
        while thread?.isFinished == false { Thread.sleep(forTimeInterval: 0.005) }
    }

    /// One receive turn of the transport loop, for a caller that drives a stopped transport itself (the
    /// allocation benchmark): waits up to `timeoutMilliseconds` for datagrams on every socket and handles them
    /// as the transport thread would. Returns how many were handled. Never while the thread runs.
    @discardableResult
    public func pump(now: MediaTime, timeoutMilliseconds: Int32) -> Int {
        receiveReady(timeoutMilliseconds: timeoutMilliseconds) { now }
    }

    @discardableResult
    private func receiveReady(timeoutMilliseconds: Int32, clock: () -> MediaTime) -> Int {
        guard poll(pollDescriptors, nfds_t(sockets.count), timeoutMilliseconds) > 0 else { return 0 }
        var handled = 0
        // One datagram per ready socket per wake-up: what else is queued makes the next poll return at once (a
        // starved thread still catches up, the media tick running between reads). Draining until EAGAIN cost a
        // third syscall per packet in steady state, where each wake-up finds one datagram.
        for i in sockets.indices where pollDescriptors[i].revents != 0 {
            guard let (count, from) = sockets[i].read(into: receiveBuffer) else { continue }
            handle(
                UnsafeMutableRawBufferPointer(rebasing: receiveBuffer[0..<count]), from: from, socket: i, now: clock())
            handled += 1
        }
        return handled
    }

    private func run(clock: @Sendable () -> MediaTime) {
        var nextCheck = MediaTime.zero
        var nextTick = clock()
        while running.load(ordering: .acquiring) {
            var now = clock()
            driveTimers(now: now, nextCheck: &nextCheck)
            if let onTick, now >= nextTick {
                onTick(now)
                nextTick += .milliseconds(10)
                if now - nextTick > .milliseconds(100) { nextTick = now }  // far behind (suspended): no burst
                now = clock()
            }
            let wait = onTick == nil ? 10 : max(0, min(10, Int32((nextTick - now).nanoseconds / 1_000_000)))
            receiveReady(timeoutMilliseconds: wait, clock: clock)
            reportHandshakeEnd()
        }
    }

    /// Publishes the keys and calls ``onConnected`` once DTLS completed or failed: right after the record that
    /// ended it, so SRTP the peer sent just behind its last flight (read in the same wake-up) finds the keys.
    private func reportHandshakeEnd() {
        guard !handshakeReported else { return }
        switch dtls.state {
        case .connected(let keys):
            handshakeReported = true
            lock.withLock { publishedKeys = keys }
            onConnected?(.success(keys))
        case .failed(let error):
            handshakeReported = true
            onConnected?(.failure(error))
        case .handshaking:
            break
        }
    }

    /// Controlling checks every 50 ms until one succeeds; DTLS retransmissions when due.
    private func driveTimers(now: MediaTime, nextCheck: inout MediaTime) {
        if let relay {
            if nextRelayRefresh == nil { nextRelayRefresh = now + relayRefreshInterval }
            if let due = nextRelayRefresh, now >= due {
                for d in relay.refreshRequests() { relay.socket.send(d, to: relay.server) }
                nextRelayRefresh = now + relayRefreshInterval
            }
        }
        if case .full(let agent) = ice {
            if trickleLocalCandidates { trickle(agent, now: now) }
            if pendingRemoteCount.load(ordering: .acquiring) > 0 { takeRemoteCandidates(agent) }
            agent.tick(now: now)
            flush(agent)
            if let target = selected, let route = selectedRoute, !dtlsStarted, dtls.role == .client {
                dtlsStarted = true
                for d in dtls.start() { transmit(d, to: target, route: route) }
            }
        }
        if case .controlling(let local, let remote, let candidate) = ice, selected == nil, now >= nextCheck {
            let check = ICELiteAgent.check(
                from: local, to: remote,
                priority: ICECandidate.priority(kind: .host), nominate: true)
            checkTransaction = check.transactionID
            transmit(
                check.serialize(
                    integrityKey: STUNMessage.shortTermKey(password: remote.password),
                    fingerprint: true), to: candidate)
            nextCheck = now + .milliseconds(50)
        }
        if let target = selected, let route = selectedRoute, !dtls.isConnectedOrFailed,
            dtls.timeUntilRetransmission.map({ $0 <= .zero }) == true
        {
            for d in dtls.handleTimeout() { transmit(d, to: target, route: route) }
        }
    }

    /// Trickle ICE of our candidates: the host ones at once, then the TURN gathering's retransmissions and
    /// timeouts; end-of-candidates when nothing is pending.
    private func trickle(_ agent: ICEAgent, now: MediaTime) {
        if !trickleStarted {
            trickleStarted = true
            agent.localCandidates.forEach { onLocalCandidate?($0.candidate) }
            if let relay {
                for d in relay.startGathering(now: now, timeout: gatheringTimeout) {
                    relay.socket.send(d, to: relay.server)
                }
            }
        }
        if let relay, relay.isGathering {
            let (send, events) = relay.gatheringTimers(now: now)
            for d in send { relay.socket.send(d, to: relay.server) }
            for e in events { gathered(e, agent: agent, relay: relay) }
        }
        endGatheringIfDone(agent)
    }

    private func endGatheringIfDone(_ agent: ICEAgent) {
        guard trickleStarted, !trickleEnded, relay?.isGathering != true else { return }
        trickleEnded = true
        agent.localGatheringDone()
        onLocalCandidate?(nil)
    }

    /// One answer of the TURN gathering: a srflx candidate (when the mapping differs from the base, i.e. behind
    /// a NAT), a relay candidate (then the permissions for the peer's relay candidates known so far), or a failure.
    private func gathered(_ event: TURNClient.GatheringEvent, agent: ICEAgent, relay: TURNClient) {
        let server = relay.server.description
        switch event {
        case .mapped(let mapped):
            let base = relay.socket.localAddress
            guard mapped != base else { return }
            onLocalCandidate?(
                agent.addLocalCandidate(kind: .srflx, address: mapped, base: base, related: base, server: server))
        case .relayed(let relayed):
            onLocalCandidate?(
                agent.addLocalCandidate(
                    kind: .relay, address: relayed, base: relayed,
                    related: relay.mappedAddress, server: server))
            permit(agent.remoteCandidates, relay: relay)
        case .failed(_, let error):
            lock.withLock { publishedGatheringErrors.append(error) }
        }
    }

    /// The relay forwards only from permitted peers (RFC 8656 §9): the peer's relayed addresses, as in the
    /// non-trickle call (see ``WebRTCAudioCall``).
    private func permit(_ candidates: [ICECandidate], relay: TURNClient) {
        let peers = Set(candidates.filter { $0.kind == .relay }.compactMap(\.address)).filter {
            !relay.permittedPeers.contains($0)
        }
        for d in relay.permissionRequests(for: Array(peers)) { relay.socket.send(d, to: relay.server) }
    }

    private func takeRemoteCandidates(_ agent: ICEAgent) {
        let taken = lock.withLock {
            defer { pendingRemote.removeAll() }
            return pendingRemote
        }
        pendingRemoteCount.wrappingDecrement(by: taken.count, ordering: .releasing)
        for candidate in taken {
            if let candidate { agent.addRemoteCandidate(candidate) } else { agent.remoteGatheringDone() }
        }
        if let relay, relay.relayedAddress != nil { permit(taken.compactMap { $0 }, relay: relay) }
    }

    /// Changes of the selected pair and of consent, published for other threads.
    private func select(_ address: TransportAddress?, consentUntil: MediaTime?, route: Route?) {
        guard address != selected || consentUntil != self.consentUntil || route != selectedRoute else { return }
        selected = address
        selectedRoute = address == nil ? nil : route
        self.consentUntil = consentUntil
        lock.withLock {
            publishedSelected = address
            publishedRoute = selectedRoute
            publishedConsentUntil = consentUntil
        }
    }

    /// Sends what the full agent queued, each from its base, and publishes its selected pair and consent.
    private func flush(_ agent: ICEAgent) {
        for t in agent.takeTransmits() {
            if let route = route(forBase: t.base) { transmit(t.datagram, to: t.destination, route: route) }
        }
        let pair = agent.selected
        var pairRoute = pair.flatMap { route(forBase: $0.local) }
        if let relay, let remote = pair?.remote, pairRoute == .relay {
            // A relayed pair: bind a channel to its remote (once per remote), then media goes as ChannelData.
            if fullChannel?.peer != remote, let request = relay.channelBindRequest(nextChannelNumber, to: remote) {
                fullChannel = (nextChannelNumber, remote)
                nextChannelNumber = nextChannelNumber == 0x4FFF ? 0x4000 : nextChannelNumber + 1
                relay.socket.send(request, to: relay.server)
            }
            if let fullChannel, fullChannel.peer == remote, relay.boundChannels[fullChannel.number] == remote {
                pairRoute = .channel(fullChannel.number)
            }
        }
        select(pair?.remote, consentUntil: agent.consentDeadline, route: pairRoute)
    }

    private func handle(
        _ datagram: UnsafeMutableRawBufferPointer, from: TransportAddress, socket index: Int,
        now: MediaTime
    ) {
        if let relay, from == relay.server, relay.socket === sockets[index] {
            // ChannelData from the bound peer: the payload is handled in place.
            if datagram.count >= 4, PacketKind(firstByte: datagram[0]) == .turnChannel {
                // Once a channel is bound the relay sends everything from that peer this way (checks too).
                let length = Int(datagram[2]) << 8 | Int(datagram[3])
                guard let (channel, peer) = relayChannel ?? fullChannel,
                    Int(datagram[0]) << 8 | Int(datagram[1]) == Int(channel)
                else {
                    received.dropped += 1
                    return
                }
                receivedChannelData += 1
                guard 4 + length <= datagram.count else {
                    received.dropped += 1
                    return
                }
                handle(
                    direct: UnsafeMutableRawBufferPointer(rebasing: datagram[4..<4 + length]), from: peer,
                    arrival: .relay, now: now)
                return
            }
            // Otherwise Data indications carry the peer's datagrams; answers to our gathering and refreshes are
            // the relay's.
            let bytes = Array(datagram)
            if case .full(let agent) = ice, relay.isGathering,
                let (send, event) = relay.handleGatheringAnswer(bytes, now: now)
            {
                for d in send { relay.socket.send(d, to: relay.server) }
                if let event { gathered(event, agent: agent, relay: relay) }
                endGatheringIfDone(agent)
                return
            }
            var resend = false
            if relay.handleRefreshAnswer(bytes, resend: &resend) {
                if resend { for d in relay.refreshRequests() { relay.socket.send(d, to: relay.server) } }
                if case .full(let agent) = ice { flush(agent) }  // a channel just bound: media switches to it
                return
            }
            guard let relayed = TURNClient.unwrapData(bytes) else {
                received.dropped += 1
                return
            }
            var data = relayed.data
            data.withUnsafeMutableBytes { handle(direct: $0, from: relayed.peer, arrival: .relay, now: now) }
            return
        }
        handle(direct: datagram, from: from, arrival: .socket(index), now: now)
    }

    /// `arrival`: the route the datagram came in on (a full agent's base, and where to answer).
    private func handle(
        direct datagram: UnsafeMutableRawBufferPointer, from: TransportAddress, arrival: Route,
        now: MediaTime
    ) {
        switch PacketKind(UnsafeRawBufferPointer(datagram)) {
        case .stun:
            received.stun += 1
            let bytes = Array(datagram)
            switch ice {
            case .liteControlled(let agent):
                if let reply = agent.handle(bytes, from: from, now: now) { transmit(reply, to: from, route: arrival) }
                let address = selected == nil || agent.nominated ? agent.selectedAddress : selected
                select(address, consentUntil: agent.lastConsent.map { $0 + agent.consentLifetime }, route: arrival)
            case .controlling(_, let remote, _):
                guard let m = try? STUNMessage(parsing: bytes), m.messageClass == .successResponse,
                    m.transactionID == checkTransaction,
                    m.verifyIntegrity(key: STUNMessage.shortTermKey(password: remote.password))
                else {
                    received.dropped += 1
                    return
                }
                select(from, consentUntil: nil, route: arrival)
            case .full(let agent):
                let base: TransportAddress? =
                    switch arrival {
                    case .socket(let index): sockets[index].localAddress
                    case .relay, .channel: relay?.relayedAddress
                    }
                guard let base else {
                    received.dropped += 1
                    return
                }
                agent.handle(bytes, from: from, base: base, now: now)
                flush(agent)
            }
            if let target = selected, let route = selectedRoute, !dtlsStarted, dtls.role == .client {
                dtlsStarted = true
                for d in dtls.start() { transmit(d, to: target, route: route) }
            }
        case .dtls:
            received.dtls += 1
            // Only from the selected address (or, before selection, whoever passed an ICE check).
            let target = selected ?? from
            dtlsStarted = true
            for d in dtls.receive(UnsafeRawBufferPointer(datagram)) {
                transmit(d, to: target, route: selected == nil ? arrival : selectedRoute ?? arrival)
            }
            reportHandshakeEnd()
        case .rtp:
            received.srtp += 1
            onSRTP?(datagram, now)
        default:
            received.dropped += 1
        }
    }
}

extension DTLSSRTPAssociation {
    var isConnectedOrFailed: Bool {
        if case .handshaking = state { return false }
        return true
    }
}
