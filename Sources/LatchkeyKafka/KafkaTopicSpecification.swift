/// A topic to create: name, partition count, replication factor and optional topic configs.
public struct KafkaTopicSpecification: Hashable, Sendable {
    public var name: String
    public var partitions: Int
    public var replicationFactor: Int
    /// Topic-level configs such as `retention.ms` or `cleanup.policy`.
    public var configs: [String: String]

    public init(name: String, partitions: Int = 1, replicationFactor: Int = 1, configs: [String: String] = [:]) {
        self.name = name
        self.partitions = partitions
        self.replicationFactor = replicationFactor
        self.configs = configs
    }
}
