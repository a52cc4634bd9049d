import Foundation
import VoiceClientWire

/// The registration service: verifies signed requests (``RegistrationVerifier``), records the accepted sequence
/// and the push data of the device (by device ID) in the ``RegistrationStore`` (committed before the grant is returned, so no restart
/// and no other node ever accepts a replay), and issues ephemeral credentials (``EphemeralCredentialIssuer``).
public actor RegistrationService {
    public nonisolated let store: RegistrationStore
    private let issuer: EphemeralCredentialIssuer
    private let unixTime: @Sendable () -> UInt64
    /// Sends managed pushes (`POST /v1/managed-push`) when the service has push senders.
    private let managedPush: ManagedPush?
    /// Requests accepted and refused so far by this instance (for the log and the tests).
    package private(set) var accepted = 0
    package private(set) var refused = 0

    /// - Parameters:
    ///   - store: applications, accepted sequences and devices (shared by every node of the service).
    ///   - unixTime: the wall clock in seconds, injectable for tests.
    ///   - managedPush: the push senders and the secret the SIP service proves itself with when it asks for a push.
    public init(
        store: RegistrationStore, issuer: EphemeralCredentialIssuer, managedPush: ManagedPush? = nil,
        unixTime: @escaping @Sendable () -> UInt64 = { UInt64(Date().timeIntervalSince1970) }
    ) {
        self.store = store
        self.issuer = issuer
        self.managedPush = managedPush
        self.unixTime = unixTime
    }

    /// Managed push behind the service: the dispatcher, and the bearer secret of `POST /v1/managed-push`.
    public struct ManagedPush: Sendable {
        public var dispatcher: ManagedPushDispatcher
        public var secret: String
        public init(dispatcher: ManagedPushDispatcher, secret: String) {
            self.dispatcher = dispatcher
            self.secret = secret
        }
    }

    /// Verifies `request`, records it and returns the credentials; throws the typed ``RegistrationRefusal``, or a
    /// ``RegistrationStoreError`` when the store cannot answer (nothing was recorded then).
    public func register(_ request: RegistrationRequest) async throws -> RegistrationGrant {
        do {
            let secret = try await store.applicationSecret(key: request.applicationKey)
            try RegistrationVerifier.verify(request, applicationSecret: secret)
            if let last = try await store.acceptSequence(
                applicationKey: request.applicationKey, userID: request.userID, sequence: request.sequence,
                deviceID: request.deviceID ?? "", pushData: request.pushData, displayName: request.displayName)
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

    /// The push data of each of the user's devices.
    public func pushData(applicationKey: String, userID: String) async throws -> [Data] {
        try await store.pushData(applicationKey: applicationKey, userID: userID)
    }

    /// Answers one HTTP request: (status, JSON body). `authorization` is the Authorization header, if any.
    public func handle(method: String, path: String, authorization: String? = nil, body: [UInt8]) async -> (
        status: Int, body: Data
    ) {
        let encoder = JSONEncoder()
        if method == "POST", path == "/v1/push-data" {
            return await pushDataAnswer(authorization: authorization, body: body)
        }
        if method == "POST", path == "/v1/devices" {
            return await pushDataUpdate(authorization: authorization, body: body)
        }
        if method == "POST", path.hasPrefix("/v1/managed-push?") {
            return await managedPushAnswer(path: path, authorization: authorization, body: body)
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
        let devices: [RegistrationStore.Device]
        do {
            devices = try await store.devices(applicationKey: query.applicationKey, userID: query.userID)
        } catch {
            return Self.storeUnavailable(error)
        }
        let answer = PushDataAnswer(
            devices: devices.map { DevicePushData(deviceID: $0.deviceID, pushData: $0.pushData) })
        return (200, (try? encoder.encode(answer)) ?? Data())
    }

    /// The user ID of HTTP Basic credentials this service issued (username `<expiry>:<user ID>`), nil otherwise.
    private func authenticatedUser(_ authorization: String?) -> String? {
        guard let authorization, authorization.hasPrefix("Basic "),
            let decoded = Data(base64Encoded: String(authorization.dropFirst(6))).map({
                String(decoding: $0, as: UTF8.self)
            }),
            let colon = decoded.lastIndex(of: ":")
        else { return nil }
        let username = String(decoded[..<colon])
        guard
            issuer.accepts(
                username: username, password: String(decoded[decoded.index(after: colon)...]), now: unixTime()),
            let separator = username.firstIndex(of: ":")
        else { return nil }
        return String(username[username.index(after: separator)...])
    }

    /// A registered device replaces or removes its push data (``PushDataUpdate``), proving itself with the
    /// credentials this service issued it: 200 with ``PushDataUpdateAnswer``, or 404 when the user never
    /// registered in that application.
    private func pushDataUpdate(authorization: String?, body: [UInt8]) async -> (status: Int, body: Data) {
        let encoder = JSONEncoder()
        guard let userID = authenticatedUser(authorization) else {
            refused += 1
            return (401, (try? encoder.encode(RegistrationRefusal.credentialsRefused)) ?? Data())
        }
        guard let update = try? JSONDecoder().decode(PushDataUpdate.self, from: Data(body)) else {
            return (
                400, (try? encoder.encode(RegistrationRefusal.malformedRequest("not a push data update"))) ?? Data()
            )
        }
        do throws(RegistrationRefusal) {
            if let data = update.pushData, data.count > PushData.maximumBytes {
                throw .pushDataTooLarge(data.count)
            }
            try RegistrationVerifier.verifyDevice(update.deviceID, displayName: update.displayName)
        } catch {
            return (400, (try? encoder.encode(error)) ?? Data())
        }
        do {
            guard
                try await store.setPushData(
                    applicationKey: update.applicationKey, userID: userID, deviceID: update.deviceID,
                    pushData: update.pushData, displayName: update.displayName)
            else {
                return (
                    404,
                    (try? encoder.encode(RegistrationRefusal.malformedRequest("\(userID) has not registered")))
                        ?? Data()
                )
            }
        } catch {
            return Self.storeUnavailable(error)
        }
        return (200, (try? encoder.encode(PushDataUpdateAnswer(deviceID: update.deviceID))) ?? Data())
    }

    /// The SIP service asks for a managed push (`POST /v1/managed-push?to=<user ID>`, the payload as body,
    /// `Authorization: Bearer <secret>`): every device of the user with a managed push token is pushed; the answer
    /// lists the outcome per device.
    private func managedPushAnswer(path: String, authorization: String?, body: [UInt8]) async -> (
        status: Int, body: Data
    ) {
        guard let managedPush else {
            return (404, Data("{\"error\":\"managed push is not configured\"}".utf8))
        }
        guard let authorization,
            RegistrationVerifier.constantTimeEqual(
                Array(authorization.utf8), Array("Bearer \(managedPush.secret)".utf8))
        else {
            refused += 1
            return (401, (try? JSONEncoder().encode(RegistrationRefusal.credentialsRefused)) ?? Data())
        }
        guard let userID = URLComponents(string: path)?.queryItems?.first(where: { $0.name == "to" })?.value,
            (try? UserID.validate(userID)) != nil
        else {
            return (400, Data("{\"error\":\"no valid user ID in ?to=\"}".utf8))
        }
        do {
            let outcomes = try await managedPush.dispatcher.push(Data(body), to: userID)
            let answer: [[String: Any]] = outcomes.map {
                [
                    "device": $0.deviceID, "outcome": ManagedPushDispatcher.name($0.outcome),
                    "detail": ManagedPushDispatcher.detail($0.outcome), "removed": $0.removed
                ]
            }
            return (200, (try? JSONSerialization.data(withJSONObject: answer, options: [.sortedKeys])) ?? Data())
        } catch {
            return Self.storeUnavailable(error)
        }
    }

    /// 503 with a body that is no refusal: the client reports the service unavailable and tries again later.
    private static func storeUnavailable(_ error: any Error) -> (status: Int, body: Data) {
        (503, (try? JSONEncoder().encode(["unavailable": "\(error)"])) ?? Data())
    }
}
