import Foundation
import LatchkeyCore
import LatchkeyKafka
import Tracing

/// Publishes outbox rows with the idempotent Kafka producer, as CloudEvents in structured mode.
public struct KafkaOutboxPublisher: OutboxPublisher {
    public let producer: KafkaProducer

    public init(producer: KafkaProducer) {
        self.producer = producer
    }

    public func publish(
        _ messages: [OutboxMessage], whenHandedOver: @escaping @Sendable () -> Void
    ) async -> [Result<Void, any Error>] {
        // A producer span per traced event, in the trace of the operation that wrote it, until its delivery
        // is known; the span's context goes out in the record's `traceparent` header.
        let spans: [(any Span)?] = messages.map { message in
            guard let traceparent = message.traceparent else { return nil }
            let span = startSpan(
                "\(message.topic) publish", context: KafkaTraceContext.context(continuing: traceparent),
                ofKind: .producer)
            span.attributes["messaging.system"] = "kafka"
            span.attributes["messaging.operation.type"] = "send"
            span.attributes["messaging.operation.name"] = "publish"
            span.attributes["messaging.destination.name"] = message.topic
            span.attributes["messaging.message.id"] = message.eventID.lowercasedString
            span.attributes["cloudevents.event_id"] = message.eventID.lowercasedString
            span.attributes["cloudevents.event_type"] = message.eventType
            return span
        }
        let outgoing = zip(messages, spans).map { message, span in
            KafkaOutgoingMessage(
                topic: message.topic, key: message.key, value: message.payload,
                headers: [
                    KafkaHeader(key: "content-type", value: "application/cloudevents+json"),
                    KafkaHeader(key: "ce_id", value: message.eventID.lowercasedString),
                    KafkaHeader(key: "ce_type", value: message.eventType),
                ] + (span.map { KafkaTraceContext.headers(for: $0.context) } ?? []))
        }
        // Enqueued in order so records of one key keep their order on the partition.
        let results = await producer.send(batch: outgoing, whenEnqueued: whenHandedOver).map { result in
            result.map { _ in () }
        }
        for (span, result) in zip(spans, results) {
            guard let span else { continue }
            if case .failure(let error) = result { span.recordError(error) }
            span.end()
        }
        return results
    }
}
