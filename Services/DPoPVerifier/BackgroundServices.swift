import LatchkeyCore
import LatchkeyServer
import Logging
import Prometheus
import ServiceLifecycle
import Synchronization

/// Publishes cache sizes and evictions as gauges/counters at a fixed interval, dropping revocations that
/// no longer matter first.
struct CacheGaugeReporter: Service {
    let replayCache: InMemoryDPoPReplayCache
    let tokenCache: AccessTokenCache?
    let revocations: RevokedClients
    let metrics: SidecarMetrics
    let interval: Duration
    let logger: Logger

    func run() async throws {
        let reportedEvictions = Mutex(0)
        await runPeriodically(every: interval, name: "cache gauge report", logger: logger) {
            let evictions = replayCache.evictions
            let reported = reportedEvictions.withLock { reported in
                defer { reported = evictions }
                return reported
            }
            metrics.replayCacheEvictions.increment(by: Int64(evictions - reported))
            metrics.replayCacheEntries.set(Int64(replayCache.count))
            metrics.tokenCacheEntries.set(Int64(tokenCache?.count ?? 0))
            // Revocations otherwise leave only while others arrive: the gauge shows what is really held.
            await revocations.sweepAll()
            metrics.revokedClients.set(Int64(revocations.count))
        }
    }
}
