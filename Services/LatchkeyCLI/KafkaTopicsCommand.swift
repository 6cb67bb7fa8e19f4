import ArgumentParser
import LatchkeyCore
import LatchkeyKafka

/// `latchkey kafka-topics`: the topics a Kafka cluster must hold before the services start, for an operator
/// (or a CI job) creating them with the broker's own tooling.
struct KafkaTopicsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kafka-topics",
        abstract: "Print every topic Latchkey needs, one a line: its name, then its settings as key=value.")

    @Option(help: "Topic prefix (KAFKA_TOPIC_PREFIX of the services).")
    var topicPrefix = LatchkeyEventType.defaultTopicPrefix

    func run() {
        for topic in Self.topics(prefix: topicPrefix, partitions: 1, replicationFactor: 1) {
            print(
                ([topic.name] + topic.configs.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" })
                    .joined(separator: " "))
        }
    }

    /// Every event topic under `prefix` and the audit consumer's dead-letter topic, with the settings each needs.
    static func topics(prefix: String, partitions: Int, replicationFactor: Int) -> [KafkaTopicSpecification] {
        (LatchkeyEventType.allTopics(prefix: prefix) + [prefix + "dead-letter"]).map {
            KafkaTopicSpecification(
                name: $0, partitions: partitions, replicationFactor: replicationFactor,
                configs: LatchkeyEventType(topic: $0, prefix: prefix)?.topicConfigs ?? [:])
        }
    }
}
