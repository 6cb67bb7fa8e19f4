import Logging
import PostgresNIO
import Tracing

/// A PostgreSQL pool plus the transaction helpers every service uses.
///
/// Tenant-scoped work goes through ``withTenantTransaction(_:_:)``: it sets `app.tenant_id`
/// for that transaction only, so Row-Level Security confines every statement to that tenant.
public struct Database: Sendable {
    public let pools: EventLoopPools
    public let logger: Logger

    public init(pools: EventLoopPools, logger: Logger) {
        self.pools = pools
        self.logger = logger
    }

    public init(client: PostgresClient, logger: Logger) {
        self.init(pools: EventLoopPools(client), logger: logger)
    }

    /// The pool to lease from: the one on the caller's event loop (``EventLoopPools``).
    public var client: PostgresClient { pools.current }

    /// Runs `body` in a transaction scoped to `tenant` (`SET LOCAL app.tenant_id`).
    @discardableResult
    public func withTenantTransaction<Result: Sendable>(
        _ tenant: String,
        _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await traced(tenant: tenant) {
            try await transaction { connection in
                try await connection.query("SELECT set_config('app.tenant_id', \(tenant), true)", logger: logger)
                return try await body(connection)
            }
        }
    }

    /// Runs `body` in a plain transaction; errors from `body` come back unwrapped.
    @discardableResult
    public func withTransaction<Result: Sendable>(
        _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await traced(tenant: nil) { try await transaction(body) }
    }

    /// Runs `work`, one statement that is a transaction of its own (a function doing a whole operation's
    /// reads and writes), under the same `db.transaction` span as the transaction helpers.
    public func withStatementTransaction<Result: Sendable>(
        tenant: String, _ work: () async throws -> Result
    ) async throws -> Result {
        try await traced(tenant: tenant, work)
    }

    /// A `db.transaction` client span around `work`, only inside a traced operation (a request, a consumed
    /// event): the polls of the relay and the jobs would otherwise each start a trace of their own. Neither
    /// statements nor bind values are recorded.
    private func traced<Result: Sendable>(
        tenant: String?, _ work: () async throws -> Result
    ) async throws -> Result {
        guard ServiceContext.current != nil else { return try await work() }
        return try await withSpan("db.transaction", ofKind: .client) { span in
            span.attributes["db.system"] = "postgresql"
            span.attributes["db.system.name"] = "postgresql"
            if let tenant { span.attributes["latchkey.tenant"] = tenant }
            return try await work()
        }
    }

    private func transaction<Result: Sendable>(
        _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await client.withConnection { connection in
            try await connection.query("BEGIN", logger: logger)
            let result: Result
            do {
                result = try await body(connection)
            } catch {
                _ = try? await connection.query("ROLLBACK", logger: logger)
                throw error
            }
            try await connection.query("COMMIT", logger: logger)
            return result
        }
    }

    /// True when a trivial query succeeds within the pool's connect timeout.
    public func isReachable() async -> Bool {
        do {
            try await client.query("SELECT 1", logger: logger)
            return true
        } catch {
            return false
        }
    }
}

extension Error {
    /// The SQLSTATE of a PostgreSQL server error, if this is one (e.g. `23505` unique violation).
    public var postgresSQLState: String? {
        (self as? PSQLError)?.serverInfo?[.sqlState]
    }

    /// A description for logs: PostgreSQL's own message and SQLSTATE (never bind values) for server errors.
    public var logDescription: String {
        guard let error = self as? PSQLError else { return "\(self)" }
        guard let info = error.serverInfo else { return "PostgreSQL \(error.code)" }
        return "PostgreSQL \(info[.sqlState] ?? "?"): \(info[.message] ?? "")"
    }

    /// True for a unique-constraint violation, the signal for idempotent inserts and conflicts.
    public var isUniqueViolation: Bool { postgresSQLState == "23505" }
}
