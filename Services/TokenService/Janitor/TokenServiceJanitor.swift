import LatchkeyPersistence
import LatchkeyServer
import Logging
import Metrics
import PostgresNIO
import ServiceLifecycle

/// Deletes what the token service no longer needs (expired codes, access-token records, refresh families,
/// ended sessions, stale sign-in counters) across tenants with the system role. Each statement deletes at
/// most `batchSize` rows, so no run holds long locks or bloats one transaction, and a run stops a table
/// after `maximumBatches`, leaving the rest for the next run. Replicas may run it at once: a row deleted by
/// one is simply not found by the other.
struct TokenServiceJanitor: Service {
    let systemDatabase: Database
    let interval: Duration
    let batchSize: Int
    let maximumBatches: Int
    var tasks: [JanitorTask] = JanitorTask.all

    private var logger: Logger { systemDatabase.logger }

    func run() async throws {
        // The first run waits one interval: replicas starting together (a rollout) do not all sweep at once,
        // and a short-lived process never sweeps rows another one is still working with.
        await runPeriodically(every: interval, name: "token-service janitor", logger: logger, startingAfter: interval) {
            let deleted = try await runOnce()
            let total = deleted.values.reduce(0, +)
            if total > 0 {
                logger.info(
                    "janitor deleted expired rows",
                    metadata: deleted.filter { $0.value > 0 }.mapValues { .stringConvertible($0) })
            }
        }
    }

    /// One run over every table; returns how many rows it deleted per table.
    @discardableResult
    func runOnce() async throws -> [String: Int] {
        let started = ContinuousClock.now
        defer {
            let (seconds, attoseconds) = (ContinuousClock.now - started).components
            Self.runDuration.recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        }
        var deleted: [String: Int] = [:]
        do {
            for task in tasks {
                deleted[task.table] = try await sweep(task)
            }
        } catch {
            Self.failures.increment()
            throw error
        }
        return deleted
    }

    private func sweep(_ task: JanitorTask) async throws -> Int {
        var total = 0
        for _ in 0..<maximumBatches {
            try Task.checkCancellation()
            // The table and condition are constants of JanitorTask; only the limit is a parameter.
            var query = PostgresQuery(
                unsafeSQL: """
                    DELETE FROM \(task.table) WHERE ctid = ANY(ARRAY(
                        SELECT ctid FROM \(task.table) WHERE \(task.condition) LIMIT $1))
                    RETURNING 1
                    """)
            query.binds.append(Int64(batchSize), context: .default)
            let rows = try await systemDatabase.client.query(query, logger: logger)
            var count = 0
            for try await _ in rows.decode(Int.self) { count += 1 }
            total += count
            Counter(label: "latchkey_janitor_deleted_total", dimensions: [("table", task.table)])
                .increment(by: Int64(count))
            if count < batchSize { break }
        }
        return total
    }

    static let runDuration = Metrics.Timer(label: "latchkey_janitor_run_duration_seconds")
    static let failures = Counter(label: "latchkey_janitor_failures_total")
}
