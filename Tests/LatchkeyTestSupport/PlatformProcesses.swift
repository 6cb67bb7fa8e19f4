import AsyncHTTPClient
import Foundation
import LatchkeyCore
import LatchkeyPersistence
import NIOCore
import PostgresNIO

/// Where the services of a `PlatformProcesses` listen, and the tenant the tests use.
public struct PlatformURLs: Sendable {
    public let gateway: String
    public let tokenService: String
    public let sidecar: String
    public let audit: String
    public let tenant: String
    public var issuer: String { "\(tokenService)/t/\(tenant)" }
}

/// The platform did not come up.
public struct PlatformStartFailure: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// The whole platform as separate processes: the embedded Kafka cluster, the four services and the demo
/// API behind `dpop-verifier`, on a migrated scratch database of the test PostgreSQL. With
/// `LATCHKEY_TEST_KAFKA_BROKERS` set (scripts/real-broker.sh) the services use those brokers instead of an
/// embedded cluster; their topics must exist there, and one platform at a time may use them (the topics and the
/// audit consumer's group are shared).
public final class PlatformProcesses: @unchecked Sendable {
    public let urls: PlatformURLs
    public let environment: [String: String]
    public let ports: [String: Int]
    public private(set) var processes: [String: ServiceProcess] = [:]
    /// The embedded cluster's process; nil on external brokers.
    let kafka: ServiceProcess?
    public static let bootstrapKey = "e2e-bootstrap-" + UUID().uuidString
    /// Brokers of a Kafka cluster outside the test (a real broker), set by the CI job that runs against one.
    public static let externalBrokers = ProcessInfo.processInfo.environment["LATCHKEY_TEST_KAFKA_BROKERS"]
        .flatMap { $0.isEmpty ? nil : $0 }

    /// Starts the cluster and every service; returns once each answers `/healthz`. `settings` are added to
    /// (or replace) the environment every service gets.
    public init(database: DatabaseConfiguration, settings: [String: String] = [:]) async throws {
        let brokers: String
        if let external = Self.externalBrokers {
            kafka = nil
            brokers = external
        } else {
            let (process, servers) = try await Self.startEmbeddedCluster()
            kafka = process
            brokers = servers
        }

        var ports: [String: Int] = [:]
        for name in ["registration-gateway", "token-service", "dpop-verifier", "audit-consumer", "demo-api"] {
            ports[name] = ServiceProcess.freePort()
        }
        self.ports = ports
        func url(_ name: String) -> String { "http://127.0.0.1:\(ports[name]!)" }
        let urls = PlatformURLs(
            gateway: url("registration-gateway"), tokenService: url("token-service"), sidecar: url("dpop-verifier"),
            audit: url("audit-consumer"), tenant: "demo")
        self.urls = urls
        var app = try TestEnvironment.appDatabase()
        var system = try TestEnvironment.systemDatabase()
        app.database = database.database
        system.database = database.database
        let key = KeyMaterial.generateConfigurationValue
        var environment = [
            "DATABASE_URL": app.url, "DATABASE_SYSTEM_URL": system.url,
            "KAFKA_BROKERS": brokers,
            "LOG_LEVEL": "warning",
            "TOKEN_SERVICE_PUBLIC_URL": urls.tokenService, "REGISTRATION_GATEWAY_PUBLIC_URL": urls.gateway,
            "KEY_ENCRYPTION_KEY": key(), "SECRET_HASH_KEY": key(), "DPOP_NONCE_SECRET": key(),
            "ADMIN_BOOTSTRAP_KEY": Self.bootstrapKey, "PLATFORM_TENANT": "demo",
            "DPOP_UPSTREAM_URL": url("demo-api"), "DPOP_EXTERNAL_ORIGINS": urls.sidecar, "DPOP_ISSUERS": urls.issuer,
            "DPOP_AUDIENCES": urls.issuer, "DPOP_NONCE_MODE": "required", "DPOP_PUBLIC_PATHS": "/health",
            "DEMO_API_PORT": String(ports["demo-api"]!),
        ]
        environment.merge(settings) { _, new in new }
        self.environment = environment
        for name in ["demo-api", "registration-gateway", "token-service", "dpop-verifier", "audit-consumer"] {
            try await start(name)
        }
    }

    /// (Re)starts one service and waits for its health endpoint.
    public func start(_ name: String) async throws {
        let process = try ServiceProcess(name, environment: environment, port: ports[name])
        processes[name] = process
        if name == "demo-api" {
            try await Task.sleep(for: .milliseconds(500))
            return
        }
        guard await process.waitUntilHealthy(timeout: .seconds(60)) else {
            throw PlatformStartFailure("\(name) did not become healthy: \(process.capturedOutput().suffix(3_000))")
        }
    }

    /// Kills a service without letting it shut down cleanly (a crash).
    public func crash(_ name: String) async {
        _ = await processes[name]?.stop(signal: SIGKILL, timeout: .seconds(10))
    }

    /// Stops everything gracefully; true when every service exited with status 0.
    public func stop() async -> [String: Int32?] {
        var statuses: [String: Int32?] = [:]
        for (name, process) in processes { statuses[name] = await process.stop(signal: SIGTERM, timeout: .seconds(30)) }
        _ = await kafka?.stop(signal: SIGTERM, timeout: .seconds(10))
        return statuses
    }

    public func output(_ name: String) -> String { processes[name]?.capturedOutput() ?? "" }

    /// Each running service's `/metrics` exposition, scraped from its management port.
    public func metricsTexts() async throws -> [String: String] {
        var texts: [String: String] = [:]
        for (name, process) in processes where name != "demo-api" {
            let response = try await HTTPClient.shared.execute(
                HTTPClientRequest(url: "\(process.managementURL)/metrics"), timeout: .seconds(10))
            texts[name] = String(buffer: try await response.body.collect(upTo: 4 << 20))
        }
        return texts
    }

    /// The librdkafka version each running service loaded, from `latchkey_kafka_library_info` on its `/metrics`.
    public func kafkaLibraryVersions() async throws -> [String: String] {
        var versions: [String: String] = [:]
        for (name, body) in try await metricsTexts() {
            var version = "none"
            if let line = body.split(separator: "\n").first(where: { $0.hasPrefix("latchkey_kafka_library_info{") }),
                let label = line.firstRange(of: #"version=""#)
            {
                version = String(line[label.upperBound...].prefix { $0 != "\"" })
            }
            versions[name] = version
        }
        return versions
    }

    /// `latchkey kafka-cluster` with one broker; answers once it wrote its bootstrap servers.
    private static func startEmbeddedCluster() async throws -> (ServiceProcess, String) {
        let bootstrapFile = FileManager.default.temporaryDirectory.appendingPathComponent(
            "e2e-kafka-\(UUID().uuidString)"
        ).path
        let process = try ServiceProcess(
            "latchkey", arguments: ["kafka-cluster", "--brokers", "1", "--bootstrap-file", bootstrapFile],
            environment: [:])
        for _ in 0..<200 {
            if let text = try? String(contentsOfFile: bootstrapFile, encoding: .utf8), !text.isEmpty {
                return (process, text)
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw PlatformStartFailure("the Kafka cluster process did not start: \(process.capturedOutput())")
    }
}
