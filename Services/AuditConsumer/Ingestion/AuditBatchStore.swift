import Foundation
import LatchkeyCore
import LatchkeyKafka
import LatchkeyPersistence
import Logging
import PostgresNIO

/// A record as it was appended to its tenant's chain.
struct StoredRecord: Sendable {
    var record: AuditRecord
    var sequence: Int64
    var hash: String
}

/// What storing one batch did.
struct StoreOutcome: Sendable {
    var stored: [StoredRecord] = []
    /// Records whose event id was already stored with the same content (re-deliveries).
    var duplicates = 0
    /// Records whose event id was already taken by a different event.
    var conflicts: [RejectedRecord] = []
    /// Head sequence of every tenant the batch extended.
    var chainLengths: [String: Int64] = [:]
}

/// The chain head of a tenant holds a malformed hash: someone edited `audit_chain_heads`.
struct CorruptChainHead: Error, CustomStringConvertible {
    var tenant: String
    var description: String { "the chain head of tenant \(tenant) holds a malformed hash" }
}

/// Appends batches of audit records to the per-tenant hash chains in one transaction each.
///
/// Chain extension is serialised per tenant by locking the tenants' `audit_chain_heads` rows
/// (in tenant order, so two replicas cannot deadlock); batches for other tenants proceed in
/// parallel. Duplicates are detected after the locks are held, so a replica that stored the same
/// event a moment earlier is seen, and a re-delivered event is counted, never stored twice.
struct AuditBatchStore: Sendable {
    let database: Database
    let clock: any WallClock

    func store(_ records: [AuditRecord]) async throws -> StoreOutcome {
        var outcome = StoreOutcome()
        var firstByID: [String: AuditRecord] = [:]
        var unique: [AuditRecord] = []
        for record in records {
            if let first = firstByID[record.eventID] {
                if Self.sameEvent(first, tenant: record.tenantID, canonical: record.canonicalEvent) {
                    outcome.duplicates += 1
                } else {
                    outcome.conflicts.append(Self.conflict(record))
                }
            } else {
                firstByID[record.eventID] = record
                unique.append(record)
            }
        }
        guard !unique.isEmpty else { return outcome }
        let logger = database.logger
        let clock = self.clock
        return try await database.withTransaction { connection in
            var outcome = outcome
            var heads = try await lockHeads(Set(unique.map(\.tenantID)).sorted(), connection, logger)
            let existing = try await storedEvents(unique.map(\.eventID), connection, logger)
            let storedAt = RFC3339Timestamp.string(from: clock.now())
            var rows = InsertColumns()
            for record in unique {
                if let (tenant, canonical) = existing[record.eventID] {
                    if Self.sameEvent(record, tenant: tenant, canonical: canonical) {
                        outcome.duplicates += 1
                    } else {
                        outcome.conflicts.append(Self.conflict(record))
                    }
                    continue
                }
                guard let (sequence, previous) = heads[record.tenantID] else { continue }
                let chained = AuditChainRecord(
                    tenantID: record.tenantID, sequence: sequence + 1, eventID: record.eventID,
                    eventType: record.eventType.rawValue, subject: record.subject, userID: record.userID,
                    eventTime: record.eventTime, storedAt: storedAt, sourceTopic: record.message.topic,
                    sourcePartition: record.message.partition, sourceOffset: record.message.offset,
                    canonicalEvent: record.canonicalEvent)
                guard let hash = AuditChain.hash(previous: previous, record: chained) else {
                    throw CorruptChainHead(tenant: record.tenantID)
                }
                heads[record.tenantID] = (sequence + 1, hash)
                rows.append(chained, previous: previous, hash: hash)
                outcome.stored.append(StoredRecord(record: record, sequence: sequence + 1, hash: hash))
            }
            guard !outcome.stored.isEmpty else { return outcome }
            try await insert(rows, connection, logger)
            let tenants = Set(outcome.stored.map(\.record.tenantID)).sorted()
            let sequences = tenants.map { heads[$0]?.0 ?? 0 }
            let hashes = tenants.map { heads[$0]?.1 ?? "" }
            try await connection.query(
                """
                UPDATE audit_chain_heads AS h SET sequence = v.sequence, hash = v.hash
                FROM unnest(\(tenants)::text[], \(sequences)::int8[], \(hashes)::text[]) AS v(tenant_id, sequence, hash)
                WHERE h.tenant_id = v.tenant_id
                """, logger: logger)
            for (tenant, sequence) in zip(tenants, sequences) { outcome.chainLengths[tenant] = sequence }
            return outcome
        }
    }

    /// Creates missing heads and locks all of them, in tenant order; returns sequence and hash per tenant.
    private func lockHeads(
        _ tenants: [String], _ connection: PostgresConnection, _ logger: Logger
    ) async throws -> [String: (Int64, String)] {
        try await connection.query(
            """
            INSERT INTO audit_chain_heads (tenant_id, sequence, hash)
            SELECT t, 0, \(AuditChain.genesisHash) FROM unnest(\(tenants)::text[]) AS t
            ON CONFLICT (tenant_id) DO NOTHING
            """, logger: logger)
        let rows = try await connection.query(
            """
            SELECT tenant_id, sequence, hash FROM audit_chain_heads
            WHERE tenant_id = ANY(\(tenants)::text[]) ORDER BY tenant_id FOR UPDATE
            """, logger: logger)
        var heads: [String: (Int64, String)] = [:]
        for try await (tenant, sequence, hash) in rows.decode((String, Int64, String).self) {
            heads[tenant] = (sequence, hash)
        }
        return heads
    }

    /// Tenant and canonical event of the ids that are already stored.
    private func storedEvents(
        _ ids: [String], _ connection: PostgresConnection, _ logger: Logger
    ) async throws -> [String: (String, [UInt8])] {
        let rows = try await connection.query(
            "SELECT event_id::text, tenant_id, event::text FROM audit_events WHERE event_id = ANY(\(ids)::uuid[])",
            logger: logger)
        var found: [String: (String, [UInt8])] = [:]
        for try await (id, tenant, event) in rows.decode((String, String, String).self) {
            // A stored event always parses; if someone broke it, it simply compares unequal.
            let canonical = (try? StrictJSONParser.parse(event)).map(CanonicalJSON.encode) ?? []
            found[id] = (tenant, canonical)
        }
        return found
    }

    private func insert(_ rows: InsertColumns, _ connection: PostgresConnection, _ logger: Logger) async throws {
        try await connection.query(
            """
            INSERT INTO audit_events (tenant_id, sequence, event_id, event_type, subject, user_id, event_time,
                                      stored_at, source_topic, source_partition, source_offset, event, prev_hash, hash)
            SELECT tenant_id, sequence, event_id::uuid, event_type, subject, NULLIF(user_id, ''), event_time::timestamptz,
                   stored_at::timestamptz, source_topic, source_partition, source_offset, event::jsonb, prev_hash, hash
            FROM unnest(\(rows.tenants)::text[], \(rows.sequences)::int8[], \(rows.eventIDs)::text[],
                        \(rows.eventTypes)::text[], \(rows.subjects)::text[], \(rows.userIDs)::text[],
                        \(rows.eventTimes)::text[], \(rows.storedAts)::text[], \(rows.topics)::text[],
                        \(rows.partitions)::int4[], \(rows.offsets)::int8[], \(rows.events)::text[],
                        \(rows.previousHashes)::text[], \(rows.hashes)::text[])
                 AS r(tenant_id, sequence, event_id, event_type, subject, user_id, event_time, stored_at,
                      source_topic, source_partition, source_offset, event, prev_hash, hash)
            """, logger: logger)
    }

    private static func sameEvent(_ record: AuditRecord, tenant: String, canonical: [UInt8]) -> Bool {
        record.tenantID == tenant && record.canonicalEvent == canonical
    }

    private static func conflict(_ record: AuditRecord) -> RejectedRecord {
        RejectedRecord(
            message: record.message, reason: .idConflict,
            detail: "event id \(record.eventID) is already stored for a different event")
    }
}

/// Column arrays for one `INSERT … SELECT FROM unnest(…)`: one round trip per batch.
private struct InsertColumns {
    var tenants: [String] = []
    var sequences: [Int64] = []
    var eventIDs: [String] = []
    var eventTypes: [String] = []
    var subjects: [String] = []
    /// Empty for "no user" (`NULLIF`): arrays of optionals are not bindable, and user ids are never empty.
    var userIDs: [String] = []
    var eventTimes: [String] = []
    var storedAts: [String] = []
    var topics: [String] = []
    var partitions: [Int32] = []
    var offsets: [Int64] = []
    var events: [String] = []
    var previousHashes: [String] = []
    var hashes: [String] = []

    mutating func append(_ record: AuditChainRecord, previous: String, hash: String) {
        tenants.append(record.tenantID)
        sequences.append(record.sequence)
        eventIDs.append(record.eventID)
        eventTypes.append(record.eventType)
        subjects.append(record.subject ?? "")
        userIDs.append(record.userID ?? "")
        eventTimes.append(record.eventTime)
        storedAts.append(record.storedAt)
        topics.append(record.sourceTopic)
        partitions.append(record.sourcePartition)
        offsets.append(record.sourceOffset)
        events.append(String(decoding: record.canonicalEvent, as: UTF8.self))
        previousHashes.append(previous)
        hashes.append(hash)
    }
}
