import ArgumentParser
import Foundation
import LatchkeyCore
import LatchkeyKafka
import Logging

/// `latchkey kafka-cluster`: the embedded development Kafka cluster, shared by local service processes.
struct KafkaClusterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kafka-cluster",
        abstract: "Run librdkafka's mock cluster (real Kafka protocol on loopback) until interrupted.")

    @Option(help: "Number of brokers.")
    var brokers = 1

    @Option(help: "Partitions of each Latchkey topic.")
    var partitions = 3

    @Option(help: "Topic prefix.")
    var topicPrefix = LatchkeyEventType.defaultTopicPrefix

    @Option(help: "Write the bootstrap servers to this file once the cluster is up.")
    var bootstrapFile: String?

    func run() async throws {
        var logger = Logger(label: "latchkey.kafka-cluster")
        logger.logLevel = .notice
        // librdkafka's mock brokers neither compact nor delete; the configs say what a real cluster must do.
        let topics = KafkaTopicsCommand.topics(
            prefix: topicPrefix, partitions: partitions, replicationFactor: min(3, brokers))
        let file = bootstrapFile
        try await runEmbeddedKafkaCluster(brokers: brokers, topics: topics, logger: logger) { servers in
            printBootstrapServers(servers)
            if let file {
                try? Data(servers.utf8).write(to: URL(fileURLWithPath: file), options: .atomic)
            }
        }
    }
}
