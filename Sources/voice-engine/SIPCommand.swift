import ArgumentParser
import Dispatch
import Foundation
import NIOCore
import NIOPosix
import VoiceSIP

#if canImport(Glibc)
import Glibc
#endif

/// `voice-engine sip …`: try VoiceSIP against a server by hand. Exit status by failure class: 0 a 2xx final
/// response; 1 any other final response (its status is printed); 64 bad arguments; 68 a host that does not
/// resolve; 69 no answer (Timer B/F) or the transport failed; 77 the server refused our credentials. The
/// subcommands are in `SIP<Name>Command.swift`; this file holds what they share.
struct SIPCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sip",
        abstract: "SIP signalling by hand: register, send a MESSAGE, ping with OPTIONS, place or answer a call.",
        discussion: """
            Exit status: 0 a 2xx final response; 1 any other final response (its status is printed); 64 bad \
            arguments; 68 a host that does not resolve; 69 no answer (Timer B/F) or the transport failed; 77 the \
            server refused the credentials.
            """,
        subcommands: [Register.self, Message.self, Options.self, Call.self, Listen.self])

    /// What every SIP subcommand takes: where to send, how, as whom, and whether to print the SIP trace.
    struct Connection: ParsableArguments {
        @Option(help: "Server (registrar, proxy or UA) as host:port; by default the target URI's host and port (5060).")
        var server: String?
        @Option(help: "udp, tcp or tls (TLS: client only, the server's certificate checked against --ca-file).")
        var transport: String = "udp"
        @Option(
            help:
                "With --transport tls: PEM file of the certificate authorities the server's certificate must chain to (default: the system's store)."
        )
        var caFile: String?
        @Option(help: "Username for digest authentication (RFC 8760: MD5 or SHA-256, as the server asks).")
        var user: String?
        @Option(help: "Password for digest authentication.")
        var password: String?
        @Option(
            help: "Local address to bind as host:port (port 0: any); by default the address that routes to the server.")
        var bind: String?
        @Option(help: "RFC 3261 T1 in milliseconds; transactions give up after 64·T1.")
        var t1: Int = 500
        @Flag(help: "Print every SIP message sent and received on stderr.")
        var trace = false

        func validate() throws {
            try OptionRange("--t1", 1...60_000, "ms").check(t1)
        }

        func transportKind() throws -> SIPTransportKind {
            guard let kind = SIPTransportKind(rawValue: transport.uppercased()) else {
                throw CommandFailure.usage("--transport \(transport): use udp, tcp or tls")
            }
            return kind
        }

        /// The TLS settings of `--transport tls`: the trust root only. The commands take no certificate of their
        /// own, so over TLS they listen on nothing and are reached over the connection they open (a registered
        /// `sip listen` too, as a client behind a NAT is). A `--ca-file` that cannot be read or holds no
        /// certificate is refused here, naming the file and why, before any traffic.
        func tlsConfiguration() throws -> SIPTLSConfiguration? {
            guard try transportKind() == .tls else {
                if let caFile { throw CommandFailure.usage("--ca-file \(caFile): only for --transport tls") }
                return nil
            }
            guard let caFile else { return SIPTLSConfiguration(trustRoots: .system) }
            guard access(caFile, R_OK) == 0 else {
                throw CommandFailure.usage("--ca-file \(caFile): \(String(cString: strerror(errno)))")
            }
            let configuration = SIPTLSConfiguration(trustRoots: .pemFile(caFile))
            do {
                try configuration.check()
            } catch let error as SIPError {
                throw CommandFailure.usage("--ca-file \(caFile): \(error.reason)")
            }
            return configuration
        }

        func credentials() throws -> (any SIPCredentialsDelegate)? {
            switch (user, password) {
            case (let user?, let password?): return SIPStaticCredentials(username: user, password: password)
            case (nil, nil): return nil
            default: throw CommandFailure.usage("--user and --password go together")
            }
        }

        func serverAddress(default uri: SIPURI) throws -> SocketAddress {
            let text = server ?? (uri.host + ":" + String(uri.port ?? 5060))
            return try socketAddress(text, option: "--server")
        }

        /// Starts an endpoint, runs `body` with it and the sender, closes it; SIP failures become exit statuses.
        func run(
            server: SocketAddress,
            _ body: @escaping @Sendable (SIPEndpoint, SIPRequestSender) async throws -> SIPMessage?
        ) throws {
            let kind = try transportKind()
            let credentials = try credentials()
            let traced = trace
            let timers = SIPTimerConfiguration(
                t1: .milliseconds(t1), t2: .milliseconds(max(4000, t1 * 8)), t4: .milliseconds(max(5000, t1 * 10)))
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            defer { try? group.syncShutdownGracefully() }
            let loop = group.next()
            let local = try bind.map { try socketAddress($0, option: "--bind") } ?? routedAddress(to: server, on: loop)
            let tls = try tlsConfiguration()
            let response = try runBlocking { () -> SIPMessage? in
                let endpoint = try await SIPEndpoint.start(
                    on: loop, udp: kind == .udp ? local : nil, tcp: kind == .tcp ? local : nil,
                    configuration: SIPEndpointConfiguration(timers: timers, tls: tls))
                if traced { endpoint.onTrace { FileHandle.standardError.write(Data(($0 + "\n").utf8)) } }
                return try await closingAfterwards(endpoint) {
                    try await body(endpoint, SIPRequestSender(endpoint: endpoint, credentials: credentials))
                }
            }
            guard let response, let code = response.statusCode else { return }
            print("\(code) \(response.reasonPhrase ?? "")")
            switch code {
            case 200...299: return
            case 401 where credentials != nil, 407 where credentials != nil:
                throw CommandFailure.noPermission("\(code) \(response.reasonPhrase ?? ""): credentials refused")
            case 503 where response.reasonPhrase == "Transport Error":
                throw CommandFailure.unavailable("transport failed")
            default:
                throw CommandFailure.runtime("\(code) \(response.reasonPhrase ?? "")")
            }
        }
    }
}

/// Runs `body`, then closes `endpoint` whatever happened (before its event loop shuts down); a SIP timeout,
/// transport or TLS failure becomes "no answer" (exit 69).
func closingAfterwards<Result: Sendable>(
    _ endpoint: SIPEndpoint, _ body: () async throws -> Result
) async throws -> Result {
    do {
        let result = try await body()
        try? await endpoint.close()
        return result
    } catch let error as SIPError where error.kind == .timeout || error.kind == .transport || error.kind == .tls {
        try? await endpoint.close()
        throw CommandFailure.unavailable("no answer: \(error.reason)")
    } catch {
        try? await endpoint.close()
        throw error
    }
}

func parseURI(_ text: String, option: String) throws -> SIPURI {
    do { return try SIPURI(parsing: text) } catch { throw CommandFailure.usage("\(option) '\(text)': \(error)") }
}

func socketAddress(_ text: String, option: String) throws -> SocketAddress {
    guard let (bracketed, port) = PeerAddress.split(text), (0...65535).contains(port) else {
        throw CommandFailure.usage("\(option) '\(text)': expected host:port")
    }
    let host =
        bracketed.hasPrefix("[") && bracketed.hasSuffix("]") ? String(bracketed.dropFirst().dropLast()) : bracketed
    do { return try SocketAddress.makeAddressResolvingHost(host, port: port) } catch {
        throw CommandFailure.noHost("\(option) '\(text)': cannot resolve \(host)")
    }
}

/// The local address the system routes to `server` from (a connected UDP socket's own address), with port 0, so
/// that Via and Contact name an address the server can answer.
func routedAddress(to server: SocketAddress, on loop: any EventLoop) throws -> SocketAddress {
    let probe = try DatagramBootstrap(group: loop).connect(to: server).wait()
    defer { try? probe.close().wait() }
    guard let ip = probe.localAddress?.ipAddress else { throw CommandFailure.runtime("no route to \(server)") }
    return try SocketAddress(ipAddress: ip, port: 0)
}

/// A new out-of-dialog request with From (fresh tag), To, Call-ID, CSeq 1 and the `X-` headers given.
func makeRequest(_ method: SIPMethod, to target: SIPURI, from: SIPURI, extraHeaders: [String]) throws -> SIPMessage {
    var headers = SIPHeaders()
    headers.add(
        "From",
        SIPAddress(uri: from, parameters: [SIPParameter("tag", String(UInt32.random(in: 1...UInt32.max), radix: 36))])
            .description)
    headers.add("To", SIPAddress(uri: target).description)
    headers.add("Call-ID", "\(UUID().uuidString.lowercased())@voice-engine")
    headers.add("CSeq", SIPCSeq(1, method).description)
    for header in extraHeaders {
        guard let colon = header.firstIndex(of: ":"), header.lowercased().hasPrefix("x-") else {
            throw CommandFailure.usage("--header '\(header)': expected 'X-Name: value'")
        }
        headers.add(
            String(header[..<colon]), header[header.index(after: colon)...].trimmingCharacters(in: .whitespaces))
    }
    return .request(method, target, headers: headers)
}
