import Foundation
import NIOCore
import VoiceEngine

/// One call's statistics as the client uploads them: the summary the service lists by, at the top level of the
/// JSON object, with the audio session's end-of-call report (`session`) and the media's (`media`: RTP, loss,
/// jitter, round trip, estimated quality) beside it.
public struct CallStatisticsRecord: Sendable, Codable {
    public var summary: CallStatisticsSummary
    /// When the call was established and ended, Unix time in seconds (the device's wall clock).
    public var establishedAt: Double?
    public var endedAt: Double?
    /// Whether an incoming call came by push.
    public var viaPush: Bool
    public var session: CallStatisticsReport?
    public var media: CallReport?

    public init(
        summary: CallStatisticsSummary, establishedAt: Double? = nil, endedAt: Double? = nil, viaPush: Bool = false,
        session: CallStatisticsReport? = nil, media: CallReport? = nil
    ) {
        self.summary = summary
        self.establishedAt = establishedAt
        self.endedAt = endedAt
        self.viaPush = viaPush
        self.session = session
        self.media = media
    }

    /// The record of an ended call.
    init(of call: Call, applicationKey: String) async {
        let details = await call.details
        self.init(
            summary: CallStatisticsSummary(
                applicationKey: applicationKey, callID: call.id.rawValue, direction: call.direction.rawValue,
                remote: call.remote, startedAt: details.startedAtWallClock.timeIntervalSince1970,
                durationSeconds: details.duration.seconds, endCause: details.endCause?.rawValue ?? "failure",
                error: details.error?.description),
            establishedAt: details.establishedAtWallClock?.timeIntervalSince1970,
            endedAt: details.endedAtWallClock?.timeIntervalSince1970, viaPush: details.viaPush,
            session: details.report, media: await call.mediaReport)
    }

    private enum CodingKeys: String, CodingKey { case establishedAt, endedAt, viaPush, session, media }

    public init(from decoder: any Decoder) throws {
        summary = try CallStatisticsSummary(from: decoder)
        let container = try decoder.container(keyedBy: CodingKeys.self)
        establishedAt = try container.decodeIfPresent(Double.self, forKey: .establishedAt)
        endedAt = try container.decodeIfPresent(Double.self, forKey: .endedAt)
        viaPush = try container.decodeIfPresent(Bool.self, forKey: .viaPush) ?? false
        session = try container.decodeIfPresent(CallStatisticsReport.self, forKey: .session)
        media = try container.decodeIfPresent(CallReport.self, forKey: .media)
    }

    public func encode(to encoder: any Encoder) throws {
        try summary.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(establishedAt, forKey: .establishedAt)
        try container.encodeIfPresent(endedAt, forKey: .endedAt)
        try container.encode(viaPush, forKey: .viaPush)
        try container.encodeIfPresent(session, forKey: .session)
        try container.encodeIfPresent(media, forKey: .media)
    }
}

/// The service's list of a user's last calls.
public struct CallStatisticsListing: Sendable, Codable {
    public var calls: [CallStatisticsRecord]
}

extension RegistrationServiceConnection {
    /// Uploads one call's statistics with the device's credentials (Basic).
    /// - Returns: whether the service stored it (false: it had this call already).
    public func uploadCallStatistics(
        _ record: CallStatisticsRecord, as grant: RegistrationGrant
    )
        async throws(VoiceClientError) -> Bool
    {
        let receipt: CallStatisticsReceipt = try await post(
            "/v1/call-statistics", record, authorization: grant.basicAuthorization)
        return receipt.stored
    }

    /// The user's last calls (at most `limit`, newest first) as the service keeps them.
    public func lastCalls(
        applicationKey: String, limit: Int = 20, as grant: RegistrationGrant
    ) async throws(VoiceClientError) -> [CallStatisticsRecord] {
        let listing: CallStatisticsListing = try await post(
            "/v1/call-statistics/query", CallStatisticsQuery(applicationKey: applicationKey, limit: limit),
            authorization: grant.basicAuthorization)
        return listing.calls
    }
}

extension RegistrationGrant {
    /// The credentials as HTTP Basic's token.
    var basicAuthorization: String { Data("\(username):\(password)".utf8).base64EncodedString() }
}

/// Sends each ended call's statistics to the registration service in the background: a call never waits for it.
/// A record is kept in the client's state store until the service has it, and sent again after a failure
/// (1 s, doubling up to 5 minutes), after a restart of the app once the client has credentials again, and when
/// new credentials replace refused ones. At most ``maximumKept`` records wait; the oldest go first.
actor CallStatisticsUploader {
    static let maximumKept = 100
    static let firstRetry: Duration = .seconds(1)
    static let longestRetry: Duration = .seconds(300)

    private let applicationKey: String
    private let connection: RegistrationServiceConnection
    private let state: ClientState
    private var pending: [CallStatisticsRecord]
    private var grant: RegistrationGrant?
    private var sender: Task<Void, Never>?
    /// Which ``sendPending()`` started the running sender: an older one ending leaves a newer one alone.
    private var senderGeneration = 0
    /// Set by ``stop()``: calls that end afterwards are kept for the next start, not sent.
    private var stopped = false

    init(
        applicationKey: String, connection: RegistrationServiceConnection,
        state: ClientState
    ) {
        self.applicationKey = applicationKey
        self.connection = connection
        self.state = state
        pending = state.callStatistics
    }

    /// Records not yet taken by the service.
    var waiting: [CallStatisticsRecord] { pending }

    /// The device's current credentials: sending starts (again) with them.
    func use(_ grant: RegistrationGrant?) {
        self.grant = grant
        stopped = false
        sendPending()
    }

    /// Queues the statistics of a call that ended.
    func callEnded(_ call: Call) async {
        let record = await CallStatisticsRecord(of: call, applicationKey: applicationKey)
        pending.removeAll { $0.summary.callID == record.summary.callID }
        pending.append(record)
        if pending.count > Self.maximumKept { pending.removeFirst(pending.count - Self.maximumKept) }
        state.saveCallStatistics(pending)
        sendPending()
    }

    /// Stops sending (the client stopped) and waits for an upload under way to give up, so that none runs on the
    /// client's event loop after it shuts down; what waits stays in the state store.
    func stop() async {
        stopped = true
        let running = sender
        sender = nil
        running?.cancel()
        await running?.value
    }

    private func sendPending() {
        guard !stopped, sender == nil, grant != nil, !pending.isEmpty else { return }
        senderGeneration += 1
        let generation = senderGeneration
        sender = Task { await self.drain(generation) }
    }

    private func drain(_ generation: Int) async {
        var delay = Self.firstRetry
        while !Task.isCancelled, let record = pending.first, let grant {
            do {
                _ = try await connection.uploadCallStatistics(record, as: grant)
                forget(record)
                delay = Self.firstRetry
            } catch .registrationRefused(.credentialsRefused) {
                // Expired credentials: wait for the renewed ones (``use(_:)``).
                if self.grant == grant { self.grant = nil }
            } catch .registrationRefused {
                // The service will never take this record (malformed, unknown application): drop it.
                forget(record)
            } catch {
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, Self.longestRetry)
            }
        }
        guard generation == senderGeneration else { return }
        sender = nil
        if !Task.isCancelled { sendPending() }
    }

    private func forget(_ record: CallStatisticsRecord) {
        pending.removeAll { $0.summary.callID == record.summary.callID }
        state.saveCallStatistics(pending)
    }
}
