import Foundation
import PostgresNIO

// The relay's two statements of every round, run as named prepared statements: PostgreSQL parses and plans
// each one once per connection and then only binds and executes it. Each names itself: PostgresNIO's default
// name is the type's name, built by reflection on every execution.

/// Claims the next batch in one statement, its own transaction: `claim_outbox_batch` takes the advisory lock
/// that serialises claims (so the per-key ordering check sees every claim), then claims up to `limit` rows
/// for `lease` seconds, skipping `excluded` (rows this relay is still publishing).
struct ClaimOutboxBatchStatement: PostgresPreparedStatement {
    static let name = "latchkey_claim_outbox_batch"
    static let sql = """
        SELECT seq, event_id, event_type, topic, message_key, payload, attempts, traceparent \
        FROM claim_outbox_batch($1, $2, $3, $4)
        """
    static let bindingDataTypes: [PostgresDataType] = [
        .text, .int8Array, .int8, .float8,
    ]
    typealias Row = OutboxMessage

    var relayID: String
    var excluded: [Int64]
    var limit: Int
    var lease: Double

    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 4)
        bindings.append(relayID)
        bindings.append(excluded)
        bindings.append(limit)
        bindings.append(lease)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> OutboxMessage {
        let (seq, id, type, topic, key, payload, attempts, traceparent) = try row.decode(
            (Int64, UUID, String, String, String, String, Int, String?).self)
        return OutboxMessage(
            sequence: seq, eventID: id, eventType: type, topic: topic, key: key, payload: payload,
            attempts: attempts, traceparent: traceparent)
    }
}

/// Marks delivered rows sent, one statement; a row already marked (by another relay whose lease had lapsed)
/// is left as it is. One row per row marked: seconds from its insert to now.
struct MarkOutboxSentStatement: PostgresPreparedStatement {
    static let name = "latchkey_mark_outbox_sent"
    static let sql = """
        UPDATE outbox SET sent_at = clock_timestamp(), claimed_by = NULL, claimed_until = NULL, last_error = NULL \
        WHERE seq = ANY($1) AND sent_at IS NULL \
        RETURNING extract(epoch FROM clock_timestamp() - created_at)::float8
        """
    static let bindingDataTypes: [PostgresDataType] = [.int8Array]
    typealias Row = Double

    var sequences: [Int64]

    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 1)
        bindings.append(sequences)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Double { try row.decode(Double.self) }
}
