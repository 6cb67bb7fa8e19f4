/// A record to publish with ``KafkaProducer/send(_:)``.
public struct KafkaOutgoingMessage: Hashable, Sendable {
    public var topic: String
    /// Records with the same key land on the same partition (murmur2, as Java clients do).
    public var key: [UInt8]?
    public var value: [UInt8]
    public var headers: [KafkaHeader]
    /// An explicit partition; nil lets the partitioner choose from the key.
    public var partition: Int32?

    public init(
        topic: String,
        key: [UInt8]? = nil,
        value: [UInt8],
        headers: [KafkaHeader] = [],
        partition: Int32? = nil
    ) {
        self.topic = topic
        self.key = key
        self.value = value
        self.headers = headers
        self.partition = partition
    }

    public init(
        topic: String,
        key: String?,
        value: String,
        headers: [KafkaHeader] = [],
        partition: Int32? = nil
    ) {
        self.init(
            topic: topic,
            key: key.map { Array($0.utf8) },
            value: Array(value.utf8),
            headers: headers,
            partition: partition
        )
    }
}
