import Foundation
import Hummingbird
import HummingbirdTesting
import LatchkeyKafka
import LatchkeyPersistence
import LatchkeyServer
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
            // Settings of their own for each application: each gets a fresh management port, so one
            // application's listener never has to be gone before the next one binds.
            let settings = try await TestServiceSettings.make(
                descriptor, kafkaBrokers: cluster.bootstrapServers, database: scratch.database)
            try await expectHealthy(build(settings), settings)
            let documented = try await TestServiceSettings.make(
                descriptor, kafkaBrokers: cluster.bootstrapServers, database: scratch.database)
            try await expectOpenAPIDocument(build(documented), documented, descriptor)
            let unreachable = try await TestServiceSettings.make(
                descriptor, kafkaBrokers: unreachableKafka, database: scratch.database)
            if descriptor.kafkaOutageDegrades {
                try await expectDegradedWithoutKafka(build(unreachable), unreachable)
            } else {
                try await expectNotReadyWithoutKafka(build(unreachable), unreachable)
            }
        }
    }

    /// `/healthz`, `/readyz` (all dependencies ok), `/metrics` on the management port, none of them on
    /// the service port, and JSON 404s for unknown routes.
    public static func expectHealthy(_ app: some ApplicationProtocol, _ settings: ServiceSettings) async throws {
        let management = ManagementClient(settings)
        try await app.journaledTest(.live) { client in
            for path in ["/healthz", "/readyz", "/metrics"] {
                #expect(
                    try await client.execute(uri: path, method: .get).status == .notFound, "\(path) on the service port"
                )
            }
            try await management.execute(uri: "/healthz") { response in
                #expect(response.status == .ok)
            }
            try await management.execute(uri: "/readyz") { response in
                #expect(response.status == .ok)
                #expect(
                    String(buffer: response.body) == #"{"kafka":"ok","postgres":"ok","schema":"ok","status":"ready"}"#)
            }
            try await management.execute(uri: "/metrics") { response in
                #expect(response.status == .ok)
            }
            try await client.execute(uri: "/no-such-route", method: .get) { response in
                #expect(response.status == .notFound)
                #expect(response.headers[.contentType] == "application/json")
            }
        }
    }

    /// `GET /openapi.json` serves the service's own OpenAPI 3.1 document, and the router's routes match it
    /// (the runtime's comparison, read from `/metrics`). `everyOperationServed` is false only for a sidecar
    /// mode that serves a subset (proxy mode has no `/check`); routes missing from the document always fail.
    public static func expectOpenAPIDocument(
        _ app: some ApplicationProtocol, _ settings: ServiceSettings, _ descriptor: ServiceDescriptor,
        everyOperationServed: Bool = true
    ) async throws {
        let management = ManagementClient(settings)
        try await app.journaledTest(.router) { _ in
            try await management.execute(uri: "/openapi.json") { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "application/json")
                let document =
                    try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any]
                #expect(document?["openapi"] as? String == "3.1.0")
                #expect(
                    ((document?["info"] as? [String: Any])?["title"] as? String)?.hasSuffix(descriptor.name) == true)
                #expect(((document?["paths"] as? [String: Any])?.count ?? 0) > 4)
            }
            let metrics = try await management.execute(uri: "/metrics").text
            #expect(routeGauge(metrics, service: descriptor.name, state: "undocumented") == 0)
            if everyOperationServed {
                #expect(routeGauge(metrics, service: descriptor.name, state: "unregistered") == 0)
            }
        }
    }

    /// The value of `latchkey_openapi_routes{service,state}` in a Prometheus exposition, if present.
    static func routeGauge(_ metrics: String, service: String, state: String) -> Double? {
        metrics.split(separator: "\n").lazy
            .filter {
                $0.hasPrefix("latchkey_openapi_routes{") && $0.contains(#"service="\#(service)""#)
                    && $0.contains(#"state="\#(state)""#)
            }
            .compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }
            .first
    }

    /// `/readyz` is 503 and names Kafka when the brokers cannot be reached.
    public static func expectNotReadyWithoutKafka(_ app: some ApplicationProtocol, _ settings: ServiceSettings)
        async throws
    {
        let management = ManagementClient(settings)
        try await app.journaledTest(.live) { _ in
            try await management.execute(uri: "/readyz") { response in
                #expect(response.status == .serviceUnavailable)
                #expect(String(buffer: response.body).contains(#""kafka":"failing""#))
            }
        }
    }

    /// `/readyz` stays 200 and reports Kafka degraded when the brokers cannot be reached: the outbox holds
    /// the events meanwhile.
    public static func expectDegradedWithoutKafka(_ app: some ApplicationProtocol, _ settings: ServiceSettings)
        async throws
    {
        let management = ManagementClient(settings)
        try await app.journaledTest(.live) { _ in
            try await management.execute(uri: "/readyz") { response in
                #expect(response.status == .ok)
                #expect(
                    String(buffer: response.body)
                        == #"{"kafka":"degraded","postgres":"ok","schema":"ok","status":"degraded"}"#)
            }
        }
    }

    /// Brokers where nothing listens (loopback port 9), for readiness failure tests.
    public static let unreachableKafka = "127.0.0.1:9"
}
