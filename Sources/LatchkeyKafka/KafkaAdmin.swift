import Logging

/// Topic administration and cluster metadata.
public final class KafkaAdmin: Sendable {
    private let client: RdKafkaClient
    private let queue: KafkaBlockingQueue
    private let logger: Logger

    public init(configuration: KafkaConfiguration, logger: Logger) throws {
        self.client = try RdKafkaClient(
            role: .producer,
            properties: configuration.adminProperties(),
            callbacks: RdKafkaClient.Callbacks(logger: logger)
        )
        self.queue = KafkaBlockingQueue(label: "latchkey.kafka.admin.\(configuration.clientID)")
        self.logger = logger
    }

    /// Creates the topics that do not exist yet and waits until every topic has partition leaders.
    ///
    /// Idempotent: existing topics are reported as ``KafkaTopicCreationOutcome/alreadyExists(partitions:)``
    /// and left unchanged (a different partition count is only logged).
    @discardableResult
    public func createTopics(
        _ topics: [KafkaTopicSpecification],
        timeout: Duration = .seconds(30)
    ) async throws -> [String: KafkaTopicCreationOutcome] {
        let client = self.client
        let logger = self.logger
        return try await queue.run { () throws(KafkaError) in
            try Self.createTopics(topics, timeout: timeout, client: client, logger: logger)
        }
    }

    /// Convenience for a single topic.
    @discardableResult
    public func createTopic(
        _ name: String,
        partitions: Int = 1,
        replicationFactor: Int = 1,
        configs: [String: String] = [:],
        timeout: Duration = .seconds(30)
    ) async throws -> KafkaTopicCreationOutcome {
        let specification = KafkaTopicSpecification(
            name: name, partitions: partitions, replicationFactor: replicationFactor, configs: configs
        )
        let outcomes = try await createTopics([specification], timeout: timeout)
        guard let outcome = outcomes[name] else {
            throw KafkaError(code: .failed, message: "no outcome reported for topic \(name)")
        }
        return outcome
    }

    /// Brokers and all topics, including internal ones such as `__consumer_offsets`.
    public func metadata(timeout: Duration = .seconds(10)) async throws -> KafkaClusterMetadata {
        let client = self.client
        return try await queue.run { () throws(KafkaError) in try client.metadata(timeout: timeout) }
    }

    /// All topics that exist without error, sorted by name.
    public func listTopics(timeout: Duration = .seconds(10)) async throws -> [KafkaTopicMetadata] {
        try await metadata(timeout: timeout).topics
            .filter { $0.error == nil }
            .sorted { $0.name < $1.name }
    }

    // Runs on the admin queue; every call below may block up to `timeout`.
    private static func createTopics(
        _ topics: [KafkaTopicSpecification],
        timeout: Duration,
        client: RdKafkaClient,
        logger: Logger
    ) throws(KafkaError) -> [String: KafkaTopicCreationOutcome] {
        defer { client.poll(timeout: .zero) }  // serve error callbacks raised meanwhile
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        var outcomes: [String: KafkaTopicCreationOutcome] = [:]

        let metadata = try client.metadata(timeout: timeout)
        var missing: [KafkaTopicSpecification] = []
        for topic in topics {
            if let existing = metadata.topic(named: topic.name), existing.error == nil, !existing.partitions.isEmpty {
                outcomes[topic.name] = .alreadyExists(partitions: existing.partitions.count)
                if existing.partitions.count != topic.partitions {
                    logger.warning(
                        "Kafka topic exists with a different partition count",
                        metadata: [
                            "topic": "\(topic.name)", "existing": "\(existing.partitions.count)",
                            "requested": "\(topic.partitions)",
                        ]
                    )
                }
            } else {
                missing.append(topic)
            }
        }
        guard !missing.isEmpty else { return outcomes }

        // librdkafka's mock brokers answer Metadata with a controller id that matches no broker
        // and do not implement CreateTopics; asking would only time out.
        let brokerIDs = Set(metadata.brokers.map(\.id))
        let controller = client.controllerID(timeout: timeout)
        guard let controller, brokerIDs.contains(controller) else {
            for topic in missing {
                let created = try client.metadata(topic: topic.name, timeout: timeout).topic(named: topic.name)
                guard let created, created.error == nil, !created.partitions.isEmpty else {
                    throw KafkaError(
                        code: created?.error ?? .unknownTopic,
                        message: "no controller for CreateTopics and auto-creation of \(topic.name) failed"
                    )
                }
                outcomes[topic.name] = .autoCreated(partitions: created.partitions.count)
                logger.notice(
                    "Kafka topic auto-created (cluster has no CreateTopics controller)",
                    metadata: ["topic": "\(topic.name)", "partitions": "\(created.partitions.count)"]
                )
            }
            return outcomes
        }

        let results = try client.createTopics(missing, timeout: timeout)
        var createdElsewhere: [String] = []
        for topic in missing {
            switch results[topic.name] {
            case .some(.none):
                outcomes[topic.name] = .created
                logger.info(
                    "Kafka topic created",
                    metadata: ["topic": "\(topic.name)", "partitions": "\(topic.partitions)"]
                )
            case .some(.some(let error)) where error.code == .topicAlreadyExists:
                // Another process created it between our metadata check and our request.
                createdElsewhere.append(topic.name)
            case .some(.some(let error)):
                throw error
            case .none:
                throw KafkaError(code: .failed, message: "CreateTopics returned no result for \(topic.name)")
            }
        }

        // Creation is acknowledged before every broker knows the leaders; wait so producers and
        // consumers started right after this call do not see UNKNOWN_TOPIC_OR_PART.
        let names = Set(missing.map(\.name))
        while true {
            let current = try client.metadata(timeout: timeout)
            if names.allSatisfy({ current.topic(named: $0)?.isReady == true }) {
                for name in createdElsewhere {
                    outcomes[name] = .alreadyExists(partitions: current.topic(named: name)?.partitions.count ?? 0)
                }
                return outcomes
            }
            guard clock.now < deadline else {
                throw KafkaError(code: .timedOut, message: "topics \(names.sorted()) not ready within \(timeout)")
            }
            client.poll(timeout: .milliseconds(100))
        }
    }
}
