import LatchkeyKafka
import LatchkeyTestSupport
import Logging
import Testing

@Suite("Kafka fault tolerance")
struct KafkaFaultToleranceTests {
    @Test("sends issued while every broker is down complete once the brokers return")
    func sendsSurviveBrokerOutage() async throws {
        let logger = KafkaTestSupport.logger("outage")
        try await KafkaTestSupport.withCluster(brokers: 3, logger: logger) { cluster in
            let topic = KafkaTestSupport.uniqueName("outage")
            try cluster.createTopic(topic, partitions: 1, replicationFactor: 3)

            var configuration = KafkaTestSupport.configuration(cluster, clientID: "outage-producer")
            configuration.messageTimeout = nil  // wait as long as the outage lasts
            let producer = try KafkaProducer(configuration: configuration, logger: logger)

            let reports = try await KafkaTestSupport.withRunningProducer(producer) { producer in
                // Connect and obtain the idempotent producer id before the outage.
                let warmUp = try await producer.send(KafkaOutgoingMessage(topic: topic, key: nil, value: "before"))
                #expect(warmUp.offset == 0)

                try cluster.beginOutage()
                let delivered = KafkaTestLocked(0)
                let sends = Task {
                    try await withThrowingTaskGroup(of: KafkaDeliveryReport.self) { group in
                        for index in 0..<5 {
                            group.addTask {
                                let report = try await producer.send(
                                    KafkaOutgoingMessage(topic: topic, key: nil, value: "during-\(index)")
                                )
                                delivered.withLock { $0 += 1 }
                                return report
                            }
                        }
                        return try await group.reduce(into: []) { $0.append($1) }
                    }
                }
                try await Task.sleep(for: .milliseconds(1500))
                #expect(delivered.withLock { $0 } == 0, "nothing can be acknowledged while all brokers are down")

                try cluster.endOutage()
                return try await sends.value
            }
            #expect(reports.count == 5)
            #expect(Set(reports.map(\.offset)) == Set(1...5))

            // Each record is stored exactly once.
            let consumer = try KafkaConsumer(
                configuration: KafkaTestSupport.consumerConfiguration(cluster, clientID: "outage-reader"),
                groupID: KafkaTestSupport.uniqueName("outage-reader"),
                subscription: .allPartitions(of: [topic], startingAt: .beginning),
                logger: logger
            )
            let records = try await consumer.collect(6)
            #expect(records.map(\.stringValue).sorted() == ["before"] + (0..<5).map { "during-\($0)" })
            let watermarks = try await consumer.watermarks(for: KafkaTopicPartition(topic: topic, partition: 0))
            #expect(watermarks.high == 6)
            await consumer.close()
        }
    }

    @Test("injected retriable Produce errors are retried and the record is stored once")
    func injectedProduceErrorsAreRetried() async throws {
        let logger = KafkaTestSupport.logger("inject")
        try await KafkaTestSupport.withCluster(brokers: 3, logger: logger) { cluster in
            let topic = KafkaTestSupport.uniqueName("inject")
            try cluster.createTopic(topic, partitions: 1, replicationFactor: 3)

            let producer = try KafkaProducer(
                configuration: KafkaTestSupport.configuration(cluster, clientID: "inject-producer"),
                logger: logger
            )
            let report = try await KafkaTestSupport.withRunningProducer(producer) { producer in
                _ = try await producer.send(KafkaOutgoingMessage(topic: topic, key: nil, value: "first"))
                try cluster.pushProduceErrors([.notLeaderForPartition, .notEnoughReplicas, .requestTimedOut])
                return try await producer.send(KafkaOutgoingMessage(topic: topic, key: nil, value: "retried"))
            }
            #expect(report.offset == 1)

            let consumer = try KafkaConsumer(
                configuration: KafkaTestSupport.consumerConfiguration(cluster, clientID: "inject-reader"),
                groupID: KafkaTestSupport.uniqueName("inject-reader"),
                subscription: .allPartitions(of: [topic], startingAt: .beginning),
                logger: logger
            )
            let records = try await consumer.collect(2)
            #expect(records.map(\.stringValue) == ["first", "retried"])
            let watermarks = try await consumer.watermarks(for: KafkaTopicPartition(topic: topic, partition: 0))
            #expect(watermarks.high == 2)
            await consumer.close()
        }
    }

    @Test("a non-retriable injected error fails the send with that error")
    func nonRetriableProduceErrorFailsSend() async throws {
        let logger = KafkaTestSupport.logger("fatal-inject")
        try await KafkaTestSupport.withCluster(brokers: 1, logger: logger) { cluster in
            let topic = KafkaTestSupport.uniqueName("denied")
            try cluster.createTopic(topic)

            let producer = try KafkaProducer(
                configuration: KafkaTestSupport.configuration(cluster, clientID: "denied-producer"),
                logger: logger
            )
            try await KafkaTestSupport.withRunningProducer(producer) { producer in
                _ = try await producer.send(KafkaOutgoingMessage(topic: topic, key: nil, value: "ok"))
                try cluster.pushProduceErrors([.topicAuthorizationFailed])
                let error = await #expect(throws: KafkaError.self) {
                    try await producer.send(KafkaOutgoingMessage(topic: topic, key: nil, value: "denied"))
                }
                #expect(error?.code == .topicAuthorizationFailed)
            }
        }
    }

    @Test("shutdown fails sends that cannot be delivered and refuses new ones")
    func shutdownFailsOutstandingSends() async throws {
        let logger = KafkaTestSupport.logger("shutdown")
        try await KafkaTestSupport.withCluster(brokers: 1, logger: logger) { cluster in
            let topic = KafkaTestSupport.uniqueName("shutdown")
            try cluster.createTopic(topic)

            var configuration = KafkaTestSupport.configuration(cluster, clientID: "shutdown-producer")
            configuration.messageTimeout = nil
            configuration.shutdownFlushTimeout = .milliseconds(300)
            let producer = try KafkaProducer(configuration: configuration, logger: logger)
            let service = Task { try await producer.run() }

            _ = try await producer.send(KafkaOutgoingMessage(topic: topic, key: nil, value: "delivered"))
            try cluster.beginOutage()
            let stuck = Task { try await producer.send(KafkaOutgoingMessage(topic: topic, key: nil, value: "stuck")) }
            try await Task.sleep(for: .milliseconds(300))
            service.cancel()
            try await service.value

            let stuckError = await #expect(throws: KafkaError.self) { try await stuck.value }
            #expect([KafkaErrorCode.purgedFromQueue, .purgedInFlight, .destroyed].contains(stuckError?.code))
            let lateError = await #expect(throws: KafkaError.self) {
                try await producer.send(KafkaOutgoingMessage(topic: topic, key: nil, value: "late"))
            }
            #expect(lateError?.code == .destroyed)
        }
    }
}
