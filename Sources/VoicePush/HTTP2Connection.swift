import Foundation
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL

/// One HTTP/2 connection over TLS (ALPN `h2`) to a push service, kept open for the requests that follow (APNs
/// asks providers to reuse their connections) and opened again after it closed. Each request is a stream of it.
public actor HTTP2Connection {
    public struct Response: Sendable {
        public var status: Int
        public var headers: [(name: String, value: String)]
        public var body: Data

        public func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }
    }

    /// The service could not be reached or did not answer (the reason says which); nothing was delivered.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    private typealias Multiplexer = NIOHTTP2Handler.AsyncStreamMultiplexer<Void>

    public let endpoint: PushEndpoint
    private let tls: NIOSSLContext
    private let group: any EventLoopGroup
    private var open: (channel: any Channel, multiplexer: Multiplexer)?

    /// - Parameter trustRootsFile: PEM file of the certificate authorities to trust instead of the system's.
    public init(endpoint: PushEndpoint, trustRootsFile: String?, group: any EventLoopGroup) throws {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        configuration.applicationProtocols = ["h2"]
        if let trustRootsFile { configuration.trustRoots = .file(trustRootsFile) }
        tls = try NIOSSLContext(configuration: configuration)
        self.endpoint = endpoint
        self.group = group
    }

    /// Sends one request on a stream of the connection and reads the whole answer, within `timeout`.
    public func request(
        method: HTTPMethod = .POST, path: String, headers: [(String, String)], body: Data,
        timeout: Duration = .seconds(10)
    ) async throws(Failure) -> Response {
        do {
            return try await withTimeout(timeout) { [self] in
                let multiplexer = try await connection()
                return try await Self.exchange(
                    on: multiplexer, authority: endpoint.authority, method: method, path: path, headers: headers,
                    body: body)
            }
        } catch let failure as Failure {
            drop()
            throw failure
        } catch {
            drop()
            throw Failure(description: "\(endpoint.authority): \(error)")
        }
    }

    /// Closes the connection; the next request opens a new one.
    public func close() async {
        if let channel = open?.channel { try? await channel.close() }
        open = nil
    }

    private func drop() {
        open?.channel.close(promise: nil)
        open = nil
    }

    private func connection() async throws -> Multiplexer {
        if let open, open.channel.isActive { return open.multiplexer }
        let tls = tls
        let hostname = endpoint.isIPAddress ? nil : endpoint.host
        let opened = try await ClientBootstrap(group: group)
            .connectTimeout(.seconds(5))
            .connect(host: endpoint.host, port: endpoint.port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.addHandler(NIOSSLClientHandler(context: tls, serverHostname: hostname))
                    let multiplexer = try pipeline.configureAsyncHTTP2Pipeline(mode: .client) { stream in
                        // Push services open no streams of their own: refuse any.
                        stream.close().map { () }
                    }
                    return (channel, multiplexer)
                }
            }
        open = opened
        return opened.1
    }

    private static func exchange(
        on multiplexer: Multiplexer, authority: String, method: HTTPMethod, path: String,
        headers: [(String, String)], body: Data
    ) async throws -> Response {
        let stream = try await multiplexer.openStream { stream in
            stream.eventLoop.makeCompletedFuture {
                try stream.pipeline.syncOperations.addHandler(HTTP2FramePayloadToHTTP1ClientCodec(httpProtocol: .https))
                return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(
                    wrappingChannelSynchronously: stream)
            }
        }
        return try await stream.executeThenClose { inbound, outbound in
            var head = HTTPRequestHead(version: .http2, method: method, uri: path)
            head.headers.add(name: "host", value: authority)
            for (name, value) in headers { head.headers.add(name: name, value: value) }
            head.headers.add(name: "content-length", value: "\(body.count)")
            try await outbound.write(.head(head))
            if !body.isEmpty { try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: body)))) }
            try await outbound.write(.end(nil))
            var response = Response(status: 0, headers: [], body: Data())
            for try await part in inbound {
                switch part {
                case .head(let head):
                    response.status = Int(head.status.code)
                    response.headers = head.headers.map { ($0.name, $0.value) }
                case .body(var chunk):
                    response.body.append(contentsOf: chunk.readBytes(length: chunk.readableBytes) ?? [])
                case .end:
                    return response
                }
            }
            throw Failure(description: "\(authority) closed the stream before its answer ended")
        }
    }
}

/// Where a push service listens: an `https://host[:port]` URL (push tokens and provider tokens never travel in
/// clear text, so no other scheme is taken).
public struct PushEndpoint: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int
    /// The path the URL named, without a trailing slash ("" for none).
    public var path: String

    public struct Invalid: Error, CustomStringConvertible {
        public let description: String
    }

    public init(_ url: String) throws(Invalid) {
        guard let components = URLComponents(string: url), let host = components.host, !host.isEmpty else {
            throw Invalid(description: "'\(url)' is not a URL with a host")
        }
        guard components.scheme?.lowercased() == "https" else {
            throw Invalid(description: "'\(url)' is not https: push services are reached over TLS only")
        }
        let port = components.port ?? 443
        guard (1...65_535).contains(port) else { throw Invalid(description: "'\(url)': port \(port) is out of range") }
        self.host = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        self.port = port
        var path = components.path
        while path.hasSuffix("/") { path.removeLast() }
        self.path = path
    }

    var isIPAddress: Bool { host.contains(":") || host.allSatisfy { $0.isNumber || $0 == "." } }

    /// The `:authority` of requests: the host, and the port when it is not 443.
    public var authority: String {
        let host = self.host.contains(":") ? "[\(self.host)]" : self.host
        return port == 443 ? host : "\(host):\(port)"
    }

    public var description: String { "https://\(authority)\(path)" }
}

/// Runs `body`, throwing ``HTTP2Connection/Failure`` when it has not finished within `timeout`.
func withTimeout<Result: Sendable>(
    _ timeout: Duration, _ body: @escaping @Sendable () async throws -> Result
) async throws -> Result {
    try await withThrowingTaskGroup(of: Result?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        defer { group.cancelAll() }
        guard let result = try await group.next(), let value = result else {
            throw HTTP2Connection.Failure(description: "no answer within \(timeout)")
        }
        return value
    }
}
