import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

/// A small HTTP + WebSocket server for trying the engine from a browser: `GET /` serves one page, `/ws` upgrades
/// to a WebSocket whose text messages go to `handler`; each reply it returns is sent back on the same socket, and
/// ``send(_:to:)`` pushes a message at any time (trickled candidates as they are gathered).
/// Signalling only — media never touches it.
public final class WebRTCSignallingServer: Sendable {
    public typealias Handler = @Sendable (_ message: String, _ connection: Int) async -> [String]

    enum Upgrade {
        case websocket(NIOAsyncChannel<WebSocketFrame, WebSocketFrame>)
        case http(NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>)
    }

    private let channel: NIOAsyncChannel<EventLoopFuture<Upgrade>, Never>
    private let serveTask: Task<Void, Never>
    private let sockets = OpenSockets()
    /// The bound address (port 0 picks one).
    public let port: Int

    /// Binds and starts serving. `page` is the HTML served at `/`.
    public init(host: String = "127.0.0.1", port: Int = 0, page: String, handler: @escaping Handler) async throws {
        let channel: NIOAsyncChannel<EventLoopFuture<Upgrade>, Never> = try await ServerBootstrap(
            group: MultiThreadedEventLoopGroup.singleton
        )
        .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
        .bind(host: host, port: port) { channel in
            channel.eventLoop.makeCompletedFuture {
                let upgrader = NIOTypedWebSocketServerUpgrader<Upgrade>(
                    shouldUpgrade: { channel, head in
                        channel.eventLoop.makeSucceededFuture(head.uri.hasPrefix("/ws") ? HTTPHeaders() : nil)
                    },
                    upgradePipelineHandler: { channel, _ in
                        channel.eventLoop.makeCompletedFuture {
                            Upgrade.websocket(try NIOAsyncChannel(wrappingChannelSynchronously: channel))
                        }
                    })
                let configuration = NIOTypedHTTPServerUpgradeConfiguration(
                    upgraders: [upgrader],
                    notUpgradingCompletionHandler: { channel in
                        channel.eventLoop.makeCompletedFuture {
                            Upgrade.http(try NIOAsyncChannel(wrappingChannelSynchronously: channel))
                        }
                    })
                return try channel.pipeline.syncOperations.configureUpgradableHTTPServerPipeline(
                    configuration: .init(upgradeConfiguration: configuration))
            }
        }
        self.channel = channel
        self.port = channel.channel.localAddress?.port ?? port
        let body = ByteBuffer(string: page)
        let sockets = sockets
        serveTask = Task {
            var connection = 0
            await withDiscardingTaskGroup { group in
                do {
                    try await channel.executeThenClose { inbound in
                        for try await upgrade in inbound {
                            connection += 1
                            let id = connection
                            group.addTask {
                                await Self.serve(upgrade, id: id, page: body, sockets: sockets, handler: handler)
                            }
                        }
                    }
                } catch {}
            }
        }
    }

    /// Sends a text message on connection `connection`'s WebSocket (the id the handler was given); false when that
    /// socket is closed or gone.
    @discardableResult
    public func send(_ message: String, to connection: Int) async -> Bool {
        guard let outbound = sockets.writer(connection) else { return false }
        do {
            try await outbound.write(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: message)))
            return true
        } catch {
            return false
        }
    }

    /// Stops accepting and closes the listening socket.
    public func close() async {
        try? await channel.channel.close()
        serveTask.cancel()
    }

    private static func serve(
        _ upgrade: EventLoopFuture<Upgrade>, id: Int, page: ByteBuffer, sockets: OpenSockets,
        handler: Handler
    ) async {
        do {
            switch try await upgrade.get() {
            case .http(let http):
                try await http.executeThenClose { inbound, outbound in
                    for try await part in inbound {
                        guard case .head(let head) = part else { continue }
                        let found = head.method == .GET && (head.uri == "/" || head.uri.hasPrefix("/?"))
                        var headers = HTTPHeaders()
                        headers.add(name: "Content-Type", value: "text/html; charset=utf-8")
                        headers.add(name: "Content-Length", value: found ? "\(page.readableBytes)" : "0")
                        headers.add(name: "Connection", value: "close")
                        try await outbound.write(
                            .head(
                                HTTPResponseHead(version: .http1_1, status: found ? .ok : .notFound, headers: headers)))
                        if found { try await outbound.write(.body(.byteBuffer(page))) }
                        try await outbound.write(.end(nil))
                        return
                    }
                }
            case .websocket(let ws):
                try await ws.executeThenClose { inbound, outbound in
                    sockets.open(id, outbound)
                    defer { sockets.close(id) }
                    var text = ""
                    for try await frame in inbound {
                        switch frame.opcode {
                        case .text, .continuation:
                            var data = frame.unmaskedData
                            text += data.readString(length: data.readableBytes) ?? ""
                            guard frame.fin else { continue }
                            let message = text
                            text = ""
                            for reply in await handler(message, id) {
                                try await outbound.write(
                                    WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: reply)))
                            }
                        case .ping:
                            try await outbound.write(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData))
                        case .connectionClose:
                            try await outbound.write(
                                WebSocketFrame(fin: true, opcode: .connectionClose, data: ByteBuffer()))
                            return
                        default:
                            continue
                        }
                    }
                }
            }
        } catch {
            // One connection's failure (the browser went away) does not stop the server.
        }
    }
}

/// The open WebSockets' writers by connection id, for ``WebRTCSignallingServer/send(_:to:)``.
private final class OpenSockets: @unchecked Sendable {
    typealias Writer = NIOAsyncChannelOutboundWriter<WebSocketFrame>
    private let lock = NSLock()
    private var writers: [Int: Writer] = [:]
    func open(_ id: Int, _ writer: Writer) { lock.withLock { writers[id] = writer } }
    func close(_ id: Int) { _ = lock.withLock { writers.removeValue(forKey: id) } }
    func writer(_ id: Int) -> Writer? { lock.withLock { writers[id] } }
}
