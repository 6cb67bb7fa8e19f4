import Foundation
import Hummingbird
import HummingbirdTesting
import LatchkeyCore
import LatchkeyKafka
import LatchkeyPersistence
import LatchkeyTestSupport
import Logging
import PostgresNIO
import Testing

@testable import AuditConsumer

/// Embedded Kafka with every audit topic, the audit service wired for fast tests, and waits.
enum AuditTest {
    static let issuerBase = "https://issuer.audit.test"
    static let partitions = 4

    /// librdkafka is chatty while groups form; set LATCHKEY_AUDIT_TEST_LOG=debug to see it.
    static let logger: Logger = {
        var logger = Logger(label: "test.audit")
        let requested = ProcessInfo.processInfo.environment["LATCHKEY_AUDIT_TEST_LOG"].flatMap(
            Logger.Level.init(rawValue:))
        logger.logLevel = requested ?? .error
        return logger
    }()

    /// A fresh cluster with every event topic (4 partitions) and the dead-letter topic; shut down afterwards.
    static func withCluster<T: Sendable>(_ body: (EmbeddedKafkaCluster) async throws -> T) async throws -> T {
        try await withEmbeddedKafkaCluster(brokers: 1, logger: logger) { cluster in
            for topic in LatchkeyEventType.allTopics() {
                try cluster.createTopic(topic, partitions: partitions)
            }
            try cluster.createTopic(
                DeadLetterPublisher.topic(prefix: LatchkeyEventType.defaultTopicPrefix), partitions: 1)
            return try await body(cluster)
        }
    }

    /// Audit settings for tests: quick group re-formation (the mock coordinator waits
    /// `session.timeout.ms` − 1 s after a member leaves) and frequent lag measurement.
    static func settings(platform: String? = nil, batchSize: Int = 500, readyMaximumLag: Int64 = 10_000)
        -> AuditSettings
    {
        var audit = AuditSettings()
        audit.batchSize = batchSize
        audit.sessionTimeoutMilliseconds = 4_500
        audit.heartbeatIntervalMilliseconds = 500
        audit.lagInterval = .seconds(1)
        audit.readyMaximumLag = readyMaximumLag
        audit.tokenServicePublicURL = issuerBase
        audit.platformTenant = platform.flatMap(TenantSlug.init(rawValue:))
        return audit
    }

    static func makeService(
        cluster: EmbeddedKafkaCluster, audit: AuditSettings = settings(), hooks: AuditIngestor.Hooks = .init()
    ) async throws -> AuditService {
        let settings = try await TestServiceSettings.make(.auditConsumer, kafkaBrokers: cluster.bootstrapServers)
        return try AuditService(settings: settings, audit: audit, logger: logger, hooks: hooks)
    }

    /// Runs a producer around `body`.
    static func withProducer<T: Sendable>(
        _ cluster: EmbeddedKafkaCluster, _ body: (KafkaProducer) async throws -> T
    ) async throws -> T {
        let producer = try KafkaProducer(
            configuration: KafkaTestSupport.configuration(cluster, clientID: "audit-test-producer"), logger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await producer.run() }
            defer { group.cancelAll() }
            return try await body(producer)
        }
    }

    /// Sends the records concurrently (each key keeps its order: librdkafka enqueues in call order
    /// per partition only when sends are issued in order, so records of one key go out one by one).
    @discardableResult
    static func send(_ events: [EncodedEvent], with producer: KafkaProducer) async throws -> [KafkaDeliveryReport] {
        // Group by key so the per-key (per-client) order of the input is the order on the partition.
        var byKey: [String: [(Int, EncodedEvent)]] = [:]
        for (index, event) in events.enumerated() { byKey[event.key, default: []].append((index, event)) }
        return try await withThrowingTaskGroup(of: [(Int, KafkaDeliveryReport)].self) { group in
            for chain in byKey.values {
                group.addTask {
                    var reports: [(Int, KafkaDeliveryReport)] = []
                    for (index, event) in chain {
                        reports.append((index, try await producer.send(event.outgoing)))
                    }
                    return reports
                }
            }
            var reports = [KafkaDeliveryReport?](repeating: nil, count: events.count)
            for try await chain in group {
                for (index, report) in chain { reports[index] = report }
            }
            return reports.compactMap { $0 }
        }
    }

    /// Sends every record at once (no order between records), for bulk loads.
    @discardableResult
    static func sendConcurrently(_ events: [EncodedEvent], with producer: KafkaProducer) async throws
        -> [KafkaDeliveryReport]
    {
        try await withThrowingTaskGroup(of: KafkaDeliveryReport.self) { group in
            for event in events {
                group.addTask { try await producer.send(event.outgoing) }
            }
            var reports: [KafkaDeliveryReport] = []
            for try await report in group { reports.append(report) }
            return reports
        }
    }

    /// Waits until the group's committed offsets are past every delivered record.
    static func waitUntilCommitted(
        _ service: AuditService, _ reports: [KafkaDeliveryReport], timeout: Duration = .seconds(60)
    ) async throws {
        var targets: [KafkaTopicPartition: Int64] = [:]
        for report in reports {
            let partition = KafkaTopicPartition(topic: report.topic, partition: report.partition)
            targets[partition] = max(targets[partition] ?? 0, report.offset + 1)
        }
        var committed: [KafkaTopicPartition: Int64] = [:]
        try await eventually(
            "the ingestor to commit \(targets.values.reduce(0, +)) records (committed \(committed.values.reduce(0, +)))",
            within: timeout
        ) {
            // The group's offsets, not only this ingestor's: an earlier member may have committed some.
            committed = try await service.consumer.committedOffsets(for: Array(targets.keys), timeout: .seconds(5))
            return targets.allSatisfy { committed[$0.key] ?? 0 >= $0.value }
        }
    }

    /// Rows stored for these tenants (read as the cross-tenant role).
    static func storedCount(tenants: [String]) async throws -> Int {
        try await TestDatabase.withSystem { try await storedCount(tenants: tenants, in: $0) }
    }

    static func storedCount(tenants: [String], in database: Database) async throws -> Int {
        let rows = try await database.client.query(
            "SELECT count(*)::int8 FROM audit_events WHERE tenant_id = ANY(\(tenants)::text[])", logger: database.logger
        )
        for try await count in rows.decode(Int64.self) { return Int(count) }
        return 0
    }

    /// Waits until at least `count` rows are stored for `tenants`.
    static func waitForStored(_ count: Int, tenants: [String], timeout: Duration = .seconds(60)) async throws {
        try await TestDatabase.withSystem { database in
            var last = 0
            try await eventually("\(count) audit rows (saw \(last))", within: timeout) {
                last = try await storedCount(tenants: tenants, in: database)
                return last >= count
            }
        }
    }

    /// The value of one series in Prometheus text, e.g. `metric(text, #"x_total{type="a"}"#)`.
    static func metric(_ text: String, _ series: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1))
        }
        return nil
    }

    static func json(_ response: TestResponse) throws -> JSONValue {
        try StrictJSONParser.parse(Array(response.body.readableBytesView))
    }
}

struct AuditTestTimeout: Error, CustomStringConvertible {
    var description: String
}

/// One event ready to produce.
struct EncodedEvent: Sendable {
    var id: String
    var tenant: String
    var type: LatchkeyEventType
    var topic: String
    var key: String
    var value: [UInt8]

    var outgoing: KafkaOutgoingMessage {
        KafkaOutgoingMessage(
            topic: topic, key: Array(key.utf8), value: value,
            headers: [KafkaHeader(key: "content-type", value: CloudEvents.contentType)])
    }

    init<P: EventPayload>(_ event: CloudEvent<P>) throws {
        id = event.id
        tenant = event.tenantID.rawValue
        type = P.eventType
        topic = event.topic()
        key = event.kafkaKey
        value = Array(try event.encoded())
    }

    /// Raw bytes on a topic, for malformed or hand-made events.
    init(raw: String, topic: String, key: String, tenant: String = "", id: String = "", type: LatchkeyEventType) {
        self.id = id
        self.tenant = tenant
        self.type = type
        self.topic = topic
        self.key = key
        self.value = Array(raw.utf8)
    }
}

extension AuditTest {
    /// Stores events straight through the ingestion's decoder and batch store (no Kafka), as if
    /// they had been read from offsets `firstOffset…` of partition 0 of their topics.
    @discardableResult
    static func store(_ events: [EncodedEvent], firstOffset: Int64 = 0, batchSize: Int = 200) async throws
        -> StoreOutcome
    {
        let decoder = AuditEventDecoder(
            validator: try EventSchemaValidator(), topicPrefix: LatchkeyEventType.defaultTopicPrefix)
        let records = try events.enumerated().map { index, event in
            try decoder.decode(
                KafkaConsumerMessage(
                    topic: event.topic, partition: 0, offset: firstOffset + Int64(index), key: Array(event.key.utf8),
                    value: event.value, headers: [], timestampMilliseconds: nil)
            ).get()
        }
        return try await TestDatabase.withSystem { database in
            let store = AuditBatchStore(database: database, clock: SystemWallClock())
            var total = StoreOutcome()
            for start in stride(from: 0, to: records.count, by: batchSize) {
                let outcome = try await store.store(Array(records[start..<min(start + batchSize, records.count)]))
                total.stored += outcome.stored
                total.duplicates += outcome.duplicates
                total.conflicts += outcome.conflicts
            }
            return total
        }
    }
}
