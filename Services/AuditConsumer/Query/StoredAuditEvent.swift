import LatchkeyCore
import PostgresNIO

/// One `audit_events` row as the query API reads it (times as the chain's RFC 3339 text).
struct StoredAuditEvent: Sendable {
    var tenantID: String
    var sequence: Int64
    var eventID: String
    var eventType: String
    var subject: String?
    var userID: String?
    var eventTime: String
    var storedAt: String
    var sourceTopic: String
    var sourcePartition: Int32
    var sourceOffset: Int64
    /// The `jsonb` column as PostgreSQL prints it.
    var eventText: String
    var previousHash: String
    var hash: String

    /// The select list matching ``Row``; times go through `to_char` so no float conversion touches them.
    static let columns = """
        tenant_id, sequence, event_id::text, event_type, subject, user_id, \
        to_char(event_time AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), \
        to_char(stored_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), \
        source_topic, source_partition, source_offset, event::text, prev_hash, hash
        """

    /// The decoded tuple of ``columns``.
    typealias Row = (
        String, Int64, String, String, String?, String?, String, String, String, Int32, Int64, String, String, String
    )

    /// Reads every row of a query that selected ``columns``.
    static func all(_ rows: PostgresRowSequence) async throws -> [StoredAuditEvent] {
        var events: [StoredAuditEvent] = []
        for try await row in rows.decode(Row.self) { events.append(StoredAuditEvent(row)) }
        return events
    }

    /// The stored event, parsed; nil only when the column no longer holds JSON an event could be.
    var event: JSONValue? {
        try? StrictJSONParser.parse(eventText)
    }

    /// The record the chain hashed, rebuilt from the row (nil when the stored event is unreadable).
    var chainRecord: AuditChainRecord? {
        guard let event else { return nil }
        return AuditChainRecord(
            tenantID: tenantID, sequence: sequence, eventID: eventID, eventType: eventType, subject: subject,
            userID: userID, eventTime: eventTime, storedAt: storedAt, sourceTopic: sourceTopic,
            sourcePartition: sourcePartition, sourceOffset: sourceOffset, canonicalEvent: CanonicalJSON.encode(event))
    }

    /// The API representation: the stored columns and the whole CloudEvent.
    var view: JSONValue {
        .object([
            "sequence": .number(Double(sequence)),
            "event_id": .string(eventID),
            "type": .string(eventType),
            "time": .string(eventTime),
            "subject": subject.map(JSONValue.string) ?? .null,
            "user_id": userID.map(JSONValue.string) ?? .null,
            "stored_at": .string(storedAt),
            "source": .object([
                "topic": .string(sourceTopic),
                "partition": .number(Double(sourcePartition)),
                "offset": .number(Double(sourceOffset)),
            ]),
            "prev_hash": .string(previousHash),
            "hash": .string(hash),
            "event": event ?? .null,
        ])
    }
}

extension StoredAuditEvent {
    init(_ row: Row) {
        self.init(
            tenantID: row.0, sequence: row.1, eventID: row.2, eventType: row.3, subject: row.4, userID: row.5,
            eventTime: row.6, storedAt: row.7, sourceTopic: row.8, sourcePartition: row.9, sourceOffset: row.10,
            eventText: row.11, previousHash: row.12, hash: row.13)
    }
}
