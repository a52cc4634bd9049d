import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// The registration service on HTTP/1.1 (NIO's HTTP codec): each request is read whole (at most 8 KiB), answered
/// by ``RegistrationService/handle(method:path:body:)``, and the connection closed.
public final class RegistrationHTTPServer: Sendable {
    public let channel: any Channel

    private init(channel: any Channel) { self.channel = channel }

    /// Listens on `address` (port 0: any free port).
    public static func start(_ service: RegistrationService, on group: any EventLoopGroup, address: SocketAddress)
        async throws -> RegistrationHTTPServer
    {
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline(withErrorHandling: true).flatMap {
                    channel.pipeline.addHandler(RegistrationHTTPHandler(service: service))
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
    static let maximumBody = 8192
    private let service: RegistrationService
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var tooLarge = false

    init(service: RegistrationService) { self.service = service }

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
            Task {
                let (status, json) =
                    tooLarge
                    ? (413, Data("{\"malformedRequest\":{\"_0\":\"body larger than \(Self.maximumBody) bytes\"}}".utf8))
                    : await self.service.handle(method: method, path: path, authorization: authorization, body: body)
                loop.execute { self.respond(boxed.value, status: status, json: json) }
            }
        }
    }

    private func respond(_ context: ChannelHandlerContext, status: Int, json: Data) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "Content-Length", value: "\(json.count)")
        headers.add(name: "Connection", value: "close")
        let head = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: status), headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: json)))), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }
}
