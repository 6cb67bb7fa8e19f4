/// How a ``KafkaConsumer`` obtains its partitions.
public enum KafkaConsumerSubscription: Hashable, Sendable {
    /// Group-managed: partitions of these topics are balanced across the group's members,
    /// and reading resumes from the group's committed offsets.
    case topics([String])
    /// Manual: every partition of these topics (as found in metadata when the consumer starts)
    /// is assigned to this consumer alone, starting at the given offset; the group id is used
    /// only for commits. Partitions added later are not picked up.
    case allPartitions(of: [String], startingAt: KafkaStartOffset)
}
