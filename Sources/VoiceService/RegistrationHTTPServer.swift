import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// The registration service on HTTP/1.1 (NIO's HTTP codec) in TLS (HTTPS), or in clear text when asked for by
/// name: each request is read whole (at most 32 KiB, a call's statistics report), answered by
/// ``RegistrationService/handle(method:path:authorization:body:)`` and the connection closed. `GET /metrics`
/// (Prometheus text format) and `GET /health` (the database reached or not) are answered on every listener; a
/// ``Endpoints/monitoringOnly`` listener answers nothing else, so it can be plain HTTP for a scraper on the host
/// without grants ever crossing it. Every answer is counted in the service's ``ServiceMetrics``.
public final class RegistrationHTTPServer: Sendable {
    /// How clients reach the service: its answers carry SIP passwords, so HTTPS unless a test network is meant.
    public enum Security: Sendable {
        /// HTTPS with this certificate chain and private key (PEM files), TLS 1.2 or later.
        case tls(certificateChainFile: String, privateKeyFile: String)
        /// Plain HTTP: every grant's password crosses the network in clear text.
        case insecurePlainHTTP
    }

    /// What a listener answers.
    public enum Endpoints: Sendable {
        /// The registration API, `/metrics` and `/health`.
        case all
        /// `/metrics` and `/health` only.
        case monitoringOnly
    }

    public let channel: any Channel

    private init(channel: any Channel) { self.channel = channel }

    /// Listens on `address` (port 0: any free port).
    /// - Throws: a certificate or key that cannot be loaded (before anything listens), or the bind's error.
    public static func start(
        _ service: RegistrationService, on group: any EventLoopGroup, address: SocketAddress, security: Security,
        endpoints: Endpoints = .all
    ) async throws -> RegistrationHTTPServer {
        let tls: NIOSSLContext?
        switch security {
        case .tls(let chainFile, let keyFile):
            var configuration = TLSConfiguration.makeServerConfiguration(
                certificateChain: try NIOSSLCertificate.fromPEMFile(chainFile).map { .certificate($0) },
                privateKey: .privateKey(try NIOSSLPrivateKey(file: keyFile, format: .pem)))
            configuration.minimumTLSVersion = .tlsv12
            tls = try NIOSSLContext(configuration: configuration)
        case .insecurePlainHTTP:
            tls = nil
        }
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if let tls { try pipeline.addHandler(NIOSSLServerHandler(context: tls)) }
                    try pipeline.configureHTTPServerPipeline(withErrorHandling: true)
                    try pipeline.addHandler(RegistrationHTTPHandler(service: service, endpoints: endpoints))
                }
            }
            .bind(to: address).get()
        return RegistrationHTTPServer(channel: channel)
    }

    public var port: Int? { channel.localAddress?.port }

    public func close() async throws { try await channel.close() }
}

private final class RegistrationHTTPHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart
    static let maximumBody = 32_768
    private let service: RegistrationService
    private let endpoints: RegistrationHTTPServer.Endpoints
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var tooLarge = false

    init(service: RegistrationService, endpoints: RegistrationHTTPServer.Endpoints) {
        self.service = service
        self.endpoints = endpoints
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let requestHead):
            head = requestHead
            body = []
            tooLarge = false
        case .body(var chunk):
            if body.count + chunk.readableBytes > Self.maximumBody {
                tooLarge = true
            } else {
                body += chunk.readBytes(length: chunk.readableBytes) ?? []
            }
        case .end:
            guard let head else { return }
            let method = head.method.rawValue, path = head.uri, body = self.body, tooLarge = self.tooLarge
            let authorization = head.headers.first(name: "Authorization")
            let loop = context.eventLoop
            let boxed = NIOLoopBound(context, eventLoop: loop)
            let endpoints = self.endpoints, service = self.service
            Task {
                let started = ContinuousClock.now
                var contentType = "application/json"
                let (status, json): (Int, Data)
                switch (method, path) {
                case ("GET", "/metrics"):
                    (status, json) = (200, Data(service.metrics.exposition().utf8))
                    contentType = "text/plain; version=0.0.4; charset=utf-8"
                case ("GET", "/health"):
                    (status, json) = await service.health()
                case _ where endpoints == .monitoringOnly:
                    (status, json) = (404, Data(#"{"malformedRequest":{"_0":"only /metrics and /health here"}}"#.utf8))
                case _ where tooLarge:
                    (status, json) = (
                        413, Data("{\"malformedRequest\":{\"_0\":\"body larger than \(Self.maximumBody) bytes\"}}".utf8)
                    )
                default:
                    (status, json) = await service.handle(
                        method: method, path: path, authorization: authorization, body: body)
                }
                service.metrics.request(path: path, status: status, duration: ContinuousClock.now - started)
                let answeredType = contentType
                loop.execute { self.respond(boxed.value, status: status, body: json, contentType: answeredType) }
            }
        }
    }

    private func respond(_ context: ChannelHandlerContext, status: Int, body: Data, contentType: String) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: contentType)
        headers.add(name: "Content-Length", value: "\(body.count)")
        headers.add(name: "Connection", value: "close")
        let head = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: status), headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }
}
