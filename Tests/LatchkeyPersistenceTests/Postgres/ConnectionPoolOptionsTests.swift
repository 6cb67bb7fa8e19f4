import Foundation
import LatchkeyCore
import LatchkeyPersistence
import LatchkeyTestSupport
import PostgresNIO
import Testing

/// `pool_min` keeps connections open while idle (all of the pool's by default); `pool_keepalive` sets (or, at
/// 0, stops) the interval of the `SELECT 1` checks of those connections. Both are read from the database URL;
/// PostgresNIO's own per-connection keep-alive timers are never configured.
@Suite struct ConnectionPoolOptionsTests {
    @Test func theOptionsAreReadFromTheURL() throws {
        let defaults = try DatabaseConfiguration(url: "postgres://u:p@db:5432/d")
        #expect(defaults.minimumConnections == 10 && defaults.keepAliveInterval == .seconds(60))
        #expect(defaults.clientConfiguration.options.minimumConnections == 10)
        #expect(defaults.clientConfiguration.options.keepAliveBehavior == nil)
        let set = try DatabaseConfiguration(url: "postgres://u:p@db:5432/d?pool_max=8&pool_min=2&pool_keepalive=0")
        #expect(set.minimumConnections == 2 && set.keepAliveInterval == nil)
        #expect(set.clientConfiguration.options.minimumConnections == 2)
        #expect(set.clientConfiguration.options.keepAliveBehavior == nil)
        let every = try DatabaseConfiguration(url: "postgres://u:p@db:5432/d?pool_max=4&pool_keepalive=120")
        #expect(every.minimumConnections == 4 && every.keepAliveInterval == .seconds(120))
        #expect(every.clientConfiguration.options.keepAliveBehavior == nil)
        #expect(
            every.onDemand.minimumConnections == 0 && every.onDemand.clientConfiguration.options.minimumConnections == 0
        )
    }

    @Test func aFixedPoolFollowsItsMaximum() throws {
        var configuration = try DatabaseConfiguration(url: "postgres://u:p@db:5432/d")
        configuration.maximumConnections = 3
        #expect(configuration.minimumConnections == 3)
        configuration.minimumConnections = 5  // never above the maximum
        #expect(configuration.clientConfiguration.options.minimumConnections == 3)
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
                    try await PostgresSessions.lastStatements(named: configuration.applicationName, seenBy: observer)
                        .count == 3
                }
            }
        }
    }
}
