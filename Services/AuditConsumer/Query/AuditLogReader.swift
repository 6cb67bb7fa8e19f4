import Foundation
import LatchkeyCore
import LatchkeyPersistence
import Logging
import PostgresNIO

/// One page of an event listing.
struct AuditEventPage: Sendable {
    var events: [StoredAuditEvent]
    var next: AuditCursor?
    var previous: AuditCursor?
}

/// Read access to the audit log, always inside one tenant's Row-Level Security scope.
///
/// Runs as `latchkey_app`: even a query that forgot its `tenant_id` condition could only see
/// the tenant the transaction is scoped to.
struct AuditLogReader: Sendable {
    /// Streaming reads (export, verify) may take longer than the pool's default statement timeout.
    static let streamingStatementTimeout = "30min"

    let database: Database

    var logger: Logger { database.logger }

    func page(
        tenant: String, filter: AuditEventFilter, order: AuditOrder, cursor: AuditCursor?, limit: Int
    ) async throws -> AuditEventPage {
        let backwards = cursor?.direction == .previous
        // Listing order, flipped when walking back to the previous page.
        let descending = (order == .newestFirst) != backwards
        let bound = cursor?.sequence
        let events = try await database.withTenantTransaction(tenant) { connection in
            let rows = try await connection.query(
                """
                SELECT \(unescaped: StoredAuditEvent.columns) FROM audit_events
                WHERE tenant_id = \(tenant)
                  AND (\(filter.type?.rawValue)::text IS NULL OR event_type = \(filter.type?.rawValue))
                  AND (\(filter.clientID)::text IS NULL OR subject = \(filter.clientID))
                  AND (\(filter.user)::text IS NULL OR user_id = \(filter.user))
                  AND (\(filter.fromText)::timestamptz IS NULL OR event_time >= \(filter.fromText)::timestamptz)
                  AND (\(filter.toText)::timestamptz IS NULL OR event_time < \(filter.toText)::timestamptz)
                  AND (\(bound)::int8 IS NULL OR sequence \(unescaped: descending ? "<" : ">") \(bound))
                ORDER BY sequence \(unescaped: descending ? "DESC" : "ASC")
                LIMIT \(limit + 1)
                """, logger: logger)
            return try await StoredAuditEvent.all(rows)
        }
        let more = events.count > limit
        var page = Array(events.prefix(limit))
        if backwards { page.reverse() }
        let digest = filter.digest
        func makeCursor(_ direction: AuditCursor.Direction, _ sequence: Int64) -> AuditCursor {
            AuditCursor(order: order, direction: direction, sequence: sequence, filterDigest: digest)
        }
        // One step past a boundary in listing order, so an empty page can still lead back to it.
        let step: Int64 = order == .newestFirst ? -1 : 1
        let hasNext = backwards ? cursor != nil : more
        let hasPrevious = backwards ? more : cursor != nil
        var result = AuditEventPage(events: page)
        if let first = page.first, let last = page.last {
            result.next = hasNext ? makeCursor(.next, last.sequence) : nil
            result.previous = hasPrevious ? makeCursor(.previous, first.sequence) : nil
        } else if let boundary = cursor?.sequence {
            result.next = backwards ? makeCursor(.next, boundary - step) : nil
            result.previous = backwards ? nil : makeCursor(.previous, boundary + step)
        }
        return result
    }

    /// Streams the tenant's events in chain order (oldest first), optionally bounded by event time.
    func stream(
        tenant: String, filter: AuditEventFilter, upTo lastSequence: Int64? = nil,
        _ body: (StoredAuditEvent) async throws -> Void
    ) async throws {
        try await database.withTenantTransaction(tenant) { connection in
            try await connection.query(
                "SELECT set_config('statement_timeout', \(Self.streamingStatementTimeout), true)", logger: logger)
            let rows = try await connection.query(
                """
                SELECT \(unescaped: StoredAuditEvent.columns) FROM audit_events
                WHERE tenant_id = \(tenant)
                  AND (\(filter.fromText)::timestamptz IS NULL OR event_time >= \(filter.fromText)::timestamptz)
                  AND (\(filter.toText)::timestamptz IS NULL OR event_time < \(filter.toText)::timestamptz)
                  AND (\(lastSequence)::int8 IS NULL OR sequence <= \(lastSequence))
                ORDER BY sequence
                """, logger: logger)
            for try await row in rows.decode(StoredAuditEvent.Row.self) {
                try await body(StoredAuditEvent(row))
            }
        }
    }

    /// The head of the tenant's chain: last sequence and hash (0 and the genesis hash when empty).
    func head(tenant: String) async throws -> (sequence: Int64, hash: String) {
        try await database.withTenantTransaction(tenant) { connection in
            let rows = try await connection.query(
                "SELECT sequence, hash FROM audit_chain_heads WHERE tenant_id = \(tenant)", logger: logger)
            for try await (sequence, hash) in rows.decode((Int64, String).self) { return (sequence, hash) }
            return (0, AuditChain.genesisHash)
        }
    }

    /// Events of one client (its `subject`) of some types, oldest first, at most `limit`.
    func events(
        tenant: String, subject: String, types: [LatchkeyEventType], newestFirst: Bool = false, limit: Int
    ) async throws -> [StoredAuditEvent] {
        let typeNames = types.map(\.rawValue)
        return try await database.withTenantTransaction(tenant) { connection in
            let rows = try await connection.query(
                """
                SELECT \(unescaped: StoredAuditEvent.columns) FROM audit_events
                WHERE tenant_id = \(tenant) AND subject = \(subject) AND event_type = ANY(\(typeNames)::text[])
                ORDER BY sequence \(unescaped: newestFirst ? "DESC" : "ASC") LIMIT \(limit)
                """, logger: logger)
            return try await StoredAuditEvent.all(rows)
        }
    }

    /// Token issuance of one client per UTC day, newest day first.
    func issuancePerDay(tenant: String, clientID: String, days: Int) async throws -> [(
        day: String, count: Int64, last: String
    )] {
        try await database.withTenantTransaction(tenant) { connection in
            let rows = try await connection.query(
                """
                SELECT to_char(event_time AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, count(*)::int8,
                       to_char(max(event_time) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
                FROM audit_events
                WHERE tenant_id = \(tenant) AND subject = \(clientID)
                  AND event_type = \(LatchkeyEventType.tokenIssued.rawValue)
                GROUP BY 1 ORDER BY 1 DESC LIMIT \(days)
                """, logger: logger)
            var result: [(day: String, count: Int64, last: String)] = []
            for try await (day, count, last) in rows.decode((String, Int64, String).self) {
                result.append((day, count, last))
            }
            return result
        }
    }

    /// Total token issuance of one client and its first time.
    func issuanceTotals(tenant: String, clientID: String) async throws -> (count: Int64, first: String?) {
        try await database.withTenantTransaction(tenant) { connection in
            let rows = try await connection.query(
                """
                SELECT count(*)::int8, to_char(min(event_time) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
                FROM audit_events
                WHERE tenant_id = \(tenant) AND subject = \(clientID)
                  AND event_type = \(LatchkeyEventType.tokenIssued.rawValue)
                """, logger: logger)
            for try await (count, first) in rows.decode((Int64, String?).self) { return (count, first) }
            return (0, nil)
        }
    }

    /// Clients registered for `user` (by `authenticated_user`), in registration order, at most `limit`.
    func instances(tenant: String, user: String, limit: Int) async throws -> [String] {
        try await database.withTenantTransaction(tenant) { connection in
            let rows = try await connection.query(
                """
                SELECT subject FROM audit_events
                WHERE tenant_id = \(tenant) AND user_id = \(user)
                  AND event_type = \(LatchkeyEventType.clientRegistered.rawValue)
                GROUP BY subject ORDER BY min(sequence) LIMIT \(limit)
                """, logger: logger)
            var clients: [String] = []
            for try await subject in rows.decode(String.self) { clients.append(subject) }
            return clients
        }
    }

    /// Events of `user` on clients that are not their instances, counted per client and type.
    func otherActivity(
        tenant: String, user: String, excluding clients: [String], limit: Int
    ) async throws -> [(client: String, type: String, count: Int64, last: String)] {
        try await database.withTenantTransaction(tenant) { connection in
            let rows = try await connection.query(
                """
                SELECT subject, event_type, count(*)::int8,
                       to_char(max(event_time) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
                FROM audit_events
                WHERE tenant_id = \(tenant) AND user_id = \(user) AND NOT (subject = ANY(\(clients)::text[]))
                  AND NOT (event_type = ANY(\(Self.accountEventTypes)::text[]))
                GROUP BY subject, event_type ORDER BY subject, event_type LIMIT \(limit)
                """, logger: logger)
            var result: [(client: String, type: String, count: Int64, last: String)] = []
            for try await (client, type, count, last) in rows.decode((String, String, Int64, String).self) {
                result.append((client, type, count, last))
            }
            return result
        }
    }

    /// Event types about a user's account rather than a client (their subject is the user id).
    static let accountEventTypes = LatchkeyEventType.allCases.filter(\.isUserEvent).map(\.rawValue)

    /// The account events of `user` (registered, disabled, enabled, password changed).
    func accountEvents(tenant: String, user: String, limit: Int) async throws -> [StoredAuditEvent] {
        try await database.withTenantTransaction(tenant) { connection in
            let rows = try await connection.query(
                """
                SELECT \(unescaped: StoredAuditEvent.columns) FROM audit_events
                WHERE tenant_id = \(tenant) AND user_id = \(user)
                  AND event_type = ANY(\(Self.accountEventTypes)::text[])
                ORDER BY sequence LIMIT \(limit)
                """, logger: logger)
            return try await StoredAuditEvent.all(rows)
        }
    }
}
