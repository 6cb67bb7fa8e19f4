import AsyncHTTPClient
import LatchkeyServer
import LatchkeyTestSupport
import NIOCore
import NIOHTTP1
import Testing

@testable import DPoPVerifier

@Suite struct DPoPVerifierHealthTests {
    static func checkModeSettings() throws -> SidecarSettings {
        SidecarSettings(
            mode: .check, upstream: nil, origins: try ExternalOrigins(["https://api.example.com"]),
            issuers: ["https://as.example.com/t/acme"], audiences: ["https://api.example.com"])
    }

    @Test func servesHealthReadinessAndMetricsAgainstRealDependencies() async throws {
        try await withLiveSidecar(Self.checkModeSettings()) { sidecar in
            #expect(try await sidecar.management("/healthz").status == 200)
            let ready = try await sidecar.management("/readyz")
            #expect(ready.status == 200)
            // No database: the sidecar's readiness is Kafka and its revocation backlog only.
            #expect(ready.text == #"{"kafka":"ok","revocations":"ok","status":"ready"}"#)
            #expect(try await sidecar.management("/metrics").status == 200)
            for path in ["/healthz", "/readyz", "/metrics", "/openapi.json"] {
                #expect(try await sidecar.send(.GET, path).status == 404, "\(path) on the service port")
            }
            let unknown = try await sidecar.send(.GET, "/no-such-route")
            #expect(unknown.status == 404)
            #expect(unknown.header("Content-Type") == "application/json")
        }
    }

    /// The `unregistered` gauge is process-wide and proxy-mode sidecars of concurrent tests set it too (no
    /// `/check` there), so that direction is compared on the check-mode router itself.
    @Test func servesItsOpenAPIDocumentMatchingItsRoutes() async throws {
        let settings = try await TestServiceSettings.make(
            .dpopVerifier, kafkaBrokers: ServiceHealthExpectations.unreachableKafka)
        try await ServiceHealthExpectations.expectOpenAPIDocument(
            buildApplication(settings: settings, sidecar: Self.checkModeSettings(), logger: TestServiceSettings.logger),
            settings, .dpopVerifier, everyOperationServed: false)

        let runtime = try ServiceRuntime(settings: settings, logger: TestServiceSettings.logger)
        let router = makeSidecarRouter(runtime: runtime, mode: .check)
        let sidecar = try Sidecar(
            settings: Self.checkModeSettings(), httpClient: .shared, revocations: RevokedClients(),
            logger: TestServiceSettings.logger)
        sidecar.addRoutes(to: router)
        let comparison = try OpenAPIDocument(
            service: ServiceDescriptor.dpopVerifier.name, bundle: ServiceDescriptor.dpopVerifier.resources
        )
        .compare(with: [router, runtime.makeManagementRouter(readiness: [])])
        #expect(comparison.undocumented.isEmpty)
        #expect(comparison.unregistered.isEmpty, "check mode serves every documented operation")
    }

    @Test func readinessFailsWhenKafkaIsUnreachable() async throws {
        let settings = try await TestServiceSettings.make(
            .dpopVerifier, kafkaBrokers: ServiceHealthExpectations.unreachableKafka)
        try await ServiceHealthExpectations.expectNotReadyWithoutKafka(
            buildApplication(settings: settings, sidecar: Self.checkModeSettings(), logger: TestServiceSettings.logger),
            settings)
    }
}
