/// An error from librdkafka, a Kafka broker, or this Kafka layer's own lifecycle checks.
public struct KafkaError: Error, Sendable, CustomStringConvertible {
    /// The protocol or librdkafka error code.
    public var code: KafkaErrorCode
    /// Human-readable detail (librdkafka's reason string where it gave one).
    public var message: String
    /// True when librdkafka reports the client instance as unusable (e.g. idempotence broken).
    public var isFatal: Bool

    public init(code: KafkaErrorCode, message: String, isFatal: Bool = false) {
        self.code = code
        self.message = message
        self.isFatal = isFatal
    }

    public var description: String {
        "KafkaError(\(code.name)\(isFatal ? ", fatal" : ""): \(message)"
    }

    static func configuration(_ message: String) -> KafkaError {
        KafkaError(code: .invalidArgument, message: message)
    }

    static let producerShutDown = KafkaError(code: .destroyed, message: "the producer has shut down")
    static let consumerClosed = KafkaError(code: .invalidState, message: "the consumer is closed")
    static let clusterShutDown = KafkaError(code: .destroyed, message: "the embedded cluster has shut down")
}
