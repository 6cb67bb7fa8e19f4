/// A record read by ``KafkaConsumer``; commit it with ``KafkaConsumer/commit(_:)`` once its effect is durable.
public struct KafkaConsumerMessage: Hashable, Sendable {
    public var topic: String
    public var partition: Int32
    public var offset: Int64
    public var key: [UInt8]?
    public var value: [UInt8]
    public var headers: [KafkaHeader]
    /// Record timestamp in milliseconds since the Unix epoch, when the record carries one.
    public var timestampMilliseconds: Int64?

    public init(
        topic: String,
        partition: Int32,
        offset: Int64,
        key: [UInt8]?,
        value: [UInt8],
        headers: [KafkaHeader],
        timestampMilliseconds: Int64?
    ) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.key = key
        self.value = value
        self.headers = headers
        self.timestampMilliseconds = timestampMilliseconds
    }

    /// The first header with this key, if any.
    public func header(_ key: String) -> [UInt8]? {
        headers.first { $0.key == key }?.value
    }

    /// The partition this record came from, as a commit/offset key.
    public var topicPartition: KafkaTopicPartition {
        KafkaTopicPartition(topic: topic, partition: partition)
    }
}
