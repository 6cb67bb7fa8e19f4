/// Where the cluster stored a record, as confirmed by its delivery report (after `acks=all`).
public struct KafkaDeliveryReport: Hashable, Sendable {
    public var topic: String
    public var partition: Int32
    public var offset: Int64
    /// Record timestamp in milliseconds since the Unix epoch, when the broker reported one.
    public var timestampMilliseconds: Int64?

    public init(topic: String, partition: Int32, offset: Int64, timestampMilliseconds: Int64?) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.timestampMilliseconds = timestampMilliseconds
    }
}
