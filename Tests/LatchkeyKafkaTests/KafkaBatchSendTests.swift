import LatchkeyKafka
import LatchkeyTestSupport
import Logging
import Testing

@Suite("Kafka batch send")
struct KafkaBatchSendTests {
    @Test("a batch is delivered completely and in order per key")
    func batchKeepsOrderPerKey() async throws {
        let logger = KafkaTestSupport.logger("batch")
        try await KafkaTestSupport.withCluster(brokers: 1, logger: logger) { cluster in
            let topic = KafkaTestSupport.uniqueName("batch")
            try cluster.createTopic(topic, partitions: 3)
            let producer = try KafkaProducer(
                configuration: KafkaTestSupport.configuration(cluster, clientID: "batch-producer"), logger: logger)
            let messages = (0..<300).map { index in
                KafkaOutgoingMessage(topic: topic, key: "key-\(index % 5)", value: "\(index)")
            }
            let results = try await KafkaTestSupport.withRunningProducer(producer) { producer in
                await producer.send(batch: messages)
            }
            let reports = try results.map { try $0.get() }
            #expect(reports.count == 300)
            // Within each key (one partition) offsets grow with the input order.
            for key in 0..<5 {
                let offsets = stride(from: key, to: 300, by: 5).map { reports[$0].offset }
                #expect(offsets == offsets.sorted())
                #expect(Set(stride(from: key, to: 300, by: 5).map { reports[$0].partition }).count == 1)
            }
        }
    }

    @Test("records refused for good fail individually without stopping the batch")
    func refusedRecordsFailIndividually() async throws {
        let logger = KafkaTestSupport.logger("batch-fail")
        try await KafkaTestSupport.withCluster(brokers: 1, logger: logger) { cluster in
            let topic = KafkaTestSupport.uniqueName("batch-fail")
            try cluster.createTopic(topic, partitions: 1)
            let producer = try KafkaProducer(
                configuration: KafkaTestSupport.configuration(cluster, clientID: "batch-fail-producer"), logger: logger)
            let results = try await KafkaTestSupport.withRunningProducer(producer) { producer in
                await producer.send(batch: [
                    KafkaOutgoingMessage(topic: topic, key: "k", value: "ok-1"),
                    // An explicit partition that does not exist is refused at once by librdkafka.
                    KafkaOutgoingMessage(topic: topic, key: "k", value: "bad", partition: 7),
                    KafkaOutgoingMessage(topic: topic, key: "k", value: "ok-2"),
                ])
            }
            #expect((try? results[0].get()) != nil)
            #expect((try? results[1].get()) == nil)
            #expect((try? results[2].get()) != nil)
        }
    }

    @Test("a batch larger than the producer's local queue waits for room and keeps its order")
    func batchLargerThanLocalQueue() async throws {
        let logger = KafkaTestSupport.logger("batch-queue")
        try await KafkaTestSupport.withCluster(brokers: 1, logger: logger) { cluster in
            let topic = KafkaTestSupport.uniqueName("batch-queue")
            try cluster.createTopic(topic, partitions: 1)
            let producer = try KafkaProducer(
                configuration: KafkaTestSupport.configuration(
                    cluster, clientID: "batch-queue-producer", properties: ["queue.buffering.max.messages": "5"]),
                logger: logger)
            let messages = (0..<60).map { KafkaOutgoingMessage(topic: topic, key: "k", value: "\($0)") }
            let results = try await KafkaTestSupport.withRunningProducer(producer) { producer in
                await producer.send(batch: messages)
            }
            let offsets = try results.map { try $0.get().offset }
            #expect(offsets.count == 60)
            #expect(offsets == offsets.sorted())
            #expect(Set(offsets).count == 60)
        }
    }

    @Test("an empty batch returns at once")
    func emptyBatch() async throws {
        let logger = KafkaTestSupport.logger("batch-empty")
        try await KafkaTestSupport.withCluster(brokers: 1, logger: logger) { cluster in
            let producer = try KafkaProducer(
                configuration: KafkaTestSupport.configuration(cluster, clientID: "batch-empty-producer"), logger: logger
            )
            let results = try await KafkaTestSupport.withRunningProducer(producer) { producer in
                await producer.send(batch: [])
            }
            #expect(results.isEmpty)
        }
    }
}
