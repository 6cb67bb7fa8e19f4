import Foundation
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyTestSupport
import PostgresNIO
import Testing

/// `pool_min` keeps connections open while idle; `pool_keepalive` sets (or, at 0, stops) the `SELECT 1` that
/// checks idle connections. Both are read from the database URL and reach the running pool.
@Suite struct ConnectionPoolOptionsTests {
    @Test func theOptionsAreReadFromTheURL() throws {
        let defaults = try DatabaseConfiguration(url: "postgres://u:p@db:5432/d")
        #expect(defaults.minimumConnections == 0 && defaults.keepAliveInterval == .seconds(30))
        let set = try DatabaseConfiguration(url: "postgres://u:p@db:5432/d?pool_max=8&pool_min=8&pool_keepalive=0")
        #expect(set.minimumConnections == 8 && set.keepAliveInterval == nil)
        #expect(set.clientConfiguration.options.minimumConnections == 8)
        #expect(set.clientConfiguration.options.keepAliveBehavior == nil)
        let every = try DatabaseConfiguration(url: "postgres://u:p@db:5432/d?pool_keepalive=120")
        #expect(every.clientConfiguration.options.keepAliveBehavior?.frequency == .seconds(120))
    }

    @Test(arguments: [
        "pool_min=11", "pool_min=-1", "pool_min=two", "pool_max=4&pool_min=5", "pool_keepalive=-1",
        "pool_keepalive=3601", "pool_keepalive=30s",
    ])
    func anOptionOutOfRangeIsRefusedNamingIt(_ query: String) {
        do {
            _ = try DatabaseConfiguration(url: "postgres://u:secret@db:5432/d?\(query)")
            Issue.record("\(query) was accepted")
        } catch {
            let option = String(query.split(separator: "&").last!.split(separator: "=")[0])
            #expect(error.description.contains(option))
            #expect(!error.description.contains("secret"))
        }
    }

    @Test func aPoolMinimumIsOpenedWithoutDemand() async throws {
        var configuration = try TestEnvironment.appDatabase()
        configuration.applicationName = "pool-min-\(UUID().uuidString.prefix(8))"
        configuration.maximumConnections = 4
        configuration.minimumConnections = 3
        configuration.keepAliveInterval = nil
        let observer = try TestEnvironment.appDatabase()  // the same role sees the sessions' statements
        try await withPostgresClient(observer) { observer in
            try await withPostgresClient(configuration) { _ in
                // Nothing is leased: the pool opens its minimum on its own.
                try await eventually("the pool opens its minimum", within: .seconds(30)) {
                    try await Self.sessions(named: configuration.applicationName, seenBy: observer) == 3
                }
            }
        }
    }

    @Test func anIdleConnectionIsCheckedAtTheKeepAliveInterval() async throws {
        var configuration = try TestEnvironment.appDatabase()
        configuration.applicationName = "pool-keepalive-\(UUID().uuidString.prefix(8))"
        configuration.keepAliveInterval = .seconds(1)
        let observer = try TestEnvironment.appDatabase()  // the same role sees the sessions' statements
        try await withPostgresClient(observer) { observer in
            try await withPostgresClient(configuration) { client in
                _ = try await client.query("SELECT 'leased once'", logger: TestEnvironment.logger).collect()
                // Well before PostgresNIO's own 30 s default would send one.
                try await eventually("the idle connection runs its keep-alive query", within: .seconds(15)) {
                    try await Self.lastStatements(named: configuration.applicationName, seenBy: observer)
                        .contains("SELECT 1;")
                }
            }
        }
    }

    static func sessions(named name: String, seenBy observer: PostgresClient) async throws -> Int {
        try await lastStatements(named: name, seenBy: observer).count
    }

    /// The last statement of each session with `application_name` `name`.
    static func lastStatements(named name: String, seenBy observer: PostgresClient) async throws -> [String] {
        let rows = try await observer.query(
            "SELECT query FROM pg_stat_activity WHERE application_name = \(name)", logger: TestEnvironment.logger)
        var statements: [String] = []
        for try await query in rows.decode(String.self) { statements.append(query) }
        return statements
    }
}
