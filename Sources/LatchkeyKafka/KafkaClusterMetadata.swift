/// A snapshot of the cluster's brokers and topics as returned by a Metadata request.
public struct KafkaClusterMetadata: Hashable, Sendable {
    public var brokers: [KafkaBrokerMetadata]
    public var topics: [KafkaTopicMetadata]

    public init(brokers: [KafkaBrokerMetadata], topics: [KafkaTopicMetadata]) {
        self.brokers = brokers
        self.topics = topics
    }

    public func topic(named name: String) -> KafkaTopicMetadata? {
        topics.first { $0.name == name }
    }
}

/// One broker's id and advertised address.
public struct KafkaBrokerMetadata: Hashable, Sendable {
    public var id: Int32
    public var host: String
    public var port: Int

    public init(id: Int32, host: String, port: Int) {
        self.id = id
        self.host = host
        self.port = port
    }
}

/// One topic's partitions, or the error the broker reported for it.
public struct KafkaTopicMetadata: Hashable, Sendable {
    public var name: String
    public var partitions: [KafkaPartitionMetadata]
    public var error: KafkaErrorCode?

    public init(name: String, partitions: [KafkaPartitionMetadata], error: KafkaErrorCode?) {
        self.name = name
        self.partitions = partitions
        self.error = error
    }

    /// True when the topic exists and every partition has a leader, i.e. it is usable.
    public var isReady: Bool {
        error == nil && !partitions.isEmpty && partitions.allSatisfy { $0.leader >= 0 && $0.error == nil }
    }
}

/// One partition's leader and replica placement.
public struct KafkaPartitionMetadata: Hashable, Sendable {
    public var id: Int32
    public var leader: Int32
    public var replicas: [Int32]
    public var inSyncReplicas: [Int32]
    public var error: KafkaErrorCode?

    public init(id: Int32, leader: Int32, replicas: [Int32], inSyncReplicas: [Int32], error: KafkaErrorCode?) {
        self.id = id
        self.leader = leader
        self.replicas = replicas
        self.inSyncReplicas = inSyncReplicas
        self.error = error
    }
}
