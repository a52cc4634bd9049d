import Foundation
import Logging
import PostgresNIO

/// The registration service's state in PostgreSQL: applications and their secrets, the last accepted sequence per
/// user and each user's device with its push data. Every service node shares it, and a restart loses nothing:
/// a sequence is committed before its grant is returned. The schema is created and migrated by ``migrate()``
/// (numbered migrations recorded in `service_schema_version`, applied under a lock so nodes starting together
/// apply each once). Kamailio's tables (`location`, `silo`) live in the same database, created from Kamailio's
/// own schema files.
public final class RegistrationStore: Sendable {
    let client: PostgresClient
    private let running: Task<Void, Never>
    let logger: Logger

    /// Connects lazily (the first query opens a connection); call ``migrate()`` before serving, or use ``open``.
    public init(_ address: DatabaseAddress) {
        var logger = Logger(label: "voiceengine.registration-store")
        logger.logLevel = .critical
        self.logger = logger
        let client = PostgresClient(configuration: address.clientConfiguration(), backgroundLogger: logger)
        self.client = client
        running = Task { await client.run() }
    }

    /// Connects to `address` (`password` replacing the URL's) and brings the schema up to date.
    public static func open(_ address: DatabaseAddress, password: String? = nil) async throws(RegistrationStoreError)
        -> RegistrationStore
    {
        var address = address
        if let password { address.password = password }
        let store = RegistrationStore(address)
        do {
            try await store.migrate()
        } catch {
            await store.close()
            throw error
        }
        return store
    }

    /// Closes every connection; the store answers nothing after.
    public func close() async {
        running.cancel()
        await running.value
    }

    // MARK: Schema

    /// The service's migrations, in order: migration N brings the schema from version N-1 to N. A released
    /// migration never changes; a schema change is a new one at the end.
    static let migrations: [[String]] = [
        [
            """
            CREATE TABLE applications (
                key text PRIMARY KEY,
                secret text NOT NULL,
                updated_at timestamptz NOT NULL DEFAULT now())
            """,
            // numeric(20): sequences are unsigned 64-bit, beyond bigint's range.
            """
            CREATE TABLE accepted_sequences (
                application_key text NOT NULL REFERENCES applications (key) ON DELETE CASCADE,
                user_id text NOT NULL,
                sequence numeric(20, 0) NOT NULL CHECK (sequence >= 0),
                accepted_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (application_key, user_id))
            """,
            """
            CREATE TABLE devices (
                application_key text NOT NULL,
                user_id text NOT NULL,
                push_data bytea NOT NULL,
                registered_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (application_key, user_id),
                FOREIGN KEY (application_key, user_id) REFERENCES accepted_sequences ON DELETE CASCADE)
            """
        ],
        callStatisticsMigration
    ]

    /// The schema version this code writes and reads.
    public static var schemaVersion: Int { migrations.count }

    /// Applies the migrations the database has not had yet; nothing when it is current. Refuses a database whose
    /// schema is newer than this code knows (an older service started against a migrated database).
    public func migrate() async throws(RegistrationStoreError) {
        let logger = logger
        try await storeOperation("migrate the schema", timeout: .seconds(60)) { [self] in
            try await self.client.withTransaction(logger: logger) { connection in
                // One node at a time (the key is arbitrary and fixed: "VoiceSvc" in ASCII).
                try await connection.query("SELECT pg_advisory_xact_lock(6156082470612763491)", logger: logger)
                try await connection.query(
                    """
                    CREATE TABLE IF NOT EXISTS service_schema_version (
                        version integer PRIMARY KEY,
                        applied_at timestamptz NOT NULL DEFAULT now())
                    """, logger: logger)
                var current = 0
                for try await version in try await connection.query(
                    "SELECT coalesce(max(version), 0) FROM service_schema_version", logger: logger
                ).decode(Int.self) {
                    current = version
                }
                guard current <= Self.migrations.count else {
                    throw RegistrationStoreError(
                        "the database's schema is version \(current), newer than this service's \(Self.schemaVersion)")
                }
                for (index, statements) in Self.migrations.enumerated() where index + 1 > current {
                    for statement in statements {
                        try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                    }
                    try await connection.query(
                        "INSERT INTO service_schema_version (version) VALUES (\(index + 1))", logger: logger)
                }
            }
        }
    }

    /// The schema version the database is at.
    public func currentSchemaVersion() async throws(RegistrationStoreError) -> Int {
        try await storeOperation("read the schema version") { [self] in
            try await single(Int.self, "SELECT coalesce(max(version), 0) FROM service_schema_version") ?? 0
        }
    }

    // MARK: Applications

    /// Adds the application or replaces its secret.
    public func setApplication(key: String, secret: String) async throws(RegistrationStoreError) {
        try await storeOperation("record application \(key)") { [self] in
            _ = try await client.query(
                """
                INSERT INTO applications (key, secret) VALUES (\(key), \(secret))
                ON CONFLICT (key) DO UPDATE SET secret = EXCLUDED.secret, updated_at = now()
                """, logger: logger)
        }
    }

    /// The application's secret, nil for an unknown key.
    public func applicationSecret(key: String) async throws(RegistrationStoreError) -> String? {
        try await storeOperation("read application \(key)") { [self] in
            try await single(String.self, "SELECT secret FROM applications WHERE key = \(key)")
        }
    }

    public func applicationCount() async throws(RegistrationStoreError) -> Int {
        try await storeOperation("count the applications") { [self] in
            try await single(Int.self, "SELECT count(*)::bigint FROM applications") ?? 0
        }
    }

    // MARK: Registrations

    /// Records `sequence` as the user's last accepted one, with the device's push data (nil removes it), only if
    /// it is above the last accepted; in one transaction, so of two nodes given the same sequence one accepts.
    /// - Returns: nil when recorded, else the last accepted sequence that `sequence` is not above.
    public func acceptSequence(applicationKey: String, userID: String, sequence: UInt64, pushData: Data?)
        async throws(RegistrationStoreError) -> UInt64?
    {
        let logger = logger
        return try await storeOperation("record the registration of \(userID)") { [self] in
            try await client.withTransaction(logger: logger) { connection -> UInt64? in
                let recorded = try await connection.query(
                    """
                    INSERT INTO accepted_sequences (application_key, user_id, sequence)
                    VALUES (\(applicationKey), \(userID), \(String(sequence))::numeric)
                    ON CONFLICT (application_key, user_id) DO UPDATE
                        SET sequence = EXCLUDED.sequence, accepted_at = now()
                        WHERE accepted_sequences.sequence < EXCLUDED.sequence
                    RETURNING 1
                    """, logger: logger
                ).collect()
                guard recorded.isEmpty else {
                    if let pushData {
                        try await connection.query(
                            """
                            INSERT INTO devices (application_key, user_id, push_data)
                            VALUES (\(applicationKey), \(userID), \(pushData))
                            ON CONFLICT (application_key, user_id) DO UPDATE
                                SET push_data = EXCLUDED.push_data, registered_at = now()
                            """, logger: logger)
                    } else {
                        try await connection.query(
                            "DELETE FROM devices WHERE application_key = \(applicationKey) AND user_id = \(userID)",
                            logger: logger)
                    }
                    return nil
                }
                var last: UInt64 = 0
                for try await text in try await connection.query(
                    """
                    SELECT sequence::text FROM accepted_sequences
                    WHERE application_key = \(applicationKey) AND user_id = \(userID)
                    """, logger: logger
                ).decode(String.self) {
                    last = UInt64(text) ?? 0
                }
                return last
            }
        }
    }

    /// The last sequence accepted for the user, nil when none was.
    public func lastAcceptedSequence(applicationKey: String, userID: String) async throws(RegistrationStoreError)
        -> UInt64?
    {
        try await storeOperation("read the sequence of \(userID)") { [self] in
            try await single(
                String.self,
                """
                SELECT sequence::text FROM accepted_sequences
                WHERE application_key = \(applicationKey) AND user_id = \(userID)
                """
            ).flatMap { UInt64($0) }
        }
    }

    /// The push data the user's device attached to its last accepted registration.
    public func pushData(applicationKey: String, userID: String) async throws(RegistrationStoreError) -> Data? {
        try await storeOperation("read the push data of \(userID)") { [self] in
            try await single(
                Data.self,
                "SELECT push_data FROM devices WHERE application_key = \(applicationKey) AND user_id = \(userID)")
        }
    }

    // MARK: Helpers

    /// The first column of the first row, nil without rows.
    func single<Value: PostgresDecodable & Sendable>(_ type: Value.Type, _ query: PostgresQuery)
        async throws -> Value?
    {
        for try await value in try await client.query(query, logger: logger).decode(Value.self) { return value }
        return nil
    }

    /// How long an operation may wait for the database (a connection, then the answer) before the request is
    /// answered "unavailable".
    static let answerTimeout: Duration = .seconds(5)

    /// Runs `body` within `timeout`, turning whatever the database or the connection throws into a
    /// ``RegistrationStoreError`` that says what could not be done and why (PostgreSQL's message, never the
    /// query's values).
    func storeOperation<Result: Sendable>(
        _ what: String, timeout: Duration = RegistrationStore.answerTimeout,
        _ body: @escaping @Sendable () async throws -> Result
    ) async throws(RegistrationStoreError) -> Result {
        do {
            return try await withThrowingTaskGroup(of: StoreOutcome<Result>.self) { group in
                group.addTask { .done(try await body()) }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    return .timedOut
                }
                defer { group.cancelAll() }
                guard case .done(let value) = try await group.next() else {
                    throw RegistrationStoreError("cannot \(what): the database did not answer within \(timeout)")
                }
                return value
            }
        } catch let error as RegistrationStoreError {
            throw error
        } catch let error as PostgresTransactionError {
            throw RegistrationStoreError(
                "cannot \(what): \(Self.reason(error.closureError ?? error.beginError ?? error.commitError ?? error))")
        } catch {
            throw RegistrationStoreError("cannot \(what): \(Self.reason(error))")
        }
    }

    /// PostgreSQL's message for a server error, else the error itself.
    private static func reason(_ error: any Error) -> String {
        if let error = error as? RegistrationStoreError { return error.description }
        guard let error = error as? PSQLError else { return "\(error)" }
        return error.serverInfo?[.message] ?? "\(error.code)"
    }
}

private enum StoreOutcome<Value: Sendable>: Sendable {
    case done(Value)
    case timedOut
}

/// The store could not do what was asked (database unreachable, refused the login, or answered an error): the
/// service answers 503 and the client tries again later.
public struct RegistrationStoreError: Error, Equatable, CustomStringConvertible {
    public let description: String

    public init(_ description: String) { self.description = description }
}
