import NIOCore

/// What to register, where, for how long.
public struct SIPRegistrationConfiguration: Sendable {
    /// The address-of-record (To and From), e.g. `sip:alice@example.com`.
    public var addressOfRecord: SIPURI
    /// The registrar's URI (Request-URI): the AOR's domain unless set.
    public var registrar: SIPURI
    /// Where requests go: the registrar or an outbound proxy.
    public var server: SIPPeer
    /// Requested binding lifetime in seconds.
    public var expires: UInt32
    /// Route set put on every REGISTER (an outbound proxy with `;lr`).
    public var routeSet: [SIPURI]
    public var displayName: String?

    public init(
        addressOfRecord: SIPURI, server: SIPPeer, registrar: SIPURI? = nil, expires: UInt32 = 3600,
        routeSet: [SIPURI] = [], displayName: String? = nil
    ) {
        self.addressOfRecord = addressOfRecord
        self.registrar =
            registrar ?? SIPURI(scheme: addressOfRecord.scheme, host: addressOfRecord.host, port: addressOfRecord.port)
        self.server = server
        self.expires = expires
        self.routeSet = routeSet
        self.displayName = displayName
    }
}

/// The outcome of one REGISTER.
public struct SIPRegistrationResult: Equatable, Sendable {
    public var statusCode: Int
    public var reasonPhrase: String
    /// The lifetime the registrar granted our contact (0 after unregistering).
    public var grantedExpires: UInt32
    /// Every contact the registrar holds for the AOR (RFC 3261 §10.3 step 8).
    public var contacts: [SIPContact]
    /// The registrar's `Flow-Timer` (RFC 5626 §5.4): the seconds within which it wants a keepalive on our flow.
    public var flowTimer: UInt32? = nil

    public var succeeded: Bool { (200...299).contains(statusCode) }
}

/// REGISTER with expiry, refresh and unregister (RFC 3261 §10.2), digest authentication through
/// `SIPRequestSender`, 423 Interval Too Brief answered with Min-Expires.
public actor SIPRegistration {
    public let configuration: SIPRegistrationConfiguration
    private let sender: SIPRequestSender
    private let callID: String
    private let fromTag = SIPRandomToken.make()
    private var sequence: UInt32 = 0
    private var refreshTask: Task<Void, Never>?
    public private(set) var last: SIPRegistrationResult?
    /// The Contacts the registrar may hold for us: the last accepted one, and any a REGISTER carried whose answer
    /// never came (the registrar may have saved it). A REGISTER naming another Contact (a new connection, a new
    /// address) removes these, so that the registrar does not fork requests to a dead flow.
    private var possiblyRegistered: [SIPURI] = []
    /// Successful refreshes so far (the first REGISTER not counted).
    public private(set) var refreshCount = 0
    /// Told the outcome of every refresh: the registrar's answer, or the error when none came.
    private var refreshObserver: (@Sendable (Result<SIPRegistrationResult, any Error>) -> Void)?

    public init(configuration: SIPRegistrationConfiguration, sender: SIPRequestSender) {
        self.configuration = configuration
        self.sender = sender
        self.callID = "\(SIPRandomToken.make())@voiceengine"
    }

    /// Sends one REGISTER for `expires` seconds (the configured lifetime by default; 0 removes the binding).
    @discardableResult
    public func register(expires: UInt32? = nil) async throws -> SIPRegistrationResult {
        var requested = expires ?? configuration.expires
        for _ in 0..<2 {
            let response = try await sender.send(try await makeRegister(expires: requested), to: configuration.server)
            let code = response.statusCode ?? 0
            // An authenticated retry went out with the next CSeq; ours continue after it (§10.3 step 7).
            if let answered = response.cseq?.sequence { sequence = max(sequence, answered) }
            // 423: the registrar wants a longer lifetime (§10.2.8).
            if code == 423, let minimum = response.headers.first("Min-Expires").flatMap({ UInt32($0) }),
                minimum > requested
            {
                requested = minimum
                continue
            }
            let contact = try await contactURI()
            let contacts = response.contacts
            let granted: UInt32 =
                contacts.lazy.compactMap { value -> UInt32? in
                    guard case .address(let address) = value, address.uri.user == contact.user,
                        address.uri.host == contact.host,
                        address.uri.port == contact.port
                    else { return nil }
                    return address.parameters[parameter: "expires"].flatMap { UInt32($0) }
                }.first ?? response.expires ?? requested
            if (200...299).contains(code) { possiblyRegistered = requested == 0 ? [] : [contact] }
            let result = SIPRegistrationResult(
                statusCode: code, reasonPhrase: response.reasonPhrase ?? "",
                grantedExpires: (200...299).contains(code) ? (requested == 0 ? 0 : granted) : 0, contacts: contacts,
                flowTimer: response.headers.first("Flow-Timer").flatMap { UInt32($0) })
            last = result
            // A binding through a NAT lives only as long as the NAT's mapping: keep it warm while registered.
            if result.succeeded {
                if requested == 0 {
                    sender.endpoint.stopKeepalive(configuration.server)
                } else {
                    sender.endpoint.keepAlive(configuration.server)
                }
            }
            return result
        }
        throw SIPError(.inconsistent, "registrar asked twice for a longer Expires")
    }

    /// Registers now and then again before each binding expires (at 90 % of the granted lifetime), until
    /// `unregister()` or `stopRefreshing()`. A failed refresh is retried after 30 s.
    public func startRefreshing() async throws -> SIPRegistrationResult {
        let first = try await register()
        guard first.succeeded else { return first }
        refreshTask?.cancel()
        refreshTask = Task { [weak self] in
            var delay = Self.refreshDelay(granted: first.grantedExpires)
            while !Task.isCancelled {
                try? await Task.sleep(for: delay)
                guard !Task.isCancelled, let self else { return }
                let outcome: Result<SIPRegistrationResult, any Error>
                do { outcome = .success(try await self.register()) } catch { outcome = .failure(error) }
                let result = try? outcome.get()
                await self.countRefresh(result, outcome)
                delay =
                    result.map { $0.succeeded ? Self.refreshDelay(granted: $0.grantedExpires) : .seconds(30) }
                    ?? .seconds(30)
            }
        }
        return first
    }

    public func stopRefreshing() {
        refreshTask?.cancel()
        refreshTask = nil
    }

    /// Stops refreshing and removes our binding (Expires: 0).
    @discardableResult
    public func unregister() async throws -> SIPRegistrationResult {
        stopRefreshing()
        return try await register(expires: 0)
    }

    /// Calls `observer` with the outcome of each refresh from now on (a client reports a lost registration).
    public func observeRefreshes(_ observer: @escaping @Sendable (Result<SIPRegistrationResult, any Error>) -> Void) {
        refreshObserver = observer
    }

    private func countRefresh(_ result: SIPRegistrationResult?, _ outcome: Result<SIPRegistrationResult, any Error>) {
        if result?.succeeded == true { refreshCount += 1 }
        refreshObserver?(outcome)
    }

    static func refreshDelay(granted: UInt32) -> Duration {
        .milliseconds(max(Int64(granted) * 900, 500))
    }

    private func contactURI() async throws -> SIPURI {
        let transport = configuration.server.transport
        guard let local = try await sender.endpoint.contactAddress(transport, toward: configuration.server) else {
            throw SIPError(.transport, "the endpoint has no \(transport.rawValue) listener for the Contact")
        }
        return SIPURI(
            user: configuration.addressOfRecord.user, host: hostText(local), port: local.port,
            parameters: transport == .udp ? [] : [SIPParameter("transport", transport.rawValue.lowercased())])
    }

    private func makeRegister(expires: UInt32) async throws -> SIPMessage {
        sequence += 1
        var headers = SIPHeaders()
        let aor = SIPAddress(displayName: configuration.displayName, uri: configuration.addressOfRecord)
        var from = aor
        from.tag = fromTag
        for route in configuration.routeSet { headers.add("Route", "<\(route)>") }
        headers.add("From", from.description)
        headers.add("To", aor.description)
        headers.add("Call-ID", callID)
        headers.add("CSeq", SIPCSeq(sequence, .register).description)
        let contact = try await contactURI()
        headers.add(
            "Contact", SIPAddress(uri: contact, parameters: [SIPParameter("expires", "\(expires)")]).description)
        if expires > 0 {
            for stale in possiblyRegistered where stale != contact {
                headers.add("Contact", SIPAddress(uri: stale, parameters: [SIPParameter("expires", "0")]).description)
            }
            if !possiblyRegistered.contains(contact) { possiblyRegistered.append(contact) }
        }
        headers.add("Expires", "\(expires)")
        return .request(.register, configuration.registrar, headers: headers)
    }
}
