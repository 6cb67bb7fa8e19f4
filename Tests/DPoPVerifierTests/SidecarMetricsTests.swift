import Foundation
import LatchkeyCore
import LatchkeyServer
import LatchkeyTestSupport
import Prometheus
import ServiceLifecycle
import Testing

@testable import DPoPVerifier

/// The gauges and counters on a private registry (the process-wide one is shared by parallel tests).
@Suite struct SidecarMetricsTests {
    func value(_ text: String, _ line: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(line + " ") }.flatMap {
            Double($0.split(separator: " ").last ?? "")
        }
    }

    @Test func reporterPublishesCacheSizesAndEvictions() async throws {
        let registry = PrometheusCollectorRegistry()
        let metrics = SidecarMetrics(registry: registry)
        let clock = FixedWallClock(unixSeconds: 1_000)
        let replay = InMemoryDPoPReplayCache(maxEntries: 3, clock: clock)
        for index in 0..<5 { _ = await replay.insertIfAbsent(jkt: "k", jti: "\(index)", expiresAt: 1_060) }
        let revocations = RevokedClients(loaded: true)
        revocations.insert(
            tenant: TenantSlug(rawValue: "acme")!, clientID: "c1", revokedAt: Date(), tokensExpireAt: nil)
        let reporter = CacheGaugeReporter(
            replayCache: replay, tokenCache: AccessTokenCache(maxEntries: 4), revocations: revocations,
            metrics: metrics, interval: .milliseconds(10), logger: TestServiceSettings.logger)
        let group = ServiceGroup(configuration: .init(services: [reporter], logger: TestServiceSettings.logger))
        let task = Task { try await group.run() }
        try await Task.sleep(for: .milliseconds(100))
        await group.triggerGracefulShutdown()
        try await task.value
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        let text = String(decoding: buffer, as: UTF8.self)
        #expect(value(text, "latchkey_dpop_replay_cache_entries") == 3)
        #expect(value(text, "latchkey_dpop_replay_cache_evictions_total") == 2)
        #expect(value(text, "latchkey_dpop_token_cache_entries") == 0)
        #expect(value(text, "latchkey_dpop_revoked_clients") == 1)

        metrics.countRequest(outcome: "rejected", reason: "dpop_replay")
        metrics.countRequest(outcome: "rejected", reason: "dpop_replay")
        metrics.countJWKSRefresh(tenant: "acme", succeeded: false)
        buffer.removeAll()
        registry.emit(into: &buffer)
        let after = String(decoding: buffer, as: UTF8.self)
        #expect(value(after, #"latchkey_dpop_requests_total{outcome="rejected",reason="dpop_replay"}"#) == 2)
        #expect(value(after, #"latchkey_dpop_jwks_refreshes_total{tenant="acme",outcome="failure"}"#) == 1)
    }
}
