import Foundation
import HTTPTypes
import LatchkeyTestSupport
import Testing

@testable import LatchkeyCore
@testable import LatchkeyKafka
@testable import LatchkeyPersistence

/// The four executables as real processes: they start against real dependencies and stop cleanly on signals.
@Suite(.serialized) struct ServiceProcessLifecycleTests {
    static let services = ["registration-gateway", "token-service", "dpop-verifier", "audit-consumer"]

    /// The grace period the shutdown tests give each service, and the slack they allow on top of it for a
    /// loaded machine to schedule the exit: a service that waits on its dependencies instead of ending at
    /// its deadline overruns it.
    static let grace = 3
    static let exitSlack = 7

    func environment(kafka: String, database: String? = nil, databasePort: Int? = nil) throws -> [String: String] {
        var app = try TestEnvironment.appDatabase()
        var system = try TestEnvironment.systemDatabase()
        if let database {
            app.database = database
            system.database = database
        }
        if let databasePort {
            app.port = databasePort
            system.port = databasePort
        }
        let key = KeyMaterial.generateConfigurationValue
        return [
            "DATABASE_URL": app.url, "DATABASE_SYSTEM_URL": system.url,
            "KAFKA_BROKERS": kafka, "LOG_LEVEL": "info",
            "TOKEN_SERVICE_PUBLIC_URL": "http://127.0.0.1:8082",
            "REGISTRATION_GATEWAY_PUBLIC_URL": "http://127.0.0.1:8081",
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
                "registration-gateway",
                environment: environment(kafka: cluster.bootstrapServers, database: scratch.database))
            // Generous: on a loaded CI machine start-up plus the orderly stop of its services takes a while.
            let status = await process.waitForExit(timeout: .seconds(60))
            #expect(status == 1, "\(process.capturedOutput().suffix(3_000))")
            #expect(process.capturedOutput().contains("run `latchkey migrate`"))
        }
    }

    /// The sidecar runs beside every API, so it holds no database credentials: without any `DATABASE_*`
    /// variable it starts, and its readiness depends on Kafka and its revocation backlog only.
    @Test func theSidecarRunsWithoutADatabase() async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        defer { cluster.shutdown() }
        for event in [LatchkeyEventType.clientRevoked, .tokenRevoked, .userDisabled] {
            try cluster.createTopic(event.topic(), partitions: 1)
        }
        let env = try environment(kafka: cluster.bootstrapServers).filter { !$0.key.hasPrefix("DATABASE_") }
        let process = try ServiceProcess("dpop-verifier", environment: env)
        let healthy = await process.waitUntilHealthy(timeout: .seconds(60))
        #expect(healthy, "\(process.capturedOutput().suffix(2_000))")
        let management = ManagementClient(port: process.managementPort)
        try await eventually("the sidecar is ready", within: .seconds(60)) {
            try await management.execute(uri: "/readyz").status == .ok
        }
        #expect(
            try await management.execute(uri: "/readyz").text == #"{"kafka":"ok","revocations":"ok","status":"ready"}"#)
        #expect(await process.stop() == 0, "\(process.capturedOutput().suffix(2_000))")
    }

    /// `LOG_FORMAT=json`: everything the process writes is one JSON object per line, and neither its
    /// configured secrets nor a client secret it was sent appear.
    @Test func jsonLogsAreOneObjectPerLineWithoutSecrets() async throws {
        try await TestDatabase.prepare()
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        defer { cluster.shutdown() }
        var env = try environment(kafka: cluster.bootstrapServers)
        env["LOG_FORMAT"] = "json"
        let process = try ServiceProcess("token-service", environment: env)
        #expect(await process.waitUntilHealthy(timeout: .seconds(60)), "\(process.capturedOutput().suffix(2_000))")
        let sentinel = "lk-sentinel-" + UUID().uuidString
        let body = "grant_type=client_credentials&client_id=c&client_secret=\(sentinel)"
        let client = try await RawClient.connect(port: process.port)
        defer { client.close() }
        #expect(
            await client.send(
                "POST /t/no-such-tenant/token HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    + "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
            ))
        #expect(await client.waitFor(.seconds(10)) { $0.status != nil })
        #expect(client.status == 404)
        #expect(await process.stop(signal: SIGTERM) == 0)

        let lines = process.capturedOutput().split(separator: "\n").map(String.init)
        #expect(lines.count >= 3)
        var messages: [String] = []
        for line in lines {
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object != nil, "not a JSON object: \(line)")
            guard let object else { continue }
            for field in ["timestamp", "level", "service", "logger", "message"] {
                #expect(object[field] is String, "\(field) missing: \(line)")
            }
            #expect(object["service"] as? String == "token-service")
            messages.append(object["message"] as? String ?? "")
        }
        #expect(messages.contains("request"))
        let output = process.capturedOutput()
        let databasePassword = try TestEnvironment.appDatabase().password
        let secrets = [env["SECRET_HASH_KEY"], env["KEY_ENCRYPTION_KEY"], databasePassword]
        for secret in secrets.compactMap({ $0 }).filter({ !$0.isEmpty }) + [sentinel] {
            #expect(!output.contains(secret), "a secret appears in the logs")
        }
    }

    @Test func missingConfigurationIsNamed() async throws {
        let process = try ServiceProcess("token-service", environment: ["DATABASE_URL": "", "KAFKA_BROKERS": ""])
        let status = await process.waitForExit(timeout: .seconds(10))
        #expect(status == 1)
        #expect(process.capturedOutput().contains("DATABASE_URL is required"))
    }
    /// A service that cannot start because its port is taken exits with a failure within its grace period,
    /// instead of living on without serving (under an orchestrator, a pod that neither serves nor restarts).
    @Test func aServiceWhosePortIsTakenExitsWithAFailure() async throws {
        try await TestDatabase.prepare()
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        defer { cluster.shutdown() }
        var env = try environment(kafka: cluster.bootstrapServers)
        env["SHUTDOWN_GRACE_SECONDS"] = "3"
        for name in Self.services {
            let taken = try listenOnLoopback()
            defer { close(taken.fd) }
            let process = try ServiceProcess(name, environment: env, port: taken.port)
            // The grace period plus start-up on a loaded machine; a process that hangs never gets there.
            let status = await process.waitForExit(timeout: .seconds(45))
            #expect(
                status != nil && status != 0,
                "\(name) on a taken port: exit status \(status.map(String.init) ?? "none (still running)"): \(process.capturedOutput().suffix(2_000))"
            )
        }
    }

    /// SIGTERM at the moment the Kafka broker dies, 20 times per service (`LATCHKEY_SHUTDOWN_ROUNDS`): every
    /// service ends within its grace period, whatever the broker's clients are blocked on.
    @Test func sigtermWhileTheBrokerDiesEndsEveryServiceWithinItsGracePeriod() async throws {
        try await TestDatabase.prepare()
        let rounds = ProcessInfo.processInfo.environment["LATCHKEY_SHUTDOWN_ROUNDS"].flatMap { Int($0) } ?? 20
        try await stopsWithinGrace(Self.services, rounds: rounds, fault: "the broker dying") { cluster in
            (try environment(kafka: cluster.bootstrapServers), { cluster.shutdown() }, nil)
        }
    }

    /// SIGTERM at the moment PostgreSQL stops answering (its connections stay open, nothing comes back: the
    /// hardest case, no error and no close), 5 times per service that uses it: each ends within its grace
    /// period too.
    @Test func sigtermWhilePostgreSQLHangsEndsEveryServiceWithinItsGracePeriod() async throws {
        try await TestDatabase.prepare()
        let databasePort = try TestEnvironment.appDatabase().port
        let services = Self.services.filter { $0 != "dpop-verifier" }
        try await stopsWithinGrace(services, rounds: 5, fault: "PostgreSQL hanging") { cluster in
            let relay = try FreezableTCPRelay(forwardingTo: databasePort)
            let env = try environment(kafka: cluster.bootstrapServers, databasePort: relay.port)
            return (env, { relay.freeze() }, { relay.close() })
        }
    }

    /// Runs `rounds` rounds per service, the services at once: a healthy process on a fresh embedded cluster
    /// and the environment `setup` makes, then SIGTERM and, at the same moment, `setup`'s fault; the process
    /// must be gone within the grace period plus the slack. `setup`'s optional cleanup runs after each round.
    func stopsWithinGrace(
        _ services: [String], rounds: Int, fault: String,
        setup:
            @escaping @Sendable (EmbeddedKafkaCluster) throws -> (
                [String: String], @Sendable () -> Void, (@Sendable () -> Void)?
            )
    ) async throws {
        let (grace, limit) = (Self.grace, Self.grace + Self.exitSlack)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for name in services {
                group.addTask {
                    for round in 1...rounds {
                        let cluster = try EmbeddedKafkaCluster(brokers: 1)
                        defer { cluster.shutdown() }
                        let (settings, inject, cleanup) = try setup(cluster)
                        defer { cleanup?() }
                        var env = settings
                        env["SHUTDOWN_GRACE_SECONDS"] = String(grace)
                        let process = try ServiceProcess(name, environment: env)
                        let healthy = await process.waitUntilHealthy(timeout: .seconds(60))
                        #expect(
                            healthy, "\(name), round \(round): not healthy: \(process.capturedOutput().suffix(2_000))")
                        async let stopped = process.stop(signal: SIGTERM, timeout: .seconds(limit))
                        inject()
                        let status = await stopped
                        #expect(
                            status != nil,
                            "\(name), round \(round): still running \(limit) s after SIGTERM with \(fault) (grace \(grace) s): \(process.capturedOutput().suffix(2_000))"
                        )
                        guard healthy, status != nil else { return }
                    }
                }
            }
            try await group.waitForAll()
        }
    }
}
