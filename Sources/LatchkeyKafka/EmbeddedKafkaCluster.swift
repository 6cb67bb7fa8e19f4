import Logging

/// An in-process Kafka cluster for development and tests, built on librdkafka's mock brokers.
///
/// The brokers listen on loopback TCP, so other processes can use ``bootstrapServers`` as their
/// `KAFKA_BROKERS`. Consumer groups, commits and idempotent produce work; CreateTopics does not
/// (create topics with ``createTopic(_:partitions:replicationFactor:)``). Broker ids are `1...brokers`.
///
/// Fault injection and topic creation are quick synchronous calls to the mock cluster's thread.
public final class EmbeddedKafkaCluster: Sendable {
    private let cluster: RdKafkaClient.MockCluster
    private let queue: KafkaBlockingQueue
    private let logger: Logger

    /// The `host:port,…` list to hand to clients.
    public let bootstrapServers: String
    /// Number of brokers; broker ids run from 1 through this value.
    public let brokerCount: Int

    /// Starts `brokers` mock brokers on ephemeral loopback ports.
    public init(brokers: Int = 3, logger: Logger = Logger(label: "latchkey.kafka.embedded")) throws {
        guard brokers >= 1 else { throw KafkaError.configuration("an embedded cluster needs at least one broker") }
        self.cluster = try RdKafkaClient.MockCluster(brokers: brokers, logger: logger)
        self.queue = KafkaBlockingQueue(label: "latchkey.kafka.embedded.\(cluster.bootstrapServers)")
        self.bootstrapServers = cluster.bootstrapServers
        self.brokerCount = brokers
        self.logger = logger
    }

    /// Creates a topic; the replication factor must not exceed the broker count.
    ///
    /// Topics a client asks for without creating them are auto-created by the brokers with four
    /// partitions, so create topics before clients first use them.
    public func createTopic(_ name: String, partitions: Int = 1, replicationFactor: Int = 1) throws {
        guard replicationFactor <= brokerCount else {
            throw KafkaError(
                code: .invalidReplicationFactor,
                message: "replication factor \(replicationFactor) exceeds \(brokerCount) brokers"
            )
        }
        try cluster.createTopic(name, partitions: partitions, replicationFactor: replicationFactor)
    }

    /// Convenience for ``createTopic(_:partitions:replicationFactor:)``.
    public func createTopic(_ specification: KafkaTopicSpecification) throws {
        try createTopic(
            specification.name,
            partitions: specification.partitions,
            replicationFactor: specification.replicationFactor
        )
    }

    /// Simulates an outage of every broker: each request a client sends, on a connection it already
    /// has or a new one, is answered by closing that connection, until ``endOutage()``. Nothing is
    /// stored or fetched meanwhile; clients reconnect with their usual backoff.
    ///
    /// librdkafka's own broker-down command is not offered: it closes the broker's listening socket
    /// and binds the same port again at once, and when another socket takes the port in between,
    /// librdkafka aborts the whole process. Here the listeners stay open.
    public func beginOutage() throws {
        try cluster.beginOutage(apiKeys: Self.outageAPIKeys, requestsPerKey: 4_096)
    }

    /// Ends ``beginOutage()``: requests are answered normally again.
    public func endOutage() throws {
        try cluster.endOutage(apiKeys: Self.outageAPIKeys)
    }

    /// Every request kind except ApiVersions: a client whose connection closes during that first
    /// handshake concludes the broker is too old for it and falls back to legacy protocol features.
    private static let outageAPIKeys: [Int16] = (0..<100).filter { $0 != KafkaAPIKey.apiVersions.rawValue }

    /// Moves the leadership of one partition to another broker.
    public func setPartitionLeader(topic: String, partition: Int32, brokerID: Int32) throws {
        try cluster.setLeader(topic: topic, partition: partition, brokerID: brokerID)
    }

    /// Makes the next `errors.count` requests of type `apiKey` fail with these errors, in order.
    public func pushRequestErrors(apiKey: KafkaAPIKey, errors: [KafkaErrorCode]) throws {
        try cluster.pushRequestErrors(apiKey: apiKey.rawValue, errors: errors.map(\.rawValue))
    }

    /// Makes the next Produce requests fail with these errors, in order.
    public func pushProduceErrors(_ errors: [KafkaErrorCode]) throws {
        try pushRequestErrors(apiKey: .produce, errors: errors)
    }

    /// Drops injected errors not yet consumed for `apiKey`.
    public func clearRequestErrors(apiKey: KafkaAPIKey) throws {
        try cluster.clearRequestErrors(apiKey: apiKey.rawValue)
    }

    /// Starts stopping the brokers and returns at once; their ports close a moment later. Idempotent.
    ///
    /// Every later call on this cluster throws. Use ``shutdownAndWait()`` when the ports must be
    /// closed before continuing.
    public func shutdown() {
        cluster.destroyInBackground()
        logger.debug("embedded Kafka cluster stopping")
    }

    /// Stops the brokers and returns once their ports are closed. Idempotent.
    ///
    /// Can take about a second (librdkafka's mock thread stops on a timer tick), spent off Swift's
    /// cooperative pool.
    public func shutdownAndWait() async {
        let cluster = self.cluster
        await queue.run { cluster.destroy() }
        logger.debug("embedded Kafka cluster stopped")
    }
}
