import Hummingbird
import HummingbirdTesting
import Shared
import Testing

/// The checks every service's application must pass: health, readiness against real dependencies, metrics.
public enum ServiceHealthExpectations {
    /// Builds the service twice: against an embedded Kafka cluster (healthy) and unreachable brokers (not ready).
    public static func verify<App: ApplicationProtocol>(
        _ descriptor: ServiceDescriptor, build: (ServiceSettings) throws -> App
    ) async throws {
        // A migrated database of its own: the service's outbox relay must not claim other suites' rows
        // (with unreachable brokers it would hold them until the producer gives up).
        try await TestDatabase.withScratchDatabase { scratch in
            try await TestDatabase.migrate(scratch)
            let cluster = try EmbeddedKafkaCluster(brokers: 1)
            defer { cluster.shutdown() }
            try await expectHealthy(build(
                TestServiceSettings.make(descriptor, kafkaBrokers: cluster.bootstrapServers, database: scratch.database)))
            try await expectNotReadyWithoutKafka(build(
                TestServiceSettings.make(descriptor, kafkaBrokers: unreachableKafka, database: scratch.database)))
        }
    }

    /// `/healthz`, `/readyz` (all dependencies ok), `/metrics`, and JSON 404s for unknown routes.
    public static func expectHealthy(_ app: some ApplicationProtocol) async throws {
        try await app.test(.router) { client in
            try await client.execute(uri: "/healthz", method: .get) { response in
                #expect(response.status == .ok)
            }
            try await client.execute(uri: "/readyz", method: .get) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body) == #"{"kafka":"ok","postgres":"ok","schema":"ok","status":"ready"}"#)
            }
            try await client.execute(uri: "/metrics", method: .get) { response in
                #expect(response.status == .ok)
            }
            try await client.execute(uri: "/no-such-route", method: .get) { response in
                #expect(response.status == .notFound)
                #expect(response.headers[.contentType] == "application/json")
            }
        }
    }

    /// `/readyz` is 503 and names Kafka when the brokers cannot be reached.
    public static func expectNotReadyWithoutKafka(_ app: some ApplicationProtocol) async throws {
        try await app.test(.router) { client in
            try await client.execute(uri: "/readyz", method: .get) { response in
                #expect(response.status == .serviceUnavailable)
                #expect(String(buffer: response.body).contains(#""kafka":"failing""#))
            }
        }
    }

    /// Brokers where nothing listens (loopback port 9), for readiness failure tests.
    public static let unreachableKafka = "127.0.0.1:9"
}
