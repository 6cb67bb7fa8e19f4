/// One partition of one topic; the key for offsets, positions and watermarks.
public struct KafkaTopicPartition: Hashable, Sendable, CustomStringConvertible {
    public var topic: String
    public var partition: Int32

    public init(topic: String, partition: Int32) {
        self.topic = topic
        self.partition = partition
    }

    public var description: String { "\(topic)[\(partition)]" }
}
