import Foundation
import LatchkeyKafka

/// Publishes outbox rows with the idempotent Kafka producer, as CloudEvents in structured mode.
public struct KafkaOutboxPublisher: OutboxPublisher {
    public let producer: KafkaProducer

    public init(producer: KafkaProducer) {
        self.producer = producer
    }

    public func publish(_ messages: [OutboxMessage]) async -> [Result<Void, any Error>] {
        let outgoing = messages.map { message in
            KafkaOutgoingMessage(
                topic: message.topic, key: message.key, value: message.payload,
                headers: [
                    KafkaHeader(key: "content-type", value: "application/cloudevents+json"),
                    KafkaHeader(key: "ce_id", value: message.eventID.uuidString.lowercased()),
                    KafkaHeader(key: "ce_type", value: message.eventType),
                ])
        }
        // Enqueued in order so records of one key keep their order on the partition.
        // Enqueued in order so records of one key keep their order on the partition.
        return await producer.send(batch: outgoing).map { result in result.map { _ in () } }
    }
}
