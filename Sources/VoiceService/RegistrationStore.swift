import Foundation
import Logging
import PostgresNIO

/// The registration service's state in PostgreSQL: applications and their secrets, the last accepted sequence per
/// user with the display name the user's app set for its pushes, and each of a user's devices (by device ID) with its
/// push data. Every service node shares it, and a restart loses nothing:
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
        // Push data per device: a user's phone and tablet each keep theirs. Rows from before keep the device ID "".
        [
            "ALTER TABLE devices ADD COLUMN device_id text NOT NULL DEFAULT ''",
            "ALTER TABLE devices ALTER COLUMN device_id DROP DEFAULT",
            "ALTER TABLE devices DROP CONSTRAINT devices_pkey",
            "ALTER TABLE devices ADD PRIMARY KEY (application_key, user_id, device_id)",
            "ALTER TABLE accepted_sequences ADD COLUMN display_name text",
            // Managed push looks a callee up by user ID alone (Kamailio knows no application key).
            "CREATE INDEX devices_by_user ON devices (user_id)"
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

    /// Records `sequence` as the user's last accepted one, with the push data of the device `deviceID` (nil
    /// removes that device's), only if it is above the last accepted; in one statement (one round trip, atomic), so
    /// of two nodes given the same sequence one accepts. Other devices of the user keep theirs; another device ID of
    /// the user with the same push data is this device under an ID it no longer uses (a reinstall, a client without
    /// a state store) and is removed, or it would be pushed twice.
    /// - Returns: nil when recorded, else the last accepted sequence that `sequence` is not above.
    public func acceptSequence(
        applicationKey: String, userID: String, sequence: UInt64, deviceID: String = "", pushData: Data?,
        displayName: String? = nil
    ) async throws(RegistrationStoreError) -> UInt64? {
        let logger = logger
        return try await storeOperation("record the registration of \(userID)") { [self] in
            // The device's rows change only when the sequence was accepted (`accepted` has its row); the data-
            // modifying parts touch different rows, and the foreign key of a new user's device is checked at the
            // statement's end, after its sequence row is in.
            let recorded = try await client.query(
                """
                WITH accepted AS (
                    INSERT INTO accepted_sequences (application_key, user_id, sequence, display_name)
                    VALUES (\(applicationKey), \(userID), \(String(sequence))::numeric, \(displayName)::text)
                    ON CONFLICT (application_key, user_id) DO UPDATE
                        SET sequence = EXCLUDED.sequence, accepted_at = now(),
                            display_name = coalesce(EXCLUDED.display_name, accepted_sequences.display_name)
                        WHERE accepted_sequences.sequence < EXCLUDED.sequence
                    RETURNING 1),
                removed AS (
                    DELETE FROM devices
                    WHERE EXISTS (SELECT FROM accepted)
                        AND application_key = \(applicationKey) AND user_id = \(userID)
                        AND ((\(pushData)::bytea IS NULL AND device_id = \(deviceID))
                            OR (device_id <> \(deviceID) AND push_data = \(pushData)::bytea))),
                stored AS (
                    INSERT INTO devices (application_key, user_id, device_id, push_data)
                    SELECT \(applicationKey), \(userID), \(deviceID), \(pushData)::bytea
                    WHERE EXISTS (SELECT FROM accepted) AND \(pushData)::bytea IS NOT NULL
                    ON CONFLICT (application_key, user_id, device_id) DO UPDATE
                        SET push_data = EXCLUDED.push_data, registered_at = now())
                SELECT count(*) FROM accepted
                """, logger: logger
            ).collect()
            guard let row = recorded.first, try row.decode(Int.self) == 0 else { return nil }
            // Refused (the rare path): the sequence it is not above, committed by now.
            var last: UInt64 = 0
            for try await text in try await client.query(
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

    /// Replaces the push data of a registered user's device (nil removes it), outside a registration: the device
    /// proves itself with the credentials the service issued it.
    /// - Returns: false when the user has no accepted registration in this application.
    @discardableResult
    public func setPushData(
        applicationKey: String, userID: String, deviceID: String, pushData: Data?, displayName: String? = nil
    ) async throws(RegistrationStoreError) -> Bool {
        let logger = logger
        return try await storeOperation("record the push data of \(userID)") { [self] in
            try await client.withTransaction(logger: logger) { connection -> Bool in
                let registered = try await connection.query(
                    """
                    SELECT 1 FROM accepted_sequences
                    WHERE application_key = \(applicationKey) AND user_id = \(userID) FOR SHARE
                    """, logger: logger
                ).collect()
                guard !registered.isEmpty else { return false }
                try await Self.setDevice(
                    applicationKey: applicationKey, userID: userID, deviceID: deviceID, pushData: pushData,
                    displayName: displayName, on: connection, logger: logger)
                return true
            }
        }
    }

    private static func setDevice(
        applicationKey: String, userID: String, deviceID: String, pushData: Data?, displayName: String?,
        on connection: PostgresConnection, logger: Logger
    ) async throws {
        if let displayName {
            try await connection.query(
                """
                UPDATE accepted_sequences SET display_name = \(displayName)
                WHERE application_key = \(applicationKey) AND user_id = \(userID)
                """, logger: logger)
        }
        if let pushData {
            // A token belongs to one device: another device ID of the user with the same push data is this device
            // under an ID it no longer uses (a reinstall, a client without a state store); it would be pushed twice.
            try await connection.query(
                """
                DELETE FROM devices
                WHERE application_key = \(applicationKey) AND user_id = \(userID) AND device_id <> \(deviceID)
                    AND push_data = \(pushData)
                """, logger: logger)
            try await connection.query(
                """
                INSERT INTO devices (application_key, user_id, device_id, push_data)
                VALUES (\(applicationKey), \(userID), \(deviceID), \(pushData))
                ON CONFLICT (application_key, user_id, device_id) DO UPDATE
                    SET push_data = EXCLUDED.push_data, registered_at = now()
                """, logger: logger)
        } else {
            try await connection.query(
                """
                DELETE FROM devices
                WHERE application_key = \(applicationKey) AND user_id = \(userID) AND device_id = \(deviceID)
                """, logger: logger)
        }
    }

    /// Removes a device's push data when it is still `pushData` (the push service said the token is gone; a
    /// device that registered a new token meanwhile keeps it).
    /// - Returns: whether a row was removed.
    @discardableResult
    public func removePushData(applicationKey: String, userID: String, deviceID: String, ifStill pushData: Data)
        async throws(RegistrationStoreError) -> Bool
    {
        try await storeOperation("remove the push data of \(userID)") { [self] in
            let removed = try await client.query(
                """
                DELETE FROM devices
                WHERE application_key = \(applicationKey) AND user_id = \(userID) AND device_id = \(deviceID)
                    AND push_data = \(pushData)
                RETURNING 1
                """, logger: logger
            ).collect()
            return !removed.isEmpty
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

    /// A device of a user with push data.
    public struct Device: Sendable, Equatable {
        public var applicationKey: String
        public var userID: String
        public var deviceID: String
        public var pushData: Data
    }

    /// The user's devices that have push data, oldest registration first; in every application when
    /// `applicationKey` is nil (managed push: the SIP service knows users, not applications).
    public func devices(applicationKey: String?, userID: String) async throws(RegistrationStoreError) -> [Device] {
        try await storeOperation("read the devices of \(userID)") { [self] in
            var devices: [Device] = []
            let rows = try await client.query(
                """
                SELECT application_key, device_id, push_data FROM devices
                WHERE user_id = \(userID) AND (\(applicationKey)::text IS NULL OR application_key = \(applicationKey))
                ORDER BY registered_at, device_id
                """, logger: logger)
            for try await (key, deviceID, pushData) in rows.decode((String, String, Data).self) {
                devices.append(Device(applicationKey: key, userID: userID, deviceID: deviceID, pushData: pushData))
            }
            return devices
        }
    }

    /// The display name the user's app set last (in any application), nil when none did.
    public func displayName(userID: String) async throws(RegistrationStoreError) -> String? {
        try await storeOperation("read the display name of \(userID)") { [self] in
            try await single(
                String.self,
                """
                SELECT display_name FROM accepted_sequences WHERE user_id = \(userID) AND display_name IS NOT NULL
                ORDER BY accepted_at DESC LIMIT 1
                """)
        }
    }

    /// The push data of every device of the user (one entry per device), oldest registration first.
    public func pushData(applicationKey: String, userID: String) async throws(RegistrationStoreError) -> [Data] {
        try await devices(applicationKey: applicationKey, userID: userID).map(\.pushData)
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
