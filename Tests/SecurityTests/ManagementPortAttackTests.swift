import Foundation
import Hummingbird
import LatchkeyTestSupport
import Testing

@testable import LatchkeyCLI

/// Health, readiness, metrics and the OpenAPI documents are served on each service's management port
/// only: whoever reaches a public port (through an ingress, or the API behind the sidecar) reads no
/// metrics, and the API's own paths of those names stay the API's.
@Suite struct ManagementPortAttackTests {
    @Test func publicPortsServeNoMetricsAndTheSidecarForwardsThoseNamesToTheAPI() async throws {
        let upstream = SidecarSpoofingAttackTests.RecordingUpstream()
        try await withLoopbackServer(upstream.router()) { port in
            try await SeededPlatform.run(settings: [
                "DPOP_UPSTREAM_URL": "http://127.0.0.1:\(port)", "DPOP_PUBLIC_PATHS": "/health,/metrics",
            ]) { platform in
                let processes = platform.processes
                let sidecar = platform.endpoints.sidecar
                // The API's own public `/metrics` is the API's: forwarded, and no sidecar metrics leak.
                let metrics = try await platform.http.get("\(sidecar)/metrics")
                #expect(
                    metrics.status == 200 && metrics.body == "upstream", "\(metrics.status) \(metrics.body.prefix(200))"
                )
                #expect(!metrics.body.contains("latchkey_"))
                // The other names are API paths that need a token like any other.
                for path in ["/readyz", "/healthz", "/openapi.json"] {
                    let response = try await platform.http.get(sidecar + path)
                    #expect(
                        response.status == 401,
                        "\(path) on the sidecar's proxy port: \(response.status) \(response.body.prefix(120))")
                }
                #expect(upstream.requests.map(\.path) == ["/metrics"], "\(upstream.requests.map(\.path))")

                for name in ["registration-gateway", "token-service", "audit-consumer"] {
                    let base = "http://127.0.0.1:\(processes.ports[name] ?? 0)"
                    for path in ["/metrics", "/healthz", "/readyz"] {
                        let response = try await platform.http.get(base + path)
                        #expect(response.status == 404, "\(name) \(path) on the service port: \(response.status)")
                    }
                }
                for name in ["registration-gateway", "token-service", "dpop-verifier", "audit-consumer"] {
                    let management = try #require(processes.processes[name]).managementURL
                    let scraped = try await platform.http.get("\(management)/metrics")
                    #expect(scraped.status == 200 && scraped.body.contains("latchkey_"), "\(name) management /metrics")
                    // Readiness can dip while a loaded machine answers Kafka's metadata request late: wait for it.
                    var ready = try await platform.http.get("\(management)/readyz")
                    _ = try await eventually(within: .seconds(60)) {
                        if ready.status != 200 { ready = try await platform.http.get("\(management)/readyz") }
                        return ready.status == 200
                    }
                    #expect(ready.status == 200, "\(name) management /readyz: \(ready.status) \(ready.body)")
                    #expect(
                        try await platform.http.get("\(management)/openapi.json").status == 200,
                        "\(name) management /openapi.json")
                }
            }
        }
    }
}
