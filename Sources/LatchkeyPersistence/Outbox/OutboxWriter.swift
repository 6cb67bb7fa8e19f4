import Foundation
import LatchkeyCore
import Logging
import PostgresNIO

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
        let row = try row(for: event)
        try await connection.query(
            """
            INSERT INTO outbox (event_id, tenant_id, topic, message_key, event_type, payload)
            VALUES (\(row.eventID), \(row.tenant), \(row.topic), \(row.key), \(row.eventType), \(row.payload))
            """, logger: logger)
    }

    /// The outbox row of a CloudEvent, for a statement that inserts it along with the state it describes.
    public func row<Payload: EventPayload>(for event: CloudEvent<Payload>) throws -> OutboxRow {
        guard let id = event.uuid else { throw OutboxError.eventIDNotUUID(event.id) }
        return OutboxRow(
            eventID: id, tenant: event.tenantID.rawValue, eventType: event.type.cloudEventType,
            topic: topicPrefix + event.type.topicSuffix, key: event.kafkaKey,
            payload: String(decoding: try event.encoded(), as: UTF8.self))
    }

    /// Writes one encoded event; `connection` must be inside the transaction that changes the state.
    public func append(
        eventID: UUID, tenant: String, eventType: String, topicSuffix: String, key: String, payload: String,
        on connection: PostgresConnection, logger: Logger
    ) async throws {
        let topic = topicPrefix + topicSuffix
        try await connection.query(
            """
            INSERT INTO outbox (event_id, tenant_id, topic, message_key, event_type, payload)
            VALUES (\(eventID), \(tenant), \(topic), \(key), \(eventType), \(payload))
            """, logger: logger)
    }
}

/// One encoded event as the `outbox` table stores it.
public struct OutboxRow: Sendable {
    public let eventID: UUID
    public let tenant: String
    public let eventType: String
    public let topic: String
    public let key: String
    public let payload: String
}

/// Why an event could not be written to the outbox.
public enum OutboxError: Error, Equatable {
    case eventIDNotUUID(String)
}
