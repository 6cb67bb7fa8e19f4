import LatchkeyPersistence
import LatchkeyServer
import Logging
import ServiceLifecycle

/// Deletes expired entries of the shared DPoP replay store once a minute (entries past their window are
/// also reused in place, so this only bounds the table's size).
struct ReplayStoreSweeper: Service {
    let store: PostgresDPoPReplayCache
    let logger: Logger
    var interval: Duration = .seconds(60)

    func run() async throws {
        await runPeriodically(every: interval, name: "DPoP replay sweep", logger: logger) {
            try await store.sweepExpired()
        }
    }
}
