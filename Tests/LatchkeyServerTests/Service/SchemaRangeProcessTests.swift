import Foundation
import HTTPTypes
import LatchkeyTestSupport
import Testing

@testable import LatchkeyKafka
@testable import LatchkeyPersistence

/// A rolling upgrade as the old pods see it: a real registration-gateway process of this build stays ready
/// while a compatible newer migration (N+1) is applied, reporting the newer schema, and is taken out and
/// refuses to start once an incompatible one (N+2) lands.
@Suite struct SchemaRangeProcessTests {
    @Test func aBuildReadyOnNPlusOneRefusesNPlusTwo() async throws {
        try await TestDatabase.withScratchDatabase { scratch in
            try await TestDatabase.migrate(scratch)
            let build = try Migrator(logger: TestEnvironment.logger)
            let n = build.expectedVersion
            let expand = try Migration(
                version: n + 1, name: "expand_probe",
                sql: "-- compatible_from: \(n)\nCREATE TABLE upgrade_probe (id integer PRIMARY KEY);")
            let contract = try Migration(
                version: n + 2, name: "contract_probe", sql: "ALTER TABLE upgrade_probe ADD COLUMN note text NOT NULL")
            try await withPostgresClient(scratch) { client in
                try await Migrator(migrations: build.migrations + [expand], logger: TestEnvironment.logger)
                    .migrate(client: client)
            }
            let cluster = try EmbeddedKafkaCluster(brokers: 1)
            defer { cluster.shutdown() }
            let environment = try ServiceProcessLifecycleTests().environment(
                kafka: cluster.bootstrapServers, database: scratch.database)
            let running = try ServiceProcess("registration-gateway", environment: environment)
            let management = ManagementClient(port: running.managementPort)
            let healthy = await running.waitUntilHealthy(timeout: .seconds(60))
            #expect(healthy, "\(running.capturedOutput().suffix(2_000))")
            let ready = try await management.execute(uri: "/readyz")
            #expect(ready.status == .ok, "\(ready.text)")
            #expect(ready.text.contains(#""schema":"\#(n + 1) (build \#(n))""#), "\(ready.text)")

            try await withPostgresClient(scratch) { client in
                try await Migrator(migrations: build.migrations + [expand, contract], logger: TestEnvironment.logger)
                    .migrate(client: client)
            }
            try await eventually("/readyz refuses schema \(n + 2)", within: .seconds(30)) {
                let response = try await management.execute(uri: "/readyz")
                return response.status == .serviceUnavailable && response.text.contains(#""schema":"failing""#)
            }
            #expect(await running.stop() == 0, "\(running.capturedOutput().suffix(2_000))")

            let starting = try ServiceProcess("registration-gateway", environment: environment)
            let status = await starting.waitForExit(timeout: .seconds(60))
            #expect(status == 1, "\(starting.capturedOutput().suffix(3_000))")
            #expect(
                starting.capturedOutput().contains("database schema is at version \(n + 2)")
                    && starting.capturedOutput().contains("this build is at \(n)"),
                "\(starting.capturedOutput().suffix(3_000))")
        }
    }
}
