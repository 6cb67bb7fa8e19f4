import Foundation
import LatchkeyTestSupport
import PostgresNIO
import Testing

@testable import LatchkeyPersistence

/// `claim_outbox_batch`, called as the relay calls it: rows in sequence order, and a row only when no earlier
/// unsent row of its key is held by another relay or waiting out a backoff. Rows held back that way never
/// hold up the rows of other keys, however many there are.
@Suite(.serialized) struct OutboxClaimTests {
    @Test func theRelayStatementsDeclareTheTypeOfEachParameter() {
        #expect(PreparedStatementShape.declaresEveryParameter(ClaimOutboxBatchStatement.self))
        #expect(PreparedStatementShape.declaresEveryParameter(MarkOutboxSentStatement.self))
    }

    @Test func aBacklogIsClaimedInSequenceOrderBatchByBatch() async throws {
        try await OutboxTestDatabase.with { db in
            let tenant = try await db.tenant()
            let written = try await db.writeEvents(
                450, tenant: tenant, keys: 3, writer: OutboxWriter(), topicSuffix: "e")
            let sequences = try await db.sequences(of: written.map(\.0))
            var claimed: [Int64] = []
            while true {
                let batch = try await db.claim(as: "relay-a", limit: 200)
                guard !batch.isEmpty else { break }
                #expect(batch.count <= 200)
                claimed += batch
                try await db.markSent(batch)
            }
            #expect(claimed == sequences)
        }
    }

    @Test func aRowHeldByAnotherRelayHoldsBackItsKeyOnly() async throws {
        try await OutboxTestDatabase.with { db in
            let tenant = try await db.tenant()
            let held = try await db.writeEvents(1, tenant: tenant, keys: 1, writer: OutboxWriter(), topicSuffix: "e")
            #expect(try await db.claim(as: "relay-b", limit: 1).count == 1)
            // More rows of the held key than one batch, then rows of another key.
            _ = try await db.writeEvents(250, tenant: tenant, keys: 1, writer: OutboxWriter(), topicSuffix: "e")
            let other = try await db.writeEvents(
                5, tenant: tenant, keys: 1, writer: OutboxWriter(), topicSuffix: "e", keyPrefix: "other")
            let claimed = try await db.claim(as: "relay-a", limit: 200)
            #expect(claimed == (try await db.sequences(of: other.map(\.0))))

            // Once the held row is sent, its key's rows follow in order.
            try await db.markSent(try await db.sequences(of: held.map(\.0)))
            let next = try await db.claim(as: "relay-a", limit: 200)
            #expect(next.count == 200 && next == next.sorted())
        }
    }

    /// A claimable row that another transaction holds locked when the claim locks its rows (its relay marking it
    /// sent, or scheduling its retry after a failed delivery) is left to a later claim, and so are the rows of
    /// its key behind it: claiming them would let them be published before it.
    @Test func aClaimableRowLockedElsewhereHoldsBackTheLaterRowsOfItsKey() async throws {
        try await OutboxTestDatabase.with { db in
            let tenant = try await db.tenant()
            let key = try await db.writeEvents(3, tenant: tenant, keys: 1, writer: OutboxWriter(), topicSuffix: "e")
            let other = try await db.writeEvents(
                1, tenant: tenant, keys: 1, writer: OutboxWriter(), topicSuffix: "e", keyPrefix: "other")
            let sequences = try await db.sequences(of: key.map(\.0))
            try await db.system.client.withConnection { connection in
                try await connection.query("BEGIN", logger: db.system.logger)
                try await connection.query(
                    "SELECT seq FROM outbox WHERE seq = \(sequences[0]) FOR UPDATE", logger: db.system.logger)
                let claimed = try await db.claim(as: "relay-a", limit: 200)
                try await connection.query("ROLLBACK", logger: db.system.logger)
                #expect(claimed == (try await db.sequences(of: other.map(\.0))))
            }
            // Once the row is free, its key's rows are claimed in order (the relay's own rows in flight excluded).
            let inFlight = try await db.sequences(of: other.map(\.0))
            #expect(try await db.claim(as: "relay-a", limit: 200, excluding: inFlight) == sequences)
        }
    }

    @Test func aRowWaitingOutABackoffHoldsBackTheLaterRowsOfItsKey() async throws {
        try await OutboxTestDatabase.with { db in
            let tenant = try await db.tenant()
            let first = try await db.writeEvents(2, tenant: tenant, keys: 1, writer: OutboxWriter(), topicSuffix: "e")
            let other = try await db.writeEvents(
                1, tenant: tenant, keys: 1, writer: OutboxWriter(), topicSuffix: "e", keyPrefix: "other")
            let failed = try await db.sequences(of: [first[0].0])
            // What the relay does with a failed delivery.
            try await db.system.client.query(
                """
                UPDATE outbox SET attempts = attempts + 1, available_at = clock_timestamp() + interval '1 hour'
                WHERE seq = ANY(\(failed))
                """, logger: db.system.logger)
            #expect(try await db.claim(as: "relay-a", limit: 200) == (try await db.sequences(of: other.map(\.0))))
        }
    }
}

extension OutboxTestDatabase {
    func tenant() async throws -> String {
        let tenant = TestEnvironment.uniqueTenant("cl")
        try await TestDatabase.createTenant(tenant, in: app)
        return tenant
    }

    /// Claims as the relay `relay` does, for 60 s; the claimed sequences in order.
    func claim(as relay: String, limit: Int, excluding excluded: [Int64] = []) async throws -> [Int64] {
        let rows = try await system.client.query(
            "SELECT seq FROM claim_outbox_batch(\(relay), \(excluded), \(limit), 60)", logger: system.logger)
        var claimed: [Int64] = []
        for try await seq in rows.decode(Int64.self) { claimed.append(seq) }
        return claimed.sorted()
    }

    func markSent(_ sequences: [Int64]) async throws {
        try await system.client.query(
            "UPDATE outbox SET sent_at = clock_timestamp(), claimed_by = NULL, claimed_until = NULL WHERE seq = ANY(\(sequences))",
            logger: system.logger)
    }

    /// The sequences of the rows of `events`, in order.
    func sequences(of events: [UUID]) async throws -> [Int64] {
        let rows = try await system.client.query(
            "SELECT seq FROM outbox WHERE event_id = ANY(\(events)) ORDER BY seq", logger: system.logger)
        var sequences: [Int64] = []
        for try await seq in rows.decode(Int64.self) { sequences.append(seq) }
        return sequences
    }
}
