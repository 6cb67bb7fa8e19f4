import Foundation
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyTestSupport
import PostgresNIO
import Testing

/// `latchkey migrate status` against a scratch database: pending, current, changed and unknown migrations,
/// each with the exit status an init check relies on.
@Suite struct MigrateStatusTests {
    @Test func reportsPendingAppliedChangedAndUnknownMigrations() async throws {
        let bundled = try Migration.bundled()
        try await TestDatabase.withScratchDatabase { scratch in
            let environment = ["DATABASE_MIGRATION_URL": scratch.url]
            let status = ["migrate", "status", "--output", "json"]

            let fresh = try await LatchkeyRun.run(status, environment: environment)
            #expect(fresh.status == 1, "\(fresh)")
            let freshJSON = try fresh.json()
            #expect(freshJSON["current"] == false)
            #expect(freshJSON["pending"]?.doubleValue == Double(bundled.count))

            let applied = try await LatchkeyRun.run(["migrate"], environment: environment)
            #expect(applied.status == 0, "\(applied)")
            let current = try await LatchkeyRun.run(status, environment: environment)
            #expect(current.status == 0, "\(current)")
            let entries = try current.json()["migrations"]?.arrayValue ?? []
            #expect(entries.count == bundled.count)
            for (entry, migration) in zip(entries, bundled) {
                #expect(entry["version"]?.doubleValue == Double(migration.version))
                #expect(entry["state"] == "applied")
                #expect(entry["applied_checksum"]?.stringValue == migration.checksum)
                #expect(entry["applied_at"]?.stringValue.flatMap(RFC3339Timestamp.date(from:)) != nil)
            }
            let table = try await LatchkeyRun.run(["migrate", "status"], environment: environment)
            #expect(table.status == 0 && table.output.contains("schema is current"), "\(table)")

            try await withPostgresClient(scratch) { client in
                try await client.query(
                    "UPDATE latchkey_schema_migrations SET checksum = 'edited' WHERE version = \(bundled[0].version)",
                    logger: TestEnvironment.logger)
                try await client.query(
                    "INSERT INTO latchkey_schema_migrations (version, name, checksum) VALUES (9999, 'from_the_future', 'x')",
                    logger: TestEnvironment.logger)
            }
            let drifted = try await LatchkeyRun.run(status, environment: environment)
            #expect(drifted.status == 1, "\(drifted)")
            let driftedJSON = try drifted.json()
            #expect(driftedJSON["checksum_mismatches"] == 1)
            #expect(driftedJSON["unknown"] == 1)
            let states = (driftedJSON["migrations"]?.arrayValue ?? []).compactMap { $0["state"]?.stringValue }
            #expect(states.first == "checksum-mismatch")
            #expect(states.last == "unknown")
            let text = try await LatchkeyRun.run(["migrate", "status"], environment: environment)
            #expect(text.status == 1 && text.output.contains("1 checksum mismatches"), "\(text)")
        }
    }

    @Test func withoutADatabaseURLItExplainsWhatIsMissing() async throws {
        let run = try await LatchkeyRun.run(["migrate", "status"], environment: [:])
        #expect(run.status != 0)
        #expect(run.output.contains("DATABASE_MIGRATION_URL"), "\(run)")
    }
}
