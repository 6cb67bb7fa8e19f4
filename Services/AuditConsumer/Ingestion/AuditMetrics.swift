import CoreMetrics
import Foundation
import LatchkeyCore
import LatchkeyKafka
import Metrics
import Synchronization

/// The audit consumer's metrics (Prometheus names under `latchkey_audit_`).
///
/// Create it after `LatchkeyMetrics.bootstrap()`, or the handlers bind to the no-op backend.
final class AuditMetrics: Sendable {
    private let ingestedByType: [LatchkeyEventType: Counter]
    private let duplicates = Counter(label: "latchkey_audit_duplicates_total")
    private let batches = Counter(label: "latchkey_audit_batches_total")
    private let storeFailures = Counter(label: "latchkey_audit_store_failures_total")
    private let commitFailures = Counter(label: "latchkey_audit_commit_failures_total")
    /// Event `time` → row committed, per stored event.
    private let endToEndDelay = Metrics.Timer(label: "latchkey_audit_end_to_end_delay_seconds")
    private let batchDuration = Metrics.Timer(label: "latchkey_audit_batch_duration_seconds")
    private let deadLettered = Mutex<[DeadLetterReason: Counter]>([:])
    private let chainLengths = Mutex<[String: Gauge]>([:])
    private let lagGauges = Mutex<[KafkaTopicPartition: Gauge]>([:])
    private let totalLag = Gauge(label: "latchkey_audit_consumer_total_lag_messages")

    init() {
        var counters: [LatchkeyEventType: Counter] = [:]
        for type in LatchkeyEventType.allCases {
            counters[type] = Counter(
                label: "latchkey_audit_events_ingested_total", dimensions: [("type", type.rawValue)])
        }
        ingestedByType = counters
    }

    func ingested(_ type: LatchkeyEventType, count: Int = 1) {
        ingestedByType[type]?.increment(by: count)
    }

    func duplicates(_ count: Int) {
        if count > 0 { duplicates.increment(by: count) }
    }

    func batchStored(after duration: Duration) {
        batches.increment()
        batchDuration.recordNanoseconds(duration.nanoseconds)
    }

    func storeFailed() {
        storeFailures.increment()
    }

    func commitFailed() {
        commitFailures.increment()
    }

    /// Event time to stored, in seconds (negative values from clock skew count as zero).
    func endToEndDelay(seconds: Double) {
        endToEndDelay.recordNanoseconds(Int64(max(0, seconds) * 1e9))
    }

    func totalLag(_ value: Int64) {
        totalLag.record(value)
    }

    func deadLettered(_ reason: DeadLetterReason, count: Int = 1) {
        let counter = deadLettered.withLock { counters in
            if let counter = counters[reason] { return counter }
            let counter = Counter(label: "latchkey_audit_dead_letter_total", dimensions: [("reason", reason.rawValue)])
            counters[reason] = counter
            return counter
        }
        counter.increment(by: count)
    }

    /// Records the head sequence of a tenant's chain (one series per tenant).
    func chainLength(tenant: String, length: Int64) {
        let gauge = chainLengths.withLock { gauges in
            if let gauge = gauges[tenant] { return gauge }
            let gauge = Gauge(label: "latchkey_audit_chain_length", dimensions: [("tenant", tenant)])
            gauges[tenant] = gauge
            return gauge
        }
        gauge.record(length)
    }

    func lag(_ partition: KafkaTopicPartition, _ value: Int64) {
        let gauge = lagGauges.withLock { gauges in
            if let gauge = gauges[partition] { return gauge }
            let gauge = Gauge(
                label: "latchkey_audit_consumer_lag_messages",
                dimensions: [("topic", partition.topic), ("partition", String(partition.partition))])
            gauges[partition] = gauge
            return gauge
        }
        gauge.record(value)
    }
}
