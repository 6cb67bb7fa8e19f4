import Foundation
import LatchkeyCore
import LatchkeyKafka
import Logging
import PostgresNIO
import Tracing

/// Appends events to the outbox inside the caller's open transaction, so state and event commit together.
public struct OutboxWriter: Sendable {
    /// Topic prefix, `latchkey.` unless configured otherwise.
    public let topicPrefix: String

    public init(topicPrefix: String = LatchkeyEventType.defaultTopicPrefix) {
        self.topicPrefix = topicPrefix
    }

    /// Writes a CloudEvent to its topic, keyed `{tenant}/{client_id}`, in the caller's transaction.
    public func append<Payload: EventPayload>(
        _ event: CloudEvent<Payload>, on connection: PostgresConnection, logger: Logger
    ) async throws {
        guard let id = event.uuid else { throw OutboxError.eventIDNotUUID(event.id) }
        // The trace of the operation writing the event travels with it, in the event and in the row.
        var event = event
        if event.traceparent == nil, let current = ServiceContext.current {
            event.traceparent = KafkaTraceContext.traceparent(of: current)
        }
        let payload = String(decoding: try event.encoded(), as: UTF8.self)
        try await append(
            eventID: id, tenant: event.tenantID.rawValue, eventType: event.type.cloudEventType,
            topicSuffix: event.type.topicSuffix, key: event.kafkaKey, payload: payload, traceparent: event.traceparent,
            on: connection, logger: logger)
    }

    /// Writes one encoded event; `connection` must be inside the transaction that changes the state.
    /// `traceparent` is the W3C trace context the event was written in (dropped unless valid).
    public func append(
        eventID: UUID, tenant: String, eventType: String, topicSuffix: String, key: String, payload: String,
        traceparent: String? = nil, on connection: PostgresConnection, logger: Logger
    ) async throws {
        let topic = topicPrefix + topicSuffix
        let traceparent = Traceparent.validated(traceparent)
        try await connection.query(
            """
            INSERT INTO outbox (event_id, tenant_id, topic, message_key, event_type, payload, traceparent)
            VALUES (\(eventID), \(tenant), \(topic), \(key), \(eventType), \(payload), \(traceparent))
            """, logger: logger)
    }
}

/// Why an event could not be written to the outbox.
public enum OutboxError: Error, Equatable {
    case eventIDNotUUID(String)
}
