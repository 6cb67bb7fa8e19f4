import LatchkeyTestSupport
import PostgresNIO
import Testing

@testable import LatchkeyPersistence

@Suite struct MigratorTests {
    let logger = TestEnvironment.logger

    @Test func bundledMigrationsAreOrderedWithoutGaps() throws {
        let migrations = try Migration.bundled()
        #expect(!migrations.isEmpty)
        // Strictly increasing from 1; numbers may be reserved for parallel branches, so gaps are allowed.
        let versions = migrations.map(\.version)
        #expect(versions.first == 1)
        #expect(zip(versions, versions.dropFirst()).allSatisfy { $0 < $1 })
    }

    @Test func migratesAFreshDatabaseOnceAndChecksTheVersion() async throws {
        try await TestDatabase.withScratchDatabase { configuration in
            try await withPostgresClient(configuration) { client in
                let migrator = try Migrator(logger: logger)
                await #expect(
                    throws: MigrationError.unexpectedSchemaVersion(found: 0, expected: migrator.expectedVersion)
                ) {
                    try await migrator.checkSchema(client: client)
                }
                let applied = try await migrator.migrate(client: client)
                #expect(applied == migrator.migrations.map(\.version))
                #expect(try await migrator.migrate(client: client).isEmpty)
                try await migrator.checkSchema(client: client)
            }
        }
    }

    @Test func concurrentMigrationsApplyEachVersionOnce() async throws {
        try await TestDatabase.withScratchDatabase { configuration in
            let applied = try await withThrowingTaskGroup(of: [Int].self) { group in
                for _ in 0..<3 {
                    group.addTask {
                        try await withPostgresClient(configuration) { client in
                            try await Migrator(logger: logger).migrate(client: client)
                        }
                    }
                }
                return try await group.reduce(into: [Int]()) { $0 += $1 }
            }
            #expect(applied.sorted() == (try Migration.bundled().map(\.version)))
        }
    }

    @Test func refusesAnEditedMigrationAndAnOlderBuild() async throws {
        try await TestDatabase.withScratchDatabase { configuration in
            try await withPostgresClient(configuration) { client in
                let migrator = try Migrator(logger: logger)
                try await migrator.migrate(client: client)
                var edited = migrator.migrations
                edited[0] = try Migration(version: 1, name: edited[0].name, sql: edited[0].sql + "\n-- edited")
                await #expect(throws: MigrationError.checksumMismatch(version: 1, name: edited[0].name)) {
                    try await Migrator(migrations: edited, logger: logger).checkSchema(client: client)
                }
                // The latest bundled migration that declares no range: the builds before it do not work on it.
                let strict = try #require(migrator.migrations.last { $0.compatibleFrom == $0.version })
                let older = Migrator(
                    migrations: migrator.migrations.filter { $0.version < strict.version }, logger: logger)
                let previous = older.expectedVersion
                await #expect(
                    throws: MigrationError.incompatibleSchemaVersion(
                        found: migrator.expectedVersion, build: previous, compatibleFrom: strict.version)
                ) {
                    try await older.checkSchema(client: client)
                }
            }
        }
    }
}
