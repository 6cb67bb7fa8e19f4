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
    /// The wake-up of the relay running in this process, if one does.
    public let relayWakeup: RelayWakeup?

    public init(topicPrefix: String = LatchkeyEventType.defaultTopicPrefix, relayWakeup: RelayWakeup? = nil) {
        self.topicPrefix = topicPrefix
        self.relayWakeup = relayWakeup
    }

    /// Whether this process's relay is woken for the rows of a one-statement write (`SELECT f(…) FROM
    /// outbox_woken_by_caller($n)`, one function call, its own transaction) by ``announceCommitted()`` once
    /// the statement returns: bound as that argument, it makes the statement send no `NOTIFY`, which would make
    /// concurrent commits wait for one another. False without a relay in this process, so the insert notifies
    /// as any other.
    public var relayWokenByCaller: Bool { relayWakeup != nil }

    /// Wakes this process's relay for rows a statement that bound ``relayWokenByCaller`` has committed.
    public func announceCommitted() {
        relayWakeup?.signal()
    }

    /// Writes a CloudEvent to its topic, keyed `{tenant}/{client_id}`, in the caller's transaction.
    public func append<Payload: EventPayload>(
        _ event: CloudEvent<Payload>, on connection: PostgresConnection, logger: Logger
    ) async throws {
        let row = try row(for: event)
        try await append(
            eventID: row.eventID, tenant: row.tenant, eventType: row.eventType, topic: row.topic, key: row.key,
            payload: row.payload, traceparent: row.traceparent, on: connection, logger: logger)
    }

    /// The outbox row of a CloudEvent, for a statement that inserts it along with the state it describes.
    public func row<Payload: EventPayload>(for event: CloudEvent<Payload>) throws -> OutboxRow {
        guard let id = event.uuid else { throw OutboxError.eventIDNotUUID(event.id) }
        // The trace of the operation writing the event travels with it, in the event and in the row.
        var event = event
        if event.traceparent == nil, let current = ServiceContext.current {
            event.traceparent = KafkaTraceContext.traceparent(of: current)
        }
        return OutboxRow(
            eventID: id, tenant: event.tenantID.rawValue, eventType: event.type.cloudEventType,
            topic: topicPrefix + event.type.topicSuffix, key: event.kafkaKey,
            payload: String(decoding: try event.encoded(), as: UTF8.self),
            traceparent: Traceparent.validated(event.traceparent))
    }

    /// Writes one encoded event; `connection` must be inside the transaction that changes the state.
    /// `traceparent` is the W3C trace context the event was written in (dropped unless valid).
    public func append(
        eventID: UUID, tenant: String, eventType: String, topicSuffix: String, key: String, payload: String,
        traceparent: String? = nil, on connection: PostgresConnection, logger: Logger
    ) async throws {
        try await append(
            eventID: eventID, tenant: tenant, eventType: eventType, topic: topicPrefix + topicSuffix, key: key,
            payload: payload, traceparent: Traceparent.validated(traceparent), on: connection, logger: logger)
    }

    private func append(
        eventID: UUID, tenant: String, eventType: String, topic: String, key: String, payload: String,
        traceparent: String?, on connection: PostgresConnection, logger: Logger
    ) async throws {
        try await connection.query(
            """
            INSERT INTO outbox (event_id, tenant_id, topic, message_key, event_type, payload, traceparent)
            VALUES (\(eventID), \(tenant), \(topic), \(key), \(eventType), \(payload), \(traceparent))
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
    /// The W3C trace context the event was written in (validated), if any.
    public let traceparent: String?
}

extension PostgresBindings {
    /// The outbox row's columns as the statements that write state and event together take them, in this
    /// order: event id, topic, message key, event type, payload, traceparent.
    public mutating func append(outboxRow row: OutboxRow) {
        append(row.eventID)
        append(row.topic)
        append(row.key)
        append(row.eventType)
        append(row.payload)
        append(row.traceparent)
    }
}

/// Why an event could not be written to the outbox.
public enum OutboxError: Error, Equatable {
    case eventIDNotUUID(String)
}
