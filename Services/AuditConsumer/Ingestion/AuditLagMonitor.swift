import Foundation
import LatchkeyKafka
import LatchkeyServer
import Logging
import ServiceLifecycle
import Synchronization

/// Measures the consumer group's lag on every audit partition (high watermark − committed offset).
///
/// The group's committed offsets are read from the coordinator, so the figure covers every
/// partition, including those assigned to other replicas or to nobody yet. `/readyz` reports
/// `lag` failing while the total exceeds the threshold or no measurement succeeded recently.
final class AuditLagMonitor: Service, Sendable {
    struct Measurement: Sendable {
        var perPartition: [KafkaTopicPartition: Int64]
        var total: Int64
        var at: ContinuousClock.Instant
    }

    private let consumer: KafkaConsumer
    private let admin: KafkaAdmin
    private let topics: [String]
    private let interval: Duration
    private let maximumLag: Int64
    private let metrics: AuditMetrics
    private let logger: Logger
    private let latest = Mutex<Measurement?>(nil)

    init(
        consumer: KafkaConsumer, admin: KafkaAdmin, topics: [String], interval: Duration, maximumLag: Int64,
        metrics: AuditMetrics, logger: Logger
    ) {
        self.consumer = consumer
        self.admin = admin
        self.topics = topics
        self.interval = interval
        self.maximumLag = maximumLag
        self.metrics = metrics
        self.logger = logger
    }

    var lastMeasurement: Measurement? { latest.withLock { $0 } }

    /// Lag known, recent (three intervals) and within the threshold.
    var isCaughtUp: Bool {
        guard let measurement = lastMeasurement else { return false }
        return ContinuousClock.now - measurement.at <= interval * 3 && measurement.total <= maximumLag
    }

    func run() async throws {
        await runPeriodically(every: self.interval, name: "audit consumer lag measurement", logger: logger) {
            _ = try await self.measure()
        }
    }

    /// One measurement over every partition of the audit topics that exists.
    @discardableResult
    func measure() async throws -> Measurement {
        let metadata = try await admin.metadata(timeout: .seconds(5))
        var partitions: [KafkaTopicPartition] = []
        for topic in topics {
            guard let found = metadata.topic(named: topic), found.error == nil else { continue }
            partitions += found.partitions.map { KafkaTopicPartition(topic: topic, partition: $0.id) }
        }
        let committed = try await consumer.committedOffsets(for: partitions, timeout: .seconds(5))
        var perPartition: [KafkaTopicPartition: Int64] = [:]
        for partition in partitions {
            let (low, high) = try await consumer.watermarks(for: partition, timeout: .seconds(5))
            // Without a commit the group starts at the beginning of what the topic still holds.
            let lag = max(0, high - max(low, committed[partition] ?? low))
            perPartition[partition] = lag
            metrics.lag(partition, lag)
        }
        let total = perPartition.values.reduce(0, +)
        metrics.totalLag(total)
        let measurement = Measurement(perPartition: perPartition, total: total, at: .now)
        latest.withLock { $0 = measurement }
        return measurement
    }
}
