import Foundation

/// The push gateway of the managed-push tests, standing in for APNs/FCM: an HTTP/1.1 endpoint on loopback that
/// answers every POST 200 and keeps what it got (path with query, body). Plain POSIX sockets on a thread of its own.
final class PushGateway: @unchecked Sendable {
    struct Request: Sendable {
        var target: String
        var body: Data
    }

    let port: Int
    private let fd: Int32
    private let lock = NSLock()
    private var received: [Request] = []

    init(port: Int) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 8) == 0 else {
            Glibc.close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        self.fd = fd
        self.port = port
        Thread.detachNewThread { [self] in serve() }
    }

    var requests: [Request] { lock.withLock { received } }

    /// The `number`-th request (1-based), waiting up to `timeout` for it.
    func request(number: Int, timeout: Duration = .seconds(10)) async -> Request? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let all = requests
            if all.count >= number { return all[number - 1] }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }

    func close() {
        shutdown(fd, Int32(SHUT_RDWR))
        Glibc.close(fd)
    }

    private func serve() {
        while true {
            let client = accept(fd, nil, nil)
            guard client >= 0 else { return }
            if let request = Self.read(client) { lock.withLock { received.append(request) } }
            let reply = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            _ = reply.withCString { send(client, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
            Glibc.close(client)
        }
    }

    /// One request: the head up to the blank line, then Content-Length bytes of body.
    private static func read(_ client: Int32) -> Request? {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        while true {
            let n = recv(client, &buffer, buffer.count, 0)
            guard n > 0 else { return nil }
            data.append(contentsOf: buffer[0..<n])
            guard let end = data.range(of: Data("\r\n\r\n".utf8)) else { continue }
            let head = String(decoding: data[..<end.lowerBound], as: UTF8.self)
            let length =
                head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
            let body = data[end.upperBound...]
            guard body.count >= length else { continue }
            let target = head.split(separator: " ").dropFirst().first.map(String.init) ?? ""
            return Request(target: target, body: Data(body.prefix(length)))
        }
    }
}
