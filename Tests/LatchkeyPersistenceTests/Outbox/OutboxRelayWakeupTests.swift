import Foundation
import LatchkeyTestSupport
import Logging
import PostgresNIO
import Synchronization
import Testing

@testable import LatchkeyPersistence

/// The relay is woken by PostgreSQL notifications, not by polling: an event goes out at once even when the
/// fallback poll is a long way off, and an idle relay costs a few statements a minute.
@Suite(.serialized) struct OutboxRelayWakeupTests {
    let logger = Logger(label: "outbox-wakeup")

    @Test func anInsertedEventIsRelayedWithoutWaitingForTheFallbackPoll() async throws {
        try await OutboxTestDatabase.with { db in
            let (tenant, publisher, relay) = try await sleepingRelay(in: db)
            try await withRunning([{ try await relay.run() }]) {
                // The relay's first round found nothing; from now on it sleeps until woken.
                try await eventually("the relay listens", within: .seconds(30)) {
                    try await db.listeners(on: OutboxRelay.notificationChannel) > 0
                }
                for round in 1...3 {
                    let written = try await db.writeEvents(
                        1, tenant: tenant, keys: 1, writer: OutboxWriter(), topicSuffix: "test-events")
                    try await eventually("event \(round) is published", within: .seconds(20)) {
                        publisher.published.contains(written[0].0)
                    }
                    #expect(try await db.waitUntilDrained(timeout: .seconds(20)) == 0)
                }
            }
        }
    }

    @Test func rowsAnnouncedByTheirWriterSendNoNotificationAndStillWakeTheRelay() async throws {
        try await OutboxTestDatabase.with { db in
            let wakeup = RelayWakeup()
            let (tenant, publisher, relay) = try await sleepingRelay(in: db, wakeup: wakeup)
            let writer = OutboxWriter(relayWakeup: wakeup)
            let probe = NotificationProbe(
                channel: OutboxRelay.notificationChannel, client: db.system.client, logger: logger)
            try await withRunning([{ try await relay.run() }, { try await probe.run() }]) {
                _ = try await probe.heardSinceLastCall()
                try await eventually("the relay listens", within: .seconds(30)) {
                    try await db.listeners(on: OutboxRelay.notificationChannel) >= 2
                }
                for round in 1...3 {
                    let id = UUID()
                    try await db.app.withTenantTransaction(tenant) { connection in
                        try await connection.query(
                            "SELECT outbox_woken_by_caller(\(writer.relayWokenByCaller))", logger: db.app.logger)
                        try await writer.append(
                            eventID: id, tenant: tenant, eventType: "io.latchkey.test.v1", topicSuffix: "test-events",
                            key: "\(tenant)/client", payload: #"{"n":\#(round)}"#, on: connection,
                            logger: db.app.logger)
                    }
                    writer.announceCommitted()
                    try await eventually("event \(round) is published", within: .seconds(20)) {
                        publisher.published.contains(id)
                    }
                }
                #expect(try await probe.heardSinceLastCall() == [], "rows announced by their writer notified")
                // Every other insert still notifies, also one whose writer has no relay to wake.
                _ = try await db.writeEvents(
                    1, tenant: tenant, keys: 1, writer: OutboxWriter(), topicSuffix: "test-events")
                #expect(try await probe.heardSinceLastCall().count == 1)
                let unannounced = OutboxWriter()
                try await db.app.withTenantTransaction(tenant) { connection in
                    try await connection.query(
                        "SELECT outbox_woken_by_caller(\(unannounced.relayWokenByCaller))", logger: db.app.logger)
                    try await unannounced.append(
                        eventID: UUID(), tenant: tenant, eventType: "io.latchkey.test.v1", topicSuffix: "test-events",
                        key: "\(tenant)/client", payload: #"{"n":0}"#, on: connection, logger: db.app.logger)
                }
                #expect(try await probe.heardSinceLastCall().count == 1)
            }
        }
    }

    /// A tenant, and a relay recording what it publishes whose fallback poll is far longer than a test may
    /// take: only a wake-up (a notification, or the writer's) makes it publish in time.
    private func sleepingRelay(
        in db: OutboxTestDatabase, wakeup: RelayWakeup = RelayWakeup(),
        adjust: (inout OutboxRelayConfiguration) -> Void = { _ in }
    ) async throws -> (tenant: String, publisher: RecordingPublisher, relay: OutboxRelay) {
        let tenant = TestEnvironment.uniqueTenant("wk")
        try await TestDatabase.createTenant(tenant, in: db.app)
        let publisher = RecordingPublisher()
        var configuration = OutboxRelayConfiguration()
        configuration.maintenanceInterval = .seconds(600)
        adjust(&configuration)
        let relay = OutboxRelay(
            database: db.system, publisher: publisher, configuration: configuration, wakeup: wakeup, logger: logger)
        return (tenant, publisher, relay)
    }

    @Test func rowsWrittenInASteadyStreamAreClaimedInRoundsAClaimIntervalApart() async throws {
        try await OutboxTestDatabase.with { db in
            let interval = Duration.seconds(2)
            let (tenant, publisher, relay) = try await sleepingRelay(in: db) { $0.claimInterval = interval }
            try await withRunning([{ try await relay.run() }]) {
                try await eventually("the relay listens", within: .seconds(30)) {
                    try await db.listeners(on: OutboxRelay.notificationChannel) > 0
                }
                // Each event its own transaction, each announced by its own notification.
                let started = ContinuousClock.now
                var written: [UUID] = []
                for _ in 0..<30 {
                    written += try await db.writeEvents(
                        1, tenant: tenant, keys: 1, writer: OutboxWriter(), topicSuffix: "test-events"
                    ).map(\.0)
                }
                let writing = ContinuousClock.now - started
                try await eventually("every event is published", within: .seconds(30)) {
                    publisher.published.isSuperset(of: written)
                }
                // The first claim at once, then one claim per interval while rows keep coming, and the last one.
                let rounds = Int(writing / interval) + 3
                #expect(publisher.batches <= rounds, "\(publisher.batches) batches for 30 rows in \(writing)")
            }
        }
    }

    // An interval far longer than a test may take: only the first claim of a round and full claims go without
    // waiting for it.
    @Test func aLoneEventIsClaimedAtOnce() async throws {
        try await OutboxTestDatabase.with { db in
            let (tenant, publisher, relay) = try await sleepingRelay(in: db) { $0.claimInterval = .seconds(600) }
            try await withRunning([{ try await relay.run() }]) {
                try await eventually("the relay listens", within: .seconds(30)) {
                    try await db.listeners(on: OutboxRelay.notificationChannel) > 0
                }
                let written = try await db.writeEvents(
                    1, tenant: tenant, keys: 1, writer: OutboxWriter(), topicSuffix: "test-events")
                try await eventually("the event is published", within: .seconds(30)) {
                    publisher.published.contains(written[0].0)
                }
            }
        }
    }

    @Test func aBacklogIsClaimedBackToBack() async throws {
        try await OutboxTestDatabase.with { db in
            let (tenant, publisher, relay) = try await sleepingRelay(in: db) {
                $0.claimInterval = .seconds(600)
                $0.batchSize = 10
            }
            let backlog = try await db.writeEvents(
                45, tenant: tenant, keys: 45, writer: OutboxWriter(), topicSuffix: "test-events"
            ).map(\.0)
            try await withRunning([{ try await relay.run() }]) {
                try await eventually("the backlog is published", within: .seconds(30)) {
                    publisher.published.isSuperset(of: backlog)
                }
                #expect(publisher.batches == 5)
            }
        }
    }

    @Test func anIdleRelayIssuesAFewStatementsAMinute() async throws {
        try await OutboxTestDatabase.with { db in
            let relay = OutboxRelay(
                database: db.system, publisher: RecordingPublisher(), configuration: OutboxRelayConfiguration(),
                logger: logger)
            try await withRunning([{ try await relay.run() }]) {
                try await eventually("the relay listens", within: .seconds(30)) {
                    try await db.listeners(on: OutboxRelay.notificationChannel) > 0
                }
                let before = try await db.statementsRun()
                try await Task.sleep(for: .seconds(30))
                let statements = try await db.statementsRun() - before - 1
                // One maintenance statement per 15 s, the pool's keep-alive queries, and at most one claim round
                // for the wake-up that listening starts with.
                #expect(statements <= 10, "an idle relay ran \(statements) statements in 30 s")
            }
        }
    }
}

private struct CurrentDatabaseUnknown: Error {}

/// Records what it was asked to publish and reports success.
private final class RecordingPublisher: OutboxPublisher, Sendable {
    private let ids = Mutex<Set<UUID>>([])
    private let publishCalls = Mutex(0)

    var published: Set<UUID> { ids.withLock { $0 } }
    /// How many batches it was given.
    var batches: Int { publishCalls.withLock { $0 } }

    func publish(
        _ messages: [OutboxMessage], whenHandedOver: @escaping @Sendable () -> Void
    ) async -> [Result<Void, any Error>] {
        whenHandedOver()
        publishCalls.withLock { $0 += 1 }
        ids.withLock { ids in for message in messages { ids.insert(message.eventID) } }
        return messages.map { _ in .success(()) }
    }
}

extension OutboxTestDatabase {
    /// Sessions of this database listening on `channel` (from the server's own view of its backends).
    func listeners(on channel: String) async throws -> Int {
        // What PostgresNIO sends to listen, the session's last statement while it listens.
        let listen = "LISTEN \"\(channel)\";"
        let rows = try await system.client.query(
            """
            SELECT count(*)::int8 FROM pg_stat_activity
            WHERE datname = current_database() AND query = \(listen)
            """, logger: system.logger)
        for try await count in rows.decode(Int64.self) { return Int(count) }
        return 0
    }

    /// Top-level statements run in this database so far (`pg_stat_statements`, read from the `postgres`
    /// database, where scripts/postgres.sh installs it).
    func statementsRun() async throws -> Int64 {
        var stats = try TestEnvironment.migrationDatabase()
        let name = try await currentDatabase()
        stats.database = "postgres"
        return try await withPostgresClient(stats) { client in
            let rows = try await client.query(
                """
                SELECT coalesce(sum(calls), 0)::int8 FROM pg_stat_statements
                WHERE dbid = (SELECT oid FROM pg_database WHERE datname = \(name))
                """, logger: system.logger)
            for try await calls in rows.decode(Int64.self) { return calls }
            return 0
        }
    }

    private func currentDatabase() async throws -> String {
        let rows = try await system.client.query("SELECT current_database()", logger: system.logger)
        for try await name in rows.decode(String.self) { return name }
        throw CurrentDatabaseUnknown()
    }
}
