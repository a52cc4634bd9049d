import Foundation
import VoiceClientWire

/// The registration service: verifies signed requests (``RegistrationVerifier``), issues ephemeral credentials
/// (``EphemeralCredentialIssuer``) and keeps the accepted sequences in `stateDirectory/sequences.json`, written
/// before the grant is returned, so a restart never accepts a replay.
public actor RegistrationService {
    private var verifier: RegistrationVerifier
    private let issuer: EphemeralCredentialIssuer
    private let stateFile: URL?
    private let unixTime: @Sendable () -> UInt64
    /// Requests accepted and refused so far (for the log and the tests).
    package private(set) var accepted = 0
    package private(set) var refused = 0

    /// - Parameters:
    ///   - applications: application key → secret.
    ///   - stateDirectory: where the accepted sequences are kept (nil: in memory only).
    ///   - unixTime: the wall clock in seconds, injectable for tests.
    public init(
        applications: [String: String], issuer: EphemeralCredentialIssuer, stateDirectory: URL?,
        unixTime: @escaping @Sendable () -> UInt64 = { UInt64(Date().timeIntervalSince1970) }
    ) throws {
        stateFile = stateDirectory?.appendingPathComponent("sequences.json")
        var sequences: [String: UInt64] = [:]
        if let stateFile, let data = try? Data(contentsOf: stateFile) {
            sequences = try JSONDecoder().decode([String: UInt64].self, from: data)
        }
        verifier = RegistrationVerifier(applications: applications, lastSequences: sequences)
        self.issuer = issuer
        self.unixTime = unixTime
    }

    /// Verifies `request` and returns the credentials, or the typed refusal.
    public func register(_ request: RegistrationRequest) throws(RegistrationRefusal) -> RegistrationGrant {
        do {
            try verifier.verify(request)
        } catch {
            refused += 1
            throw error
        }
        if let stateFile {
            do {
                try JSONEncoder().encode(verifier.lastSequences).write(to: stateFile, options: .atomic)
            } catch {
                throw .malformedRequest("the service cannot record the sequence: \(error)")
            }
        }
        accepted += 1
        return issuer.issue(userID: request.userID, now: unixTime())
    }

    /// The push data the user's device attached to its last registration.
    public func pushData(applicationKey: String, userID: String) -> Data? {
        verifier.pushData(applicationKey: applicationKey, userID: userID)
    }

    /// Answers one HTTP request: (status, JSON body). `authorization` is the Authorization header, if any.
    public func handle(method: String, path: String, authorization: String? = nil, body: [UInt8]) -> (
        status: Int, body: Data
    ) {
        let encoder = JSONEncoder()
        if method == "POST", path == "/v1/push-data" { return pushDataAnswer(authorization: authorization, body: body) }
        guard method == "POST", path == "/v1/registrations" else {
            return (
                404,
                (try? encoder.encode(RegistrationRefusal.malformedRequest("no such endpoint: \(method) \(path)")))
                    ?? Data()
            )
        }
        let request: RegistrationRequest
        do {
            request = try JSONDecoder().decode(RegistrationRequest.self, from: Data(body))
        } catch {
            refused += 1
            return (
                400,
                (try? encoder.encode(RegistrationRefusal.malformedRequest("not a registration request: \(error)")))
                    ?? Data()
            )
        }
        do {
            let grant = try register(request)
            return (200, (try? encoder.encode(grant)) ?? Data())
        } catch {
            let status =
                switch error {
                case .credentialsRefused: 401
                case .sequenceNotIncreasing: 409
                case .invalidUserID, .malformedRequest, .pushDataTooLarge: 400
                case .unknownApplicationKey, .forgedSignature: 403
                }
            return (status, (try? encoder.encode(error)) ?? Data())
        }
    }

    /// A registered device asks for another user's push data (app-sent push), proving itself with the
    /// ephemeral credentials this service issued it (HTTP Basic).
    private func pushDataAnswer(authorization: String?, body: [UInt8]) -> (status: Int, body: Data) {
        let encoder = JSONEncoder()
        guard let authorization, authorization.hasPrefix("Basic "),
            let decoded = Data(base64Encoded: String(authorization.dropFirst(6))).map({
                String(decoding: $0, as: UTF8.self)
            }),
            let colon = decoded.lastIndex(of: ":"),
            issuer.accepts(
                username: String(decoded[..<colon]), password: String(decoded[decoded.index(after: colon)...]),
                now: unixTime())
        else {
            refused += 1
            return (401, (try? encoder.encode(RegistrationRefusal.credentialsRefused)) ?? Data())
        }
        guard let query = try? JSONDecoder().decode(PushDataQuery.self, from: Data(body)) else {
            return (400, (try? encoder.encode(RegistrationRefusal.malformedRequest("not a push-data query"))) ?? Data())
        }
        let data = verifier.pushData(applicationKey: query.applicationKey, userID: query.userID)
        return (200, (try? encoder.encode(PushDataAnswer(pushData: data.map { [$0] } ?? []))) ?? Data())
    }
}
