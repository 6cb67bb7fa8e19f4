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

    /// A session keeps the plans of the claim's statements. Made while the outbox held a few rows, they must
    /// still walk its indexes once it holds tens of thousands (a broker outage's backlog): a claim of ten rows
    /// then reads about a hundred pages, where a plan that scans the table reads all of it, several times.
    @Test func aClaimPlannedOnASmallOutboxReadsFewPagesOfALargeOne() async throws {
        try await OutboxTestDatabase.with { db in
            let tenant = try await db.tenant()
            try await db.system.client.withConnection { connection in
                let logger = db.system.logger
                // Statistics as autovacuum keeps them: taken while the outbox is small.
                _ = try await db.insertEvents(3, tenant: tenant, key: "\(tenant)/small")
                try await db.analyzeOutbox()
                for _ in 0..<10 {
                    _ = try await db.insertEvents(3, tenant: tenant, key: "\(tenant)/small")
                    var claimed: [Int64] = []
                    for try await seq in try await connection.query(
                        "SELECT seq FROM claim_outbox_batch('relay-a', '{}', 10, 60)", logger: logger
                    ).decode(Int64.self) { claimed.append(seq) }
                    #expect(!claimed.isEmpty)
                    try await db.markSent(claimed)
                }
                for key in 0..<4 { _ = try await db.insertEvents(10_000, tenant: tenant, key: "\(tenant)/big-\(key)") }
                let rows = try await connection.query(
                    "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT seq FROM claim_outbox_batch('relay-a', '{}', 10, 60)",
                    logger: logger)
                var plan = ""
                for try await text in rows.decode(String.self) { plan += text }
                let root = try #require(
                    (try JSONSerialization.jsonObject(with: Data(plan.utf8)) as? [[String: Any]])?.first?["Plan"]
                        as? [String: Any])
                let pages = (root["Shared Hit Blocks"] as? Int ?? 0) + (root["Shared Read Blocks"] as? Int ?? 0)
                let tablePages = try await db.pages(of: "outbox")
                #expect(tablePages > 1_000 && pages < 400, "a claim of 10 rows read \(pages) of \(tablePages) pages")
            }
        }
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

    /// The claim examines the claimable rows a batch at a time, and each batch's statement sees the rows as they
    /// are when it starts. A key held back in one batch stays held back in the later ones, even when the row that
    /// held it is marked sent in between: claiming the key's later rows then would publish them ahead of the rows
    /// skipped in the earlier batches. The holder is marked sent while a claim of one row at a time walks
    /// thousands of held-back rows; until that lands between two batches, the attempt is repeated.
    @Test func aKeyHeldBackInOneBatchStaysHeldBackWhenItsHolderIsSentMeanwhile() async throws {
        try await OutboxTestDatabase.with { db in
            let tenant = try await db.tenant()
            // Sent before the claim starts, the holder holds nothing back: the key's first row is claimed.
            let early = try await db.insertEvents(1, tenant: tenant, key: "\(tenant)/held-0")
            #expect(try await db.claim(as: "relay-b", limit: 1) == early)
            let behindEarly = try await db.insertEvents(3, tenant: tenant, key: "\(tenant)/held-0")
            try await db.markSent(early)
            #expect(try await db.claim(as: "relay-a", limit: 1) == [behindEarly[0]])
            try await db.system.client.query(
                "UPDATE outbox SET sent_at = clock_timestamp() WHERE sent_at IS NULL", logger: db.system.logger)

            var interleaved = false
            for attempt in 1...10 where !interleaved {
                let key = "\(tenant)/held-\(attempt)"
                let holder = try await db.insertEvents(1, tenant: tenant, key: key)
                #expect(try await db.claim(as: "relay-b", limit: 1) == holder)
                let behind = try await db.insertEvents(5_000, tenant: tenant, key: key)
                let other = try await db.insertEvents(1, tenant: tenant, key: "\(tenant)/other-\(attempt)")

                var claimed: [Int64] = []
                var sentWhileClaiming = false
                try await db.system.client.withConnection { claiming in
                    let pid = try await db.backendPID(of: claiming)
                    try await withThrowingTaskGroup(of: ClaimRace.self) { group in
                        group.addTask {
                            var rows: [Int64] = []
                            for try await seq in try await claiming.query(
                                "SELECT seq FROM claim_outbox_batch('relay-a', '{}', 1, 60)", logger: db.system.logger
                            ).decode(Int64.self) {
                                rows.append(seq)
                            }
                            return .claimed(rows)
                        }
                        group.addTask {
                            // Once the claim runs, the holder is marked sent; did the claim go on afterwards?
                            while try await !db.isActive(pid) { try await Task.sleep(for: .milliseconds(1)) }
                            try await db.markSent(holder)
                            return .holderSent(claimStillRunning: try await db.isActive(pid))
                        }
                        while let outcome = try await group.next() {
                            switch outcome {
                            case .claimed(let rows):
                                claimed = rows
                                group.cancelAll()  // a watcher that never saw the claim running
                                return
                            case .holderSent(let running): sentWhileClaiming = running
                            }
                        }
                    }
                }
                // Sent before the claim's first batch, the holder holds nothing back and the key's first row is
                // claimed; sent later, the key stays held back and the other key's row is the one claimable.
                #expect(claimed == [behind[0]] || claimed == other, "attempt \(attempt): claimed \(claimed)")
                interleaved = sentWhileClaiming && claimed == other
                try await db.system.client.query(
                    "UPDATE outbox SET sent_at = clock_timestamp() WHERE sent_at IS NULL", logger: db.system.logger)
            }
            #expect(interleaved, "the holder was never marked sent while the claim ran")
        }
    }
}

/// What each side of the race between a claim and the marking of its key's holder reports.
private enum ClaimRace: Sendable {
    case claimed([Int64])
    case holderSent(claimStillRunning: Bool)
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

    /// Inserts `count` unsent rows of `key` in one statement; their sequences in order.
    func insertEvents(_ count: Int, tenant: String, key: String) async throws -> [Int64] {
        // The statement's rows carry their own payload, which finds them again (the app role cannot read them back).
        let payload = #"{"insert":"\#(UUID().uuidString)"}"#
        try await app.withTenantTransaction(tenant) { connection in
            try await connection.query(
                """
                INSERT INTO outbox (event_id, tenant_id, topic, message_key, event_type, payload)
                SELECT gen_random_uuid(), \(tenant), 'latchkey.e', \(key), 'io.latchkey.test.v1', \(payload)
                FROM generate_series(1, \(count))
                """, logger: app.logger)
        }
        let rows = try await system.client.query(
            "SELECT seq FROM outbox WHERE payload = \(payload) ORDER BY seq", logger: system.logger)
        var sequences: [Int64] = []
        for try await seq in rows.decode(Int64.self) { sequences.append(seq) }
        return sequences
    }

    /// Refreshes the outbox's planner statistics, as its owner (autovacuum does it on a running system).
    func analyzeOutbox() async throws {
        var database: String?
        for try await name in try await system.client.query("SELECT current_database()", logger: system.logger)
            .decode(String.self)
        {
            database = name
        }
        var owner = try TestEnvironment.migrationDatabase()
        owner.database = try #require(database)
        try await withPostgresClient(owner) { client in
            try await client.query("ANALYZE outbox", logger: system.logger)
        }
    }

    /// The pages of `table` on disk.
    func pages(of table: String) async throws -> Int {
        for try await pages in try await system.client.query(
            "SELECT (pg_relation_size(\(table)::regclass) / current_setting('block_size')::int)::int",
            logger: system.logger
        ).decode(Int.self) {
            return pages
        }
        throw TestFailure("no size of \(table)")
    }

    func backendPID(of connection: PostgresConnection) async throws -> Int32 {
        for try await pid in try await connection.query("SELECT pg_backend_pid()", logger: system.logger)
            .decode(Int32.self)
        {
            return pid
        }
        throw TestFailure("no backend pid")
    }

    /// Whether the session `pid` is running a statement.
    func isActive(_ pid: Int32) async throws -> Bool {
        for try await state in try await system.client.query(
            "SELECT state FROM pg_stat_activity WHERE pid = \(pid)", logger: system.logger
        ).decode(String?.self) {
            return state == "active"
        }
        return false
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
