import Foundation
import VoiceClientWire

/// The registration service: verifies signed requests (``RegistrationVerifier``), records the accepted sequence
/// and the device's push data in the ``RegistrationStore`` (committed before the grant is returned, so no restart
/// and no other node ever accepts a replay), and issues ephemeral credentials (``EphemeralCredentialIssuer``).
public actor RegistrationService {
    public let store: RegistrationStore
    let issuer: EphemeralCredentialIssuer
    let unixTime: @Sendable () -> UInt64
    /// Requests by endpoint and status, their latency, stored statistics and pushes (``ServiceMetrics``).
    public nonisolated let metrics = ServiceMetrics()
    /// Requests accepted and refused so far by this instance (for the log and the tests).
    package private(set) var accepted = 0
    package private(set) var refused = 0

    /// - Parameters:
    ///   - store: applications, accepted sequences and devices (shared by every node of the service).
    ///   - unixTime: the wall clock in seconds, injectable for tests.
    public init(
        store: RegistrationStore, issuer: EphemeralCredentialIssuer,
        unixTime: @escaping @Sendable () -> UInt64 = { UInt64(Date().timeIntervalSince1970) }
    ) {
        self.store = store
        self.issuer = issuer
        self.unixTime = unixTime
    }

    /// Verifies `request`, records it and returns the credentials; throws the typed ``RegistrationRefusal``, or a
    /// ``RegistrationStoreError`` when the store cannot answer (nothing was recorded then).
    public func register(_ request: RegistrationRequest) async throws -> RegistrationGrant {
        do {
            let secret = try await store.applicationSecret(key: request.applicationKey)
            try RegistrationVerifier.verify(request, applicationSecret: secret)
            if let last = try await store.acceptSequence(
                applicationKey: request.applicationKey, userID: request.userID, sequence: request.sequence,
                pushData: request.pushData)
            {
                throw RegistrationRefusal.sequenceNotIncreasing(received: request.sequence, lastAccepted: last)
            }
        } catch let refusal as RegistrationRefusal {
            refused += 1
            throw refusal
        }
        accepted += 1
        return issuer.issue(userID: request.userID, now: unixTime())
    }

    /// The push data the user's device attached to its last registration.
    public func pushData(applicationKey: String, userID: String) async throws -> Data? {
        try await store.pushData(applicationKey: applicationKey, userID: userID)
    }

    /// Answers one HTTP request: (status, JSON body). `authorization` is the Authorization header, if any.
    public func handle(method: String, path: String, authorization: String? = nil, body: [UInt8]) async -> (
        status: Int, body: Data
    ) {
        let encoder = JSONEncoder()
        if let answer = await callStatisticsAnswer(method: method, path: path, authorization: authorization, body: body)
        {
            return answer
        }
        if method == "POST", path == "/v1/push-data" {
            return await pushDataAnswer(authorization: authorization, body: body)
        }
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
            let grant = try await register(request)
            return (200, (try? encoder.encode(grant)) ?? Data())
        } catch let error as RegistrationRefusal {
            let status =
                switch error {
                case .credentialsRefused: 401
                case .sequenceNotIncreasing: 409
                case .invalidUserID, .malformedRequest, .pushDataTooLarge: 400
                case .unknownApplicationKey, .forgedSignature: 403
                }
            return (status, (try? encoder.encode(error)) ?? Data())
        } catch {
            return Self.storeUnavailable(error)
        }
    }

    /// A registered device asks for another user's push data (app-sent push), proving itself with the
    /// ephemeral credentials this service issued it (HTTP Basic).
    private func pushDataAnswer(authorization: String?, body: [UInt8]) async -> (status: Int, body: Data) {
        let encoder = JSONEncoder()
        guard authenticatedUser(authorization) != nil else {
            refused += 1
            return (401, (try? encoder.encode(RegistrationRefusal.credentialsRefused)) ?? Data())
        }
        guard let query = try? JSONDecoder().decode(PushDataQuery.self, from: Data(body)) else {
            return (400, (try? encoder.encode(RegistrationRefusal.malformedRequest("not a push-data query"))) ?? Data())
        }
        let data: Data?
        do {
            data = try await store.pushData(applicationKey: query.applicationKey, userID: query.userID)
        } catch {
            return Self.storeUnavailable(error)
        }
        return (200, (try? encoder.encode(PushDataAnswer(pushData: data.map { [$0] } ?? []))) ?? Data())
    }

    /// 503 with a body that is no refusal: the client reports the service unavailable and tries again later.
    static func storeUnavailable(_ error: any Error) -> (status: Int, body: Data) {
        (503, (try? JSONEncoder().encode(["unavailable": "\(error)"])) ?? Data())
    }
}
