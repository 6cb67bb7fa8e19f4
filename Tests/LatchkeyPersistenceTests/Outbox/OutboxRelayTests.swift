import Foundation
import LatchkeyTestSupport
import Testing

@testable import LatchkeyKafka
@testable import LatchkeyPersistence

@Suite(.serialized) struct OutboxRelayTests {
    let logger = KafkaTestSupport.logger("outbox")

    func fastRelay() -> OutboxRelayConfiguration {
        var configuration = OutboxRelayConfiguration()
        configuration.initialBackoff = .milliseconds(50)
        configuration.maximumBackoff = .milliseconds(500)
        configuration.leaseDuration = .seconds(30)
        return configuration
    }

    /// Per key, the order in which event ids were first seen on the topic.
    func firstSeenOrder(_ messages: [KafkaConsumerMessage]) -> [String: [UUID]] {
        var seen = Set<UUID>()
        var order: [String: [UUID]] = [:]
        for message in messages.sorted(by: { ($0.partition, $0.offset) < ($1.partition, $1.offset) }) {
            guard let id = eventID(of: message), seen.insert(id).inserted else { continue }
            order[String(decoding: message.key ?? [], as: UTF8.self), default: []].append(id)
        }
        return order
    }

    @Test func eventsWrittenWhileKafkaIsDownAreDeliveredWhenItReturns() async throws {
        try await OutboxTestDatabase.with { db in
            let cluster = try EmbeddedKafkaCluster(brokers: 1, logger: logger)
            defer { cluster.shutdown() }
            let prefix = KafkaTestSupport.uniqueName("lk") + "."
            let topic = prefix + "test-events"
            try cluster.createTopic(topic, partitions: 3)
            let tenant = TestEnvironment.uniqueTenant("ob")
            try await TestDatabase.createTenant(tenant, in: db.app)

            let producer = try KafkaProducer(
                configuration: KafkaTestSupport.configuration(cluster, clientID: "outbox-down"), logger: logger)
            let relay = OutboxRelay(
                database: db.system, publisher: KafkaOutboxPublisher(producer: producer),
                configuration: fastRelay(), logger: logger)

            try cluster.beginOutage()
            let written = try await withRunning([{ try await producer.run() }, { try await relay.run() }]) {
                let written = try await db.writeEvents(
                    200, tenant: tenant, keys: 7, writer: OutboxWriter(topicPrefix: prefix), topicSuffix: "test-events")
                try await Task.sleep(for: .seconds(2))
                // Nothing can have been delivered: the only broker is down.
                #expect(try await db.unsentCount() == 200)
                try cluster.endOutage()
                #expect(try await db.waitUntilDrained(timeout: .seconds(60)) == 0)
                return written
            }

            let consumer = try KafkaConsumer(
                configuration: KafkaTestSupport.configuration(cluster, clientID: "outbox-check"),
                groupID: KafkaTestSupport.uniqueName("g"),
                subscription: .allPartitions(of: [topic], startingAt: .beginning), logger: logger)
            let messages = try await consumer.collect(200, within: .seconds(30))
            await consumer.close()

            #expect(Set(messages.compactMap(eventID)) == Set(written.map(\.0)))
            let expected = Dictionary(grouping: written, by: \.1).mapValues { $0.map(\.0) }
            #expect(firstSeenOrder(messages) == expected)
            #expect(
                messages.allSatisfy {
                    $0.header("ce_type").map { String(decoding: $0, as: UTF8.self) } == "io.latchkey.test.v1"
                })
        }
    }

    @Test func twoRelaysTogetherPublishEveryEventInKeyOrder() async throws {
        try await OutboxTestDatabase.with { db in
            let cluster = try EmbeddedKafkaCluster(brokers: 1, logger: logger)
            defer { cluster.shutdown() }
            let prefix = KafkaTestSupport.uniqueName("lk") + "."
            let topic = prefix + "test-events"
            try cluster.createTopic(topic, partitions: 4)
            let tenants = [TestEnvironment.uniqueTenant("ra"), TestEnvironment.uniqueTenant("rb")]
            for tenant in tenants { try await TestDatabase.createTenant(tenant, in: db.app) }

            let producers = try (0..<2).map { index in
                try KafkaProducer(
                    configuration: KafkaTestSupport.configuration(cluster, clientID: "relay-\(index)"), logger: logger)
            }
            var configuration = fastRelay()
            configuration.batchSize = 17
            let relays = producers.enumerated().map { index, producer in
                OutboxRelay(
                    database: db.system, publisher: KafkaOutboxPublisher(producer: producer),
                    configuration: configuration, relayID: "relay-\(index)", logger: logger)
            }
            let services: [@Sendable () async throws -> Void] =
                producers.map { producer in { @Sendable in try await producer.run() } }
                + relays.map { relay in { @Sendable in try await relay.run() } }
            let written = try await withRunning(services) {
                async let first = db.writeEvents(
                    150, tenant: tenants[0], keys: 5, writer: OutboxWriter(topicPrefix: prefix),
                    topicSuffix: "test-events")
                async let second = db.writeEvents(
                    150, tenant: tenants[1], keys: 5, writer: OutboxWriter(topicPrefix: prefix),
                    topicSuffix: "test-events")
                let written = try await first + second
                #expect(try await db.waitUntilDrained(timeout: .seconds(60)) == 0)
                return written
            }

            let consumer = try KafkaConsumer(
                configuration: KafkaTestSupport.configuration(cluster, clientID: "relay-check"),
                groupID: KafkaTestSupport.uniqueName("g"),
                subscription: .allPartitions(of: [topic], startingAt: .beginning), logger: logger)
            let messages = try await consumer.collect(300, within: .seconds(30))
            await consumer.close()

            #expect(Set(messages.compactMap(eventID)) == Set(written.map(\.0)))
            let expected = Dictionary(grouping: written, by: \.1).mapValues { $0.map(\.0) }
            #expect(firstSeenOrder(messages) == expected)
        }
    }

    @Test func backoffGrowsAndIsCapped() throws {
        var configuration = OutboxRelayConfiguration()
        configuration.initialBackoff = .milliseconds(100)
        configuration.maximumBackoff = .seconds(2)
        let relay = OutboxRelay(
            database: Database(client: try TestEnvironment.appDatabase().makeClient(logger: logger), logger: logger),
            publisher: NeverPublisher(), configuration: configuration, logger: logger)
        #expect((.milliseconds(50)...(.milliseconds(100))).contains(relay.backoff(attempt: 1)))
        #expect((.milliseconds(200)...(.milliseconds(400))).contains(relay.backoff(attempt: 3)))
        #expect((.seconds(1)...(.seconds(2))).contains(relay.backoff(attempt: 30)))
    }
}

/// Only for the pure backoff computation, which never publishes.
private struct NeverPublisher: OutboxPublisher {
    func publish(
        _ messages: [OutboxMessage], whenHandedOver: @escaping @Sendable () -> Void
    ) async -> [Result<Void, any Error>] {
        whenHandedOver()
        return messages.map { _ in .failure(CancellationError()) }
    }
}
