import VoiceCore

/// An ICE-lite agent (RFC 8445 §2.5, §7.3): it gathers host candidates only, never sends checks, and answers the
/// full agent's Binding requests; the full agent (every browser) is controlling and nominates. The pair the
/// browser nominates (USE-CANDIDATE) becomes where media goes, and each authenticated check renews consent
/// (RFC 7675: a browser sends one every ~5 s; 30 s without one means the peer has gone and media must stop).
///
/// Why ICE-lite for the engine as answerer: see ARCHITECTURE.md §5.10 (libnice is the full agent for
/// calls that must cross NATs).
///
/// Not thread-safe: the transport's receive thread owns it.
public final class ICELiteAgent {
    public private(set) var local: ICECredentials
    public private(set) var remote: ICECredentials
    /// Where media goes: the address of the nominated pair (or of the first valid check until one is nominated).
    public private(set) var selectedAddress: TransportAddress?
    public private(set) var nominated = false
    /// Last authenticated check: consent runs until this + ``consentLifetime``.
    public private(set) var lastConsent: MediaTime?
    /// RFC 7675 §5.1: consent expires 30 s after the last authenticated response (here: request).
    public var consentLifetime = MediaTime.seconds(30)
    /// Requests that failed authentication or were malformed (counted, answered with 400/401 or dropped).
    public private(set) var rejectedChecks = 0

    public init(local: ICECredentials, remote: ICECredentials) {
        self.local = local
        self.remote = remote
    }

    /// An ICE restart (RFC 8445 §9): new credentials on both sides (from the new offer/answer); checks with the
    /// old ones are refused, and consent and nomination start over.
    public func restart(local: ICECredentials, remote: ICECredentials) {
        self.local = local
        self.remote = remote
        nominated = false
        selectedAddress = nil
        lastConsent = nil
    }

    /// Whether media may be sent now (a pair is selected and consent is fresh).
    public func hasConsent(now: MediaTime) -> Bool {
        guard selectedAddress != nil, let lastConsent else { return false }
        return now - lastConsent < consentLifetime
    }

    /// Handles a STUN datagram from `source`: returns the response to send back to `source` (nil for what is
    /// not a request to us: responses, indications, or a message that failed to parse).
    public func handle(_ datagram: [UInt8], from source: TransportAddress, now: MediaTime) -> [UInt8]? {
        guard let request = try? STUNMessage(parsing: datagram), request.method == .binding,
            request.messageClass == .request
        else {
            rejectedChecks += 1
            return nil
        }
        let key = STUNMessage.shortTermKey(password: local.password)
        // RFC 8489 §9.1.3: no USERNAME or MESSAGE-INTEGRITY → 400; wrong USERNAME or HMAC → 401.
        guard let username = request.string(STUNAttribute.Kind.username), request.integrityOffset != nil else {
            rejectedChecks += 1
            return errorResponse(to: request, code: 400, reason: "Bad Request")
        }
        // USERNAME is "<our ufrag>:<their ufrag>" (RFC 8445 §7.2.2): both halves must be this session's.
        guard username == "\(local.ufrag):\(remote.ufrag)", request.verifyIntegrity(key: key)
        else {
            rejectedChecks += 1
            return errorResponse(to: request, code: 401, reason: "Unauthorized")
        }
        // A lite agent is always controlled; a peer claiming controlled too is told to switch (487, §7.3.1.1).
        if request.has(STUNAttribute.Kind.iceControlled) {
            return errorResponse(to: request, code: 487, reason: "Role Conflict", key: key)
        }
        lastConsent = now
        if request.has(STUNAttribute.Kind.useCandidate) {
            selectedAddress = source
            nominated = true
        } else if selectedAddress == nil {
            selectedAddress = source
        }
        let response = STUNMessage(
            method: .binding, messageClass: .successResponse, transactionID: request.transactionID,
            attributes: [.address(STUNAttribute.Kind.xorMappedAddress, source, transactionID: request.transactionID)])
        return response.serialize(integrityKey: key, fingerprint: true)
    }

    private func errorResponse(to request: STUNMessage, code: Int, reason: String, key: [UInt8]? = nil) -> [UInt8] {
        STUNMessage(
            method: .binding, messageClass: .errorResponse, transactionID: request.transactionID,
            attributes: [.errorCode(code, reason: reason)]
        )
        .serialize(integrityKey: key, fingerprint: true)
    }

    /// A Binding request as a full controlling agent sends it to us (for tests and for an engine-to-engine call
    /// where the other engine is the controlling side).
    public static func check(
        from controlling: ICECredentials, to controlled: ICECredentials, priority: UInt32,
        nominate: Bool, tieBreaker: UInt64 = .random(in: 0...UInt64.max)
    ) -> STUNMessage {
        var attributes: [STUNAttribute] = [
            .string(STUNAttribute.Kind.username, "\(controlled.ufrag):\(controlling.ufrag)"),
            .uint32(STUNAttribute.Kind.priority, priority),
            .uint64(STUNAttribute.Kind.iceControlling, tieBreaker)
        ]
        if nominate { attributes.append(.flag(STUNAttribute.Kind.useCandidate)) }
        return STUNMessage(method: .binding, messageClass: .request, attributes: attributes)
    }
}
