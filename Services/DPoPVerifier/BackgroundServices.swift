import AsyncHTTPClient
import LatchkeyCore
import LatchkeyServer
import Prometheus
import ServiceLifecycle

/// Keeps the shared HTTP client alive for the application's lifetime and shuts it down after the
/// server has stopped (services stop in reverse order).
struct HTTPClientService: Service {
    let client: HTTPClient

    func run() async throws {
        try? await gracefulShutdown()
        try await client.shutdown()
    }
}

/// Publishes cache sizes and evictions as gauges/counters at a fixed interval, dropping revocations that
/// no longer matter first.
struct CacheGaugeReporter: Service {
    let replayCache: InMemoryDPoPReplayCache
    let tokenCache: AccessTokenCache?
    let revocations: RevokedClients
    let metrics: SidecarMetrics
    let interval: Duration

    func run() async throws {
        try? await cancelWhenGracefulShutdown {
            var reportedEvictions = 0
            while !Task.isCancelled {
                let evictions = replayCache.evictions
                metrics.replayCacheEvictions.increment(by: Int64(evictions - reportedEvictions))
                reportedEvictions = evictions
                metrics.replayCacheEntries.set(Int64(replayCache.count))
                metrics.tokenCacheEntries.set(Int64(tokenCache?.count ?? 0))
                // Revocations otherwise leave only while others arrive: the gauge shows what is really held.
                revocations.sweep()
                metrics.revokedClients.set(Int64(revocations.count))
                try await Task.sleep(for: interval)
            }
        }
    }
}
