/// What ``KafkaAdmin/createTopics(_:timeout:)`` did for one topic.
public enum KafkaTopicCreationOutcome: Hashable, Sendable {
    /// Created by a CreateTopics request with the requested partitions and replication.
    case created
    /// The topic was already there (its partition count is left as it is).
    case alreadyExists(partitions: Int)
    /// The cluster has no usable controller for CreateTopics (librdkafka's mock cluster), so the
    /// topic was created by the broker's auto-creation with the broker's default partition count.
    case autoCreated(partitions: Int)
}
