import Metrics

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The few fields of librdkafka's statistics JSON that Latchkey exports as gauges.
struct KafkaStatistics: Decodable, Equatable {
    /// Messages waiting in the producer queue (not yet acknowledged).
    var queuedMessages: Int64
    /// Events waiting to be served by a poll call.
    var replyQueueEvents: Int64
    /// Messages sent to / received from brokers since the client started.
    var transmittedMessages: Int64
    var receivedMessages: Int64
    /// Per assigned partition: how far the consumer position is behind the high watermark.
    var consumerLag: [KafkaTopicPartition: Int64]

    private enum CodingKeys: String, CodingKey {
        case queuedMessages = "msg_cnt"
        case replyQueueEvents = "replyq"
        case transmittedMessages = "txmsgs"
        case receivedMessages = "rxmsgs"
        case topics
    }

    private struct Topic: Decodable {
        var partitions: [String: Partition]?
    }

    private struct Partition: Decodable {
        var partition: Int32
        var consumerLag: Int64?

        private enum CodingKeys: String, CodingKey {
            case partition
            case consumerLag = "consumer_lag"
        }
    }

    init(
        queuedMessages: Int64,
        replyQueueEvents: Int64,
        transmittedMessages: Int64,
        receivedMessages: Int64,
        consumerLag: [KafkaTopicPartition: Int64]
    ) {
        self.queuedMessages = queuedMessages
        self.replyQueueEvents = replyQueueEvents
        self.transmittedMessages = transmittedMessages
        self.receivedMessages = receivedMessages
        self.consumerLag = consumerLag
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        queuedMessages = try container.decodeIfPresent(Int64.self, forKey: .queuedMessages) ?? 0
        replyQueueEvents = try container.decodeIfPresent(Int64.self, forKey: .replyQueueEvents) ?? 0
        transmittedMessages = try container.decodeIfPresent(Int64.self, forKey: .transmittedMessages) ?? 0
        receivedMessages = try container.decodeIfPresent(Int64.self, forKey: .receivedMessages) ?? 0
        var lag: [KafkaTopicPartition: Int64] = [:]
        let topics = try container.decodeIfPresent([String: Topic].self, forKey: .topics) ?? [:]
        for (name, topic) in topics {
            for partition in (topic.partitions ?? [:]).values {
                // Partition -1 is librdkafka's "unassigned" bucket; lag -1 means "unknown yet".
                guard partition.partition >= 0, let value = partition.consumerLag, value >= 0 else { continue }
                lag[KafkaTopicPartition(topic: name, partition: partition.partition)] = value
            }
        }
        consumerLag = lag
    }

    init(json: String) throws {
        self = try JSONDecoder().decode(KafkaStatistics.self, from: Data(json.utf8))
    }
}

/// Turns statistics callbacks into swift-metrics gauges labelled with the client id and role.
struct KafkaStatisticsRecorder: Sendable {
    let clientID: String
    let role: String
    let factory: any MetricsFactory

    func record(json: String) {
        // A malformed or partial document is not worth failing anything over; skip it.
        guard let statistics = try? KafkaStatistics(json: json) else { return }
        record(statistics)
    }

    func record(_ statistics: KafkaStatistics) {
        let dimensions = [("client_id", clientID), ("role", role)]
        gauge("latchkey_kafka_client_queued_messages", dimensions).record(statistics.queuedMessages)
        gauge("latchkey_kafka_client_reply_queue_events", dimensions).record(statistics.replyQueueEvents)
        gauge("latchkey_kafka_client_transmitted_messages", dimensions).record(statistics.transmittedMessages)
        gauge("latchkey_kafka_client_received_messages", dimensions).record(statistics.receivedMessages)
        for (topicPartition, lag) in statistics.consumerLag {
            let partitionDimensions =
                dimensions + [
                    ("topic", topicPartition.topic), ("partition", String(topicPartition.partition)),
                ]
            gauge("latchkey_kafka_consumer_lag_messages", partitionDimensions).record(lag)
        }
    }

    private func gauge(_ label: String, _ dimensions: [(String, String)]) -> Gauge {
        Gauge(label: label, dimensions: dimensions, factory: factory)
    }
}
