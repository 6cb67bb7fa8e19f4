import Logging
import PostgresNIO

/// The schema a service found at start-up or in a readiness probe.
public struct SchemaState: Sendable, Equatable {
    /// The highest migration applied to the database.
    public let databaseVersion: Int
    /// The highest migration this build ships.
    public let buildVersion: Int

    public init(databaseVersion: Int, buildVersion: Int) {
        self.databaseVersion = databaseVersion
        self.buildVersion = buildVersion
    }

    /// `ok` on the build's own schema, `N (build B)` on a newer schema the build still works with.
    public var summary: String {
        databaseVersion == buildVersion ? "ok" : "\(databaseVersion) (build \(buildVersion))"
    }
}

/// Applies the bundled migrations under an advisory lock and checks the schema version at start-up.
///
/// Rolling upgrades follow expand/contract: a build whose latest migration is B works on a database at
/// version D when B ≤ D and every migration after B declared `compatible_from` ≤ B (the value is recorded
/// with each applied migration, since the older build does not ship the newer files). Migrations never
/// run backwards or out of order.
public struct Migrator: Sendable {
    /// Arbitrary constant so concurrent `migrate` runs (several replicas, a compose job) queue up.
    static let advisoryLockKey: Int64 = 0x4C41_5443_484B_4559  // "LATCHKEY"

    public let migrations: [Migration]
    public let logger: Logger

    public init(migrations: [Migration], logger: Logger) {
        self.migrations = migrations
        self.logger = logger
    }

    public init(logger: Logger) throws {
        self.init(migrations: try Migration.bundled(), logger: logger)
    }

    /// The version the code expects (the last bundled migration).
    public var expectedVersion: Int { migrations.last?.version ?? 0 }

    /// Applies every pending migration, each in its own transaction; returns the versions applied.
    @discardableResult
    public func migrate(client: PostgresClient) async throws -> [Int] {
        try await client.withConnection { connection in
            // A migration (and the wait for another migrator's lock) may outlast the pool's statement timeout.
            try await connection.query("SET statement_timeout = 0", logger: logger)
            try await connection.query("SELECT pg_advisory_lock(\(Self.advisoryLockKey))", logger: logger)
            do {
                let applied = try await migrateLocked(connection)
                try await connection.query("SELECT pg_advisory_unlock(\(Self.advisoryLockKey))", logger: logger)
                try await connection.query("RESET statement_timeout", logger: logger)
                return applied
            } catch {
                _ = try? await connection.query("SELECT pg_advisory_unlock(\(Self.advisoryLockKey))", logger: logger)
                _ = try? await connection.query("RESET statement_timeout", logger: logger)
                throw error
            }
        }
    }

    private func migrateLocked(_ connection: PostgresConnection) async throws -> [Int] {
        try await connection.query(
            """
            CREATE TABLE IF NOT EXISTS latchkey_schema_migrations (
                version integer PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now(), compatible_from integer)
            """, logger: logger)
        // Databases migrated before builds declared their range; their rows stay NULL (= own version).
        try await connection.query(
            "ALTER TABLE latchkey_schema_migrations ADD COLUMN IF NOT EXISTS compatible_from integer",
            logger: logger)
        // Every service role checks the schema version at start-up; the version is not a secret.
        try await connection.query("GRANT SELECT ON latchkey_schema_migrations TO PUBLIC", logger: logger)
        let recorded = try await appliedMigrations(connection)
        let state = try verify(recorded: recorded, requireComplete: false)
        guard state.databaseVersion <= expectedVersion else {
            throw MigrationError.newerSchema(found: state.databaseVersion, build: expectedVersion)
        }
        if let latest = recorded.keys.max(),
            let pending = migrations.first(where: { recorded[$0.version] == nil && $0.version < latest })
        {
            throw MigrationError.outOfOrder(version: pending.version, applied: latest)
        }
        var newlyApplied: [Int] = []
        for migration in migrations where recorded[migration.version] == nil {
            logger.info(
                "applying migration", metadata: ["version": "\(migration.version)", "name": "\(migration.name)"])
            try await connection.query("BEGIN", logger: logger)
            do {
                for statement in SQLScript.statements(in: migration.sql) {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query(
                    """
                    INSERT INTO latchkey_schema_migrations (version, name, checksum, compatible_from)
                    VALUES (\(migration.version), \(migration.name), \(migration.checksum), \(migration.compatibleFrom))
                    """, logger: logger)
                try await connection.query("COMMIT", logger: logger)
            } catch {
                _ = try? await connection.query("ROLLBACK", logger: logger)
                throw error
            }
            newlyApplied.append(migration.version)
        }
        return newlyApplied
    }

    /// Throws unless this build works with the database's schema: every migration it ships applied
    /// unchanged, and any newer ones declared compatible with it.
    @discardableResult
    public func checkSchema(client: PostgresClient) async throws -> SchemaState {
        let recorded = try await client.withConnection { connection in
            let exists = try await connection.query(
                "SELECT to_regclass('latchkey_schema_migrations') IS NOT NULL", logger: logger)
            for try await present in exists.decode(Bool.self) where !present {
                return [Int: AppliedMigration]()
            }
            return try await appliedMigrations(connection)
        }
        return try verify(recorded: recorded, requireComplete: true)
    }

    struct AppliedMigration: Sendable {
        let checksum: String
        let compatibleFrom: Int?
    }

    private func appliedMigrations(_ connection: PostgresConnection) async throws -> [Int: AppliedMigration] {
        // Read through to_jsonb so a table the migrator has not yet given the column still answers: service
        // roles only read it, and the build that adds the column may start before its `migrate` ran.
        let rows = try await connection.query(
            """
            SELECT version, checksum, (to_jsonb(m) ->> 'compatible_from')::integer
            FROM latchkey_schema_migrations m
            """, logger: logger)
        var recorded: [Int: AppliedMigration] = [:]
        for try await (version, checksum, compatibleFrom) in rows.decode((Int, String, Int?).self) {
            recorded[version] = AppliedMigration(checksum: checksum, compatibleFrom: compatibleFrom)
        }
        return recorded
    }

    private func verify(recorded: [Int: AppliedMigration], requireComplete: Bool) throws -> SchemaState {
        let known = Dictionary(uniqueKeysWithValues: migrations.map { ($0.version, $0) })
        let build = expectedVersion
        // The oldest build the newer migrations still work with (this build's own version without any).
        var floor = 0
        for (version, applied) in recorded.sorted(by: { $0.key < $1.key }) {
            if let migration = known[version] {
                guard migration.checksum == applied.checksum else {
                    throw MigrationError.checksumMismatch(version: version, name: migration.name)
                }
            } else if version > build {
                floor = max(floor, applied.compatibleFrom ?? version)
            } else {
                throw MigrationError.unknownAppliedVersion(version)
            }
        }
        let databaseVersion = recorded.keys.max() ?? 0
        if requireComplete {
            guard migrations.allSatisfy({ recorded[$0.version] != nil }) else {
                throw MigrationError.unexpectedSchemaVersion(found: databaseVersion, expected: build)
            }
            guard floor <= build else {
                throw MigrationError.incompatibleSchemaVersion(
                    found: databaseVersion, build: build, compatibleFrom: floor)
            }
        }
        return SchemaState(databaseVersion: databaseVersion, buildVersion: build)
    }
}
