import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import VoiceSIP

/// The client side of the registration service, JSON over HTTP/1.1 (`Connection: close`) in TLS (HTTPS, the
/// certificate checked as the configuration's ``VoiceClientConfiguration/Transport`` says) or, when asked for by
/// name, in clear text: `POST
/// /v1/registrations` with a ``RegistrationRequest``, answered with a ``RegistrationGrant`` (200) or a
/// ``RegistrationRefusal`` (403/409/400); `POST /v1/push-data` with the device's own credentials (Basic), answered
/// with the push data of a user's devices; `POST /v1/devices` (same credentials) replacing or removing this
/// device's push data.
public struct RegistrationServiceConnection: Sendable {
    public var host: String
    public var port: Int
    /// HTTPS with its trust roots and server name, or plain HTTP.
    public var transport: VoiceClientConfiguration.Transport
    /// How long to wait for the whole exchange.
    public var timeout: TimeAmount

    public init(
        host: String, port: Int, transport: VoiceClientConfiguration.Transport, timeout: TimeAmount = .seconds(10)
    ) {
        self.host = host
        self.port = port
        self.transport = transport
        self.timeout = timeout
    }

    /// Sends `request` and returns the grant.
    /// - Throws: ``VoiceClientError/registrationRefused(_:)`` with the service's typed refusal,
    ///   ``VoiceClientError/tlsRefused(_:)`` (nothing was sent), or
    ///   ``VoiceClientError/registrationServiceUnavailable(_:)``.
    public func register(_ request: RegistrationRequest) async throws(VoiceClientError)
        -> RegistrationGrant
    {
        try await post("/v1/registrations", request, authorization: nil)
    }

    /// The push data of each of `userID`'s devices (the app-sent push model), asked with this device's own
    /// credentials: empty when no device of the user attached any.
    public func pushData(
        of userID: String, applicationKey: String, as grant: RegistrationGrant
    )
        async throws(VoiceClientError) -> [DevicePushData]
    {
        let answer: PushDataAnswer = try await post(
            "/v1/push-data", PushDataQuery(applicationKey: applicationKey, userID: userID),
            authorization: Data("\(grant.username):\(grant.password)".utf8).base64EncodedString())
        return answer.devices
    }

    /// Replaces or removes this device's push data, with this device's own credentials.
    public func updatePushData(_ update: PushDataUpdate, as grant: RegistrationGrant)
        async throws(VoiceClientError)
    {
        let _: PushDataUpdateAnswer = try await post(
            "/v1/devices", update,
            authorization: Data("\(grant.username):\(grant.password)".utf8).base64EncodedString())
    }

    func post<Request: Encodable, Answer: Decodable>(
        _ path: String, _ request: Request, authorization: String?
    ) async throws(VoiceClientError) -> Answer {
        let body: Data
        do { body = try JSONEncoder().encode(request) } catch {
            throw .registrationServiceUnavailable("cannot encode the request: \(error)")
        }
        var head = "POST \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nContent-Type: application/json\r\n"
        if let authorization { head += "Authorization: Basic \(authorization)\r\n" }
        head += "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        let reply: [UInt8]
        do {
            reply = try await exchange(Array(head.utf8) + Array(body))
        } catch let error as VoiceClientError {
            throw error
        } catch {
            throw .registrationServiceUnavailable("\(host):\(port): \(error)")
        }
        guard let (status, payload) = HTTPReply.parse(reply) else {
            throw .registrationServiceUnavailable("unreadable answer from \(host):\(port)")
        }
        let decoder = JSONDecoder()
        if status == 200, let answer = try? decoder.decode(Answer.self, from: Data(payload)) { return answer }
        if let refusal = try? decoder.decode(RegistrationRefusal.self, from: Data(payload)) {
            throw .registrationRefused(refusal)
        }
        throw .registrationServiceUnavailable("HTTP \(status) from \(host):\(port)")
    }

    /// Writes `bytes` on a new TCP connection (in TLS unless the transport is the insecure one) and returns
    /// everything read until the server closes it. With TLS, NIOSSL holds the bytes until the handshake has checked
    /// the certificate: a refused one fails with ``VoiceClientError/tlsRefused(_:)`` and nothing was written.
    /// It runs on NIO's process-wide event loops, not the client's: a request still under way when the client
    /// terminates (an upload, a push request) must not use a loop that is shutting down, which NIO traps on.
    private func exchange(_ bytes: [UInt8]) async throws -> [UInt8] {
        let eventLoop = MultiThreadedEventLoopGroup.singleton.next()
        let tls: NIOSSLContext?
        let serverName: String?
        switch transport {
        case .tls(let trustRoots, let name):
            do { tls = try Self.context(trusting: trustRoots) } catch {
                throw VoiceClientError.tlsRefused(
                    TLSRefusal(kind: .badTrustRoot, server: .registrationService, detail: "\(error)"))
            }
            let expected = name ?? host
            serverName = expected.isIPAddress ? nil : expected
        case .insecurePlaintextUDPAndHTTP:
            (tls, serverName) = (nil, nil)
        }
        let collected = eventLoop.makePromise(of: [UInt8].self)
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: eventLoop)
                .connectTimeout(timeout)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        if let tls {
                            try channel.pipeline.syncOperations.addHandler(
                                try NIOSSLClientHandler(context: tls, serverHostname: serverName))
                        }
                        try channel.pipeline.syncOperations.addHandler(
                            CollectingHandler(promise: collected, secured: tls != nil))
                    }
                }
                .connect(host: host, port: port).get()
        } catch {
            // Every promise is completed: NIO traps on one that is dropped pending.
            collected.fail(error)
            throw error
        }
        let timer = eventLoop.scheduleTask(in: timeout) {
            collected.fail(VoiceClientError.network("no complete answer within \(timeout.nanoseconds / 1_000_000) ms"))
            channel.close(promise: nil)
        }
        defer { timer.cancel() }
        do {
            try await channel.writeAndFlush(ByteBuffer(bytes: bytes)).get()
        } catch {
            // A refused handshake fails the write too; the collector's error says why.
            _ = try await collected.futureResult.get()
            throw error
        }
        return try await collected.futureResult.get()
    }

    private static func context(trusting trustRoots: VoiceClientConfiguration.Transport.TrustRoots) throws
        -> NIOSSLContext
    {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        configuration.certificateVerification = .fullVerification
        switch trustRoots {
        case .system: configuration.trustRoots = .default
        case .pemFile(let path):
            guard try !NIOSSLCertificate.fromPEMFile(path).isEmpty else {
                throw SIPError(.tls, "\(path): no certificate")
            }
            configuration.trustRoots = .file(path)
        case .pem(let text):
            configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(text.utf8)))
        }
        return try NIOSSLContext(configuration: configuration)
    }
}

/// Collects a connection's bytes; completes when the peer closes it.
private final class CollectingHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    private let promise: EventLoopPromise<[UInt8]>
    /// Behind a TLS handler: an error before the answer is a refused handshake.
    private let secured: Bool
    private var bytes: [UInt8] = []
    init(promise: EventLoopPromise<[UInt8]>, secured: Bool) {
        self.promise = promise
        self.secured = secured
    }
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        bytes += buffer.readBytes(length: buffer.readableBytes) ?? []
    }
    func channelInactive(context: ChannelHandlerContext) { promise.succeed(bytes) }
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let handshake =
            secured && bytes.isEmpty
            && (error is NIOSSLError || error is NIOSSLExtraError || error is BoringSSLError)
        promise.fail(
            handshake ? VoiceClientError.tlsRefused(TLSRefusal(error, server: .registrationService)) : error)
        context.close(promise: nil)
    }
}

/// Status and body of an HTTP/1.1 response read to the end of the connection.
enum HTTPReply {
    static func parse(_ bytes: [UInt8]) -> (status: Int, body: [UInt8])? {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = (0..<max(0, bytes.count - 3)).first(where: { Array(bytes[$0..<$0 + 4]) == separator }) else {
            return nil
        }
        let head = String(decoding: bytes[..<end], as: UTF8.self)
        let statusLine = head.split(separator: "\r\n").first ?? ""
        let fields = statusLine.split(separator: " ")
        guard fields.count >= 2, fields[0].hasPrefix("HTTP/1."), let status = Int(fields[1]) else { return nil }
        return (status, Array(bytes[(end + 4)...]))
    }
}

extension String {
    /// An IPv4 or IPv6 literal: TLS checks it against the certificate's IP addresses, and sends no SNI.
    fileprivate var isIPAddress: Bool { (try? SocketAddress(ipAddress: self, port: 0)) != nil }
}
