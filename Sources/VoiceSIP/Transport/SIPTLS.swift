import NIOCore
import NIOSSL
import NIOTLS

/// TLS settings of a `SIPEndpoint` (RFC 3261 §26.2, RFC 5922): whom we trust when we connect, and what we present
/// when we accept. Paths are PEM files.
public struct SIPTLSConfiguration: Sendable {
    /// The certificate authorities a server's certificate must chain to.
    public enum TrustRoots: Sendable, Equatable {
        /// The system's store (what a client uses against a public SIP service).
        case system
        /// The certificates in one PEM file (a private CA; tests make one with openssl).
        case pemFile(String)
        /// The certificates in PEM text (a private CA shipped inside an app).
        case pem(String)
    }

    public var trustRoots: TrustRoots
    /// When false the server's certificate is not checked at all: for trying a server by hand, never a default.
    public var verifiesServerCertificate: Bool
    /// Our certificate chain and key, PEM: required for a TLS listener, and presented as a client certificate when
    /// a server asks for one.
    public var certificateChainFile: String?
    public var privateKeyFile: String?

    public init(
        trustRoots: TrustRoots = .system, verifiesServerCertificate: Bool = true, certificateChainFile: String? = nil,
        privateKeyFile: String? = nil
    ) {
        self.trustRoots = trustRoots
        self.verifiesServerCertificate = verifiesServerCertificate
        self.certificateChainFile = certificateChainFile
        self.privateKeyFile = privateKeyFile
    }
}

extension SIPTLSConfiguration {
    /// Loads the files as an endpoint would and throws the `SIPError` (kind `.tls`) it would throw at start: for a
    /// command line to refuse a bad trust root or certificate before any traffic.
    public func check() throws {
        if case .pemFile(let path) = trustRoots {
            let certificates: [NIOSSLCertificate]
            do { certificates = try NIOSSLCertificate.fromPEMFile(path) } catch {
                throw SIPError(.tls, "not a PEM certificate file (\(error))", failure: .badTrustRoot)
            }
            guard !certificates.isEmpty else {
                throw SIPError(.tls, "no PEM certificate in it", failure: .badTrustRoot)
            }
        }
        if case .pem(let text) = trustRoots {
            guard (try? NIOSSLCertificate.fromPEMBytes(Array(text.utf8)))?.isEmpty == false else {
                throw SIPError(.tls, "the trust root holds no PEM certificate", failure: .badTrustRoot)
            }
        }
        _ = try SIPTLSContexts(self)
    }
}

/// The client and server contexts made once from a `SIPTLSConfiguration` (loading the PEM files and building the
/// trust store is the expensive part, so connections only make a handler from them).
struct SIPTLSContexts: Sendable {
    let client: NIOSSLContext
    let server: NIOSSLContext?

    init(_ configuration: SIPTLSConfiguration) throws {
        do {
            var identity: (chain: [NIOSSLCertificateSource], key: NIOSSLPrivateKeySource)?
            if let chainFile = configuration.certificateChainFile {
                guard let keyFile = configuration.privateKeyFile else {
                    throw SIPError(.tls, "a TLS certificate chain needs its private key file")
                }
                identity = (
                    try NIOSSLCertificate.fromPEMFile(chainFile).map { .certificate($0) },
                    .privateKey(try NIOSSLPrivateKey(file: keyFile, format: .pem))
                )
            }
            var client = TLSConfiguration.makeClientConfiguration()
            client.minimumTLSVersion = .tlsv12
            client.certificateVerification = configuration.verifiesServerCertificate ? .fullVerification : .none
            switch configuration.trustRoots {
            case .system: client.trustRoots = .default
            case .pemFile(let path): client.trustRoots = .file(path)
            case .pem(let text): client.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(text.utf8)))
            }
            if let identity {
                client.certificateChain = identity.chain
                client.privateKey = identity.key
            }
            self.client = try NIOSSLContext(configuration: client)
            if let identity {
                var server = TLSConfiguration.makeServerConfiguration(
                    certificateChain: identity.chain, privateKey: identity.key)
                server.minimumTLSVersion = .tlsv12
                self.server = try NIOSSLContext(configuration: server)
            } else {
                self.server = nil
            }
        } catch let error as SIPError {
            throw error
        } catch {
            throw SIPError(.tls, "cannot load the TLS configuration: \(error)", failure: .badTrustRoot)
        }
    }

    /// The handler of a connection we open to `peer`: SNI and name check against `peer.serverName` when it is a
    /// host name, else the certificate must name the IP address connected to (NIOSSL checks the IP SAN then).
    func clientHandler(for peer: SIPPeer) throws -> NIOSSLClientHandler {
        let name = peer.serverName.flatMap { $0.isIPAddressLiteral ? nil : $0 }
        return try NIOSSLClientHandler(context: client, serverHostname: name)
    }
}

/// Completes `handshake` when the TLS handshake of its channel has finished, or fails it with a `SIPError` of kind
/// `.tls` saying why (an untrusted or misnamed certificate above all), so that a request over a connection that
/// never became secure fails with that error rather than a bare "connection closed".
final class SIPTLSHandshakeHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    let handshake: EventLoopPromise<Void>
    private let peer: String

    init(handshake: EventLoopPromise<Void>, peer: String) {
        self.handshake = handshake
        self.peer = peer
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted = event {
            handshake.succeed(())
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        handshake.fail(
            SIPError(
                .tls, "TLS handshake with \(peer) failed: \(Self.describe(error))", failure: SIPTLSFailure(error)))
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        handshake.fail(
            SIPError(
                .tls, "TLS connection to \(peer) closed before the handshake completed", failure: .handshakeFailed))
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        handshake.fail(
            SIPError(
                .tls, "TLS connection to \(peer) closed before the handshake completed", failure: .handshakeFailed))
    }

    /// BoringSSL's error queue (e.g. CERTIFICATE_VERIFY_FAILED) or NIOSSL's hostname failure, in words.
    static func describe(_ error: any Error) -> String {
        if case NIOSSLError.handshakeFailed(let reason) = error { return "\(reason)" }
        return "\(error)"
    }
}

/// Why a TLS connection was refused, for code to switch on (the error's reason says it in words).
public enum SIPTLSFailure: String, Equatable, Sendable {
    /// The server's certificate does not chain to a trusted root (or has expired, or is not for a server).
    case untrustedCertificate
    /// The certificate is trusted but names neither the server name asked for nor the address connected to.
    case nameMismatch
    /// The handshake failed otherwise: the peer does not speak TLS, no common version or cipher, closed early.
    case handshakeFailed
    /// Our own trust root or certificate could not be loaded.
    case badTrustRoot

    /// Classifies an error from NIOSSL's handshake (BoringSSL's CERTIFICATE_VERIFY_FAILED, NIOSSL's host name
    /// check).
    public init(_ error: any Error) {
        if let extra = error as? NIOSSLExtraError, extra == .failedToValidateHostname {
            self = .nameMismatch
        } else if case NIOSSLError.handshakeFailed(let reason) = error,
            "\(reason)".contains("CERTIFICATE_VERIFY_FAILED")
        {
            self = .untrustedCertificate
        } else if let sip = error as? SIPError, let failure = sip.tlsFailure {
            self = failure
        } else {
            self = .handshakeFailed
        }
    }
}

extension String {
    /// An IPv4 or IPv6 literal (brackets allowed): verified against the certificate's IP SANs, never sent as SNI.
    var isIPAddressLiteral: Bool {
        let bare = hasPrefix("[") && hasSuffix("]") ? String(dropFirst().dropLast()) : self
        return (try? SocketAddress(ipAddress: bare, port: 0)) != nil
    }
}
