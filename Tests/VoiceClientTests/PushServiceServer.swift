import Crypto
import CryptoExtras
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import VoiceClient
import VoicePush
import VoiceTestSupport

/// APNs and FCM as a provider meets them, on loopback: an HTTP/2 server in TLS (the test PKI's certificate, ALPN
/// `h2`) that checks every request as the real services document it and answers with their error bodies.
///   - APNs: `POST /3/device/<hex token>`; `authorization: bearer <ES256 JWT>` (header `kid`, claims `iss`, `iat`
///     at most an hour old, signed by the team's key); `apns-push-type: voip`, `apns-topic: <bundle>.voip`,
///     `apns-priority: 10`, `apns-expiration` in the future; a JSON object of at most 5120 bytes. Refusals:
///     `{"reason": "…"}` (`BadDeviceToken` 400, `Unregistered` 410 with a timestamp, `PayloadTooLarge` 413, …).
///   - FCM: `POST /token` with the JWT bearer grant (RS256, `kid`, `iss` the client email, the messaging scope,
///     `aud` the token URI, at most an hour) answered with an access token; `POST /v1/projects/<project>/
///     messages:send` with that token, a data message (string values, at most 4096 bytes) of high priority.
///     Refusals: Google's error object (`UNAUTHENTICATED` 401, `INVALID_ARGUMENT` 400, `UNREGISTERED` 404).
/// Every request is kept with the server's verdict, so a test sees what crossed the wire and why it was refused.
final class PushServiceServer: Sendable {
    struct Request: Sendable {
        var path: String
        var headers: [String: String]
        var body: Data
        var status: Int
        /// Why the request was refused; nil when accepted.
        var refusal: String?

        /// The VoiceClient push payload the request carries: an APNs body, or FCM's data message's entry.
        var pushPayload: PushPayload? {
            if path.hasPrefix("/3/device/") { return try? PushPayload.parse(body) }
            let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any]
            let data = (object?["message"] as? [String: Any])?["data"] as? [String: String]
            return data?[FCMSender.payloadKey].flatMap { try? PushPayload.parse(Data($0.utf8)) }
        }
    }

    struct APNsAccount: Sendable {
        var teamID: String
        var keyID: String
        var key: P256.Signing.PublicKey
        var bundleID: String
    }

    struct FCMAccount: Sendable {
        var projectID: String
        var clientEmail: String
        var privateKeyID: String
        var key: _RSA.Signing.PublicKey
        /// The token URI the grant's `aud` must name.
        var tokenURI: String
    }

    private let state = NIOLockedValueBox(State())
    private struct State {
        var requests: [Request] = []
        var goneTokens: Set<String> = []
        var badTokens: Set<String> = []
        var accessTokens: Set<String> = []
    }

    let apns: APNsAccount?
    let fcm: FCMAccount?
    private let channel: NIOAsyncChannel<NIOHTTP2Handler.AsyncStreamMultiplexer<Stream>, Never>
    private let serving: Task<Void, Never>
    typealias Stream = NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>

    var port: Int { channel.channel.localAddress?.port ?? 0 }
    var url: String { "https://127.0.0.1:\(port)" }

    init(pki: TestPKI, apns: APNsAccount? = nil, fcm: FCMAccount? = nil, group: any EventLoopGroup) async throws {
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(pki.serverCertificateFile).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: pki.serverKeyFile, format: .pem)))
        configuration.applicationProtocols = ["h2"]
        let tls = try NIOSSLContext(configuration: configuration)
        channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: "127.0.0.1", port: 0) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls))
                    return try channel.pipeline.syncOperations.configureAsyncHTTP2Pipeline(mode: .server) { stream in
                        stream.eventLoop.makeCompletedFuture {
                            try stream.pipeline.syncOperations.addHandler(HTTP2FramePayloadToHTTP1ServerCodec())
                            return try Stream(wrappingChannelSynchronously: stream)
                        }
                    }
                }
            }
        self.apns = apns
        self.fcm = fcm
        let channel = channel
        let box = state
        serving = Task {
            try? await channel.executeThenClose { connections in
                try await withThrowingDiscardingTaskGroup { connectionsGroup in
                    for try await multiplexer in connections {
                        connectionsGroup.addTask {
                            try? await withThrowingDiscardingTaskGroup { streams in
                                for try await stream in multiplexer.inbound {
                                    streams.addTask {
                                        try? await Self.serve(stream, apns: apns, fcm: fcm, state: box)
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    var requests: [Request] { state.withLockedValue { $0.requests } }

    /// APNs answers `Unregistered` (410) and FCM `UNREGISTERED` (404) for this token from now on.
    func unregister(_ token: String) { state.withLockedValue { _ = $0.goneTokens.insert(token) } }
    /// APNs answers `BadDeviceToken` (400) for this token.
    func markBad(_ token: String) { state.withLockedValue { _ = $0.badTokens.insert(token) } }

    func close() async {
        try? await channel.channel.close()
        serving.cancel()
        _ = await serving.value
    }

    // MARK: Serving

    private static func serve(
        _ stream: Stream, apns: APNsAccount?, fcm: FCMAccount?, state: NIOLockedValueBox<State>
    ) async throws {
        try await stream.executeThenClose { inbound, outbound in
            var head: HTTPRequestHead?
            var body = Data()
            for try await part in inbound {
                switch part {
                case .head(let h): head = h
                case .body(var chunk): body.append(contentsOf: chunk.readBytes(length: chunk.readableBytes) ?? [])
                case .end:
                    guard let head else { return }
                    var headers: [String: String] = [:]
                    for (name, value) in head.headers { headers[name.lowercased()] = value }
                    let now = UInt64(Date().timeIntervalSince1970)
                    let answer: Answer
                    if head.uri.hasPrefix("/3/device/"), let apns {
                        answer = Self.apns(head, headers, body, apns, now: now, state: state)
                    } else if head.uri == "/token", let fcm {
                        answer = Self.token(head, headers, body, fcm, now: now, state: state)
                    } else if head.uri.hasPrefix("/v1/projects/"), let fcm {
                        answer = Self.fcmSend(head, headers, body, fcm, state: state)
                    } else {
                        answer = Answer(404, ["reason": "BadPath"], refusal: "BadPath")
                    }
                    state.withLockedValue {
                        $0.requests.append(
                            Request(
                                path: head.uri, headers: headers, body: body, status: answer.status,
                                refusal: answer.refusal))
                    }
                    var responseHeaders = HTTPHeaders()
                    for (name, value) in answer.headers { responseHeaders.add(name: name, value: value) }
                    responseHeaders.add(name: "content-type", value: "application/json")
                    responseHeaders.add(name: "content-length", value: "\(answer.body.count)")
                    try await outbound.write(
                        .head(
                            HTTPResponseHead(
                                version: .http2, status: HTTPResponseStatus(statusCode: answer.status),
                                headers: responseHeaders)))
                    if !answer.body.isEmpty {
                        try await outbound.write(.body(.byteBuffer(ByteBuffer(data: answer.body))))
                    }
                    try await outbound.write(.end(nil))
                    return
                }
            }
        }
    }

    struct Answer {
        var status: Int
        var body: Data
        var headers: [(String, String)] = []
        var refusal: String?

        init(_ status: Int, _ json: Any, headers: [(String, String)] = [], refusal: String?) {
            self.status = status
            body = (try? JSONSerialization.data(withJSONObject: json, options: [.sortedKeys])) ?? Data()
            self.headers = headers
            self.refusal = refusal
        }
    }

    // MARK: APNs

    static let maximumVoIPPayload = 5120

    private static func apns(
        _ head: HTTPRequestHead, _ headers: [String: String], _ body: Data, _ account: APNsAccount, now: UInt64,
        state: NIOLockedValueBox<State>
    ) -> Answer {
        func refuse(_ status: Int, _ reason: String) -> Answer {
            Answer(status, ["reason": reason], refusal: reason)
        }
        guard head.method == .POST else { return refuse(405, "MethodNotAllowed") }
        let token = String(head.uri.dropFirst("/3/device/".count))
        guard !token.isEmpty else { return refuse(400, "MissingDeviceToken") }
        guard let authorization = headers["authorization"], authorization.hasPrefix("bearer ") else {
            return refuse(403, "MissingProviderToken")
        }
        guard
            let jwt = JWT(String(authorization.dropFirst("bearer ".count))),
            jwt.header["alg"] as? String == "ES256", jwt.header["kid"] as? String == account.keyID,
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: jwt.signature),
            account.key.isValidSignature(signature, for: Data(jwt.signingInput.utf8)),
            jwt.claims["iss"] as? String == account.teamID
        else { return refuse(403, "InvalidProviderToken") }
        guard let iat = (jwt.claims["iat"] as? NSNumber)?.uint64Value, iat <= now + 60, now < iat + 3600 else {
            return refuse(403, "ExpiredProviderToken")
        }
        guard headers["apns-push-type"] == "voip" else { return refuse(400, "InvalidPushType") }
        guard let topic = headers["apns-topic"] else { return refuse(400, "MissingTopic") }
        guard topic == "\(account.bundleID).voip" else { return refuse(400, "DeviceTokenNotForTopic") }
        guard headers["apns-priority"] == "10" else { return refuse(400, "BadPriority") }
        guard let expiration = headers["apns-expiration"].flatMap(UInt64.init), expiration > now else {
            return refuse(400, "BadExpirationDate")
        }
        guard !body.isEmpty else { return refuse(400, "PayloadEmpty") }
        guard body.count <= maximumVoIPPayload else { return refuse(413, "PayloadTooLarge") }
        guard (try? JSONSerialization.jsonObject(with: body)) is [String: Any] else {
            return refuse(400, "BadRequest")  // not a JSON dictionary
        }
        let (bad, gone) = state.withLockedValue { ($0.badTokens.contains(token), $0.goneTokens.contains(token)) }
        guard token.allSatisfy(\.isHexDigit), !bad else { return refuse(400, "BadDeviceToken") }
        if gone {
            return Answer(410, ["reason": "Unregistered", "timestamp": now * 1000], refusal: "Unregistered")
        }
        return Answer(200, [String: String](), headers: [("apns-id", UUID().uuidString)], refusal: nil)
    }

    // MARK: FCM

    static let messagingScope = "https://www.googleapis.com/auth/firebase.messaging"
    static let maximumDataBytes = 4096

    private static func token(
        _ head: HTTPRequestHead, _ headers: [String: String], _ body: Data, _ account: FCMAccount, now: UInt64,
        state: NIOLockedValueBox<State>
    ) -> Answer {
        func refuse(_ error: String, _ description: String) -> Answer {
            Answer(400, ["error": error, "error_description": description], refusal: "\(error): \(description)")
        }
        guard head.method == .POST, headers["content-type"] == "application/x-www-form-urlencoded" else {
            return refuse("invalid_request", "a form POST is required")
        }
        var form: [String: String] = [:]
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? "" }
            if parts.count == 2 { form[parts[0]] = parts[1] }
        }
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" else {
            return refuse("unsupported_grant_type", "Invalid grant_type: \(form["grant_type"] ?? "")")
        }
        guard
            let jwt = form["assertion"].flatMap(JWT.init), jwt.header["alg"] as? String == "RS256",
            jwt.header["kid"] as? String == account.privateKeyID,
            account.key.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: jwt.signature), for: Data(jwt.signingInput.utf8),
                padding: .insecurePKCS1v1_5)
        else { return refuse("invalid_grant", "Invalid JWT Signature.") }
        guard jwt.claims["iss"] as? String == account.clientEmail else {
            return refuse("invalid_grant", "Invalid issuer")
        }
        guard jwt.claims["aud"] as? String == account.tokenURI else {
            return refuse(
                "invalid_grant", "Invalid JWT: Token must be a short-lived token and in a reasonable timeframe")
        }
        guard (jwt.claims["scope"] as? String)?.split(separator: " ").contains(Substring(messagingScope)) == true else {
            return refuse("invalid_scope", "Invalid OAuth scope or ID token audience provided.")
        }
        guard let iat = (jwt.claims["iat"] as? NSNumber)?.uint64Value,
            let exp = (jwt.claims["exp"] as? NSNumber)?.uint64Value, iat <= now + 60, exp > now, exp - iat <= 3600
        else {
            return refuse(
                "invalid_grant", "Invalid JWT: Token must be a short-lived token and in a reasonable timeframe")
        }
        let token = "ya29.test-" + UUID().uuidString
        state.withLockedValue { _ = $0.accessTokens.insert(token) }
        return Answer(200, ["access_token": token, "expires_in": 3599, "token_type": "Bearer"], refusal: nil)
    }

    private static func fcmSend(
        _ head: HTTPRequestHead, _ headers: [String: String], _ body: Data, _ account: FCMAccount,
        state: NIOLockedValueBox<State>
    ) -> Answer {
        func error(_ code: Int, _ status: String, _ message: String, errorCode: String? = nil) -> Answer {
            var error: [String: Any] = ["code": code, "message": message, "status": status]
            if let errorCode {
                error["details"] = [
                    ["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": errorCode]
                ]
            }
            return Answer(code, ["error": error], refusal: errorCode ?? status)
        }
        guard head.method == .POST, head.uri == "/v1/projects/\(account.projectID)/messages:send" else {
            return error(404, "NOT_FOUND", "Requested entity was not found.")
        }
        guard let authorization = headers["authorization"], authorization.hasPrefix("Bearer "),
            state.withLockedValue({ $0.accessTokens.contains(String(authorization.dropFirst("Bearer ".count))) })
        else {
            return error(
                401, "UNAUTHENTICATED",
                "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential."
            )
        }
        guard headers["content-type"]?.hasPrefix("application/json") == true,
            let object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any],
            let message = object["message"] as? [String: Any], let token = message["token"] as? String
        else { return error(400, "INVALID_ARGUMENT", "Invalid JSON payload received.", errorCode: "INVALID_ARGUMENT") }
        guard let data = message["data"] as? [String: Any], data.values.allSatisfy({ $0 is String }) else {
            return error(400, "INVALID_ARGUMENT", "Invalid value at 'message.data'", errorCode: "INVALID_ARGUMENT")
        }
        let dataBytes = data.reduce(0) { $0 + $1.key.utf8.count + (($1.value as? String)?.utf8.count ?? 0) }
        guard dataBytes <= maximumDataBytes else {
            return error(400, "INVALID_ARGUMENT", "Message is too big", errorCode: "INVALID_ARGUMENT")
        }
        guard (message["android"] as? [String: Any])?["priority"] as? String == "HIGH" else {
            return error(400, "INVALID_ARGUMENT", "a high-priority message is expected", errorCode: "INVALID_ARGUMENT")
        }
        if state.withLockedValue({ $0.goneTokens.contains(token) }) {
            return error(404, "NOT_FOUND", "Requested entity was not found.", errorCode: "UNREGISTERED")
        }
        return Answer(
            200, ["name": "projects/\(account.projectID)/messages/\(UInt32.random(in: 1...UInt32.max))"], refusal: nil)
    }
}

/// A compact JWT taken apart for checking.
private struct JWT {
    var header: [String: Any]
    var claims: [String: Any]
    var signature: Data
    var signingInput: String

    init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = JSONWebToken.decodeBase64URL(parts[0]),
            let claimsData = JSONWebToken.decodeBase64URL(parts[1]),
            let signature = JSONWebToken.decodeBase64URL(parts[2]),
            let header = (try? JSONSerialization.jsonObject(with: headerData)) as? [String: Any],
            let claims = (try? JSONSerialization.jsonObject(with: claimsData)) as? [String: Any]
        else { return nil }
        (self.header, self.claims, self.signature) = (header, claims, signature)
        signingInput = "\(parts[0]).\(parts[1])"
    }
}

/// Keys as Apple and Google hand them out, made with the openssl command: an APNs `.p8` (PKCS#8 P-256) and a
/// service account's RSA key (PKCS#8, 2048 bits).
enum PushKeys {
    struct KeyGenerationFailed: Error, CustomStringConvertible {
        let description: String
    }

    static func make(_ arguments: [String], in directory: URL, name: String) throws -> String {
        let file = directory.appendingPathComponent(name)
        let process = try ChildProcessGroup(
            TestPKI.openssl, ["genpkey"] + arguments + ["-out", file.path],
            log: directory.appendingPathComponent("\(name).log"))
        guard process.waitForExit() == 0 else {
            throw KeyGenerationFailed(description: "openssl genpkey: \(process.logTail)")
        }
        return try String(contentsOf: file, encoding: .utf8)
    }

    static func apnsKey(in directory: URL) throws -> String {
        try make(["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"], in: directory, name: "AuthKey.p8")
    }

    static func serviceAccountKey(in directory: URL) throws -> String {
        try make(["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"], in: directory, name: "service-account.pem")
    }
}
