import ArgumentParser
import Configuration
import LatchkeyServer
import Logging

/// `latchkey migrate`: applies pending migrations (also the compose job and the Kubernetes init Job).
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Apply database migrations using DATABASE_MIGRATION_URL (or DATABASE_URL).")

    func run() async throws {
        var logger = Logger(label: "latchkey.migrate")
        logger.logLevel = .info
        try await ServiceMain.migrate(reader: ConfigReader(providers: [EnvironmentVariablesProvider()]), logger: logger)
    }
}
