import Foundation
import LatchkeyCore
import LatchkeyPersistence
import Logging
import PostgresNIO
import Synchronization

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
    /// (a test that must see a timeout sets its own).
    private static func configuration(_ name: String) throws -> DatabaseConfiguration {
        var configuration = try DatabaseConfiguration(url: value(name))
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

/// Runs `body` with a running `PostgresClient` for `configuration`, shutting it down afterwards.
@discardableResult
public func withPostgresClient<Result: Sendable>(
    _ configuration: DatabaseConfiguration,
    _ body: (PostgresClient) async throws -> Result
) async throws -> Result {
    let client = configuration.makeClient(logger: TestEnvironment.logger)
    // A lease may be served before `run()` has started (PostgresNIO warns, then serves it), so a short body can
    // end before the run task was ever scheduled on a busy machine; a run cancelled before it started may never
    // return, and waiting for it would hang the test forever. So the run is awaited for a while after its
    // cancellation, never indefinitely: its connections are closed either way.
    let ended = RunEnded()
    let running = Task {
        await client.run()
        ended.mark()
    }
    func stop() async {
        running.cancel()
        for _ in 0..<100 where !ended.value { try? await Task.sleep(for: .milliseconds(100)) }
    }
    do {
        let result = try await body(client)
        await stop()
        return result
    } catch {
        await stop()
        throw error
    }
}

private final class RunEnded: Sendable {
    private let ended = Mutex(false)
    var value: Bool { ended.withLock { $0 } }
    func mark() { ended.withLock { $0 = true } }
}
