import Logging
import ServiceLifecycle

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Runs an ``EmbeddedKafkaCluster`` until the task is cancelled or graceful shutdown begins.
///
/// Creates `topics`, then logs the bootstrap servers and prints `KAFKA_BROKERS=<servers>` on
/// standard output so that service processes started next can share this one cluster.
/// Returns normally when stopped.
public func runEmbeddedKafkaCluster(
    brokers: Int = 3,
    topics: [KafkaTopicSpecification] = [],
    logger: Logger,
    onReady: @Sendable (_ bootstrapServers: String) -> Void = printBootstrapServers
) async throws {
    let cluster = try EmbeddedKafkaCluster(brokers: brokers, logger: logger)
    do {
        for topic in topics {
            try cluster.createTopic(
                topic.name,
                partitions: topic.partitions,
                replicationFactor: min(topic.replicationFactor, brokers)
            )
        }
    } catch {
        await cluster.shutdownAndWait()
        throw error
    }
    logger.notice(
        "embedded Kafka cluster running",
        metadata: [
            "bootstrap_servers": "\(cluster.bootstrapServers)", "brokers": "\(brokers)",
            "topics": "\(topics.map(\.name))",
        ]
    )
    onReady(cluster.bootstrapServers)
    do {
        try await gracefulShutdown()
    } catch is CancellationError {
        // Cancellation is the normal way to stop it outside a ServiceGroup.
    }
    await cluster.shutdownAndWait()
}

/// ``runEmbeddedKafkaCluster(brokers:topics:logger:onReady:)`` as a swift-service-lifecycle `Service`.
public struct EmbeddedKafkaClusterService: Service {
    public var brokers: Int
    public var topics: [KafkaTopicSpecification]
    public var logger: Logger
    public var onReady: @Sendable (String) -> Void

    public init(
        brokers: Int = 3,
        topics: [KafkaTopicSpecification] = [],
        logger: Logger,
        onReady: @escaping @Sendable (String) -> Void = printBootstrapServers
    ) {
        self.brokers = brokers
        self.topics = topics
        self.logger = logger
        self.onReady = onReady
    }

    public func run() async throws {
        try await runEmbeddedKafkaCluster(brokers: brokers, topics: topics, logger: logger, onReady: onReady)
    }
}

/// Prints `KAFKA_BROKERS=<servers>` and flushes, so a parent process reading a pipe sees it at once.
@Sendable
public func printBootstrapServers(_ bootstrapServers: String) {
    print("KAFKA_BROKERS=\(bootstrapServers)")
    fflush(nil)  // stdout is block-buffered when it is a pipe
}
