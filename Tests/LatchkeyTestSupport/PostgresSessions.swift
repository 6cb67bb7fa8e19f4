import PostgresNIO

/// What PostgreSQL shows of a pool's sessions, found by their `application_name`.
public enum PostgresSessions {
    /// The last statement of each session named `name`, as `observer` (a client of the same role) sees it.
    public static func lastStatements(named name: String, seenBy observer: PostgresClient) async throws -> [String] {
        let rows = try await observer.query(
            "SELECT query FROM pg_stat_activity WHERE application_name = \(name)", logger: TestEnvironment.logger)
        var statements: [String] = []
        for try await query in rows.decode(String.self) { statements.append(query) }
        return statements
    }
}
