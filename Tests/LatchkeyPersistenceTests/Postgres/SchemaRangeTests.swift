import LatchkeyTestSupport
import PostgresNIO
import Testing

@testable import LatchkeyPersistence

/// Expand/contract: a build works on a newer schema only while every migration after its own declared
/// itself compatible with it. Synthetic migrations N+1 (an expand step declaring N) and N+2 (undeclared)
/// are applied after the bundled ones in a scratch database.
@Suite struct SchemaRangeTests {
    let logger = TestEnvironment.logger

    /// N+1 adds a table the build at N never reads; N+2 changes what N+1 added without a declaration.
    static func upgrades(after build: Int) throws -> (expand: Migration, contract: Migration) {
        let expand = try Migration(
            version: build + 1, name: "expand_probe",
            sql: """
                -- A table no build at \(build) reads: adding it leaves that build working.
                -- compatible_from: \(build)
                CREATE TABLE upgrade_probe (id integer PRIMARY KEY);
                """)
        let contract = try Migration(
            version: build + 2, name: "contract_probe", sql: "ALTER TABLE upgrade_probe ADD COLUMN note text NOT NULL")
        return (expand, contract)
    }

    @Test func declarationsAreReadFromTheLeadingComments() throws {
        #expect(
            try Migration(version: 7, name: "a", sql: "-- why\n-- compatible_from: 5\nSELECT 1").compatibleFrom == 5)
        #expect(try Migration(version: 7, name: "a", sql: "\n--   compatible_from:7  \nSELECT 1").compatibleFrom == 7)
        // Without a declaration only builds that ship the migration work with it.
        #expect(try Migration(version: 7, name: "a", sql: "-- nothing declared\nSELECT 1").compatibleFrom == 7)
        // After the first statement the line is an ordinary comment.
        #expect(try Migration(version: 7, name: "a", sql: "SELECT 1;\n-- compatible_from: 5").compatibleFrom == 7)
        for declared in ["0", "8", "six", ""] {
            #expect(throws: MigrationError.badCompatibility(version: 7, declared: declared)) {
                try Migration(version: 7, name: "a", sql: "-- compatible_from: \(declared)\nSELECT 1")
            }
        }
        // Every bundled file declares a valid range (or none).
        for migration in try Migration.bundled() {
            #expect((1...migration.version).contains(migration.compatibleFrom))
        }
    }

    @Test func aBuildReadyOnNPlusOneRefusesNPlusTwo() async throws {
        try await TestDatabase.withScratchDatabase { configuration in
            try await TestDatabase.migrate(configuration)
            try await withPostgresClient(configuration) { client in
                let build = try Migrator(logger: logger)
                let n = build.expectedVersion
                #expect(try await build.checkSchema(client: client) == SchemaState(databaseVersion: n, buildVersion: n))

                let (expand, contract) = try Self.upgrades(after: n)
                let next = Migrator(migrations: build.migrations + [expand], logger: logger)
                #expect(try await next.migrate(client: client) == [n + 1])
                let onExpanded = try await build.checkSchema(client: client)
                #expect(onExpanded == SchemaState(databaseVersion: n + 1, buildVersion: n))
                #expect(onExpanded.summary == "\(n + 1) (build \(n))")

                let last = Migrator(migrations: build.migrations + [expand, contract], logger: logger)
                #expect(try await last.migrate(client: client) == [n + 2])
                await #expect(
                    throws: MigrationError.incompatibleSchemaVersion(found: n + 2, build: n, compatibleFrom: n + 2)
                ) {
                    try await build.checkSchema(client: client)
                }
                // The build at N+1 is refused too: N+2 declared nothing, so only builds at N+2 work with it.
                await #expect(
                    throws: MigrationError.incompatibleSchemaVersion(found: n + 2, build: n + 1, compatibleFrom: n + 2)
                ) {
                    try await next.checkSchema(client: client)
                }
                #expect(try await last.checkSchema(client: client).summary == "ok")
            }
        }
    }

    @Test func migrateNeverRunsBackwardsNorOutOfOrder() async throws {
        try await TestDatabase.withScratchDatabase { configuration in
            try await TestDatabase.migrate(configuration)
            try await withPostgresClient(configuration) { client in
                let build = try Migrator(logger: logger)
                let n = build.expectedVersion
                let (expand, contract) = try Self.upgrades(after: n)
                // N+2 alone first (a branch's migration landed before the one numbered below it).
                let skipping = try Migration(
                    version: n + 2, name: "expand_probe", sql: "-- compatible_from: \(n)\n" + expand.sql)
                try await Migrator(migrations: build.migrations + [skipping], logger: logger).migrate(client: client)
                await #expect(throws: MigrationError.newerSchema(found: n + 2, build: n)) {
                    try await build.migrate(client: client)
                }
                let renumbered = try Migration(version: n + 1, name: "contract_probe", sql: contract.sql)
                await #expect(throws: MigrationError.outOfOrder(version: n + 1, applied: n + 2)) {
                    try await Migrator(migrations: build.migrations + [renumbered, skipping], logger: logger)
                        .migrate(client: client)
                }
                // Neither refusal changed anything.
                let rows = try await client.query(
                    "SELECT max(version), max(compatible_from) FILTER (WHERE version = \(n + 2)) FROM latchkey_schema_migrations",
                    logger: logger)
                for try await (version, compatibleFrom) in rows.decode((Int, Int).self) {
                    #expect(version == n + 2)
                    #expect(compatibleFrom == n)
                }
            }
        }
    }

    /// A database migrated before ranges were recorded: its table lacks the column, the services (which
    /// only read it) still check the schema, and the next `migrate` adds the column.
    @Test func aMigrationsTableWithoutRangesIsReadAsUndeclared() async throws {
        try await TestDatabase.withScratchDatabase { configuration in
            try await TestDatabase.migrate(configuration)
            try await withPostgresClient(configuration) { client in
                let build = try Migrator(logger: logger)
                let n = build.expectedVersion
                let (expand, _) = try Self.upgrades(after: n)
                try await Migrator(migrations: build.migrations + [expand], logger: logger).migrate(client: client)
                try await client.query(
                    "ALTER TABLE latchkey_schema_migrations DROP COLUMN compatible_from", logger: logger)
                await #expect(
                    throws: MigrationError.incompatibleSchemaVersion(found: n + 1, build: n, compatibleFrom: n + 1)
                ) {
                    try await build.checkSchema(client: client)
                }
                let next = Migrator(migrations: build.migrations + [expand], logger: logger)
                #expect(try await next.migrate(client: client).isEmpty)
                #expect(try await next.checkSchema(client: client).summary == "ok")
            }
        }
    }
}
