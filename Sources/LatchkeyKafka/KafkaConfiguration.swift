import Metrics

/// Connection and tuning settings shared by ``KafkaProducer``, ``KafkaConsumer`` and ``KafkaAdmin``.
public struct KafkaConfiguration: Sendable {
    /// Comma-separated `host:port` list, e.g. the value of `KAFKA_BROKERS`.
    public var bootstrapServers: String
    /// Sent to brokers and used as the `client_id` metric dimension.
    public var clientID: String
    /// Extra librdkafka properties; they override every default set by this type.
    public var properties: [String: String]
    /// Protocol, SASL credentials and TLS material of the connections to the brokers.
    public var security: KafkaSecurity = .plaintext

    /// Producer: how long a record may wait for delivery before its send fails; nil waits forever.
    public var messageTimeout: Duration?
    /// Producer: batching delay (`linger.ms`).
    public var linger: Duration
    /// Producer: back-off between retries of a failed produce request (`retry.backoff.ms`).
    public var retryBackoff: Duration
    /// Producer: how long shutdown waits for outstanding deliveries before failing them.
    public var shutdownFlushTimeout: Duration

    /// How often librdkafka emits statistics that are turned into gauges; nil disables them.
    public var statisticsInterval: Duration?
    /// Where statistics gauges go; nil uses the process-wide `MetricsSystem` factory.
    public var metricsFactory: (any MetricsFactory)?

    public init(
        bootstrapServers: String,
        clientID: String,
        properties: [String: String] = [:],
        messageTimeout: Duration? = .seconds(120),
        linger: Duration = .milliseconds(5),
        retryBackoff: Duration = .milliseconds(100),
        shutdownFlushTimeout: Duration = .seconds(10),
        statisticsInterval: Duration? = .seconds(30),
        metricsFactory: (any MetricsFactory)? = nil
    ) {
        self.bootstrapServers = bootstrapServers
        self.clientID = clientID
        self.properties = properties
        self.messageTimeout = messageTimeout
        self.linger = linger
        self.retryBackoff = retryBackoff
        self.shutdownFlushTimeout = shutdownFlushTimeout
        self.statisticsInterval = statisticsInterval
        self.metricsFactory = metricsFactory
    }

    /// Properties for an idempotent producer: every record is acknowledged by all in-sync
    /// replicas and retries can neither duplicate nor reorder it.
    func producerProperties() -> [String: String] {
        var defaults = commonProperties()
        defaults["acks"] = "all"
        defaults["enable.idempotence"] = "true"
        defaults["linger.ms"] = String(linger.kafkaMilliseconds)
        // librdkafka spells "never time out" as 0.
        defaults["message.timeout.ms"] = String(messageTimeout?.kafkaMilliseconds ?? 0)
        defaults["retry.backoff.ms"] = String(retryBackoff.kafkaMilliseconds)
        // Same key → partition mapping as the Java client, so other producers agree on placement.
        defaults["partitioner"] = "murmur2_random"
        return defaults.merging(properties) { _, override in override }
    }

    /// Properties for a consumer whose offsets move only when the application commits them.
    func consumerProperties(groupID: String) -> [String: String] {
        var defaults = commonProperties()
        defaults["group.id"] = groupID
        defaults["enable.auto.commit"] = "false"
        defaults["enable.auto.offset.store"] = "false"
        defaults["auto.offset.reset"] = "earliest"
        defaults["enable.partition.eof"] = "false"
        return defaults.merging(properties) { _, override in override }
    }

    /// Properties for the admin client; it is a producer-type handle that never produces.
    func adminProperties() -> [String: String] {
        var defaults = commonProperties()
        defaults.removeValue(forKey: "statistics.interval.ms")
        return defaults.merging(properties) { _, override in override }
    }

    private func commonProperties() -> [String: String] {
        var defaults = security.properties
        defaults["bootstrap.servers"] = bootstrapServers
        defaults["client.id"] = clientID
        if let statisticsInterval {
            defaults["statistics.interval.ms"] = String(max(1, statisticsInterval.kafkaMilliseconds))
        }
        return defaults
    }
}
