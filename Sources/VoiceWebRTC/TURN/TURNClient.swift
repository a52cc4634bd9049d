import Foundation
import VoiceCore

/// Long-term TURN credentials (RFC 8656 §9.2).
public struct TURNCredentials: Equatable, Sendable {
    public var username: String
    public var password: String

    public init(username: String, password: String) {
        self.username = username
        self.password = password
    }

    /// Time-limited credentials of the "TURN REST API" (draft-uberti-behave-turn-rest, what coturn's
    /// `use-auth-secret` checks): username "<expiry unix time>:<user>", password base64(HMAC-SHA1(secret, username)).
    public static func restAPI(
        secret: String, user: String, validFor seconds: Int = 3_600,
        now: Date = Date()
    ) -> TURNCredentials {
        let username = "\(Int(now.timeIntervalSince1970) + seconds):\(user)"
        let mac = STUNMessage.hmacSHA1(key: Array(secret.utf8), data: Array(username.utf8))
        return TURNCredentials(username: username, password: Data(mac).base64EncodedString())
    }
}

/// Why a TURN exchange failed.
public enum TURNError: Error, Equatable, Sendable {
    /// The server refused (ERROR-CODE): 401 after our credentials means they are wrong or expired.
    case rejected(code: Int, reason: String)
    /// No answer after the retransmissions (RFC 8489 §6.2.1: Rc = 7, from RTO 500 ms… here bounded by `timeout`).
    case timedOut
    /// The server's answer did not parse or lacked what it must carry.
    case badResponse(String)
}

/// A TURN client over UDP (RFC 8656): Allocate with the long-term credential mechanism (401 → realm/nonce →
/// authenticated retry, 438 stale nonce → retry), CreatePermission, Send indications and Data indications.
///
/// Blocking, one thread; meant for the ICE agent's gathering and for tests, not the per-packet path (a bound
/// channel's ChannelData is what media would use). Made without a socket (``init(server:credentials:)``) it only
/// builds requests and reads answers, for a caller that sends them over a socket of its own (a SIP call's media
/// port, ``ICEMediaPort``).
public final class TURNClient {
    /// The socket the blocking calls and ``send(_:to:)`` use; only for a client made with one.
    public var socket: DatagramSocket {
        guard let boundSocket else { preconditionFailure("this TURN client was made without a socket") }
        return boundSocket
    }
    private let boundSocket: DatagramSocket?
    public let server: TransportAddress
    public let credentials: TURNCredentials
    private var realm: String?
    private var nonce: String?
    public private(set) var relayedAddress: TransportAddress?
    public private(set) var mappedAddress: TransportAddress?
    public private(set) var lifetime: UInt32 = 0
    /// Peers with a permission (CreatePermission or ChannelBind succeeded): what ``refreshRequests()`` renews.
    public private(set) var permittedPeers: [TransportAddress] = []
    /// Transactions of the refreshes sent by ``refreshRequests()`` whose answers ``handleRefreshAnswer(_:)`` takes.
    private var refreshTransactions: Set<[UInt8]> = []
    /// Channels asked for with ``channelBindRequest(_:to:)``: each ``refreshRequests()`` binds them again (a
    /// binding lasts 600 s and refreshes the peer's permission, §12).
    private var wantedChannels: [(channel: UInt16, peer: TransportAddress)] = []
    /// Which wanted channel each outstanding ChannelBind transaction binds.
    private var channelTransactions: [[UInt8]: UInt16] = [:]
    /// Channels the server confirmed (ChannelBind success, non-blocking path), with their peers.
    public private(set) var boundChannels: [UInt16: TransportAddress] = [:]

    public init(socket: DatagramSocket, server: TransportAddress, credentials: TURNCredentials) {
        self.boundSocket = socket
        self.server = server
        self.credentials = credentials
    }

    /// A client whose datagrams the caller sends to ``server`` on its own socket and whose answers it hands back
    /// (the non-blocking requests: gathering, permissions, channels, refreshes, ``sendIndication(_:to:)``).
    public init(server: TransportAddress, credentials: TURNCredentials) {
        self.boundSocket = nil
        self.server = server
        self.credentials = credentials
    }

    /// A plain STUN Binding request to the server (RFC 8489 §3): our address as the server sees it, i.e. the
    /// server-reflexive candidate's address (the same as the socket's on loopback, the NAT's mapping behind one).
    public func bindingAddress(timeout: Duration = .seconds(3)) throws(TURNError) -> TransportAddress {
        let request = STUNMessage(method: .binding, messageClass: .request)
        let response = try transact(request.serialize(fingerprint: true), id: request.transactionID, timeout: timeout)
        guard response.messageClass == .successResponse else {
            let (code, reason) = ((try? response.errorCode()) ?? nil) ?? (0, "error response without ERROR-CODE")
            throw .rejected(code: code, reason: reason)
        }
        guard let mapped = (try? response.xorAddress()) ?? nil else {
            throw .badResponse("Binding success without XOR-MAPPED-ADDRESS")
        }
        return mapped
    }

    /// Allocates a UDP relay; returns the relayed transport address.
    @discardableResult
    public func allocate(timeout: Duration = .seconds(3)) throws(TURNError) -> TransportAddress {
        let response = try authenticatedRequest(.allocate, attributes: Self.allocateAttributes, timeout: timeout)
        return try acceptAllocation(response)
    }

    /// Installs a permission for `peer`'s address (RFC 8656 §9): the relay forwards only from permitted peers.
    public func createPermission(for peer: TransportAddress, timeout: Duration = .seconds(3)) throws(TURNError) {
        _ = try authenticatedRequest(
            .createPermission,
            attributes: [
                .address(STUNAttribute.Kind.xorPeerAddress, peer, transactionID: nil)  // XORed below with the real ID
            ], timeout: timeout)
        if !permittedPeers.contains(peer) { permittedPeers.append(peer) }
    }

    /// Refresh of the allocation (§7: LIFETIME 600 s) and CreatePermission for every permitted peer (§9.2:
    /// permissions last 300 s), signed with the nonce we hold, for a caller that must not block: the transport
    /// thread sends them every minute and gives the server's answers to ``handleRefreshAnswer(_:)``.
    public func refreshRequests() -> [[UInt8]] {
        guard relayedAddress != nil, let realm, let nonce else { return [] }
        let key = STUNMessage.longTermKey(username: credentials.username, realm: realm, password: credentials.password)
        let signed: [STUNAttribute] = [
            .string(STUNAttribute.Kind.username, credentials.username),
            .string(STUNAttribute.Kind.realm, realm), .string(STUNAttribute.Kind.nonce, nonce)
        ]
        var requests = [
            STUNMessage(
                method: .refresh, messageClass: .request,
                attributes: [.uint32(STUNAttribute.Kind.lifetime, 600)] + signed)
        ]
        for peer in permittedPeers {
            var m = STUNMessage(method: .createPermission, messageClass: .request)
            m.attributes = [.address(STUNAttribute.Kind.xorPeerAddress, peer, transactionID: m.transactionID)] + signed
            requests.append(m)
        }
        refreshTransactions = Set(requests.map(\.transactionID))
        channelTransactions = [:]
        for (channel, peer) in wantedChannels { requests.append(channelBind(channel, to: peer, signed: signed)) }
        return requests.map { $0.serialize(integrityKey: key, fingerprint: true) }
    }

    /// A Refresh with LIFETIME 0 (§7.1) signed with the nonce we hold: the server frees the allocation at once
    /// (sent when a call ends, so its relay port does not stay taken for the allocation's lifetime). Nil before an
    /// allocation.
    public func deallocationRequest() -> [UInt8]? {
        guard relayedAddress != nil, let realm, let nonce else { return nil }
        let key = STUNMessage.longTermKey(username: credentials.username, realm: realm, password: credentials.password)
        let m = STUNMessage(
            method: .refresh, messageClass: .request,
            attributes: [
                .uint32(STUNAttribute.Kind.lifetime, 0), .string(STUNAttribute.Kind.username, credentials.username),
                .string(STUNAttribute.Kind.realm, realm), .string(STUNAttribute.Kind.nonce, nonce)
            ])
        return m.serialize(integrityKey: key, fingerprint: true)
    }

    /// A ChannelBind of `channel` to `peer` signed with the nonce we hold, for a caller that must not block (the
    /// transport binds the selected relayed pair's peer so media goes as ChannelData): send it to ``server`` and
    /// give the answers to ``handleRefreshAnswer(_:resend:)``; ``boundChannels`` shows the success, and
    /// ``refreshRequests()`` binds it again from then on. Nil before an allocation.
    public func channelBindRequest(_ channel: UInt16, to peer: TransportAddress) -> [UInt8]? {
        precondition(TURNChannelData.channelRange.contains(channel), "ChannelData channels are 0x4000…0x4FFF")
        guard relayedAddress != nil, let realm, let nonce else { return nil }
        wantedChannels.removeAll { $0.channel == channel || $0.peer == peer }
        wantedChannels.append((channel, peer))
        let key = STUNMessage.longTermKey(username: credentials.username, realm: realm, password: credentials.password)
        let m = channelBind(
            channel, to: peer,
            signed: [
                .string(STUNAttribute.Kind.username, credentials.username),
                .string(STUNAttribute.Kind.realm, realm), .string(STUNAttribute.Kind.nonce, nonce)
            ])
        return m.serialize(integrityKey: key, fingerprint: true)
    }

    private func channelBind(_ channel: UInt16, to peer: TransportAddress, signed: [STUNAttribute]) -> STUNMessage {
        var m = STUNMessage(method: .channelBind, messageClass: .request)
        m.attributes =
            [
                .uint32(STUNAttribute.Kind.channelNumber, UInt32(channel) << 16),
                .address(STUNAttribute.Kind.xorPeerAddress, peer, transactionID: m.transactionID)
            ] + signed
        channelTransactions[m.transactionID] = channel
        return m
    }

    /// Takes a datagram from the server that may answer a refresh: true when it did (the caller drops it);
    /// `resend` is set after a 438 (stale nonce, §9.2 of RFC 8489): the new nonce is learnt and the refreshes
    /// must go again now. Refreshes that fail otherwise are counted in ``refreshFailures``.
    public func handleRefreshAnswer(_ datagram: [UInt8], resend: inout Bool) -> Bool {
        guard let m = try? STUNMessage(parsing: datagram) else { return false }
        let channel = channelTransactions.removeValue(forKey: m.transactionID)
        guard channel != nil || refreshTransactions.remove(m.transactionID) != nil else { return false }
        if m.messageClass == .successResponse {
            refreshSuccesses += 1
            if let channel, let wanted = wantedChannels.first(where: { $0.channel == channel }) {
                boundChannels[channel] = wanted.peer
            }
        } else if ((try? m.errorCode()) ?? nil)?.code == 438, let n = m.string(STUNAttribute.Kind.nonce) {
            nonce = n
            resend = true
        } else {
            refreshFailures += 1
        }
        return true
    }

    /// Answers to refreshes: successes, and failures other than a stale nonce.
    public private(set) var refreshSuccesses = 0
    public private(set) var refreshFailures = 0

    /// Binds `channel` (0x4000…0x4FFF) to `peer` (§12): from then on data to and from that peer may travel as
    /// ChannelData, 4 bytes of header instead of a 36-byte-or-more Send/Data indication. Also installs the permission.
    public func bindChannel(_ channel: UInt16, to peer: TransportAddress, timeout: Duration = .seconds(3))
        throws(TURNError)
    {
        precondition(TURNChannelData.channelRange.contains(channel), "ChannelData channels are 0x4000…0x4FFF")
        _ = try authenticatedRequest(
            .channelBind,
            attributes: [
                .uint32(STUNAttribute.Kind.channelNumber, UInt32(channel) << 16),
                .address(STUNAttribute.Kind.xorPeerAddress, peer, transactionID: nil)
            ], timeout: timeout)
    }

    /// Sends `data` to `peer` through the relay (a Send indication, §11).
    public func send(_ data: [UInt8], to peer: TransportAddress) {
        socket.send(Self.sendIndication(data, to: peer), to: server)
    }

    /// A Send indication (§11) carrying `data` to `peer`, to be sent to the server.
    public static func sendIndication(_ data: [UInt8], to peer: TransportAddress) -> [UInt8] {
        var m = STUNMessage(method: .send, messageClass: .indication)
        m.attributes = [
            .address(STUNAttribute.Kind.xorPeerAddress, peer, transactionID: m.transactionID),
            STUNAttribute(type: STUNAttribute.Kind.data, value: data)
        ]
        return m.serialize(fingerprint: true)
    }

    /// The peer and data of a Data indication (§11.6) that arrived from the server; nil for anything else.
    public static func unwrapData(_ datagram: [UInt8]) -> (peer: TransportAddress, data: [UInt8])? {
        guard let m = try? STUNMessage(parsing: datagram), m.method == .data, m.messageClass == .indication,
            let peer = (try? m.xorAddress(STUNAttribute.Kind.xorPeerAddress)) ?? nil,
            let data = m.attribute(STUNAttribute.Kind.data)
        else { return nil }
        return (peer, data.value)
    }

    /// Waits for a Data indication (§11.6) and returns the peer and its data; nil on timeout.
    public func receiveData(timeoutMilliseconds: Int32) -> (peer: TransportAddress, data: [UInt8])? {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 8)
        defer { buffer.deallocate() }
        let deadline = Date().addingTimeInterval(Double(timeoutMilliseconds) / 1000)
        while Date() < deadline {
            guard let (n, from) = socket.receive(into: buffer, timeoutMilliseconds: 50), from == server,
                let m = try? STUNMessage(parsing: Array(buffer[0..<n])), m.method == .data,
                m.messageClass == .indication,
                let peer = try? m.xorAddress(STUNAttribute.Kind.xorPeerAddress),
                let data = m.attribute(STUNAttribute.Kind.data)
            else { continue }
            return (peer, data.value)
        }
        return nil
    }

    /// A request with the long-term mechanism: first without credentials (or with the nonce we have), then again
    /// after a 401 (realm and nonce learnt) or a 438 (stale nonce).
    private func authenticatedRequest(_ method: STUNMethod, attributes: [STUNAttribute], timeout: Duration)
        throws(TURNError) -> STUNMessage
    {
        for _ in 0..<3 {
            let (request, key) = signedRequest(method, attributes: attributes)
            let response = try transact(
                request.serialize(integrityKey: key, fingerprint: true),
                id: request.transactionID, timeout: timeout)
            switch authenticationOutcome(response, key: key) {
            case .success: return response
            case .retry: continue
            case .failure(let error): throw error
            }
        }
        throw .rejected(code: 401, reason: "still unauthorized after a fresh nonce")
    }

    /// A request of `method` carrying `attributes` (peer addresses XORed with its own transaction ID), signed with
    /// the realm and nonce when we hold them; the key to sign it with (nil before the first 401).
    private func signedRequest(_ method: STUNMethod, attributes: [STUNAttribute]) -> (STUNMessage, [UInt8]?) {
        var request = STUNMessage(method: method, messageClass: .request)
        request.attributes = attributes.map { a in
            if a.type == STUNAttribute.Kind.xorPeerAddress, let plain = try? a.decodeAddress(xorWith: nil) {
                return .address(a.type, plain, transactionID: request.transactionID)
            }
            return a
        }
        guard let realm, let nonce else { return (request, nil) }
        request.attributes += [
            .string(STUNAttribute.Kind.username, credentials.username),
            .string(STUNAttribute.Kind.realm, realm), .string(STUNAttribute.Kind.nonce, nonce)
        ]
        return (
            request,
            STUNMessage.longTermKey(username: credentials.username, realm: realm, password: credentials.password)
        )
    }

    private enum AuthenticationOutcome { case success, retry, failure(TURNError) }

    /// What an answer to a ``signedRequest(_:attributes:)`` means: success (integrity checked when signed), try
    /// again (a 401 taught us realm and nonce, or a 438 a fresh nonce), or the server's refusal.
    private func authenticationOutcome(_ response: STUNMessage, key: [UInt8]?) -> AuthenticationOutcome {
        if response.messageClass == .successResponse {
            if let key, !response.verifyIntegrity(key: key) {
                return .failure(.badResponse("success response failed MESSAGE-INTEGRITY"))
            }
            return .success
        }
        let (code, reason) = ((try? response.errorCode()) ?? nil) ?? (0, "error response without ERROR-CODE")
        guard code == 401 && key == nil || code == 438 else { return .failure(.rejected(code: code, reason: reason)) }
        guard let r = response.string(STUNAttribute.Kind.realm), let n = response.string(STUNAttribute.Kind.nonce)
        else { return .failure(.badResponse("\(code) without REALM/NONCE")) }
        realm = r
        nonce = n
        return .retry
    }

    // MARK: Gathering without blocking (trickle ICE)

    /// What a step of non-blocking gathering found.
    public enum GatheringEvent: Equatable, Sendable {
        /// The Binding answer: our address as the server sees it (the srflx candidate's address).
        case mapped(TransportAddress)
        /// The Allocate succeeded: the relayed address (``relayedAddress``; ``mappedAddress`` is set too).
        case relayed(TransportAddress)
        /// The Binding (`allocate` false) or the Allocate (`allocate` true) failed: no answer, or refused.
        case failed(allocate: Bool, TURNError)
    }

    /// One outstanding request of non-blocking gathering, retransmitted by ``gatheringTimers(now:)``.
    private struct GatheringRequest {
        var id: [UInt8]
        var datagram: [UInt8]
        var key: [UInt8]?
        var allocate: Bool
        var attempts: Int
        var rto: MediaTime
        var due: MediaTime
        var deadline: MediaTime
    }
    private var gatheringRequests: [GatheringRequest] = []

    /// Whether a Binding or Allocate of ``startGathering(now:timeout:)`` is still unanswered.
    public var isGathering: Bool { !gatheringRequests.isEmpty }

    /// Starts what ``bindingAddress(timeout:)`` and ``allocate(timeout:)`` do, for a caller that must not block (the
    /// transport thread, gathering while host candidates already connect): returns the Binding and Allocate requests
    /// to send to ``server``. Give every datagram from the server to ``handleGatheringAnswer(_:now:)``
    /// and call ``gatheringTimers(now:)`` for the retransmissions (500 ms doubling, RFC 8489 §6.2.1),
    /// until ``isGathering`` is false; each ends with a ``GatheringEvent``.
    public func startGathering(now: MediaTime, timeout: MediaTime = .seconds(3)) -> [[UInt8]] {
        let deadline = now + timeout
        let binding = STUNMessage(method: .binding, messageClass: .request)
        let bytes = binding.serialize(fingerprint: true)
        gatheringRequests = [
            GatheringRequest(
                id: binding.transactionID, datagram: bytes, key: nil, allocate: false,
                attempts: 0, rto: .milliseconds(500), due: now + .milliseconds(500), deadline: deadline)
        ]
        return [bytes, allocateRequest(now: now, deadline: deadline, attempts: 0)]
    }

    private static let allocateAttributes: [STUNAttribute] = [
        .uint32(STUNAttribute.Kind.requestedTransport, 17 << 24),  // UDP (RFC 8656 §18.7)
        .uint32(STUNAttribute.Kind.lifetime, 600)
    ]

    private func allocateRequest(now: MediaTime, deadline: MediaTime, attempts: Int) -> [UInt8] {
        let (request, key) = signedRequest(.allocate, attributes: Self.allocateAttributes)
        let bytes = request.serialize(integrityKey: key, fingerprint: true)
        gatheringRequests.append(
            GatheringRequest(
                id: request.transactionID, datagram: bytes, key: key, allocate: true,
                attempts: attempts, rto: .milliseconds(500), due: now + .milliseconds(500),
                deadline: deadline))
        return bytes
    }

    /// Takes a datagram from the server: nil when it answers no gathering request (the caller goes on with it),
    /// else what to send now (an authenticated Allocate after the 401) and what was found.
    public func handleGatheringAnswer(_ datagram: [UInt8], now: MediaTime)
        -> (send: [[UInt8]], event: GatheringEvent?)?
    {
        guard !gatheringRequests.isEmpty, let m = try? STUNMessage(parsing: datagram),
            m.messageClass == .successResponse || m.messageClass == .errorResponse,
            let index = gatheringRequests.firstIndex(where: { $0.id == m.transactionID })
        else { return nil }
        let request = gatheringRequests.remove(at: index)
        guard request.allocate else {
            guard m.messageClass == .successResponse else {
                let (code, reason) = ((try? m.errorCode()) ?? nil) ?? (0, "error response without ERROR-CODE")
                return ([], .failed(allocate: false, .rejected(code: code, reason: reason)))
            }
            guard let mapped = (try? m.xorAddress()) ?? nil else {
                return ([], .failed(allocate: false, .badResponse("Binding success without XOR-MAPPED-ADDRESS")))
            }
            return ([], .mapped(mapped))
        }
        switch authenticationOutcome(m, key: request.key) {
        case .retry where request.attempts < 2:
            return ([allocateRequest(now: now, deadline: request.deadline, attempts: request.attempts + 1)], nil)
        case .retry:
            return ([], .failed(allocate: true, .rejected(code: 401, reason: "still unauthorized after a fresh nonce")))
        case .failure(let error):
            return ([], .failed(allocate: true, error))
        case .success:
            do {
                return ([], .relayed(try acceptAllocation(m)))
            } catch {
                return ([], .failed(allocate: true, error))
            }
        }
    }

    /// Retransmissions that are due, and the requests that ran out of time (``TURNError/timedOut``).
    public func gatheringTimers(now: MediaTime) -> (send: [[UInt8]], events: [GatheringEvent]) {
        var send: [[UInt8]] = [], events: [GatheringEvent] = []
        gatheringRequests.removeAll { r in
            guard now >= r.deadline else { return false }
            events.append(.failed(allocate: r.allocate, .timedOut))
            return true
        }
        for i in gatheringRequests.indices where now >= gatheringRequests[i].due {
            send.append(gatheringRequests[i].datagram)
            gatheringRequests[i].rto += gatheringRequests[i].rto
            gatheringRequests[i].due = now + gatheringRequests[i].rto
        }
        return (send, events)
    }

    /// Takes an Allocate success: the relayed and mapped addresses and the lifetime.
    private func acceptAllocation(_ response: STUNMessage) throws(TURNError) -> TransportAddress {
        do {
            guard let relayed = try response.xorAddress(STUNAttribute.Kind.xorRelayedAddress) else {
                throw TURNError.badResponse("Allocate success without XOR-RELAYED-ADDRESS")
            }
            relayedAddress = relayed
            mappedAddress = try response.xorAddress()
            lifetime = try response.uint32(STUNAttribute.Kind.lifetime) ?? 0
            return relayed
        } catch let error as TURNError {
            throw error
        } catch {
            throw .badResponse("\(error)")
        }
    }

    /// CreatePermission requests for `peers` signed with the nonce we hold, for a caller that must not block
    /// (answers go to ``handleRefreshAnswer(_:resend:)``; the peers are renewed with the other permissions).
    public func permissionRequests(for peers: [TransportAddress]) -> [[UInt8]] {
        guard relayedAddress != nil, realm != nil, nonce != nil else { return [] }
        return peers.map { peer in
            if !permittedPeers.contains(peer) { permittedPeers.append(peer) }
            let (request, key) = signedRequest(
                .createPermission,
                attributes: [
                    .address(STUNAttribute.Kind.xorPeerAddress, peer, transactionID: nil)
                ])
            refreshTransactions.insert(request.transactionID)
            return request.serialize(integrityKey: key, fingerprint: true)
        }
    }

    /// Sends and retransmits (500 ms, doubling) until the response with `id` arrives or `timeout` passes.
    private func transact(_ datagram: [UInt8], id: [UInt8], timeout: Duration) throws(TURNError) -> STUNMessage {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 8)
        defer { buffer.deallocate() }
        let end = ContinuousClock.now + timeout
        var rto: Int32 = 500
        while ContinuousClock.now < end {
            socket.send(datagram, to: server)
            let resend = ContinuousClock.now + .milliseconds(Int(rto))
            while ContinuousClock.now < min(resend, end) {
                guard let (n, from) = socket.receive(into: buffer, timeoutMilliseconds: 50), from == server,
                    let m = try? STUNMessage(parsing: Array(buffer[0..<n])), m.transactionID == id
                else { continue }
                return m
            }
            rto *= 2
        }
        throw .timedOut
    }
}
