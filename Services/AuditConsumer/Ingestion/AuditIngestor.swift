import Foundation
import LatchkeyCore
import LatchkeyKafka
import LatchkeyPersistence
import Logging
import ServiceLifecycle
import Synchronization
import Tracing

/// Consumes every Latchkey topic into the audit log: validate, chain and store, then commit.
///
/// A two-stage pipeline: one task reads batches of records (one trip to the poll thread each) and
/// turns them into audit records or dead letters, the other stores each batch in a single
/// PostgreSQL transaction, publishes its dead letters and only then commits the batch's offsets.
/// The stages hand over through a bounded buffer, so at most `maxInFlightBatches` batches are read
/// but uncommitted. A crash anywhere
/// before the commit means the records are read again; storage is idempotent on the event id.
final class AuditIngestor: Service, Sendable {
    /// Test seams: `afterStore` runs after the batch's transaction committed and its dead letters
    /// were delivered, before its offsets are committed — throwing there is a crash at the worst time.
    struct Hooks: Sendable {
        var afterStore: (@Sendable (_ batchNumber: Int, _ outcome: StoreOutcome) async throws -> Void)?
        init(afterStore: (@Sendable (Int, StoreOutcome) async throws -> Void)? = nil) {
            self.afterStore = afterStore
        }
    }

    /// A decoded batch and the offsets to commit once it is stored.
    struct PreparedBatch: Sendable {
        var records: [AuditRecord]
        var rejected: [RejectedRecord]
        /// Next offset to read per partition (last record + 1).
        var offsets: [KafkaTopicPartition: Int64]
        var count: Int
    }

    let consumer: KafkaConsumer
    private let decoder: AuditEventDecoder
    private let store: AuditBatchStore
    private let deadLetters: DeadLetterPublisher
    private let settings: AuditSettings
    private let metrics: AuditMetrics
    private let hooks: Hooks
    private let logger: Logger
    /// Offsets this ingestor committed, per partition (next offset to read).
    private let committed = Mutex<[KafkaTopicPartition: Int64]>([:])

    init(
        consumer: KafkaConsumer, decoder: AuditEventDecoder, store: AuditBatchStore, deadLetters: DeadLetterPublisher,
        settings: AuditSettings, metrics: AuditMetrics, hooks: Hooks = Hooks(), logger: Logger
    ) {
        self.consumer = consumer
        self.decoder = decoder
        self.store = store
        self.deadLetters = deadLetters
        self.settings = settings
        self.metrics = metrics
        self.hooks = hooks
        self.logger = logger
    }

    /// The offsets committed so far by this ingestor.
    var committedOffsets: [KafkaTopicPartition: Int64] {
        committed.withLock { $0 }
    }

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                try await self.runPipeline()
            }
        } catch is CancellationError {
            // Shutdown cancelled a stage mid-await: a clean stop (nothing uncommitted is lost, the batch
            // is read again after restart), not a failure that would make the process exit 1.
        }
    }

    private func runPipeline() async throws {
        let batchSize = settings.batchSize
        let linger = settings.batchLinger
        // In flight: one batch being read and decoded, the decoded ones waiting, one being stored.
        let prepared = BoundedBuffer<PreparedBatch>(capacity: max(1, settings.maxInFlightBatches - 2))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                defer { prepared.finish() }
                while let messages = try await self.consumer.nextBatch(maximum: batchSize, linger: linger) {
                    guard await prepared.append(self.prepare(messages)) else { return }
                }
            }
            group.addTask {
                defer { prepared.finish() }
                var batchNumber = 0
                while let batch = await prepared.next() {
                    batchNumber += 1
                    try await self.process(batch, number: batchNumber)
                }
            }
            // The first stage to end (cancellation, a fatal consumer error, a hook) ends them all.
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    func prepare(_ messages: [KafkaConsumerMessage]) -> PreparedBatch {
        var batch = PreparedBatch(records: [], rejected: [], offsets: [:], count: messages.count)
        for message in messages {
            switch decoder.decode(message) {
            case .success(let record): batch.records.append(record)
            case .failure(let rejected): batch.rejected.append(rejected)
            }
            let next = message.offset + 1
            if next > batch.offsets[message.topicPartition] ?? 0 { batch.offsets[message.topicPartition] = next }
        }
        return batch
    }

    private func process(_ batch: PreparedBatch, number: Int) async throws {
        let started = ContinuousClock.now
        // A consumer span per traced event, in the trace of the operation that produced it, until the batch
        // holding it is stored and committed (or fails). Untraced events start no trace of their own.
        let spans = batch.records.compactMap { record -> (any Span)? in
            guard let traceparent = record.traceparent else { return nil }
            let span = startSpan(
                "\(record.message.topic) process", context: KafkaTraceContext.context(continuing: traceparent),
                ofKind: .consumer)
            span.attributes["messaging.system"] = "kafka"
            span.attributes["messaging.operation.type"] = "process"
            span.attributes["messaging.operation.name"] = "process"
            span.attributes["messaging.destination.name"] = record.message.topic
            span.attributes["messaging.destination.partition.id"] = "\(record.message.partition)"
            span.attributes["messaging.kafka.offset"] = Int(record.message.offset)
            span.attributes["messaging.consumer.group.name"] = settings.groupID
            span.attributes["messaging.message.id"] = record.eventID
            span.attributes["cloudevents.event_type"] = record.eventType.rawValue
            return span
        }
        defer { for span in spans { span.end() } }
        do {
            let outcome = try await storeWithRetry(batch.records)
            let rejected = batch.rejected + outcome.conflicts + outcome.unstorable
            try await publishWithRetry(rejected)
            recordMetrics(outcome, rejected: rejected)
            try await hooks.afterStore?(number, outcome.store)
            await commit(batch.offsets)
            metrics.batchStored(after: ContinuousClock.now - started)
        } catch {
            for span in spans { span.recordError(error) }
            throw error
        }
    }

    /// A store outcome plus records PostgreSQL refused on their own (found by splitting the batch).
    struct IsolatedOutcome: Sendable {
        var store = StoreOutcome()
        var unstorable: [RejectedRecord] = []
        var conflicts: [RejectedRecord] { store.conflicts }
    }

    /// Stores a batch, retrying transient failures until it succeeds or the task is cancelled.
    ///
    /// When PostgreSQL refuses the data itself (a data exception or constraint other than a
    /// duplicate id), the batch is split in halves until the refused records are isolated; they go
    /// to the dead-letter topic instead of blocking their partitions forever.
    private func storeWithRetry(_ records: [AuditRecord]) async throws -> IsolatedOutcome {
        guard !records.isEmpty else { return IsolatedOutcome() }
        var attempt = 0
        while true {
            do {
                return IsolatedOutcome(store: try await store.store(records))
            } catch let error where Self.isDataError(error) {
                metrics.storeFailed()
                guard records.count > 1 else {
                    logger.warning("audit record refused by PostgreSQL", metadata: ["error": "\(error.logDescription)"])
                    return IsolatedOutcome(unstorable: [
                        RejectedRecord(
                            message: records[0].message, reason: .unstorable,
                            detail: "refused by PostgreSQL: \(error.logDescription)")
                    ])
                }
                let half = records.count / 2
                var first = try await storeWithRetry(Array(records[..<half]))
                let second = try await storeWithRetry(Array(records[half...]))
                first.merge(second)
                return first
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                try Task.checkCancellation()
                metrics.storeFailed()
                attempt += 1
                // A concurrent replica stored one of these ids first: the retry will see it at once.
                if error.isUniqueViolation { continue }
                logger.warning(
                    "storing an audit batch failed; retrying",
                    metadata: [
                        "error": "\(error.logDescription)", "attempt": "\(attempt)",
                    ])
                try await Task.sleep(for: Self.backoff(attempt: attempt))
            }
        }
    }

    private func publishWithRetry(_ rejected: [RejectedRecord]) async throws {
        guard !rejected.isEmpty else { return }
        var attempt = 0
        while true {
            do {
                try await deadLetters.publish(rejected)
                return
            } catch {
                try Task.checkCancellation()
                attempt += 1
                logger.warning(
                    "publishing dead letters failed; retrying",
                    metadata: [
                        "error": "\(error.logDescription)", "attempt": "\(attempt)",
                    ])
                try await Task.sleep(for: Self.backoff(attempt: attempt))
            }
        }
    }

    /// Commits offsets that move forward; a failed commit is logged, the records come back later.
    private func commit(_ offsets: [KafkaTopicPartition: Int64]) async {
        let forward = committed.withLock { committed in
            offsets.filter { $0.value > committed[$0.key] ?? 0 }
        }
        guard !forward.isEmpty else { return }
        do {
            try await consumer.commit(offsets: forward)
            committed.withLock { committed in
                for (partition, offset) in forward where offset > committed[partition] ?? 0 {
                    committed[partition] = offset
                }
            }
        } catch {
            // After a rebalance the partition belongs to another member, which re-reads and deduplicates.
            metrics.commitFailed()
            logger.warning("committing audit offsets failed", metadata: ["error": "\(error.logDescription)"])
        }
    }

    private func recordMetrics(_ outcome: IsolatedOutcome, rejected: [RejectedRecord]) {
        let now = Date()
        var perType: [LatchkeyEventType: Int] = [:]
        for stored in outcome.store.stored {
            perType[stored.record.eventType, default: 0] += 1
            metrics.endToEndDelay(seconds: now.timeIntervalSince(stored.record.eventDate))
        }
        for (type, count) in perType { metrics.ingested(type, count: count) }
        metrics.duplicates(outcome.store.duplicates)
        for record in rejected {
            metrics.deadLettered(record.reason)
            logger.notice(
                "event sent to the dead-letter topic",
                metadata: [
                    "reason": "\(record.reason.rawValue)", "detail": "\(record.detail.prefix(300))",
                    "topic": "\(record.message.topic)", "partition": "\(record.message.partition)",
                    "offset": "\(record.message.offset)",
                ])
        }
        for (tenant, length) in outcome.store.chainLengths { metrics.chainLength(tenant: tenant, length: length) }
    }

    /// SQLSTATE classes that mean "this data", not "this moment": 22 data exception, 23 integrity
    /// (except unique violations, which are races), 54 program limit exceeded.
    static func isDataError(_ error: any Error) -> Bool {
        guard let state = error.postgresSQLState, !error.isUniqueViolation else { return false }
        return state.hasPrefix("22") || state.hasPrefix("23") || state.hasPrefix("54")
    }

    static func backoff(attempt: Int) -> Duration {
        let milliseconds = min(5_000, 100 * (1 << min(attempt - 1, 6)))
        return .milliseconds(Int64(Double(milliseconds) * Double.random(in: 0.5...1.0)))
    }
}

extension AuditIngestor.IsolatedOutcome {
    mutating func merge(_ other: AuditIngestor.IsolatedOutcome) {
        store.stored += other.store.stored
        store.duplicates += other.store.duplicates
        store.conflicts += other.store.conflicts
        store.chainLengths.merge(other.store.chainLengths) { max($0, $1) }
        unstorable += other.unstorable
    }
}

extension Duration {
    /// Whole nanoseconds (for swift-metrics timers).
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
