import LatchkeyServer
import Prometheus
import Synchronization

/// The sidecar's Prometheus metrics, registered once per process on the
/// shared registry and served by `/metrics`. Every label value comes from a bounded set.
final class SidecarMetrics: Sendable {
    static let shared = SidecarMetrics(registry: LatchkeyMetrics.registry)

    /// Sub-millisecond resolution: the whole decision normally takes tens of microseconds.
    static let verificationBuckets: [Duration] = [
        .microseconds(25), .microseconds(50), .microseconds(100), .microseconds(250), .microseconds(500),
        .milliseconds(1), .milliseconds(2.5), .milliseconds(5), .milliseconds(10), .milliseconds(50),
        .milliseconds(250),
        .seconds(1),
    ]

    private let registry: PrometheusCollectorRegistry
    private let requestCounters = Mutex<[String: Counter]>([:])
    let verificationDuration: DurationHistogram
    let replayCacheEntries: Gauge
    let replayCacheEvictions: Counter
    let tokenCacheEntries: Gauge
    let revokedClients: Gauge
    let revocationLag: Gauge
    /// Unix time the revocation listener was last seen caught up with every partition: alerts on its age
    /// catch a stalled or disconnected listener even while no revocation happens.
    let revocationCaughtUp: Gauge
    let revocationEventsApplied: Counter
    let revocationEventsMalformed: Counter
    /// The counters of allowed requests, made once: they count every proxied request (no lookup by label).
    let allowedDPoP: Counter
    let allowedBearer: Counter
    let allowedPublicPath: Counter

    init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
        verificationDuration = registry.makeDurationHistogram(
            descriptor: Self.name(
                "verification_duration", "seconds", "Time to decide on a request (token, revocation, proof)"),
            labels: [], buckets: Self.verificationBuckets)
        replayCacheEntries = registry.makeGauge(
            descriptor: Self.name("replay_cache", "entries", "Live (jkt, jti) pairs in the DPoP replay cache"))
        replayCacheEvictions = registry.makeCounter(
            descriptor: Self.name(
                "replay_cache_evictions", "total", "Replay-cache entries dropped before expiry (cache too small)"))
        tokenCacheEntries = registry.makeGauge(
            descriptor: Self.name("token_cache", "entries", "Verified access tokens cached by hash"))
        revokedClients = registry.makeGauge(
            descriptor: Self.name("revoked_clients", "", "Clients in the revoked set"))
        revocationLag = registry.makeGauge(
            descriptor: Self.name("revocation_consumer_lag", "messages", "ClientRevoked records not yet read"))
        revocationCaughtUp = registry.makeGauge(
            descriptor: Self.name(
                "revocation_stream_caught_up_timestamp", "seconds",
                "Unix time the revocation listener last had read every partition up to its high watermark"))
        let events = Self.name("revocation_events", "total", "ClientRevoked records read, by outcome")
        revocationEventsApplied = registry.makeCounter(descriptor: events, labels: [("outcome", "applied")])
        revocationEventsMalformed = registry.makeCounter(descriptor: events, labels: [("outcome", "malformed")])
        allowedDPoP = Self.requestCounter(registry, outcome: "allowed", reason: "dpop")
        allowedBearer = Self.requestCounter(registry, outcome: "allowed", reason: "bearer")
        allowedPublicPath = Self.requestCounter(registry, outcome: "allowed", reason: "public_path")
    }

    private static func name(_ metric: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "latchkey", subsystem: "dpop", metricName: metric, unitName: unit, helpText: help)
    }

    /// Counts one request; `outcome` is allowed / rejected / upstream_error, `reason` a fixed label.
    func countRequest(outcome: String, reason: String) {
        counter(outcome: outcome, reason: reason).increment()
    }

    private func counter(outcome: String, reason: String) -> Counter {
        let key = outcome + "/" + reason
        return requestCounters.withLock { counters in
            if let counter = counters[key] { return counter }
            let counter = Self.requestCounter(registry, outcome: outcome, reason: reason)
            counters[key] = counter
            return counter
        }
    }

    private static func requestCounter(_ registry: PrometheusCollectorRegistry, outcome: String, reason: String)
        -> Counter
    {
        registry.makeCounter(
            descriptor: name("requests", "total", "Requests seen by the sidecar, by outcome and reason"),
            labels: [("outcome", outcome), ("reason", reason)])
    }

    /// Counts one JWKS fetch attempt of a configured tenant.
    func countJWKSRefresh(tenant: String, succeeded: Bool) {
        registry.makeCounter(
            descriptor: Self.name("jwks_refreshes", "total", "JWKS fetches from issuers, by tenant and outcome"),
            labels: [("tenant", tenant), ("outcome", succeeded ? "success" : "failure")]
        ).increment()
    }
}
