import AsyncHTTPClient
import LatchkeyTestSupport
import NIOCore
import NIOHTTP1
import Shared
import Testing
@testable import DPoPVerifier

@Suite struct DPoPVerifierHealthTests {
    static func checkModeSettings() throws -> SidecarSettings {
        SidecarSettings(mode: .check, upstream: nil, origins: try ExternalOrigins(["https://api.example.com"]),
                        issuers: ["https://as.example.com/t/acme"], audiences: ["https://api.example.com"])
    }

    @Test func servesHealthReadinessAndMetricsAgainstRealDependencies() async throws {
        try await withLiveSidecar(Self.checkModeSettings()) { sidecar in
            #expect(try await sidecar.send(.GET, "/healthz").status == 200)
            let ready = try await sidecar.send(.GET, "/readyz")
            #expect(ready.status == 200)
            #expect(ready.text == #"{"kafka":"ok","postgres":"ok","revocations":"ok","schema":"ok","status":"ready"}"#)
            #expect(try await sidecar.send(.GET, "/metrics").status == 200)
            let unknown = try await sidecar.send(.GET, "/no-such-route")
            #expect(unknown.status == 404)
            #expect(unknown.header("Content-Type") == "application/json")
        }
    }

    /// The `unregistered` gauge is process-wide and proxy-mode sidecars of concurrent tests set it too (no
    /// `/check` there), so that direction is compared on the check-mode router itself.
    @Test func servesItsOpenAPIDocumentMatchingItsRoutes() async throws {
        let settings = try await TestServiceSettings.make(.dpopVerifier, kafkaBrokers: ServiceHealthExpectations.unreachableKafka)
        try await ServiceHealthExpectations.expectOpenAPIDocument(
            buildApplication(settings: settings, sidecar: Self.checkModeSettings(), logger: TestServiceSettings.logger),
            .dpopVerifier, everyOperationServed: false)

        let runtime = try ServiceRuntime(settings: settings, logger: TestServiceSettings.logger)
        let router = makeSidecarRouter(runtime: runtime, readiness: [], limitBodies: true)
        let sidecar = try Sidecar(settings: Self.checkModeSettings(), httpClient: .shared, revocations: RevokedClients(),
                                  logger: TestServiceSettings.logger)
        sidecar.addRoutes(to: router)
        let comparison = try OpenAPIDocument(service: ServiceDescriptor.dpopVerifier.name).compare(with: router)
        #expect(comparison.undocumented.isEmpty)
        #expect(comparison.unregistered.isEmpty, "check mode serves every documented operation")
    }

    @Test func readinessFailsWhenKafkaIsUnreachable() async throws {
        let settings = try await TestServiceSettings.make(.dpopVerifier, kafkaBrokers: ServiceHealthExpectations.unreachableKafka)
        try await ServiceHealthExpectations.expectNotReadyWithoutKafka(
            buildApplication(settings: settings, sidecar: Self.checkModeSettings(), logger: TestServiceSettings.logger))
    }
}
