/// A Kafka protocol error code (positive) or a librdkafka client-side error code (negative).
public struct KafkaErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: Int32

    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// librdkafka's symbolic name, e.g. `NOT_LEADER_FOR_PARTITION` or `_MSG_TIMED_OUT`.
    public var name: String { RdKafkaClient.errorName(rawValue) }

    public var description: String { "\(name) (\(rawValue))" }

    // Broker (protocol) errors; the values are fixed by the Kafka protocol.
    public static let noError = KafkaErrorCode(rawValue: 0)
    public static let offsetOutOfRange = KafkaErrorCode(rawValue: 1)
    public static let unknownTopicOrPartition = KafkaErrorCode(rawValue: 3)
    public static let leaderNotAvailable = KafkaErrorCode(rawValue: 5)
    public static let notLeaderForPartition = KafkaErrorCode(rawValue: 6)
    public static let requestTimedOut = KafkaErrorCode(rawValue: 7)
    public static let brokerNotAvailable = KafkaErrorCode(rawValue: 8)
    public static let networkException = KafkaErrorCode(rawValue: 13)
    public static let coordinatorLoadInProgress = KafkaErrorCode(rawValue: 14)
    public static let coordinatorNotAvailable = KafkaErrorCode(rawValue: 15)
    public static let notCoordinator = KafkaErrorCode(rawValue: 16)
    public static let notEnoughReplicas = KafkaErrorCode(rawValue: 19)
    public static let notEnoughReplicasAfterAppend = KafkaErrorCode(rawValue: 20)
    public static let illegalGeneration = KafkaErrorCode(rawValue: 22)
    public static let unknownMemberID = KafkaErrorCode(rawValue: 25)
    public static let rebalanceInProgress = KafkaErrorCode(rawValue: 27)
    public static let topicAuthorizationFailed = KafkaErrorCode(rawValue: 29)
    public static let unsupportedVersion = KafkaErrorCode(rawValue: 35)
    public static let topicAlreadyExists = KafkaErrorCode(rawValue: 36)
    public static let invalidPartitions = KafkaErrorCode(rawValue: 37)
    public static let invalidReplicationFactor = KafkaErrorCode(rawValue: 38)
    public static let policyViolation = KafkaErrorCode(rawValue: 44)
    public static let outOfOrderSequenceNumber = KafkaErrorCode(rawValue: 45)
    public static let kafkaStorageError = KafkaErrorCode(rawValue: 56)

    // librdkafka client-side errors (negative values from rdkafka.h).
    public static let destroyed = KafkaErrorCode(rawValue: -197)
    public static let failed = KafkaErrorCode(rawValue: -196)
    public static let transport = KafkaErrorCode(rawValue: -195)
    public static let messageTimedOut = KafkaErrorCode(rawValue: -192)
    public static let unknownPartition = KafkaErrorCode(rawValue: -190)
    public static let unknownTopic = KafkaErrorCode(rawValue: -188)
    public static let allBrokersDown = KafkaErrorCode(rawValue: -187)
    public static let invalidArgument = KafkaErrorCode(rawValue: -186)
    public static let timedOut = KafkaErrorCode(rawValue: -185)
    public static let queueFull = KafkaErrorCode(rawValue: -184)
    public static let invalidState = KafkaErrorCode(rawValue: -172)
    public static let noOffset = KafkaErrorCode(rawValue: -168)
    public static let purgedFromQueue = KafkaErrorCode(rawValue: -152)
    public static let purgedInFlight = KafkaErrorCode(rawValue: -151)
    public static let fatal = KafkaErrorCode(rawValue: -150)
    public static let maxPollExceeded = KafkaErrorCode(rawValue: -147)
}
