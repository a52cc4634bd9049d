import Foundation
import NIOCore
import NIOPosix
import Testing
import VoiceSIP
import VoiceTestSupport

/// TLS between two engines on loopback (RFC 3261 §26.2): framing and connection reuse as over TCP, the server's
/// certificate checked against a configurable trust root and the name the peer is known by.
@Suite(
    "SIP over TLS", .tags(.live), .scheduledByTags, .serialized, .timeLimit(.minutes(1)),
    .enabled(if: TestCertificates.isAvailable, "openssl is not installed: no test certificates"))
struct SIPTLSTests {
    @Test("TLS requests reuse one connection both ways, large messages span records", arguments: ["IPv4", "IPv6"])
    func tlsConnectionReuse(family: String) async throws {
        let pki = try TestCertificates()
        defer { pki.remove() }
        try await withEventLoop { loop in
            let host = loopback(family)
            let configuration = SIPEndpointConfiguration(tls: pki.trustingConfiguration)
            let server = try await SIPEndpoint.startClosedWithLoop(
                on: loop, tls: try SocketAddress(ipAddress: host, port: 0), configuration: configuration)
            let client = try await SIPEndpoint.startClosedWithLoop(
                on: loop, tls: try SocketAddress(ipAddress: host, port: 0), configuration: configuration)
            let answering = AnsweringServer(server)
            let clientSide = AnsweringServer(client)
            let serverAddress = try #require(await server.localAddress(.tls))
            let uriHost = family == "IPv6" ? "[::1]" : host
            let uri = SIPURI(scheme: .sips, user: "bob", host: uriHost, port: serverAddress.port)
            // The third body is larger than a TLS record (16 KiB): the framer joins the records into one message.
            let bodies = ["hello 1", "hello 2", String(repeating: "x", count: 40_000)]
            for (index, body) in bodies.enumerated() {
                let response = try await client.request(
                    makeOutgoing(.message, to: uri, callID: "tls-\(family)-\(index)", body: body),
                    to: SIPPeer(.tls, serverAddress)
                ).get()
                #expect(response.statusCode == 200)
            }
            #expect(answering.seen.map { String(decoding: $0.message.body, as: UTF8.self) } == bodies)
            #expect(answering.seen.first?.message.topVia?.transport == "TLS")
            #expect(await client.statistics().connectionsOpened == 1)
            #expect(await server.statistics().connectionsAccepted == 1)
            // The server reaches the client over the connection the client opened.
            let back = try #require(answering.seen.first?.peer)
            #expect(back.transport == .tls)
            let reverse = try await server.request(
                makeOutgoing(.options, to: SIPURI(user: "alice", host: uriHost), callID: "back-\(family)"), to: back
            ).get()
            #expect(reverse.statusCode == 200)
            #expect(clientSide.seen.count == 1)
            #expect(await server.statistics().connectionsOpened == 0)
            // CRLF keepalives travel inside TLS and are answered with pongs.
            client.sendKeepalive(to: SIPPeer(.tls, serverAddress))
            var pongs = 0
            for _ in 0..<100 where pongs == 0 {
                try await Task.sleep(for: .milliseconds(10))
                pongs = await client.statistics().keepalivePongsReceived
            }
            #expect(pongs == 1)
            try await client.close()
            try await server.close()
        }
    }

    /// RFC 5922 §7.2: a server known by a name must carry it. The server here has a certificate for
    /// `voiceengine.test` only (no IP address in it).
    @Test func serverNameIsCheckedAgainstTheCertificate() async throws {
        let pki = try TestCertificates()
        defer { pki.remove() }
        try await withEventLoop { loop in
            let named = SIPTLSConfiguration(
                certificateChainFile: pki.namedOnlyCertificateFile, privateKeyFile: pki.serverKeyFile)
            let server = try await SIPEndpoint.startClosedWithLoop(
                on: loop, tls: try SocketAddress(ipAddress: "127.0.0.1", port: 0),
                configuration: SIPEndpointConfiguration(tls: named))
            let answering = AnsweringServer(server)
            let address = try #require(await server.localAddress(.tls))
            let trusting = SIPEndpointConfiguration(tls: SIPTLSConfiguration(trustRoots: .pemFile(pki.caFile)))
            // Known by the name the certificate carries: accepted (SNI sent, checked against the DNS SAN).
            let client = try await SIPEndpoint.startClosedWithLoop(on: loop, configuration: trusting)
            let accepted = try await client.request(
                makeOutgoing(.options, to: SIPURI(scheme: .sips, host: "voiceengine.test"), callID: "named"),
                to: SIPPeer(.tls, address, serverName: "voiceengine.test")
            ).get()
            #expect(accepted.statusCode == 200)
            try await client.close()
            // Known by another name, or by its address only: refused with a typed error, before any request.
            for (serverName, callID) in [("elsewhere.test", "misnamed"), (nil, "address-only")] as [(String?, String)] {
                let other = try await SIPEndpoint.startClosedWithLoop(on: loop, configuration: trusting)
                let error = await #expect(throws: SIPError.self) {
                    _ = try await other.request(
                        makeOutgoing(
                            .options, to: SIPURI(scheme: .sips, host: serverName ?? "127.0.0.1"), callID: callID),
                        to: SIPPeer(.tls, address, serverName: serverName)
                    ).get()
                }
                #expect(error?.kind == .tls)
                #expect(error?.reason.contains("failedToValidateHostname") == true, "\(String(describing: error))")
                try await other.close()
            }
            #expect(answering.seen.count == 1)
            try await server.close()
        }
    }

    @Test func untrustedCertificateIsATypedErrorNotA503() async throws {
        let pki = try TestCertificates()
        defer { pki.remove() }
        try await withEventLoop { loop in
            let server = try await SIPEndpoint.startClosedWithLoop(
                on: loop, tls: try SocketAddress(ipAddress: "127.0.0.1", port: 0),
                configuration: SIPEndpointConfiguration(tls: pki.trustingConfiguration))
            let answering = AnsweringServer(server)
            let address = try #require(await server.localAddress(.tls))
            let client = try await SIPEndpoint.startClosedWithLoop(
                on: loop, configuration: SIPEndpointConfiguration(tls: pki.distrustingConfiguration))
            let error = await #expect(throws: SIPError.self) {
                _ = try await client.request(
                    makeOutgoing(.options, to: SIPURI(scheme: .sips, host: "127.0.0.1"), callID: "untrusted"),
                    to: SIPPeer(.tls, address)
                ).get()
            }
            #expect(error?.kind == .tls)
            #expect(error?.reason.contains("CERTIFICATE_VERIFY_FAILED") == true, "\(String(describing: error))")
            #expect(answering.seen.isEmpty)
            // Nothing is left to reuse: a second try fails the same way, over a new connection.
            await #expect(throws: SIPError.self) {
                _ = try await client.request(
                    makeOutgoing(.options, to: SIPURI(scheme: .sips, host: "127.0.0.1"), callID: "untrusted-2"),
                    to: SIPPeer(.tls, address)
                ).get()
            }
            #expect(await client.statistics().connectionsOpened == 2)
            #expect(await client.connectionCount() == 0)
            // Without any TLS configuration there is no TLS at all.
            let bare = try await SIPEndpoint.startClosedWithLoop(on: loop)
            let unconfigured = await #expect(throws: SIPError.self) {
                _ = try await bare.request(
                    makeOutgoing(.options, to: SIPURI(scheme: .sips, host: "127.0.0.1"), callID: "bare"),
                    to: SIPPeer(.tls, address)
                ).get()
            }
            #expect(unconfigured?.kind == .tls)
            try await bare.close()
            try await client.close()
            try await server.close()
        }
    }

    /// A server that accepts the TCP connection but never answers the handshake (a crashed TLS worker behind a live
    /// listener) fails the request with a typed `.tls` error at the handshake deadline, and leaves nothing pending
    /// to reuse: the next request opens a new connection instead of waiting behind the dead one for good.
    @Test func aHandshakeThatNeverCompletesFailsAtItsDeadline() async throws {
        let pki = try TestCertificates()
        defer { pki.remove() }
        try await withEventLoop { loop in
            // Accepts and holds connections, says nothing.
            let silent = try await ServerBootstrap(group: loop)
                .childChannelInitializer { $0.eventLoop.makeSucceededVoidFuture() }
                .bind(host: "127.0.0.1", port: 0).get()
            let address = try #require(silent.localAddress)
            let client = try await SIPEndpoint.startClosedWithLoop(
                on: loop,
                configuration: SIPEndpointConfiguration(
                    tls: pki.trustingConfiguration, tlsHandshakeTimeout: .milliseconds(300)))
            for attempt in 1...2 {
                let started = ContinuousClock.now
                let error = await #expect(throws: SIPError.self) {
                    _ = try await client.request(
                        makeOutgoing(
                            .options, to: SIPURI(scheme: .sips, host: "127.0.0.1"), callID: "silent-\(attempt)"),
                        to: SIPPeer(.tls, address)
                    ).get()
                }
                let waited = ContinuousClock.now - started
                #expect(error?.kind == .tls)
                #expect(error?.tlsFailure == .handshakeFailed)
                #expect(error?.reason.contains("did not complete") == true, "\(String(describing: error))")
                #expect(waited < .seconds(5), "failed after \(waited), not at the 0.3 s handshake deadline")
            }
            #expect(await client.statistics().connectionsOpened == 2)
            #expect(await client.connectionCount() == 0)
            try await client.close()
            try await silent.close()
        }
    }

    /// A TLS client without listener or certificate names its connection's address and port in its Via (as over TCP,
    /// `SIPTransportTests.viaOfAClientWithoutListenerNamesItsConnection`).
    @Test func viaOfAClientWithoutListenerNamesItsConnection() async throws {
        let pki = try TestCertificates()
        defer { pki.remove() }
        try await withEventLoop { loop in
            let server = try await SIPEndpoint.startClosedWithLoop(
                on: loop, tls: try SocketAddress(ipAddress: "127.0.0.1", port: 0),
                configuration: SIPEndpointConfiguration(tls: pki.trustingConfiguration))
            let answering = AnsweringServer(server)
            let address = try #require(await server.localAddress(.tls))
            let client = try await SIPEndpoint.startClosedWithLoop(
                on: loop,
                configuration: SIPEndpointConfiguration(tls: SIPTLSConfiguration(trustRoots: .pemFile(pki.caFile))))
            let response = try await client.request(
                makeOutgoing(
                    .options, to: SIPURI(scheme: .sips, host: "127.0.0.1", port: address.port), callID: "via-tls"),
                to: SIPPeer(.tls, address)
            ).get()
            #expect(response.statusCode == 200)
            let seen = try #require(answering.seen.first)
            let via = try #require(seen.message.topVia)
            #expect(
                via.transport == "TLS" && via.host == "127.0.0.1" && via.port == seen.peer.address.port,
                "\(via) over \(seen.peer)")
            try await client.close()
            try await server.close()
        }
    }

    @Test func sipsURIAndTransportParameterSelectTLS() throws {
        let sips = try SIPPeer.resolving(try SIPURI(parsing: "sips:bob@127.0.0.1"), transport: .udp)
        #expect(sips.transport == .tls && sips.address.port == 5061 && sips.serverName == nil)
        let parameter = try SIPPeer.resolving(try SIPURI(parsing: "sip:bob@[::1]:5070;transport=tls"), transport: .udp)
        #expect(parameter.transport == .tls && parameter.address.port == 5070)
        let named = try SIPPeer.resolving(try SIPURI(parsing: "sips:bob@localhost:5071"), transport: .udp)
        #expect(named.serverName == "localhost")
    }

    @Test func listenerWithoutCertificateIsRefused() async throws {
        try await withEventLoop { loop in
            let error = await #expect(throws: SIPError.self) {
                _ = try await SIPEndpoint.startClosedWithLoop(
                    on: loop, tls: try SocketAddress(ipAddress: "127.0.0.1", port: 0),
                    configuration: SIPEndpointConfiguration(tls: SIPTLSConfiguration()))
            }
            #expect(error?.kind == .tls)
        }
    }
}
