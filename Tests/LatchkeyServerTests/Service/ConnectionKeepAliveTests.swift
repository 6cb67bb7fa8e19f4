import Foundation
import LatchkeyPersistence
import LatchkeyServer
import LatchkeyTestSupport
import MetricsTestKit
import PostgresNIO
import ServiceLifecycle
import Testing

/// A service's pool keeps its connections open and checks each of them with `SELECT 1` once an interval, in one
/// round for the whole pool; a connection that does not answer is closed.
@Suite struct ConnectionKeepAliveTests {
    @Test func eachConnectionThePoolKeepsOpenIsChecked() async throws {
        var configuration = try TestEnvironment.appDatabase()
        configuration.applicationName = "keepalive-\(UUID().uuidString.prefix(8))"
        configuration.maximumConnections = 3
        configuration.minimumConnections = 3
        configuration.keepAliveInterval = .seconds(1)
        let client = configuration.makeClient(logger: TestEnvironment.logger)
        let keepAlive = try #require(
            ConnectionKeepAlive(
                client: client, pool: "app", configuration: configuration, logger: TestEnvironment.logger))
        let group = ServiceGroup(
            configuration: .init(
                services: [ConnectionPoolService(client, logger: TestEnvironment.logger), keepAlive],
                logger: TestEnvironment.logger))
        let observer = try TestEnvironment.appDatabase()  // the same role sees the sessions' statements
        try await withPostgresClient(observer) { observer in
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await group.run() }
                // Nothing is leased by the test: every statement of those sessions is the keep-alive's
                // (PostgresNIO's own check would be `SELECT 1;`).
                try await eventually("every connection the pool keeps open runs the check", within: .seconds(30)) {
                    let statements = try await PostgresSessions.lastStatements(
                        named: configuration.applicationName, seenBy: observer)
                    return statements == ["SELECT 1", "SELECT 1", "SELECT 1"]
                }
                await group.triggerGracefulShutdown()
                try await tasks.waitForAll()
            }
        }
    }

    @Test func aConnectionThatStopsAnsweringIsClosed() async throws {
        var configuration = try TestEnvironment.appDatabase()
        configuration.applicationName = "keepalive-\(UUID().uuidString.prefix(8))"
        // The relay can go silent: connections stay open and nothing comes back, as when a host is lost.
        let relay = try FreezableTCPRelay(forwardingTo: configuration.port)
        configuration.host = "127.0.0.1"
        configuration.port = relay.port
        configuration.maximumConnections = 2
        configuration.minimumConnections = 2
        let client = configuration.makeClient(logger: TestEnvironment.logger)
        let metrics = TestMetrics()
        let keepAlive = try #require(
            ConnectionKeepAlive(
                client: client, pool: "system", configuration: configuration, answerTimeout: .seconds(1),
                metrics: metrics, logger: TestEnvironment.logger))
        let closed = try metrics.expectCounter("latchkey_db_keepalive_closed_connections_total", [("pool", "system")])
        let observer = try TestEnvironment.appDatabase()  // straight to PostgreSQL, past the relay
        try await withPostgresClient(observer) { observer in
            try await withRunningPool(client) {
                // The pool opens its connections in the background: both must be open before the relay goes
                // silent, or a round's second lease waits for a connection that can no longer be opened.
                try await eventually("both connections are open and answer their check", within: .seconds(30)) {
                    guard await keepAlive.checkConnections() == 0 else { return false }
                    let statements = try await PostgresSessions.lastStatements(
                        named: configuration.applicationName, seenBy: observer)
                    return statements == ["SELECT 1", "SELECT 1"]
                }
                #expect(closed.totalValue == 0)
                relay.freeze()
                let started = ContinuousClock.now
                #expect(await keepAlive.checkConnections() == 2)
                // Closed at the answer timeout, not when the kernel gives up on the connection (minutes).
                #expect(ContinuousClock.now - started < .seconds(30))
                #expect(closed.totalValue == 2)
                relay.close()
            }
        }
    }
}
