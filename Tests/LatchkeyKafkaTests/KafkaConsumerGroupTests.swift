import LatchkeyKafka
import LatchkeyTestSupport
import Logging
import Testing

@Suite("Kafka consumer groups and offsets")
struct KafkaConsumerGroupTests {
    @Test("a new group member resumes exactly after the committed offset")
    func groupResumesFromCommittedOffsets() async throws {
        let logger = KafkaTestSupport.logger("resume")
        try await KafkaTestSupport.withCluster(brokers: 1, logger: logger) { cluster in
            let topic = KafkaTestSupport.uniqueName("resume")
            try cluster.createTopic(topic)
            let group = KafkaTestSupport.uniqueName("resume-group")
            let partition = KafkaTopicPartition(topic: topic, partition: 0)

            let producer = try KafkaProducer(
                configuration: KafkaTestSupport.configuration(cluster, clientID: "resume-producer"),
                logger: logger
            )
            try await KafkaTestSupport.withRunningProducer(producer) { producer in
                for index in 0..<10 {
                    _ = try await producer.send(KafkaOutgoingMessage(topic: topic, key: nil, value: "m\(index)"))
                }
            }

            // First member reads everything but commits only through m5.
            let first = try KafkaConsumer(
                configuration: KafkaTestSupport.consumerConfiguration(cluster, clientID: "resume-first"),
                groupID: group,
                subscription: .topics([topic]),
                logger: logger
            )
            let firstRead = try await first.collect(10)
            #expect(firstRead.map(\.stringValue) == (0..<10).map { "m\($0)" })
            for record in firstRead.prefix(6) {
                try await first.commit(record)
            }
            #expect(try await first.committedOffsets(for: [partition]) == [partition: 6])
            #expect(try await first.lag(for: partition) == 4)
            await first.close()
            await first.close()  // idempotent
            await #expect(throws: KafkaError.self) { try await first.commit(firstRead[6]) }

            // Second member: nothing committed comes back, nothing uncommitted is lost.
            let second = try KafkaConsumer(
                configuration: KafkaTestSupport.consumerConfiguration(cluster, clientID: "resume-second"),
                groupID: group,
                subscription: .topics([topic]),
                logger: logger
            )
            let secondRead = try await second.collect(4)
            #expect(secondRead.map(\.offset) == [6, 7, 8, 9])
            #expect(secondRead.map(\.stringValue) == ["m6", "m7", "m8", "m9"])
            #expect(try second.assignment() == [partition])
            #expect(try second.positions(for: [partition]) == [partition: 10])
            try await second.commit(secondRead.last!)
            #expect(try await second.lag(for: partition) == 0)
            let watermarks = try await second.watermarks(for: partition)
            #expect(watermarks.low == 0 && watermarks.high == 10)
            await second.close()
        }
    }

    @Test("manual assignment reads every partition from offset 0 with its own group")
    func manualAssignmentReadsFromBeginning() async throws {
        let logger = KafkaTestSupport.logger("assign")
        try await KafkaTestSupport.withCluster(brokers: 2, logger: logger) { cluster in
            let topic = KafkaTestSupport.uniqueName("audit")
            try cluster.createTopic(topic, partitions: 2, replicationFactor: 2)

            let producer = try KafkaProducer(
                configuration: KafkaTestSupport.configuration(cluster, clientID: "assign-producer"),
                logger: logger
            )
            let values = (0..<6).map { "a\($0)" }
            _ = try await KafkaTestSupport.withRunningProducer(producer) { producer in
                try await KafkaTestSupport.send(values, to: topic, partition: { Int32($0 % 2) }, with: producer)
            }

            for reader in ["sidecar-1", "sidecar-2"] {
                let group = KafkaTestSupport.uniqueName(reader)
                let consumer = try KafkaConsumer(
                    configuration: KafkaTestSupport.consumerConfiguration(cluster, clientID: reader),
                    groupID: group,
                    subscription: .allPartitions(of: [topic], startingAt: .beginning),
                    logger: logger
                )
                let records = try await consumer.collect(6)
                #expect(Set(records.map(\.stringValue)) == Set(values))
                #expect(Set(records.map(\.partition)) == [0, 1])
                // Commits work without group membership (the group id only names the offsets).
                try await consumer.commit(records.last!)
                let committed = try await consumer.committedOffsets(for: [records.last!.topicPartition])
                #expect(committed[records.last!.topicPartition] == records.last!.offset + 1)
                await consumer.close()
            }
        }
    }

    @Test("a consumer for a topic that never appears fails instead of hanging")
    func manualAssignmentOfUnknownTopicFails() async throws {
        let logger = KafkaTestSupport.logger("unknown-topic")
        try await KafkaTestSupport.withCluster(brokers: 1, logger: logger) { cluster in
            let consumer = try KafkaConsumer(
                configuration: KafkaTestSupport.consumerConfiguration(cluster, clientID: "unknown-topic"),
                groupID: "unknown-topic",
                subscription: .allPartitions(of: [KafkaTestSupport.uniqueName("missing")], startingAt: .beginning),
                logger: logger
            )
            let closer = Task {
                try await Task.sleep(for: .seconds(1))
                await consumer.close()
            }
            // Either the close ends the sequence or the lookup gives up; it must not hang.
            var iterator = consumer.messages.makeAsyncIterator()
            let first = try? await iterator.next()
            #expect(first == nil)
            closer.cancel()
            await consumer.close()
        }
    }
}
