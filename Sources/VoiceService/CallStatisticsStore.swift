import Foundation
import PostgresNIO
import VoiceClientWire

/// The end-of-call statistics the clients upload, in the registration service's PostgreSQL database: one row per
/// (application, user, call), the upload kept whole as `jsonb` beside the columns the service lists by.
extension RegistrationStore {
    /// The migration that creates the statistics table (one of ``migrations``).
    static let callStatisticsMigration = [
        """
        CREATE TABLE call_statistics (
            application_key text NOT NULL REFERENCES applications (key) ON DELETE CASCADE,
            user_id text NOT NULL,
            call_id text NOT NULL,
            direction text NOT NULL,
            remote text NOT NULL,
            started_at timestamptz NOT NULL,
            duration_seconds double precision NOT NULL,
            end_cause text NOT NULL,
            report jsonb NOT NULL,
            received_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (application_key, user_id, call_id))
        """,
        "CREATE INDEX call_statistics_recent ON call_statistics (application_key, user_id, started_at DESC)"
    ]

    /// Keeps `report` (the upload as it came, a JSON object) under its summary's application and call for `userID`.
    /// - Returns: false when that call was already stored (a repeated upload), which is left as it was.
    public func recordCallStatistics(userID: String, summary: CallStatisticsSummary, report: String)
        async throws(RegistrationStoreError) -> Bool
    {
        try await storeOperation("record the statistics of call \(summary.callID)") { [self] in
            let inserted = try await client.query(
                """
                INSERT INTO call_statistics
                    (application_key, user_id, call_id, direction, remote, started_at, duration_seconds, end_cause,
                     report)
                VALUES (\(summary.applicationKey), \(userID), \(summary.callID), \(summary.direction),
                    \(summary.remote), to_timestamp(\(summary.startedAt)), \(summary.durationSeconds),
                    \(summary.endCause), \(report)::jsonb)
                ON CONFLICT (application_key, user_id, call_id) DO NOTHING
                RETURNING 1
                """, logger: logger
            ).collect()
            return !inserted.isEmpty
        }
    }

    /// The user's last `limit` calls, newest first: each upload as stored (JSON text).
    public func lastCalls(applicationKey: String, userID: String, limit: Int) async throws(RegistrationStoreError)
        -> [String]
    {
        try await storeOperation("list the calls of \(userID)") { [self] in
            var reports: [String] = []
            for try await report in try await client.query(
                """
                SELECT report::text FROM call_statistics
                WHERE application_key = \(applicationKey) AND user_id = \(userID)
                ORDER BY started_at DESC, received_at DESC LIMIT \(limit)
                """, logger: logger
            ).decode(String.self) {
                reports.append(report)
            }
            return reports
        }
    }

    /// How many calls are stored for the user.
    public func callStatisticsCount(applicationKey: String, userID: String) async throws(RegistrationStoreError)
        -> Int
    {
        try await storeOperation("count the calls of \(userID)") { [self] in
            try await single(
                Int.self,
                """
                SELECT count(*)::bigint FROM call_statistics
                WHERE application_key = \(applicationKey) AND user_id = \(userID)
                """) ?? 0
        }
    }
}
