import Foundation

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
    public static func restAPI(secret: String, user: String, validFor seconds: Int = 3_600,
                               now: Date = Date()) -> TURNCredentials {
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
/// channel's ChannelData is what media would use).
public final class TURNClient {
    public let socket: DatagramSocket
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
        self.socket = socket
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
        let response = try authenticatedRequest(.allocate, attributes: [
            .uint32(STUNAttribute.Kind.requestedTransport, 17 << 24),  // UDP (RFC 8656 §18.7)
            .uint32(STUNAttribute.Kind.lifetime, 600),
        ], timeout: timeout)
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

    /// Installs a permission for `peer`'s address (RFC 8656 §9): the relay forwards only from permitted peers.
    public func createPermission(for peer: TransportAddress, timeout: Duration = .seconds(3)) throws(TURNError) {
        _ = try authenticatedRequest(.createPermission, attributes: [
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
            .string(STUNAttribute.Kind.realm, realm), .string(STUNAttribute.Kind.nonce, nonce),
        ]
        var requests = [STUNMessage(method: .refresh, messageClass: .request,
                                    attributes: [.uint32(STUNAttribute.Kind.lifetime, 600)] + signed)]
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
        let m = channelBind(channel, to: peer, signed: [
            .string(STUNAttribute.Kind.username, credentials.username),
            .string(STUNAttribute.Kind.realm, realm), .string(STUNAttribute.Kind.nonce, nonce),
        ])
        return m.serialize(integrityKey: key, fingerprint: true)
    }

    private func channelBind(_ channel: UInt16, to peer: TransportAddress, signed: [STUNAttribute]) -> STUNMessage {
        var m = STUNMessage(method: .channelBind, messageClass: .request)
        m.attributes = [.uint32(STUNAttribute.Kind.channelNumber, UInt32(channel) << 16),
                        .address(STUNAttribute.Kind.xorPeerAddress, peer, transactionID: m.transactionID)] + signed
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
    public func bindChannel(_ channel: UInt16, to peer: TransportAddress, timeout: Duration = .seconds(3)) throws(TURNError) {
        precondition(TURNChannelData.channelRange.contains(channel), "ChannelData channels are 0x4000…0x4FFF")
        _ = try authenticatedRequest(.channelBind, attributes: [
            .uint32(STUNAttribute.Kind.channelNumber, UInt32(channel) << 16),
            .address(STUNAttribute.Kind.xorPeerAddress, peer, transactionID: nil),
        ], timeout: timeout)
    }

    /// Sends `data` to `peer` through the relay (a Send indication, §11).
    public func send(_ data: [UInt8], to peer: TransportAddress) {
        var m = STUNMessage(method: .send, messageClass: .indication)
        m.attributes = [
            .address(STUNAttribute.Kind.xorPeerAddress, peer, transactionID: m.transactionID),
            STUNAttribute(type: STUNAttribute.Kind.data, value: data),
        ]
        socket.send(m.serialize(fingerprint: true), to: server)
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
                  let m = try? STUNMessage(parsing: Array(buffer[0..<n])), m.method == .data, m.messageClass == .indication,
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
            var request = STUNMessage(method: method, messageClass: .request)
            // Address attributes are XORed with this request's own transaction ID.
            request.attributes = attributes.map { a in
                if a.type == STUNAttribute.Kind.xorPeerAddress, let plain = try? a.decodeAddress(xorWith: nil) {
                    return .address(a.type, plain, transactionID: request.transactionID)
                }
                return a
            }
            var key: [UInt8]?
            if let realm, let nonce {
                request.attributes += [
                    .string(STUNAttribute.Kind.username, credentials.username),
                    .string(STUNAttribute.Kind.realm, realm), .string(STUNAttribute.Kind.nonce, nonce),
                ]
                key = STUNMessage.longTermKey(username: credentials.username, realm: realm, password: credentials.password)
            }
            let response = try transact(request.serialize(integrityKey: key, fingerprint: true),
                                        id: request.transactionID, timeout: timeout)
            if response.messageClass == .successResponse {
                if let key, !response.verifyIntegrity(key: key) {
                    throw .badResponse("success response failed MESSAGE-INTEGRITY")
                }
                return response
            }
            let (code, reason) = ((try? response.errorCode()) ?? nil) ?? (0, "error response without ERROR-CODE")
            let hadCredentials = key != nil
            if code == 401 && !hadCredentials || code == 438 {
                guard let r = response.string(STUNAttribute.Kind.realm), let n = response.string(STUNAttribute.Kind.nonce)
                else { throw .badResponse("\(code) without REALM/NONCE") }
                realm = r
                nonce = n
                continue
            }
            throw .rejected(code: code, reason: reason)
        }
        throw .rejected(code: 401, reason: "still unauthorized after a fresh nonce")
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
