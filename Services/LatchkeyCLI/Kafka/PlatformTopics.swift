import LatchkeyCore
import LatchkeyKafka

/// The topics the platform uses, with the configs each needs: one list for every place the CLI creates them.
enum PlatformTopics {
    /// Each event type's topic under `prefix` and the audit consumer's dead-letter topic.
    static func specifications(prefix: String, partitions: Int, replicationFactor: Int) -> [KafkaTopicSpecification] {
        (LatchkeyEventType.allTopics(prefix: prefix) + [LatchkeyEventType.deadLetterTopic(prefix: prefix)]).map {
            KafkaTopicSpecification(
                name: $0, partitions: partitions, replicationFactor: replicationFactor,
                configs: LatchkeyEventType(topic: $0, prefix: prefix)?.topicConfigs ?? [:])
        }
    }
}
