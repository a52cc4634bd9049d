import Atomics
import Foundation
import VoiceCore
import VoiceSRTP

/// One WebRTC media transport: a UDP port on which ICE checks, the DTLS-SRTP handshake and SRTP/SRTCP travel
/// together (RFC 7983), demultiplexed by first byte.
///
/// ICE side: as ICE-lite answerer (the browser case) it answers checks through ``ICELiteAgent``; as the
/// controlling side towards another engine it sends nominating checks to the peer's first candidate until one
/// succeeds (a minimal controlling agent, enough for two engines; full ICE is not done yet).
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
    }

    public let socket: DatagramSocket
    /// Driven on the transport thread only; read ``keys`` from elsewhere.
    public let dtls: DTLSSRTPAssociation
    private let ice: ICERole
    private var thread: Thread?
    private let running = ManagedAtomic<Bool>(false)

    // Transport thread only.
    private var selected: TransportAddress?
    private var checkTransaction: [UInt8]?
    private var dtlsStarted = false
    private var consentUntil: MediaTime?

    // Published for other threads (under `lock`, written on change).
    private let lock = NSLock()
    private var publishedSelected: TransportAddress?
    private var publishedKeys: DTLSSRTPKeys?
    private var publishedConsentUntil: MediaTime?

    /// Called on the transport thread with each SRTP/SRTCP datagram (valid during the call only).
    public var onSRTP: ((UnsafeMutableRawBufferPointer, MediaTime) -> Void)?
    /// Called once on the transport thread when DTLS completes (keys) or fails (error).
    public var onConnected: ((Result<DTLSSRTPKeys, DTLSError>) -> Void)?
    /// When set (before ``start(clock:)``), every datagram goes through this TURN allocation (Send indications to
    /// the peer's address; Data indications from the server are unwrapped): a relay-only call. Its socket must be
    /// ``socket``, its allocation made and the peer permitted. (Allocates per packet: Send indications are built
    /// as messages; ChannelData would not.)
    public var relay: TURNClient?
    /// With ``relay``: the channel bound to the selected peer (``TURNClient/bindChannel(_:to:timeout:)``); media
    /// then goes as ChannelData, framed in a preallocated buffer (no allocation per packet).
    public var relayChannel: (number: UInt16, peer: TransportAddress)?
    private let channelBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048 + 4, alignment: 16)
    /// Called every 10 ms on the transport thread (the media tick: one thread per call for network and media, so
    /// the stream needs no lock or hand-off); nil for none.
    public var onTick: ((MediaTime) -> Void)?

    /// Counters (transport thread writes; read them after `stop()` or accept a torn read).
    public private(set) var received = (stun: 0, dtls: 0, srtp: 0, dropped: 0)
    /// Datagrams that came through the relay as ChannelData (the rest of the relayed ones were Data indications).
    public private(set) var receivedChannelData = 0

    public init(socket: DatagramSocket, ice: ICERole, dtls: DTLSSRTPAssociation) {
        self.socket = socket
        self.ice = ice
        self.dtls = dtls
    }

    deinit { channelBuffer.deallocate() }

    /// Where media goes (the nominated pair's remote address), once ICE selected one.
    public var remoteAddress: TransportAddress? { lock.withLock { publishedSelected } }

    /// The SRTP keys, once DTLS completed.
    public var keys: DTLSSRTPKeys? { lock.withLock { publishedKeys } }

    /// Sends a datagram (SRTP) from any thread to the selected address; false before ICE selected one, or when an
    /// ICE-lite agent's consent expired (RFC 7675: media stops). Takes the snapshot lock: from the transport
    /// thread use ``sendOnTransportThread(_:now:)``.
    @discardableResult
    public func send(_ datagram: UnsafeRawBufferPointer, now: MediaTime) -> Bool {
        let (target, consent) = lock.withLock { (publishedSelected, publishedConsentUntil) }
        return deliver(datagram, to: target, consentUntil: consent, now: now)
    }

    /// The same on the transport thread (from ``onTick`` or ``onSRTP``): no lock, no allocation (without relay).
    @discardableResult
    public func sendOnTransportThread(_ datagram: UnsafeRawBufferPointer, now: MediaTime) -> Bool {
        deliver(datagram, to: selected, consentUntil: consentUntil, now: now)
    }

    private func deliver(_ datagram: UnsafeRawBufferPointer, to target: TransportAddress?, consentUntil: MediaTime?,
                         now: MediaTime) -> Bool {
        guard let target else { return false }
        if case .liteControlled = ice {
            guard let consentUntil, now < consentUntil else { return false }
        }
        if let relay {
            if let (channel, peer) = relayChannel, peer == target, datagram.count <= channelBuffer.count - 4 {
                // ChannelData (RFC 8656 §12.4): channel, length, data; padding is optional over UDP.
                channelBuffer[0] = UInt8(channel >> 8)
                channelBuffer[1] = UInt8(channel & 0xFF)
                channelBuffer[2] = UInt8(datagram.count >> 8)
                channelBuffer[3] = UInt8(datagram.count & 0xFF)
                UnsafeMutableRawBufferPointer(rebasing: channelBuffer[4..<4 + datagram.count]).copyMemory(from: datagram)
                return socket.send(UnsafeRawBufferPointer(rebasing: channelBuffer[0..<4 + datagram.count]), to: relay.server)
            }
            relay.send(Array(datagram), to: target)
            return true
        }
        return socket.send(datagram, to: target)
    }

    /// Sends directly, or through the relay when there is one (control traffic: checks, DTLS).
    private func transmit(_ datagram: [UInt8], to target: TransportAddress) {
        if let relay { relay.send(datagram, to: target) } else { socket.send(datagram, to: target) }
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

    private func run(clock: @Sendable () -> MediaTime) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)
        defer { buffer.deallocate() }
        var nextCheck = MediaTime.zero
        var nextTick = clock()
        var reported = false
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
            if let (count, from) = socket.receive(into: buffer, timeoutMilliseconds: wait) {
                let datagram = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count])
                handle(datagram, from: from, now: clock())
            }
            if !reported {
                switch dtls.state {
                case .connected(let keys):
                    reported = true
                    lock.withLock { publishedKeys = keys }
                    onConnected?(.success(keys))
                case .failed(let error):
                    reported = true
                    onConnected?(.failure(error))
                case .handshaking:
                    break
                }
            }
        }
    }

    /// Controlling checks every 50 ms until one succeeds; DTLS retransmissions when due.
    private func driveTimers(now: MediaTime, nextCheck: inout MediaTime) {
        if case .controlling(let local, let remote, let candidate) = ice, selected == nil, now >= nextCheck {
            let check = ICELiteAgent.check(from: local, to: remote,
                                           priority: ICECandidate.priority(kind: .host), nominate: true)
            checkTransaction = check.transactionID
            transmit(check.serialize(integrityKey: STUNMessage.shortTermKey(password: remote.password),
                                     fingerprint: true), to: candidate)
            nextCheck = now + .milliseconds(50)
        }
        if let target = selected, !dtls.isConnectedOrFailed, dtls.timeUntilRetransmission.map({ $0 <= .zero }) == true {
            for d in dtls.handleTimeout() { transmit(d, to: target) }
        }
    }

    /// Changes of the selected pair and of consent, published for other threads.
    private func select(_ address: TransportAddress?, consentUntil: MediaTime?) {
        guard address != selected || consentUntil != self.consentUntil else { return }
        selected = address
        self.consentUntil = consentUntil
        lock.withLock {
            publishedSelected = address
            publishedConsentUntil = consentUntil
        }
    }

    private func handle(_ datagram: UnsafeMutableRawBufferPointer, from: TransportAddress, now: MediaTime) {
        if let relay, from == relay.server {
            // ChannelData from the bound peer: the payload is handled in place.
            if datagram.count >= 4, PacketKind(firstByte: datagram[0]) == .turnChannel {
                // Once a channel is bound the relay sends everything from that peer this way (checks too).
                let length = Int(datagram[2]) << 8 | Int(datagram[3])
                guard let (channel, peer) = relayChannel, Int(datagram[0]) << 8 | Int(datagram[1]) == Int(channel) else {
                    received.dropped += 1
                    return
                }
                receivedChannelData += 1
                guard 4 + length <= datagram.count else { received.dropped += 1; return }
                handle(direct: UnsafeMutableRawBufferPointer(rebasing: datagram[4..<4 + length]), from: peer, now: now)
                return
            }
            // Otherwise only Data indications carry the peer's datagrams.
            guard let relayed = TURNClient.unwrapData(Array(datagram)) else { received.dropped += 1; return }
            var data = relayed.data
            data.withUnsafeMutableBytes { handle(direct: $0, from: relayed.peer, now: now) }
            return
        }
        handle(direct: datagram, from: from, now: now)
    }

    private func handle(direct datagram: UnsafeMutableRawBufferPointer, from: TransportAddress, now: MediaTime) {
        switch PacketKind(UnsafeRawBufferPointer(datagram)) {
        case .stun:
            received.stun += 1
            let bytes = Array(datagram)
            switch ice {
            case .liteControlled(let agent):
                if let reply = agent.handle(bytes, from: from, now: now) { transmit(reply, to: from) }
                let address = selected == nil || agent.nominated ? agent.selectedAddress : selected
                select(address, consentUntil: agent.lastConsent.map { $0 + agent.consentLifetime })
            case .controlling(_, let remote, _):
                guard let m = try? STUNMessage(parsing: bytes), m.messageClass == .successResponse,
                      m.transactionID == checkTransaction,
                      m.verifyIntegrity(key: STUNMessage.shortTermKey(password: remote.password))
                else { received.dropped += 1; return }
                select(from, consentUntil: nil)
            }
            if let target = selected, !dtlsStarted, dtls.role == .client {
                dtlsStarted = true
                for d in dtls.start() { transmit(d, to: target) }
            }
        case .dtls:
            received.dtls += 1
            // Only from the selected address (or, before selection, whoever passed an ICE check).
            let target = selected ?? from
            dtlsStarted = true
            for d in dtls.receive(UnsafeRawBufferPointer(datagram)) { transmit(d, to: target) }
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
