import NIOCore
import VoiceSDP

/// Who a `SIPUserAgent` is and where it sends calls.
public struct SIPUserAgentConfiguration: Sendable {
    /// Our address-of-record: the From of our INVITEs and the user part of our Contact.
    public var addressOfRecord: SIPURI
    public var displayName: String?
    /// Where INVITEs outside a dialog go (a proxy such as Kamailio); nil: the target URI's host and port.
    public var outboundProxy: SIPPeer?
    /// The transport of our Contact and of requests to targets without an outbound proxy.
    public var transport: SIPTransportKind
    /// How long to wait before retrying a re-INVITE refused with 491 (RFC 3261 §14.1): 2.1–4 s when we placed the
    /// call, 0–2 s otherwise. Tests may shorten both.
    public var glareBackoffAsCaller: ClosedRange<Double>
    public var glareBackoffAsCallee: ClosedRange<Double>

    public init(
        addressOfRecord: SIPURI, displayName: String? = nil, outboundProxy: SIPPeer? = nil,
        transport: SIPTransportKind = .udp,
        glareBackoffAsCaller: ClosedRange<Double> = 2.1...4.0, glareBackoffAsCallee: ClosedRange<Double> = 0.0...2.0
    ) {
        self.addressOfRecord = addressOfRecord
        self.displayName = displayName
        self.outboundProxy = outboundProxy
        self.transport = transport
        self.glareBackoffAsCaller = glareBackoffAsCaller
        self.glareBackoffAsCallee = glareBackoffAsCallee
    }
}

/// The user agent of a calling client: places calls (`call(_:offering:headers:)`), hands incoming ones out on
/// `incomingCalls`, and routes every request and stray response of a dialog to its `SIPCall`.
///
/// It takes over its endpoint's request and stray-response handlers. Outside dialogs it answers OPTIONS (200) and
/// refuses other methods (405); a request for a dialog it does not know gets 481. State lives on the endpoint's
/// event loop.
public final class SIPUserAgent: @unchecked Sendable {
    public let endpoint: SIPEndpoint
    public let sender: SIPRequestSender
    public let configuration: SIPUserAgentConfiguration
    /// Every new incoming call (an INVITE outside a dialog), to ring, answer or reject. Single consumer.
    public let incomingCalls: AsyncStream<SIPCall>
    private let incomingContinuation: AsyncStream<SIPCall>.Continuation
    /// Calls by Call-ID (one dialog per call: a forked INVITE's second 2xx is ACKed and hung up).
    private var calls: [String: SIPCall] = [:]
    /// Takes requests outside dialogs that are neither INVITE nor OPTIONS (e.g. MESSAGE); nil: 405.
    private var otherRequests: (@Sendable (SIPIncomingRequest) -> Void)?

    static let allow = "INVITE, ACK, CANCEL, BYE, OPTIONS, INFO"

    public init(
        endpoint: SIPEndpoint, credentials: (any SIPCredentialsDelegate)?, configuration: SIPUserAgentConfiguration
    ) {
        self.endpoint = endpoint
        self.sender = SIPRequestSender(endpoint: endpoint, credentials: credentials)
        self.configuration = configuration
        (incomingCalls, incomingContinuation) = AsyncStream.makeStream(of: SIPCall.self, bufferingPolicy: .unbounded)
        endpoint.onRequest { [self] request in received(request) }
        endpoint.onStrayResponse { [self] response in strayResponse(response) }
        // Calls end with their endpoint, on its loop, before its pending requests fail: nothing of theirs (a
        // retransmission, a held BYE, a response awaited in a task) reaches the loop once `close()` returned.
        endpoint.onClosing { [self] in
            for call in Array(calls.values) { call.endpointClosed() }
        }
    }

    /// Calls `target`: sends an INVITE with an SDP offer made from `capabilities` (and the custom `headers`, e.g.
    /// `X-Account: 42`), and returns the call at once; its `events` say how it goes.
    public func call(_ target: SIPURI, offering capabilities: AudioCapabilities, headers: [(String, String)] = [])
        async throws -> SIPCall
    {
        let peer = try configuration.outboundProxy ?? SIPPeer.resolving(target, transport: configuration.transport)
        let contact = try await contactURI()
        let offer = SessionDescription.makeOffer(capabilities)
        var fields = SIPHeaders()
        var from = SIPAddress(displayName: configuration.displayName, uri: configuration.addressOfRecord)
        from.tag = SIPRandomToken.make()
        let callID = "\(SIPRandomToken.make())\(SIPRandomToken.make())@voiceengine"
        fields.add("From", from.description)
        fields.add("To", SIPAddress(uri: target).description)
        fields.add("Call-ID", callID)
        fields.add("CSeq", SIPCSeq(1, .invite).description)
        fields.add("Contact", SIPAddress(uri: contact).description)
        fields.add("Allow", Self.allow)
        for (name, value) in headers { fields.add(name, value) }
        fields.add("Content-Type", "application/sdp")
        let invite = SIPMessage.request(.invite, target, headers: fields, body: Array(offer.serialize().utf8))
        let call = SIPCall(
            outgoing: invite, offer: offer, capabilities: capabilities, peer: peer, contact: contact, agent: self)
        try await endpoint.eventLoop.submit { self.calls[callID] = call }.get()
        call.startOutgoing()
        return call
    }

    /// Hands requests outside dialogs other than INVITE, OPTIONS and CANCEL (a client's MESSAGEs) to `handler`,
    /// which must respond to them, instead of refusing them with 405.
    public func onOtherRequest(_ handler: @escaping @Sendable (SIPIncomingRequest) -> Void) async throws {
        try await endpoint.eventLoop.submit { self.otherRequests = handler }.get()
    }

    /// Our Contact: the AOR's user at the listener's address for our transport.
    func contactURI() async throws -> SIPURI {
        let transport = configuration.transport
        guard let local = try await endpoint.contactAddress(transport, toward: configuration.outboundProxy) else {
            throw SIPError(.transport, "the endpoint has no \(transport.rawValue) listener for the Contact")
        }
        return SIPURI(
            user: configuration.addressOfRecord.user, host: hostText(local), port: local.port,
            parameters: transport == .udp ? [] : [SIPParameter("transport", transport.rawValue.lowercased())])
    }

    /// Forgets an ended call (on the event loop).
    func forget(_ call: SIPCall) {
        if calls[call.callID] === call { calls[call.callID] = nil }
    }

    // MARK: On the event loop

    private func received(_ request: SIPIncomingRequest) {
        let message = request.message
        guard let method = message.requestMethod, let callID = message.callID else { return }
        if let call = calls[callID] {
            call.received(request)
            return
        }
        guard request.transaction != nil else { return }  // an ACK for nothing we know: dropped (§17.2.3)
        switch method {
        case .invite where message.to?.tag == nil:
            Task { await self.newIncoming(request) }
        case .options where message.to?.tag == nil:
            var ok = SIPMessage.response(to: message, status: 200, toTag: SIPRandomToken.make())
            ok.headers.add("Allow", Self.allow)
            endpoint.respond(ok, to: request)
        case _ where message.to?.tag != nil, .cancel:
            endpoint.respond(.response(to: message, status: 481), to: request)
        default:
            if let otherRequests {
                otherRequests(request)
                return
            }
            var refused = SIPMessage.response(to: message, status: 405, toTag: SIPRandomToken.make())
            refused.headers.add("Allow", Self.allow)
            endpoint.respond(refused, to: request)
        }
    }

    private func newIncoming(_ request: SIPIncomingRequest) async {
        let message = request.message
        let contact: SIPURI
        do { contact = try await contactURI() } catch {
            endpoint.respond(.response(to: message, status: 500, toTag: SIPRandomToken.make()), to: request)
            return
        }
        // An offer we cannot read is refused now; one we cannot meet is the application's to refuse when answering.
        var offer: SessionDescription?
        if !message.body.isEmpty {
            guard
                message.contentType.map({ $0.type.lowercased() == "application" && $0.subtype.lowercased() == "sdp" })
                    == true,
                let parsed = try? SessionDescription(parsing: String(decoding: message.body, as: UTF8.self))
            else {
                let reason = message.contentType == nil ? "Not Acceptable Here" : "Not Acceptable Here (unreadable SDP)"
                endpoint.respond(
                    .response(to: message, status: 488, reasonPhrase: reason, toTag: SIPRandomToken.make()), to: request
                )
                return
            }
            offer = parsed
        }
        let call = SIPCall(incoming: request, offer: offer, contact: contact, agent: self)
        let fresh: Bool =
            (try? await endpoint.eventLoop.submit {
                guard self.calls[call.callID] == nil else { return false }
                self.calls[call.callID] = call
                return true
            }.get()) ?? false
        if fresh { incomingContinuation.yield(call) }
    }

    private func strayResponse(_ response: SIPMessage) {
        guard let callID = response.callID, let call = calls[callID] else { return }
        call.receivedStray(response)
    }
}

extension SIPPeer {
    /// The transport address of `uri` (an IP literal host; the `transport` parameter, else TLS for a `sips:` URI,
    /// else `transport`; port 5060, or 5061 over TLS, by default). Host names are resolved with the system resolver
    /// and kept as the `serverName` a TLS certificate must carry (RFC 5922).
    public static func resolving(_ uri: SIPURI, transport: SIPTransportKind) throws -> SIPPeer {
        let named = uri.parameters[parameter: "transport"].flatMap { SIPTransportKind(rawValue: $0.uppercased()) }
        let kind = named ?? (uri.scheme == .sips ? .tls : transport)
        let host = uri.host.hasPrefix("[") ? String(uri.host.dropFirst().dropLast()) : uri.host
        do {
            let address = try SocketAddress.makeAddressResolvingHost(
                host, port: uri.port ?? (kind == .tls ? 5061 : 5060))
            return SIPPeer(kind, address, serverName: host.isIPAddressLiteral ? nil : host)
        } catch {
            throw SIPError(.transport, "cannot resolve \(uri.host): \(error)")
        }
    }
}
