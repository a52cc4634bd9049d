import VoiceSIP

/// Every error the calling client reports, each with the reason a person can act on.
public enum VoiceClientError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The user ID breaks the SDKs' rule (``UserID``); nothing was sent.
    case invalidUserID(String, reason: String)
    /// The registration service refused the signed request.
    case registrationRefused(RegistrationRefusal)
    /// The registration service could not be reached or answered something unreadable.
    case registrationServiceUnavailable(String)
    /// The SIP registrar refused the registration (status and reason phrase).
    case sipRegistrationFailed(status: Int, reason: String)
    /// A network failure (transport, timeout).
    case network(String)
    /// The app's signing callback failed or gave up.
    case signingFailed(String)
    /// The call is not allowed in the client's state (not started, already stopped).
    case invalidState(String)
    /// A message's recipients, headers or size break the rules.
    case invalidMessage(String)
    /// Push data or a push payload breaks the rules.
    case invalidPushData(String)
    /// A call's target or custom headers break the rules; nothing was sent.
    case invalidCall(String)
    /// The SIP registration was lost after `start()` (a refresh was refused or not answered).
    case registrationLost(String)
    /// The state store could not read or write a record (``ClientStateError``, described).
    case stateStore(String)
    /// A TLS connection to the service was refused before anything was sent on it (which server, and why).
    case tlsRefused(TLSRefusal)
    /// The service's TURN server refused the call's relay allocation (its credentials, from the registration
    /// grant, are wrong or expired); nothing was sent to the callee.
    case turnRefused(TURNRefusal)

    public var description: String {
        switch self {
        case .invalidUserID(let id, let reason): "invalid user ID '\(id)': \(reason)"
        case .registrationRefused(let refusal): "registration refused: \(refusal)"
        case .registrationServiceUnavailable(let reason): "registration service unavailable: \(reason)"
        case .sipRegistrationFailed(let status, let reason): "SIP registration failed: \(status) \(reason)"
        case .network(let reason): "network: \(reason)"
        case .signingFailed(let reason): "signing failed: \(reason)"
        case .invalidState(let reason): "invalid state: \(reason)"
        case .invalidMessage(let reason): "invalid message: \(reason)"
        case .invalidPushData(let reason): "invalid push data: \(reason)"
        case .invalidCall(let reason): "invalid call: \(reason)"
        case .registrationLost(let reason): "registration lost: \(reason)"
        case .stateStore(let reason): "\(reason)"
        case .tlsRefused(let refusal): "TLS refused: \(refusal)"
        case .turnRefused(let refusal): "\(refusal)"
        }
    }
}

extension VoiceClientError {
    /// The client's form of a user ID the wire rule refused.
    package init(_ error: UserIDError) { self = .invalidUserID(error.id, reason: error.reason) }
}

/// Why the client refused (or could not make) a TLS connection to the service; nothing was sent in clear text.
public struct TLSRefusal: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: String, Equatable, Sendable {
        /// The certificate does not chain to the configured trust roots (or has expired).
        case untrustedCertificate
        /// The certificate is trusted but names neither the configured server name nor the service host.
        case nameMismatch
        /// The handshake failed otherwise: the server does not speak TLS, no common version, closed early.
        case handshakeFailed
        /// The configured trust root cannot be loaded (missing file, no PEM certificate in it).
        case badTrustRoot
    }

    /// Which of the service's servers: SIP or the registration service.
    public enum Server: String, Equatable, Sendable {
        case sip
        case registrationService
    }

    public var kind: Kind
    public var server: Server
    /// The TLS library's words (e.g. BoringSSL's CERTIFICATE_VERIFY_FAILED).
    public var detail: String

    public init(kind: Kind, server: Server, detail: String) {
        self.kind = kind
        self.server = server
        self.detail = detail
    }

    public var description: String { "\(server.rawValue): \(kind.rawValue) (\(detail))" }
}

extension TLSRefusal {
    /// The refusal behind a TLS error of VoiceSIP or NIOSSL talking to `server`.
    init(_ error: any Error, server: Server) {
        let failure = SIPTLSFailure(error)
        let kind: Kind =
            switch failure {
            case .untrustedCertificate: .untrustedCertificate
            case .nameMismatch: .nameMismatch
            case .handshakeFailed: .handshakeFailed
            case .badTrustRoot: .badTrustRoot
            }
        self.init(kind: kind, server: server, detail: (error as? SIPError)?.reason ?? "\(error)")
    }
}
