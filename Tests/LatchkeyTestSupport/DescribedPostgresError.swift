import LatchkeyPersistence
import PostgresNIO

/// A PostgreSQL error as a failing test shows it: SQLSTATE and PostgreSQL's message, never the detail
/// (which can hold row values). PostgresNIO's own description of an error says neither.
public struct DescribedPostgresError: Error, CustomStringConvertible {
    public let description: String
    /// The SQLSTATE, for tests that check it.
    public let sqlState: String?
}

/// Runs `body`; a PostgreSQL error it throws comes out as a ``DescribedPostgresError``.
public func describingPostgresErrors<Result>(_ body: () async throws -> Result) async throws -> Result {
    do {
        return try await body()
    } catch let error as PSQLError {
        throw DescribedPostgresError(description: error.logDescription, sqlState: error.postgresSQLState)
    }
}
