import ArgumentParser
import Configuration
import Foundation
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyServer
import Logging
import PostgresNIO

/// `latchkey migrate [apply]`: applies pending migrations (also the compose job and the Kubernetes init Job);
/// `latchkey migrate status`: what is applied, pending or changed, without changing anything.
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Apply database migrations, or show their status.",
        subcommands: [Apply.self, Status.self], defaultSubcommand: Apply.self)

    struct Apply: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Apply pending migrations using DATABASE_MIGRATION_URL (or DATABASE_URL).")

        func run() async throws {
            var logger = Logger(label: "latchkey.migrate")
            logger.logLevel = .info
            try await ServiceMain.migrate(
                reader: ConfigReader(providers: [EnvironmentVariablesProvider()]), logger: logger)
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show applied migrations (checksum, date), pending ones and checksum mismatches.",
            discussion: """
                Reads DATABASE_MIGRATION_URL (or DATABASE_URL) and changes nothing. Exits 0 when the database is \
                exactly at this build's version, 1 when migrations are pending, changed or unknown to this build \
                (usable as an init check).
                """)

        @Option(help: "table or json") var output: OutputFormat = .table

        func run() async throws {
            let env = SettingsReader(ConfigReader(providers: [EnvironmentVariablesProvider()]))
            guard
                let url = try env.secretText("database.migration.url") ?? env.secretText("database.url")
            else { throw ValidationError("DATABASE_MIGRATION_URL (or DATABASE_URL) is required") }
            var logger = Logger(label: "latchkey.migrate")
            logger.logLevel = .warning
            let client = try DatabaseConfiguration(url: url).onDemand.makeClient(logger: logger)
            let migrator = try Migrator(logger: logger)
            let status = try await withRunningPool(client) { try await migrator.status(client: client) }
            print(render(status))
            guard status.isCurrent else { throw ExitCode(1) }
        }

        private func render(_ status: MigrationStatus) -> String {
            switch output {
            case .json:
                let entries: [JSONValue] = status.entries.map { entry in
                    var object: [String: JSONValue] = [
                        "version": .number(Double(entry.version)), "name": .string(entry.name),
                        "state": .string(entry.state.rawValue),
                    ]
                    object["expected_checksum"] = entry.expectedChecksum.map(JSONValue.string)
                    object["applied_checksum"] = entry.appliedChecksum.map(JSONValue.string)
                    object["applied_at"] = entry.appliedAt.map { .string(RFC3339Timestamp.string(from: $0)) }
                    return .object(object)
                }
                return PrettyJSON.string(
                    .object([
                        "current": .bool(status.isCurrent), "migrations": .array(entries),
                        "pending": .number(Double(status.count(.pending))),
                        "checksum_mismatches": .number(Double(status.count(.checksumMismatch))),
                        "unknown": .number(Double(status.count(.unknown))),
                    ]))
            case .table:
                let rows = status.entries.map { entry in
                    [
                        String(format: "%04d", entry.version), entry.name, entry.state.rawValue,
                        entry.appliedAt.map(RFC3339Timestamp.string(from:)) ?? "-",
                        String((entry.appliedChecksum ?? entry.expectedChecksum ?? "-").prefix(16)),
                    ]
                }
                let summary =
                    status.isCurrent
                    ? "schema is current (\(status.entries.count) migrations applied)"
                    : "schema is NOT current: \(status.count(.pending)) pending, "
                        + "\(status.count(.checksumMismatch)) checksum mismatches, "
                        + "\(status.count(.unknown)) unknown to this build"
                return TextTable.render(header: ["VERSION", "NAME", "STATE", "APPLIED AT", "CHECKSUM"], rows: rows)
                    + "\n" + summary
            }
        }
    }
}
