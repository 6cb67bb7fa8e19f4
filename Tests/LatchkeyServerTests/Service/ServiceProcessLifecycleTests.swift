import Foundation
import LatchkeyTestSupport
import Testing
@testable import LatchkeyCore
@testable import LatchkeyKafka
@testable import LatchkeyPersistence

/// The four executables as real processes: they start against real dependencies and stop cleanly on signals.
@Suite(.serialized) struct ServiceProcessLifecycleTests {
    static let services = ["registration-gateway", "token-service", "dpop-verifier", "audit-consumer"]

    func environment(kafka: String, database: String? = nil) throws -> [String: String] {
        var app = try TestEnvironment.appDatabase(), system = try TestEnvironment.systemDatabase()
        if let database {
            app.database = database
            system.database = database
        }
        func url(_ c: DatabaseConfiguration) -> String {
            "postgres://\(c.username):\(c.password ?? "")@\(c.host):\(c.port)/\(c.database)"
        }
        let key = KeyMaterial.generateConfigurationValue
        return [
            "DATABASE_URL": url(app), "DATABASE_SYSTEM_URL": url(system), "KAFKA_BROKERS": kafka, "LOG_LEVEL": "info",
            "TOKEN_SERVICE_PUBLIC_URL": "http://127.0.0.1:8082", "REGISTRATION_GATEWAY_PUBLIC_URL": "http://127.0.0.1:8081",
            "KEY_ENCRYPTION_KEY": key(), "SECRET_HASH_KEY": key(), "DPOP_NONCE_SECRET": key(),
            "DPOP_UPSTREAM_URL": "http://127.0.0.1:9", "DPOP_EXTERNAL_ORIGINS": "http://127.0.0.1:8083",
            "DPOP_ISSUERS": "http://127.0.0.1:8082/t/demo", "DPOP_AUDIENCES": "http://127.0.0.1:8082/t/demo",
        ]
    }

    @Test(arguments: [(SIGTERM, "SIGTERM"), (SIGINT, "SIGINT")])
    func everyServiceStartsAndShutsDownGracefully(signal: Int32, name: String) async throws {
        try await TestDatabase.prepare()
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        defer { cluster.shutdown() }
        let env = try environment(kafka: cluster.bootstrapServers)
        let processes = try Self.services.map { try ServiceProcess($0, environment: env) }
        for process in processes {
            let healthy = await process.waitUntilHealthy()
            #expect(healthy, "\(process.name) did not become healthy")
        }
        for process in processes {
            let status = await process.stop(signal: signal)
            #expect(status == 0, "\(process.name) after \(name): \(process.capturedOutput().suffix(2_000))")
        }
    }

    @Test func servicesRefuseToStartOnAnUnmigratedDatabase() async throws {
        try await TestDatabase.withScratchDatabase { scratch in
            let cluster = try EmbeddedKafkaCluster(brokers: 1)
            defer { cluster.shutdown() }
            let process = try ServiceProcess(
                "registration-gateway", environment: environment(kafka: cluster.bootstrapServers, database: scratch.database))
            // Generous: on a loaded CI machine start-up plus the orderly stop of its services takes a while.
            let status = await process.waitForExit(timeout: .seconds(60))
            #expect(status == 1, "\(process.capturedOutput().suffix(3_000))")
            #expect(process.capturedOutput().contains("run `latchkey migrate`"))
        }
    }

    @Test func missingConfigurationIsNamed() async throws {
        let process = try ServiceProcess("token-service", environment: ["DATABASE_URL": "", "KAFKA_BROKERS": ""])
        let status = await process.waitForExit(timeout: .seconds(10))
        #expect(status == 1)
        #expect(process.capturedOutput().contains("DATABASE_URL is required"))
    }
}
