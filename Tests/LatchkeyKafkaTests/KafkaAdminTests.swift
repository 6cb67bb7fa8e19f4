import LatchkeyKafka
import LatchkeyTestSupport
import Logging
import Testing

@Suite("Kafka admin")
struct KafkaAdminTests {
    @Test("creating topics is idempotent and they are listed afterwards")
    func createTopicsIsIdempotent() async throws {
        let logger = KafkaTestSupport.logger("admin")
        try await KafkaTestSupport.withCluster(brokers: 3, logger: logger) { cluster in
            let existing = KafkaTestSupport.uniqueName("existing")
            let fresh = KafkaTestSupport.uniqueName("fresh")
            try cluster.createTopic(existing, partitions: 3, replicationFactor: 2)

            let admin = try KafkaAdmin(
                configuration: KafkaTestSupport.configuration(cluster, clientID: "admin"),
                logger: logger
            )
            let specifications = [
                KafkaTopicSpecification(name: existing, partitions: 3, replicationFactor: 2),
                KafkaTopicSpecification(name: fresh, partitions: 4, replicationFactor: 3),
            ]
            let first = try await admin.createTopics(specifications)
            #expect(first[existing] == .alreadyExists(partitions: 3))
            // The mock brokers have no CreateTopics; auto-creation gives their default of 4 partitions.
            #expect(first[fresh] == .autoCreated(partitions: 4))

            let second = try await admin.createTopics(specifications)
            #expect(second[existing] == .alreadyExists(partitions: 3))
            #expect(second[fresh] == .alreadyExists(partitions: 4))
            #expect(try await admin.createTopic(existing, partitions: 3) == .alreadyExists(partitions: 3))

            let topics = try await admin.listTopics()
            #expect(topics.contains { $0.name == existing && $0.partitions.count == 3 && $0.isReady })
            #expect(topics.contains { $0.name == fresh && $0.isReady })
            let metadata = try await admin.metadata()
            #expect(metadata.brokers.map(\.id).sorted() == [1, 2, 3])
            // (The 2.0.2 mock lists every broker as a replica whatever the replication factor.)
            #expect(metadata.topic(named: existing)?.partitions.map(\.id) == [0, 1, 2])
        }
    }

    @Test("a bad librdkafka property is reported at construction")
    func invalidPropertyIsRejected() throws {
        let configuration = KafkaConfiguration(
            bootstrapServers: "127.0.0.1:1",
            clientID: "bad",
            properties: ["no.such.property": "1"]
        )
        let error = #expect(throws: KafkaError.self) {
            try KafkaAdmin(configuration: configuration, logger: KafkaTestSupport.logger("bad"))
        }
        #expect(error?.message.contains("no.such.property") == true)
    }
}
