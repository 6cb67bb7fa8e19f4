import LatchkeyCore
import LatchkeyKafka

/// Publishes refused records to `<prefix>dead-letter`, unchanged, with where they came from and why.
///
/// The value and key are the original bytes; the original headers are kept and these are added:
/// `dlq-reason` (the metric's reason label), `dlq-detail` (a readable explanation),
/// `dlq-topic`, `dlq-partition`, `dlq-offset` and `dlq-consumer`.
struct DeadLetterPublisher: Sendable {
    static let consumerName = "audit-consumer"
    static let maximumDetailLength = 1_000

    let producer: KafkaProducer
    let topic: String

    init(producer: KafkaProducer, topicPrefix: String) {
        self.producer = producer
        self.topic = Self.topic(prefix: topicPrefix)
    }

    static func topic(prefix: String) -> String {
        LatchkeyEventType.deadLetterTopic(prefix: prefix)
    }

    /// Sends every record and waits for all delivery reports; throws the first failure.
    func publish(_ rejected: [RejectedRecord]) async throws {
        guard !rejected.isEmpty else { return }
        // Handed to the producer one after another, so the letters of a source partition keep its order.
        for result in await producer.send(batch: rejected.map(outgoing)) { _ = try result.get() }
    }

    func outgoing(_ record: RejectedRecord) -> KafkaOutgoingMessage {
        let source = record.message
        let headers =
            source.headers + [
                KafkaHeader(key: "dlq-reason", value: record.reason.rawValue),
                KafkaHeader(key: "dlq-detail", value: String(record.detail.prefix(Self.maximumDetailLength))),
                KafkaHeader(key: "dlq-topic", value: source.topic),
                KafkaHeader(key: "dlq-partition", value: String(source.partition)),
                KafkaHeader(key: "dlq-offset", value: String(source.offset)),
                KafkaHeader(key: "dlq-consumer", value: Self.consumerName),
            ]
        return KafkaOutgoingMessage(topic: topic, key: source.key, value: source.value, headers: headers)
    }
}
