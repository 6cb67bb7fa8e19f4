import LatchkeyKafka
import LatchkeyTestSupport
import Logging
import Synchronization
import Testing

@Suite("Embedded Kafka cluster")
struct KafkaEmbeddedClusterTests {
    @Test("runEmbeddedKafkaCluster announces its brokers, serves topics and stops on cancellation")
    func runnerServesUntilCancelled() async throws {
        let logger = KafkaTestSupport.logger("runner")
        let topic = KafkaTestSupport.uniqueName("runner")
        let (announcements, announce) = AsyncStream.makeStream(of: String.self)
        let runner = Task {
            try await runEmbeddedKafkaCluster(
                brokers: 2,
                topics: [KafkaTopicSpecification(name: topic, partitions: 2, replicationFactor: 5)],
                logger: logger,
                onReady: { announce.yield($0) }
            )
        }
        var iterator = announcements.makeAsyncIterator()
        let bootstrapServers = try #require(await iterator.next())
        #expect(bootstrapServers.split(separator: ",").count == 2)
        #expect(bootstrapServers.hasPrefix("127.0.0.1:"))

        let admin = try KafkaAdmin(
            configuration: KafkaConfiguration(bootstrapServers: bootstrapServers, clientID: "runner-admin"),
            logger: logger
        )
        let metadata = try await admin.metadata()
        // A replication factor above the broker count is capped instead of failing the start.
        #expect(metadata.topic(named: topic)?.partitions.map(\.id) == [0, 1])

        runner.cancel()
        try await runner.value
    }

    @Test("invalid replication factors are rejected; shutdown is idempotent")
    func invalidRequestsAreRejected() async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 1, logger: KafkaTestSupport.logger("invalid"))
        #expect(throws: KafkaError.self) { try cluster.setPartitionLeader(topic: "t", partition: 0, brokerID: 7) }
        #expect(throws: KafkaError.self) { try cluster.createTopic("too-replicated", replicationFactor: 2) }
        cluster.shutdown()  // returns at once; later calls must already be refused
        #expect(throws: KafkaError.self) { try cluster.beginOutage() }
        await cluster.shutdownAndWait()
        #expect(throws: KafkaError.self) { try cluster.createTopic("after-shutdown") }
        #expect(throws: KafkaError.self) { try cluster.pushProduceErrors([.notLeaderForPartition]) }
    }
}
