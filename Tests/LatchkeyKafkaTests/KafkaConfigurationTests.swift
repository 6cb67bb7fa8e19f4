import Testing

@testable import LatchkeyKafka

@Suite("Kafka configuration")
struct KafkaConfigurationTests {
    @Test("producer defaults give an idempotent, acks=all producer")
    func producerDefaults() {
        let configuration = KafkaConfiguration(bootstrapServers: "b:9092", clientID: "gateway")
        let properties = configuration.producerProperties()
        #expect(properties["bootstrap.servers"] == "b:9092")
        #expect(properties["client.id"] == "gateway")
        #expect(properties["acks"] == "all")
        #expect(properties["enable.idempotence"] == "true")
        #expect(properties["linger.ms"] == "5")
        #expect(properties["message.timeout.ms"] == "120000")
        #expect(properties["retry.backoff.ms"] == "100")
        #expect(properties["statistics.interval.ms"] == "30000")
        #expect(properties["group.id"] == nil)
    }

    @Test("consumer defaults disable auto commit and start from the earliest offset")
    func consumerDefaults() {
        let properties = KafkaConfiguration(bootstrapServers: "b:9092", clientID: "audit")
            .consumerProperties(groupID: "audit-sidecar")
        #expect(properties["group.id"] == "audit-sidecar")
        #expect(properties["enable.auto.commit"] == "false")
        #expect(properties["auto.offset.reset"] == "earliest")
        #expect(properties["enable.partition.eof"] == "false")
        #expect(properties["acks"] == nil)
    }

    @Test("explicit properties override defaults; no timeout means librdkafka's 0")
    func overridesWin() {
        var configuration = KafkaConfiguration(
            bootstrapServers: "b:9092",
            clientID: "relay",
            properties: ["linger.ms": "50", "auto.offset.reset": "latest"],
            messageTimeout: nil,
            statisticsInterval: nil
        )
        configuration.linger = .milliseconds(1)
        #expect(configuration.producerProperties()["linger.ms"] == "50")
        #expect(configuration.producerProperties()["message.timeout.ms"] == "0")
        #expect(configuration.producerProperties()["statistics.interval.ms"] == nil)
        #expect(configuration.consumerProperties(groupID: "g")["auto.offset.reset"] == "latest")
        #expect(configuration.adminProperties()["acks"] == nil)
    }

    @Test("error code names match librdkafka's")
    func errorCodeNames() {
        let expected: [(KafkaErrorCode, String)] = [
            (.noError, "NO_ERROR"), (.offsetOutOfRange, "OFFSET_OUT_OF_RANGE"),
            (.unknownTopicOrPartition, "UNKNOWN_TOPIC_OR_PART"), (.leaderNotAvailable, "LEADER_NOT_AVAILABLE"),
            (.notLeaderForPartition, "NOT_LEADER_FOR_PARTITION"), (.requestTimedOut, "REQUEST_TIMED_OUT"),
            (.brokerNotAvailable, "BROKER_NOT_AVAILABLE"), (.networkException, "NETWORK_EXCEPTION"),
            (.coordinatorLoadInProgress, "COORDINATOR_LOAD_IN_PROGRESS"),
            (.coordinatorNotAvailable, "COORDINATOR_NOT_AVAILABLE"), (.notCoordinator, "NOT_COORDINATOR"),
            (.notEnoughReplicas, "NOT_ENOUGH_REPLICAS"),
            (.notEnoughReplicasAfterAppend, "NOT_ENOUGH_REPLICAS_AFTER_APPEND"),
            (.illegalGeneration, "ILLEGAL_GENERATION"), (.unknownMemberID, "UNKNOWN_MEMBER_ID"),
            (.rebalanceInProgress, "REBALANCE_IN_PROGRESS"), (.topicAuthorizationFailed, "TOPIC_AUTHORIZATION_FAILED"),
            (.unsupportedVersion, "UNSUPPORTED_VERSION"), (.topicAlreadyExists, "TOPIC_ALREADY_EXISTS"),
            (.invalidPartitions, "INVALID_PARTITIONS"), (.invalidReplicationFactor, "INVALID_REPLICATION_FACTOR"),
            (.policyViolation, "POLICY_VIOLATION"), (.outOfOrderSequenceNumber, "OUT_OF_ORDER_SEQUENCE_NUMBER"),
            (.kafkaStorageError, "KAFKA_STORAGE_ERROR"), (.destroyed, "_DESTROY"), (.failed, "_FAIL"),
            (.transport, "_TRANSPORT"), (.messageTimedOut, "_MSG_TIMED_OUT"),
            (.unknownPartition, "_UNKNOWN_PARTITION"), (.unknownTopic, "_UNKNOWN_TOPIC"),
            (.allBrokersDown, "_ALL_BROKERS_DOWN"), (.invalidArgument, "_INVALID_ARG"), (.timedOut, "_TIMED_OUT"),
            (.queueFull, "_QUEUE_FULL"), (.invalidState, "_STATE"), (.noOffset, "_NO_OFFSET"),
            (.purgedFromQueue, "_PURGE_QUEUE"), (.purgedInFlight, "_PURGE_INFLIGHT"), (.fatal, "_FATAL"),
            (.maxPollExceeded, "_MAX_POLL_EXCEEDED"),
        ]
        for (code, name) in expected {
            #expect(code.name == name, "\(code.rawValue)")
        }
        #expect(RdKafkaClient.versionString.hasPrefix("2."))
    }
}
