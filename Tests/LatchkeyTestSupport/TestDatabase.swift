import Foundation
import LatchkeyPersistence
import Logging
import PostgresNIO

/// The shared, migrated test database, plus helpers to reach it under each role.
public enum TestDatabase {
    private actor Once {
        /// One migration for all callers: an actor is re-entered at every `await`, so a plain
        /// "done" flag would let every test that starts in parallel run its own migration.
        var migration: Task<Void, any Error>?
        func migrate() async throws {
            let migration =
                self.migration ?? Task { try await TestDatabase.migrate(TestEnvironment.migrationDatabase()) }
            self.migration = migration
            try await migration.value
        }
    }
    private static let once = Once()

    /// Runs migrations one database at a time: roles are cluster-wide and the migrator's advisory lock
    /// is per database, so migrations of two scratch databases at once race on `CREATE ROLE`/`GRANT`.
    private actor MigrationQueue {
        private var last: Task<Void, Never> = Task {}
        func enqueue(_ configuration: DatabaseConfiguration) -> Task<Void, any Error> {
            let previous = last
            let migration = Task {
                _ = await previous.result
                try await withPostgresClient(configuration) { client in
                    try await Migrator(logger: TestEnvironment.logger).migrate(client: client)
                }
            }
            last = Task { _ = await migration.result }
            return migration
        }
    }
    private static let migrations = MigrationQueue()

    /// Migrates the database of `configuration` (an owner configuration), never two at once in this process.
    public static func migrate(_ configuration: DatabaseConfiguration) async throws {
        try await migrations.enqueue(configuration).value
    }

    /// Applies migrations to the test database once per test process.
    public static func prepare() async throws {
        try await describingPostgresErrors { try await once.migrate() }
    }

    /// Runs `body` with the tenant-scoped (`latchkey_app`) database.
    public static func withApp<Result: Sendable>(_ body: (Database) async throws -> Result) async throws -> Result {
        try await prepare()
        return try await describingPostgresErrors {
            try await withPostgresClient(TestEnvironment.appDatabase()) { client in
                try await body(Database(client: client, logger: TestEnvironment.logger))
            }
        }
    }

    /// Runs `body` with the cross-tenant (`latchkey_system`) database.
    public static func withSystem<Result: Sendable>(_ body: (Database) async throws -> Result) async throws -> Result {
        try await prepare()
        return try await describingPostgresErrors {
            try await withPostgresClient(TestEnvironment.systemDatabase()) { client in
                try await body(Database(client: client, logger: TestEnvironment.logger))
            }
        }
    }

    /// Creates a tenant row (as the app role, scoped to that tenant) with the given policy JSON.
    public static func createTenant(_ slug: String, in database: Database, policy: String = "{}") async throws {
        try await database.withTenantTransaction(slug) { connection in
            try await connection.query(
                "INSERT INTO tenants (tenant_id, display_name, policy) VALUES (\(slug), \(slug), \(policy)::jsonb)",
                logger: database.logger)
        }
    }

    /// Top-level statements `role` has run in `database` so far (`pg_stat_statements`, read from the `postgres`
    /// database, where scripts/postgres.sh installs it).
    public static func statementsRun(by role: String, in database: String) async throws -> Int64 {
        try await calls(of: "", by: role, in: database)
    }

    /// Calls of top-level statements of `role` in `database` whose text contains `fragment`
    /// (`pg_stat_statements`; statements run inside a function are not top-level). The pools' keep-alive
    /// checks (`SELECT 1`, stored as `SELECT $1`) are left out: a round checks every connection a pool keeps
    /// open, once a minute, so a slow test would count them in whatever it measures.
    public static func calls(of fragment: String, by role: String, in database: String) async throws -> Int64 {
        var stats = try TestEnvironment.migrationDatabase()
        stats.database = "postgres"
        return try await withPostgresClient(stats) { client in
            let rows = try await client.query(
                """
                SELECT coalesce(sum(calls), 0)::int8 FROM pg_stat_statements
                WHERE dbid = (SELECT oid FROM pg_database WHERE datname = \(database))
                  AND userid = (SELECT oid FROM pg_roles WHERE rolname = \(role))
                  AND strpos(query, \(fragment)) > 0 AND query <> 'SELECT $1'
                """, logger: TestEnvironment.logger)
            for try await calls in rows.decode(Int64.self) { return calls }
            return 0
        }
    }

    /// Row updates of `table` in `database` that PostgreSQL's statistics show, and how many of them were heap-only
    /// (no new index entries). A backend reports its counts some time after its transactions end (within about
    /// ten seconds when idle), so this waits until at least `atLeast` updates are visible; every report adds
    /// both counts of the same transactions, so they can be compared whenever read.
    public static func updates(
        of table: String, in database: String, atLeast: Int64, timeout: Duration = .seconds(30)
    ) async throws -> (all: Int64, heapOnly: Int64) {
        var configuration = try TestEnvironment.migrationDatabase()
        configuration.database = database
        return try await withPostgresClient(configuration) { client in
            let deadline = ContinuousClock.now + timeout
            while true {
                let rows = try await client.query(
                    """
                    SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = \(table)
                    """, logger: TestEnvironment.logger)
                var counts: (all: Int64, heapOnly: Int64) = (0, 0)
                for try await row in rows.decode((Int64, Int64).self) { counts = row }
                if counts.all >= atLeast || ContinuousClock.now >= deadline { return counts }
                try await Task.sleep(for: .milliseconds(200))
            }
        }
    }

    /// Creates an empty database owned by the migration role and drops it after `body`.
    public static func withScratchDatabase<Result: Sendable>(
        _ body: (DatabaseConfiguration) async throws -> Result
    ) async throws -> Result {
        try await describingPostgresErrors { try await scratchDatabase(body) }
    }

    private static func scratchDatabase<Result: Sendable>(
        _ body: (DatabaseConfiguration) async throws -> Result
    ) async throws -> Result {
        let owner = try TestEnvironment.migrationDatabase()
        let name =
            "latchkey_scratch_\(UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12))"
        try await withPostgresClient(owner) { client in
            try await client.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: TestEnvironment.logger)
        }
        var scratch = owner
        scratch.database = name
        do {
            let result = try await body(scratch)
            try await dropDatabase(name, owner: owner)
            return result
        } catch {
            try? await dropDatabase(name, owner: owner)
            throw error
        }
    }

    /// Drops a scratch database. `WITH (FORCE)` may end only the owner's own sessions: while a service the
    /// test started is still closing its pools (other roles), PostgreSQL refuses with 42501 or 55006, so the
    /// drop is tried again until those sessions are gone. A database still in use after that is left in
    /// place: cleaning up is not what the test tests.
    private static func dropDatabase(_ name: String, owner: DatabaseConfiguration) async throws {
        let deadline = ContinuousClock.now + .seconds(90)
        while true {
            do {
                try await withPostgresClient(owner) { client in
                    try await client.query(
                        PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)"),
                        logger: TestEnvironment.logger)
                }
                return
            } catch  where ["42501", "55006"].contains(error.postgresSQLState) {
                guard ContinuousClock.now < deadline else {
                    TestEnvironment.logger.warning(
                        "scratch database still in use; left in place", metadata: ["database": "\(name)"])
                    return
                }
                try await Task.sleep(for: .milliseconds(250))
            }
        }
    }
}
