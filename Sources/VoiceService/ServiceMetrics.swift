import Foundation
import Prometheus

/// The registration service's Prometheus metrics, served on `/metrics` in the text exposition format: requests by
/// endpoint and HTTP status with their latency, call statistics stored, and pushes by outcome (for the push
/// sender running in the same process). Each service has its own registry, so several in one process (the tests'
/// two nodes) count apart.
public final class ServiceMetrics: Sendable {
    public let registry = PrometheusCollectorRegistry()
    /// The endpoints counted by name; any other path counts as `other`, so a scan of random paths adds no series.
    static let endpoints: Set<String> = [
        "/v1/registrations", "/v1/push-data", "/v1/call-statistics", "/v1/call-statistics/query", "/metrics",
        "/health"
    ]
    /// Latency buckets from 1 ms to 10 s (a request waits at most 5 s for the database).
    static let latencyBuckets: [Duration] = [
        .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25),
        .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2),
        .seconds(5), .seconds(10)
    ]

    public init() {
        // The series exist from the start (at zero), so a scrape before the first request shows them.
        _ = callStatistics
        _ = databaseUp
    }

    /// Counts one answered request and its time from the request's end to the answer.
    public func request(path: String, status: Int, duration: Duration) {
        let endpoint = Self.endpoint(path)
        registry.makeCounter(
            descriptor: MetricNameDescriptor(
                namespace: "voiceengine", subsystem: "registration", metricName: "requests", unitName: "total",
                helpText: "HTTP requests answered, by endpoint and status"),
            labels: [("endpoint", endpoint), ("status", String(status))]
        ).increment()
        registry.makeDurationHistogram(
            descriptor: MetricNameDescriptor(
                namespace: "voiceengine", subsystem: "registration", metricName: "request_duration",
                unitName: "seconds", helpText: "Time to answer an HTTP request, by endpoint"),
            labels: [("endpoint", endpoint)], buckets: Self.latencyBuckets
        ).record(duration)
    }

    /// Counts one managed push to a device: `outcome` is ``ManagedPushDispatcher``'s name for it (`delivered`,
    /// `deviceGone`, `refused`, `notSent`); `platform` `apns` or `fcm`.
    public func push(platform: String, outcome: String) {
        registry.makeCounter(
            descriptor: MetricNameDescriptor(
                namespace: "voiceengine", subsystem: "push", metricName: "sent", unitName: "total",
                helpText: "Pushes sent, by platform and outcome"),
            labels: [("platform", platform), ("outcome", outcome)]
        ).increment()
    }

    func callStatisticsStored() { callStatistics.increment() }

    /// Whether the last health check reached the database (1) or not (0).
    func databaseReachable(_ up: Bool) { databaseUp.set(to: up ? 1.0 : 0.0) }

    /// Every metric in the Prometheus text format.
    public func exposition() -> String { registry.emitToString() }

    static func endpoint(_ path: String) -> String {
        let plain = path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? path
        return endpoints.contains(plain) ? plain : "other"
    }

    private var callStatistics: Counter {
        registry.makeCounter(
            descriptor: MetricNameDescriptor(
                namespace: "voiceengine", subsystem: "registration", metricName: "call_statistics_stored",
                unitName: "total", helpText: "Call statistics reports stored (repeated uploads not counted)"))
    }

    private var databaseUp: Gauge {
        registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "voiceengine", subsystem: "registration", metricName: "database", unitName: "up",
                helpText: "1 when the last health check reached the database, else 0"))
    }
}

extension RegistrationService {
    /// `/health`: 200 when the database answers a query within the store's timeout, else 503 with the reason.
    public func health() async -> (status: Int, body: Data) {
        do {
            try await store.ping()
            metrics.databaseReachable(true)
            return (200, Data(#"{"status":"ok","database":"ok"}"#.utf8))
        } catch {
            metrics.databaseReachable(false)
            return (503, Self.encoded(["status": "unavailable", "database": error.description]))
        }
    }
}

extension RegistrationStore {
    /// One round trip to the database (`SELECT 1`).
    public func ping() async throws(RegistrationStoreError) {
        _ = try await storeOperation("reach the database") { [self] in try await single(Int.self, "SELECT 1") }
    }
}
