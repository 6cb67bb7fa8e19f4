import LatchkeyKafka
import LatchkeyTestSupport
import Logging
import Testing

@Suite("Kafka batch send")
struct KafkaBatchSendTests {
    /// Sends the batch `messages` makes for a fresh topic of `partitions` through a producer of a fresh cluster.
    func sendBatch(
        _ name: String, partitions: Int, properties: [String: String] = [:],
        _ messages: @Sendable (_ topic: String) -> [KafkaOutgoingMessage]
    ) async throws -> [Result<KafkaDeliveryReport, any Error>] {
        let logger = KafkaTestSupport.logger(name)
        return try await KafkaTestSupport.withCluster(brokers: 1, logger: logger) { cluster in
            let topic = KafkaTestSupport.uniqueName(name)
            try cluster.createTopic(topic, partitions: partitions)
            let producer = try KafkaProducer(
                configuration: KafkaTestSupport.configuration(
                    cluster, clientID: "\(name)-producer", properties: properties),
                logger: logger)
            return try await KafkaTestSupport.withRunningProducer(producer) { producer in
                await producer.send(batch: messages(topic))
            }
        }
    }

    @Test("a batch is delivered completely and in order per key")
    func batchKeepsOrderPerKey() async throws {
        let results = try await sendBatch("batch", partitions: 3) { topic in
            (0..<300).map { KafkaOutgoingMessage(topic: topic, key: "key-\($0 % 5)", value: "\($0)") }
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

    @Test("records refused for good fail individually without stopping the batch")
    func refusedRecordsFailIndividually() async throws {
        let results = try await sendBatch("batch-fail", partitions: 1) { topic in
            [
                KafkaOutgoingMessage(topic: topic, key: "k", value: "ok-1"),
                // An explicit partition that does not exist is refused at once by librdkafka.
                KafkaOutgoingMessage(topic: topic, key: "k", value: "bad", partition: 7),
                KafkaOutgoingMessage(topic: topic, key: "k", value: "ok-2"),
            ]
        }
        #expect((try? results[0].get()) != nil)
        #expect((try? results[1].get()) == nil)
        #expect((try? results[2].get()) != nil)
    }

    @Test("a batch larger than the producer's local queue waits for room and keeps its order")
    func batchLargerThanLocalQueue() async throws {
        let results = try await sendBatch(
            "batch-queue", partitions: 1, properties: ["queue.buffering.max.messages": "5"]
        ) { topic in
            (0..<60).map { KafkaOutgoingMessage(topic: topic, key: "k", value: "\($0)") }
        }
        let offsets = try results.map { try $0.get().offset }
        #expect(offsets.count == 60)
        #expect(offsets == offsets.sorted())
        #expect(Set(offsets).count == 60)
    }

    @Test("an empty batch returns at once")
    func emptyBatch() async throws {
        #expect(try await sendBatch("batch-empty", partitions: 1) { _ in [] }.isEmpty)
    }
}
