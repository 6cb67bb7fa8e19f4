import LatchkeyKafka
import LatchkeyTestSupport
import Logging
import MetricsTestKit
import Testing

@Suite("Kafka produce and consume")
struct KafkaProduceConsumeTests {
    @Test("records sent by one client are read with keys, headers and offsets by another")
    func producedRecordsReachAnotherClient() async throws {
        let logger = KafkaTestSupport.logger("produce-consume")
        try await KafkaTestSupport.withCluster(brokers: 3, logger: logger) { cluster in
            let topic = KafkaTestSupport.uniqueName("events")
            try cluster.createTopic(topic, partitions: 3, replicationFactor: 3)

            let metrics = TestMetrics()
            var producerConfiguration = KafkaTestSupport.configuration(cluster, clientID: "produce-consume-producer")
            producerConfiguration.statisticsInterval = .milliseconds(100)
            producerConfiguration.metricsFactory = metrics
            let producer = try KafkaProducer(configuration: producerConfiguration, logger: logger)

            let header = KafkaHeader(key: "content-type", value: "application/cloudevents+json")
            let reports = try await KafkaTestSupport.withRunningProducer(producer) { producer in
                var reports: [KafkaDeliveryReport] = []
                for index in 0..<12 {
                    let message = KafkaOutgoingMessage(
                        topic: topic,
                        key: "tenant-a/client-\(index % 4)",
                        value: "event-\(index)",
                        headers: [header, KafkaHeader(key: "index", value: "\(index)")]
                    )
                    reports.append(try await producer.send(message))
                }
                // Statistics arrive every 100 ms from the same poll loop; wait for one that saw all sends.
                for _ in 0..<50 {
                    if let sent = try? metrics.expectGauge(
                        "latchkey_kafka_client_transmitted_messages",
                        [("client_id", "produce-consume-producer"), ("role", "producer")]
                    ).lastValue, sent >= 12 {
                        break
                    }
                    try await Task.sleep(for: .milliseconds(100))
                }
                return reports
            }

            #expect(reports.allSatisfy { $0.topic == topic && $0.offset >= 0 })
            #expect(Set(reports.map { "\($0.partition)/\($0.offset)" }).count == 12)
            // One key always maps to one partition.
            for keyIndex in 0..<4 {
                let partitions = Set(stride(from: keyIndex, to: 12, by: 4).map { reports[$0].partition })
                #expect(partitions.count == 1)
            }
            let transmitted = try metrics.expectGauge(
                "latchkey_kafka_client_transmitted_messages",
                [("client_id", "produce-consume-producer"), ("role", "producer")]
            )
            #expect((transmitted.lastValue ?? 0) >= 12)

            let consumer = try KafkaConsumer(
                configuration: KafkaTestSupport.consumerConfiguration(cluster, clientID: "produce-consume-consumer"),
                groupID: KafkaTestSupport.uniqueName("readers"),
                subscription: .topics([topic]),
                logger: logger
            )
            let records = try await consumer.collect(12)
            #expect(Set(records.map(\.stringValue)) == Set((0..<12).map { "event-\($0)" }))
            for record in records {
                let index = Int(String(decoding: record.header("index") ?? [], as: UTF8.self))!
                #expect(record.topic == topic)
                #expect(record.key == Array("tenant-a/client-\(index % 4)".utf8))
                #expect(record.header("content-type") == header.value)
                #expect(record.partition == reports[index].partition)
                #expect(record.offset == reports[index].offset)
                #expect(record.timestampMilliseconds != nil)
            }
            let lastPerPartition = Dictionary(records.map { ($0.topicPartition, $0.offset + 1) }) { max($0, $1) }
            try await consumer.commit(offsets: lastPerPartition)
            let committed = try await consumer.committedOffsets(for: Array(lastPerPartition.keys))
            #expect(committed == lastPerPartition)
            await consumer.close()
        }
    }

    @Test("a record without key or headers and with an empty value round-trips")
    func minimalRecordRoundTrips() async throws {
        let logger = KafkaTestSupport.logger("minimal")
        try await KafkaTestSupport.withCluster(brokers: 1, logger: logger) { cluster in
            let topic = KafkaTestSupport.uniqueName("minimal")
            try cluster.createTopic(topic)

            let producer = try KafkaProducer(
                configuration: KafkaTestSupport.configuration(cluster, clientID: "minimal-producer"),
                logger: logger
            )
            let report = try await KafkaTestSupport.withRunningProducer(producer) { producer in
                try await producer.send(KafkaOutgoingMessage(topic: topic, value: []))
            }
            #expect(report.offset == 0)

            let consumer = try KafkaConsumer(
                configuration: KafkaTestSupport.consumerConfiguration(cluster, clientID: "minimal-consumer"),
                groupID: KafkaTestSupport.uniqueName("minimal"),
                subscription: .allPartitions(of: [topic], startingAt: .beginning),
                logger: logger
            )
            let records = try await consumer.collect(1)
            #expect(records[0].key == nil)
            #expect(records[0].value.isEmpty)
            #expect(records[0].headers.isEmpty)
            await consumer.close()
        }
    }
}
