import Logging
import PostgresNIO

/// Applies the bundled migrations under an advisory lock and checks the schema version at start-up.
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
                applied_at timestamptz NOT NULL DEFAULT now())
            """, logger: logger)
        // Every service role checks the schema version at start-up; the version is not a secret.
        try await connection.query("GRANT SELECT ON latchkey_schema_migrations TO PUBLIC", logger: logger)
        let recorded = try await appliedMigrations(connection)
        try verify(recorded: recorded, requireComplete: false)
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
                    INSERT INTO latchkey_schema_migrations (version, name, checksum)
                    VALUES (\(migration.version), \(migration.name), \(migration.checksum))
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

    /// Throws unless the database is exactly at the expected version with unchanged checksums.
    public func checkSchema(client: PostgresClient) async throws {
        let recorded = try await client.withConnection { connection in
            let exists = try await connection.query(
                "SELECT to_regclass('latchkey_schema_migrations') IS NOT NULL", logger: logger)
            for try await present in exists.decode(Bool.self) where !present {
                return [Int: String]()
            }
            return try await appliedMigrations(connection)
        }
        try verify(recorded: recorded, requireComplete: true)
    }

    private func appliedMigrations(_ connection: PostgresConnection) async throws -> [Int: String] {
        let rows = try await connection.query(
            "SELECT version, checksum FROM latchkey_schema_migrations", logger: logger)
        var recorded: [Int: String] = [:]
        for try await (version, checksum) in rows.decode((Int, String).self) {
            recorded[version] = checksum
        }
        return recorded
    }

    private func verify(recorded: [Int: String], requireComplete: Bool) throws {
        let known = Dictionary(uniqueKeysWithValues: migrations.map { ($0.version, $0) })
        for (version, checksum) in recorded.sorted(by: { $0.key < $1.key }) {
            guard let migration = known[version] else { throw MigrationError.unknownAppliedVersion(version) }
            guard migration.checksum == checksum else {
                throw MigrationError.checksumMismatch(version: version, name: migration.name)
            }
        }
        if requireComplete, recorded.count != migrations.count {
            throw MigrationError.unexpectedSchemaVersion(found: recorded.keys.max() ?? 0, expected: expectedVersion)
        }
    }
}
