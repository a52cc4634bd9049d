import Foundation
import NIOCore
import NIOPosix
import Testing
import VoiceClient
import VoiceService
import VoiceTestSupport

/// The service's monitoring through the real processes: the registration service's `/metrics` (Prometheus) and
/// `/health` (the database reached), on its plain-HTTP monitoring listener, and Kamailio's own statistics
/// (xhttp_prom); the counters move with the requests a client makes. Ports 26310–26319.
@Suite(
    "Service metrics and health", .tags(.interop, .live), .scheduledByTags, .serialized, .timeLimit(.minutes(2)),
    .enabled(if: serviceUnavailableReason == nil, "\(serviceUnavailableReason ?? "")"))
struct ServiceMetricsTests {
    @Test func metricsAndHealthAnswerAndCountersMoveWithARegistration() async throws {
        try await withService(sipPort: 26310, prepare: { $0.kamailioMetricsPort = 26319 }) { service in
            let monitoring = try await RegistrationHTTPServer.start(
                service.registrationService, on: service.group,
                address: try SocketAddress(ipAddress: "127.0.0.1", port: 0), security: .insecurePlainHTTP,
                endpoints: .monitoringOnly)
            defer { Task { try? await monitoring.close() } }
            let port = try #require(monitoring.port)

            let health = try PlainHTTP.get(port: port, path: "/health")
            #expect(health.status == 200 && health.body.contains(#""database":"ok""#), "\(health)")
            let before = try PlainHTTP.get(port: port, path: "/metrics")
            #expect(before.status == 200 && before.contentType.hasPrefix("text/plain"), "\(before)")
            #expect(before.body.contains("voiceengine_registration_database_up 1.0"), "\(before.body)")
            #expect(!before.body.contains(#"endpoint="/v1/registrations""#))
            // The monitoring listener serves nothing else.
            #expect(try PlainHTTP.post(port: port, path: "/v1/registrations", body: "{}").status == 404)

            let alice = try service.client("alice")
            let log = EventLog(alice)
            await alice.start()
            #expect(await log.first { $0 == .started } != nil)
            // A forged registration over HTTPS: refused, and counted as such.
            let forged = SignedRegistration.sign(
                userID: "mallory", applicationKey: ServiceHarness.applicationKey, sequence: 1,
                applicationSecret: "not-the-secret")
            let connection = RegistrationServiceConnection(
                host: "127.0.0.1", port: service.registrationPort, transport: service.configuration().transport)
            await #expect(throws: VoiceClientError.registrationRefused(.forgedSignature)) {
                _ = try await connection.register(
                    RegistrationRequest(
                        applicationKey: ServiceHarness.applicationKey, userID: "mallory", signed: forged))
            }

            let after = try PlainHTTP.get(port: port, path: "/metrics").body
            #expect(
                after.contains(
                    #"voiceengine_registration_requests_total{endpoint="/v1/registrations",status="200"} 1"#),
                "\(after)")
            #expect(
                after.contains(
                    #"voiceengine_registration_request_duration_seconds_count{endpoint="/v1/registrations"} "#),
                "\(after)")
            #expect(
                after.contains(
                    #"voiceengine_registration_requests_total{endpoint="/v1/registrations",status="403"} 1"#),
                "\(after)")
            #expect(after.contains(#"endpoint="/health",status="200"} 1"#), "\(after)")

            // Kamailio's statistics: the REGISTER it accepted.
            let kamailio = try PlainHTTP.get(port: 26319, path: "/metrics")
            #expect(kamailio.status == 200, "\(kamailio)")
            let accepted = PlainHTTP.value(of: "kamailio_registrar_accepted_regs", in: kamailio.body)
            #expect((accepted ?? 0) >= 1, "accepted_regs \(accepted as Any):\n\(kamailio.body.prefix(3000))")
            #expect(try PlainHTTP.get(port: 26319, path: "/other").status == 404)
            await alice.terminate()
        }
    }

    @Test func healthSaysUnavailableWhenTheDatabaseIsUnreachable() async throws {
        // Nothing listens on port 1 of loopback.
        let store = RegistrationStore(
            DatabaseAddress(endpoint: .tcp(host: "127.0.0.1", port: 1), username: "nobody", database: "none"))
        let service = RegistrationService(
            store: store, issuer: EphemeralCredentialIssuer(sharedSecret: "secret", domain: "voiceengine.test"))
        let health = await service.health()
        #expect(health.status == 503)
        #expect(String(decoding: health.body, as: UTF8.self).contains("cannot reach the database"))
        #expect(service.metrics.exposition().contains("voiceengine_registration_database_up 0.0"))
        await store.close()
    }
}

/// HTTP/1.1 in clear text to loopback, read to the end of the answer's Content-Length: for the monitoring
/// endpoints, which carry nothing secret.
enum PlainHTTP {
    struct Answer: CustomStringConvertible {
        var status: Int
        var contentType: String
        var body: String
        var description: String { "HTTP \(status) (\(contentType)): \(body.prefix(2000))" }
    }

    static func get(port: Int, path: String) throws -> Answer {
        try exchange(port: port, "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    }

    static func post(port: Int, path: String, body: String) throws -> Answer {
        try exchange(
            port: port,
            "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
                + body)
    }

    /// The value of the first sample of `metric` (any labels), nil when there is none.
    static func value(of metric: String, in exposition: String) -> Double? {
        for line in exposition.split(separator: "\n") where line.hasPrefix(metric) && !line.hasPrefix("#") {
            let rest = line.dropFirst(metric.count)
            guard rest.first == " " || rest.first == "{" else { continue }
            return line.split(separator: " ").last.flatMap { Double($0) }
        }
        return nil
    }

    private static func exchange(port: Int, _ request: String) throws -> Answer {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw VoiceClientError.network("socket: \(errno)") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw VoiceClientError.network("connect to 127.0.0.1:\(port): errno \(errno)") }
        let bytes = Array(request.utf8)
        guard send(fd, bytes, bytes.count, 0) == bytes.count else { throw VoiceClientError.network("send") }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { break }
            received += buffer[0..<count]
            if let answer = complete(received) { return answer }
        }
        guard let answer = complete(received, atEnd: true) else {
            throw VoiceClientError.network("no complete HTTP answer from 127.0.0.1:\(port)")
        }
        return answer
    }

    /// The answer once its head and `Content-Length` bytes of body are in (at the connection's end, whatever came).
    private static func complete(_ bytes: [UInt8], atEnd: Bool = false) -> Answer? {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { return nil }
        let head = text[..<split.lowerBound].split(separator: "\r\n")
        guard let statusLine = head.first, let status = Int(statusLine.split(separator: " ").dropFirst().first ?? "")
        else { return nil }
        var length: Int?
        var contentType = ""
        for line in head.dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2 else { continue }
            if parts[0].lowercased() == "content-length" { length = Int(parts[1]) }
            if parts[0].lowercased() == "content-type" { contentType = parts[1] }
        }
        let body = Array(String(text[split.upperBound...]).utf8)
        if let length, body.count >= length {
            return Answer(
                status: status, contentType: contentType, body: String(decoding: body.prefix(length), as: UTF8.self))
        }
        return atEnd
            ? Answer(status: status, contentType: contentType, body: String(decoding: body, as: UTF8.self)) : nil
    }
}
