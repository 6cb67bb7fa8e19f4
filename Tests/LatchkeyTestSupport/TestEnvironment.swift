import Foundation
import LatchkeyCore
import LatchkeyPersistence
import Logging
import PostgresNIO

/// Where the test PostgreSQL lives; `scripts/test.sh` exports these. Missing means failure, never a skip.
public enum TestEnvironment {
    public struct Missing: Error, CustomStringConvertible {
        public let description: String
    }

    public static func value(_ name: String) throws -> String {
        guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else {
            throw Missing(description: "\(name) is not set: run the suite with scripts/test.sh")
        }
        return value
    }

    /// Tenant-scoped service role (`latchkey_app`).
    public static func appDatabase() throws -> DatabaseConfiguration {
        try configuration("LATCHKEY_TEST_DATABASE_URL")
    }

    /// Cross-tenant role (`latchkey_system`).
    public static func systemDatabase() throws -> DatabaseConfiguration {
        try configuration("LATCHKEY_TEST_SYSTEM_DATABASE_URL")
    }

    /// Owner role, used for migrations and for creating throwaway databases.
    public static func migrationDatabase() throws -> DatabaseConfiguration {
        try configuration("LATCHKEY_TEST_MIGRATION_DATABASE_URL")
    }

    /// The whole suite shares two CPUs, so statements get far more time than production's 5 s default
    /// (a test that must see a timeout sets its own). The suite starts hundreds of short-lived pools, so they
    /// open connections on demand instead of a service's fixed pool (tests of the pool options set their own).
    private static func configuration(_ name: String) throws -> DatabaseConfiguration {
        var configuration = try DatabaseConfiguration(url: value(name)).onDemand
        configuration.statementTimeoutMilliseconds = 60_000
        return configuration
    }

    /// Prints from `LATCHKEY_TEST_LOG_LEVEL` (warning by default); with a ``TestJournal``, the journal also
    /// gets the service lifecycle's and HTTP server's debug steps.
    public static let logger: Logger = {
        let level =
            ProcessInfo.processInfo.environment["LATCHKEY_TEST_LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0) }
            ?? .warning
        return Logger(label: "latchkey.tests") { label in
            var printed = StreamLogHandler.standardOutput(label: label)
            printed.logLevel = level
            guard TestJournal.isEnabled else { return printed }
            return MultiplexLogHandler([printed, JournalLogHandler()])
        }
    }()

    /// `KEY_ENCRYPTION_KEY` of every in-process application of the run. They share one database, and each
    /// token-service's lifecycle job serves every tenant in it: a key one app stages for another test's
    /// tenant (a policy's algorithm change) must be one that test's app can decrypt.
    public static let keyEncryptionKey = KeyMaterial.generateConfigurationValue()

    /// A tenant slug no other test uses.
    public static func uniqueTenant(_ prefix: String = "t") -> String {
        "\(prefix)-\(UUID().uuidString.lowercased().prefix(18))"
    }
}

/// Runs `body` with a running `PostgresClient` for `configuration`, stopping it afterwards (with the bounded
/// wait of ``ConnectionPoolRun``).
@discardableResult
public func withPostgresClient<Result: Sendable>(
    _ configuration: DatabaseConfiguration,
    _ body: (PostgresClient) async throws -> Result
) async throws -> Result {
    let client = configuration.makeClient(logger: TestEnvironment.logger)
    return try await withRunningPool(client) { try await body(client) }
}
