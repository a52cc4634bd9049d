import Foundation
import VoiceClientWire

/// The statistics endpoints: a registered device uploads the report of each call that ended
/// (`POST /v1/call-statistics`) and lists its user's last calls (`POST /v1/call-statistics/query`), both with
/// the ephemeral credentials this service issued it (HTTP Basic), so a device reads and writes only its own
/// user's calls.
extension RegistrationService {
    static let callStatisticsPath = "/v1/call-statistics"
    static let callStatisticsQueryPath = "/v1/call-statistics/query"

    /// The answer to a statistics request, nil when `path` is not one of the statistics endpoints.
    func callStatisticsAnswer(method: String, path: String, authorization: String?, body: [UInt8]) async -> (
        status: Int, body: Data
    )? {
        guard method == "POST", path == Self.callStatisticsPath || path == Self.callStatisticsQueryPath else {
            return nil
        }
        guard let userID = authenticatedUser(authorization) else {
            return (401, Self.encoded(RegistrationRefusal.credentialsRefused))
        }
        return path == Self.callStatisticsPath
            ? await storeCallStatistics(userID: userID, body: body)
            : await listCalls(userID: userID, body: body)
    }

    private func storeCallStatistics(userID: String, body: [UInt8]) async -> (status: Int, body: Data) {
        guard body.count <= CallStatisticsSummary.maximumBytes else {
            return malformed("a report larger than \(CallStatisticsSummary.maximumBytes) bytes")
        }
        let summary: CallStatisticsSummary
        do {
            // The report must be a JSON object; its summary fields are checked, the rest is kept as it came.
            guard try JSONSerialization.jsonObject(with: Data(body)) is [String: Any] else {
                return malformed("the report is not a JSON object")
            }
            summary = try JSONDecoder().decode(CallStatisticsSummary.self, from: Data(body))
        } catch {
            return malformed("not a call statistics report: \(error)")
        }
        if let problem = summary.problem { return malformed(problem) }
        do {
            guard try await store.applicationSecret(key: summary.applicationKey) != nil else {
                return (403, Self.encoded(RegistrationRefusal.unknownApplicationKey(summary.applicationKey)))
            }
            let stored = try await store.recordCallStatistics(
                userID: userID, summary: summary, report: String(decoding: body, as: UTF8.self))
            if stored { metrics.callStatisticsStored() }
            return (200, Self.encoded(CallStatisticsReceipt(stored: stored)))
        } catch {
            return Self.storeUnavailable(error)
        }
    }

    private func listCalls(userID: String, body: [UInt8]) async -> (status: Int, body: Data) {
        guard let query = try? JSONDecoder().decode(CallStatisticsQuery.self, from: Data(body)) else {
            return malformed("not a call statistics query")
        }
        guard (1...CallStatisticsQuery.maximumLimit).contains(query.limit) else {
            return malformed("limit \(query.limit) is not within 1–\(CallStatisticsQuery.maximumLimit)")
        }
        do {
            let reports = try await store.lastCalls(
                applicationKey: query.applicationKey, userID: userID, limit: query.limit)
            // The reports are JSON objects as the database keeps them (jsonb): the answer joins them unchanged.
            return (200, Data("{\"calls\":[\(reports.joined(separator: ","))]}".utf8))
        } catch {
            return Self.storeUnavailable(error)
        }
    }

    private func malformed(_ reason: String) -> (status: Int, body: Data) {
        (400, Self.encoded(RegistrationRefusal.malformedRequest(reason)))
    }

    static func encoded(_ value: some Encodable) -> Data { (try? JSONEncoder().encode(value)) ?? Data() }
}
