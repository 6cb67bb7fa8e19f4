import Foundation
import Logging
import Metrics
import PostgresNIO
import ServiceLifecycle

/// Publishes outbox rows to Kafka and marks them sent only after their delivery reports.
///
/// Woken by PostgreSQL `LISTEN`/`NOTIFY` when rows are inserted, so an idle relay costs a statement or
/// two a minute instead of a poll every few milliseconds.
///
/// Safe with several replicas: claims are taken under a short transaction-scoped advisory lock
/// with `FOR UPDATE SKIP LOCKED`, and a row is only claimed when no earlier unsent row with the
/// same key is held by another relay or waiting out a backoff, which keeps per-key order.
public final class OutboxRelay: Service, Sendable {
    /// The channel a trigger on `outbox` notifies, once per inserting statement, when its transaction commits.
    public static let notificationChannel = "latchkey_outbox"

    public let relayID: String
    private let database: Database
    private let publisher: any OutboxPublisher
    private let configuration: OutboxRelayConfiguration
    private let logger: Logger
    private let metrics = OutboxMetrics()
    private let wakeup: RelayWakeup

    /// `database` must use the cross-tenant role (`latchkey_system`). `wakeup` is also given to the
    /// process's ``OutboxWriter``, which signals it for rows it writes without a notification.
    public init(
        database: Database, publisher: any OutboxPublisher, configuration: OutboxRelayConfiguration = .init(),
        relayID: String = "relay-\(UUID().uuidString.lowercased().prefix(8))", wakeup: RelayWakeup = RelayWakeup(),
        logger: Logger
    ) {
        self.database = database
        self.wakeup = wakeup
        self.publisher = publisher
        self.configuration = configuration
        self.relayID = relayID
        var logger = logger
        logger[metadataKey: "relay"] = .string(relayID)
        self.logger = logger
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.listen() }
                group.addTask { await self.relayLoop() }
                await group.next()
                group.cancelAll()
            }
        }
    }

    /// Relays until cancelled: round after round while there is work, then waits for a notification
    /// of an insert, for the earliest retry backoff to end, or for the next maintenance. A maintenance
    /// that finds no unsent row needs no claim round, so an idle relay issues one statement per
    /// `maintenanceInterval`.
    private func relayLoop() async {
        var lastMaintenance = ContinuousClock.now - configuration.maintenanceInterval
        var retriesPending = false
        var mayHaveWork = true
        while !Task.isCancelled {
            do {
                if ContinuousClock.now - lastMaintenance >= configuration.maintenanceInterval {
                    let backlog = try await maintain()
                    lastMaintenance = .now
                    mayHaveWork = mayHaveWork || backlog > 0
                }
                if mayHaveWork {
                    let outcome = try await drain()
                    if outcome.failed > 0 { retriesPending = true }
                    if outcome.handled > 0 { continue }
                }
                var wait = lastMaintenance + configuration.maintenanceInterval - ContinuousClock.now
                if retriesPending {
                    // Rows in backoff are due before any notification announces them.
                    if let due = try await nextRetryDue() {
                        wait = min(wait, max(due, configuration.retryPollInterval))
                    } else {
                        retriesPending = false
                    }
                }
                mayHaveWork = await wakeup.wait(upTo: wait) || retriesPending
            } catch is CancellationError {
                return
            } catch {
                logger.warning("outbox relay round failed", metadata: ["error": "\(error.logDescription)"])
                mayHaveWork = true
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// Holds one connection listening on ``notificationChannel``; every notification (and every
    /// (re)start of listening, which may have missed some) wakes the relay loop.
    private func listen() async {
        while !Task.isCancelled {
            do {
                try await database.client.withConnection { connection in
                    try await connection.listen(on: Self.notificationChannel) { notifications in
                        wakeup.signal()
                        for try await _ in notifications { wakeup.signal() }
                    }
                }
            } catch is CancellationError {
                return
            } catch {
                guard !Task.isCancelled else { return }
                logger.warning(
                    "outbox relay lost its notification connection; new rows wait for the fallback poll until it is back",
                    metadata: ["error": "\(error.logDescription)"])
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    /// Seconds until the earliest unsent row waiting out a backoff is due; nil when none waits.
    private func nextRetryDue() async throws -> Duration? {
        let rows = try await database.client.query(
            """
            SELECT extract(epoch FROM min(available_at) - clock_timestamp())::float8
            FROM outbox WHERE sent_at IS NULL AND available_at > clock_timestamp()
            """, logger: logger)
        for try await seconds in rows.decode(Double?.self) {
            return seconds.map { .milliseconds(Int64(max(0, $0) * 1_000)) }
        }
        return nil
    }

    /// Relays until no row is claimable, with up to two batches in flight: the next batch is claimed
    /// and handed to the publisher while the previous one's deliveries are awaited and marked, so a row
    /// written during a round waits for the next claim rather than for the whole round. Claims are at least
    /// `claimInterval` apart unless the last one was full. A notification
    /// that arrives while a batch is in flight starts the next claim at once. Returns how many rows
    /// were claimed and how many of them failed to publish.
    ///
    /// Batches are handed over in claim order, so records of one key reach their partition in order.
    func drain() async throws -> (handled: Int, failed: Int) {
        try await withThrowingTaskGroup(of: DrainStep.self) { group in
            var handled = 0
            var failed = 0
            // The sequences of each batch not yet settled, by its first sequence: rows this relay has
            // claimed and is publishing, which the next claim must skip.
            var inFlight: [Int64: [Int64]] = [:]
            var waitingForWakeup = false
            func next() async throws {
                switch try await group.next() {
                case .settled(let settled):
                    inFlight[settled.firstSequence] = nil
                    failed += settled.failed
                case .woken: waitingForWakeup = false
                case nil: break
                }
            }
            var claimFailure: (any Error)?
            var lastClaim: (at: ContinuousClock.Instant, full: Bool)?
            while true {
                if let lastClaim, !lastClaim.full {
                    try? await Task.sleep(until: lastClaim.at + configuration.claimInterval, clock: .continuous)
                    if Task.isCancelled {
                        claimFailure = CancellationError()
                        break
                    }
                }
                let batch: [OutboxMessage]
                do {
                    let start = ContinuousClock.now
                    batch = try await claim(excluding: inFlight.values.flatMap { $0 })
                    lastClaim = (start, batch.count >= configuration.batchSize)
                } catch {
                    claimFailure = error
                    break
                }
                guard let first = batch.first else {
                    if inFlight.isEmpty { break }
                    // Nothing claimable now: go on when a batch settles or a new row is announced.
                    if !waitingForWakeup {
                        waitingForWakeup = true
                        group.addTask {
                            _ = await self.wakeup.wait()
                            return .woken
                        }
                    }
                    try await next()
                    continue
                }
                handled += batch.count
                inFlight[first.sequence] = batch.map(\.sequence)
                await withCheckedContinuation { (handedOver: CheckedContinuation<Void, Never>) in
                    group.addTask {
                        .settled(try await self.publishAndSettle(batch, whenHandedOver: { handedOver.resume() }))
                    }
                }
                while inFlight.count >= 2 { try await next() }
            }
            // Rows already handed over are marked even when a claim failed, so they are not sent twice.
            while !inFlight.isEmpty { try await next() }
            if waitingForWakeup { wakeup.signal() }  // ends the pending wait; at worst one spare claim later
            if let claimFailure { throw claimFailure }
            return (handled, failed)
        }
    }

    /// What a child task of ``drain()`` finished with.
    enum DrainStep: Sendable {
        case settled(SettledBatch)
        case woken
    }

    /// What settling one batch found.
    struct SettledBatch: Sendable {
        let firstSequence: Int64
        let failed: Int
    }

    /// Publishes `batch`, then marks delivered rows sent and schedules failed ones for a retry.
    /// `whenHandedOver` runs once every record is with the publisher, before deliveries are awaited.
    private func publishAndSettle(
        _ batch: [OutboxMessage], whenHandedOver: @escaping @Sendable () -> Void
    ) async throws -> SettledBatch {
        let results = await publisher.publish(batch, whenHandedOver: whenHandedOver)
        var delivered: [Int64] = []
        var failed: [(OutboxMessage, String)] = []
        for (message, result) in zip(batch, results) {
            switch result {
            case .success: delivered.append(message.sequence)
            case .failure(let error): failed.append((message, "\(error)"))
            }
        }
        if !delivered.isEmpty { try await markSent(delivered) }
        if !failed.isEmpty { try await scheduleRetry(failed) }
        return SettledBatch(firstSequence: batch[0].sequence, failed: failed.count)
    }

    /// Claims the next batch, skipping `excluded` (rows this relay is still publishing).
    private func claim(excluding excluded: [Int64]) async throws -> [OutboxMessage] {
        let rows = try await database.client.execute(
            ClaimOutboxBatchStatement(
                relayID: relayID, excluded: excluded, limit: configuration.batchSize,
                lease: Self.seconds(configuration.leaseDuration)),
            logger: logger)
        var messages: [OutboxMessage] = []
        for try await message in rows { messages.append(message) }
        return messages.sorted { $0.sequence < $1.sequence }
    }

    private func markSent(_ sequences: [Int64]) async throws {
        // One statement is its own transaction: no BEGIN and COMMIT round trips around it.
        var latencies: [Double] = []
        for try await latency in try await database.client.execute(
            MarkOutboxSentStatement(sequences: sequences), logger: logger)
        {
            latencies.append(latency)
        }
        let marked = latencies.count
        metrics.published.increment(by: marked)
        for latency in latencies { metrics.publishLatency.recordNanoseconds(Int64(latency * 1e9)) }
        // Another relay whose lease had lapsed delivered these too: same event ids, counted, not hidden.
        let duplicates = sequences.count - marked
        if duplicates > 0 {
            metrics.duplicates.increment(by: duplicates)
            logger.info("outbox rows were already marked sent by another relay", metadata: ["count": "\(duplicates)"])
        }
    }

    private func scheduleRetry(_ failures: [(OutboxMessage, String)]) async throws {
        metrics.failures.increment(by: failures.count)
        logger.warning(
            "outbox deliveries failed; will retry",
            metadata: [
                "count": "\(failures.count)", "error": "\(failures[0].1)",
            ])
        let sequences = failures.map(\.0.sequence)
        let delays = failures.map { Self.seconds(backoff(attempt: $0.0.attempts + 1)) }
        let errors = failures.map { String($0.1.prefix(500)) }
        try await database.client.query(
            """
            UPDATE outbox SET attempts = attempts + 1, last_error = f.error, claimed_by = NULL, claimed_until = NULL,
                              available_at = clock_timestamp() + make_interval(secs => f.delay)
            FROM unnest(\(sequences)::bigint[], \(delays)::float8[], \(errors)::text[]) AS f(seq, delay, error)
            WHERE outbox.seq = f.seq AND outbox.claimed_by = \(relayID)
            """, logger: logger)
    }

    /// Capped exponential backoff with jitter in [50%, 100%] so retrying relays do not move in lockstep.
    func backoff(attempt: Int) -> Duration {
        let base = Self.seconds(configuration.initialBackoff) * pow(2, Double(min(attempt - 1, 20)))
        let capped = min(base, Self.seconds(configuration.maximumBackoff))
        return .milliseconds(Int64(capped * Double.random(in: 0.5...1.0) * 1_000))
    }

    /// Purges old sent rows and refreshes the backlog gauges, in one statement (it runs while idle too);
    /// returns the number of unsent rows.
    private func maintain() async throws -> Int64 {
        let retention = Self.seconds(configuration.retention)
        let rows = try await database.client.query(
            """
            WITH purged AS (
                DELETE FROM outbox WHERE sent_at < clock_timestamp() - make_interval(secs => \(retention)) RETURNING 1)
            SELECT count(*)::int8, coalesce(extract(epoch FROM clock_timestamp() - min(created_at)), 0)::float8
            FROM outbox WHERE sent_at IS NULL
            """, logger: logger)
        var backlog: Int64 = 0
        var oldest = 0.0
        for try await (count, age) in rows.decode((Int64, Double).self) { (backlog, oldest) = (count, age) }
        metrics.backlog.record(backlog)
        metrics.oldestUnsentAge.record(oldest)
        return backlog
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

/// The relay's metrics (Prometheus names under `latchkey_outbox_`).
struct OutboxMetrics: Sendable {
    let published = Counter(label: "latchkey_outbox_published_total")
    let failures = Counter(label: "latchkey_outbox_publish_failures_total")
    let duplicates = Counter(label: "latchkey_outbox_duplicate_publishes_total")
    let backlog = Gauge(label: "latchkey_outbox_backlog")
    let oldestUnsentAge = Gauge(label: "latchkey_outbox_oldest_unsent_age_seconds")
    let publishLatency = Metrics.Timer(label: "latchkey_outbox_publish_latency_seconds")
}
