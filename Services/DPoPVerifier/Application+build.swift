import Hummingbird
import HummingbirdCore
import LatchkeyCore
import LatchkeyServer
import Logging

extension ServiceDescriptor {
    /// `dpop-verifier`, port 8083 by default. It keeps its state in memory and learns of revocations from
    /// Kafka, so it has no database: no credentials to leak from the pod beside every API.
    static let dpopVerifier = ServiceDescriptor(
        name: "dpop-verifier", defaultPort: 8083, needsDatabase: false, needsSystemDatabase: false, resources: .module)
}

/// Builds the dpop-verifier application; `Main` and the tests call this.
func buildApplication(
    settings: ServiceSettings, sidecar sidecarSettings: SidecarSettings, logger: Logger,
    overrides: SidecarOverrides = SidecarOverrides()
) throws -> some ApplicationProtocol {
    let runtime = try ServiceRuntime(settings: settings, logger: logger)
    let httpClient = HTTPClientService(configuration: IssuerKeyFetcher.clientConfiguration)
    let revocations = RevokedClients(
        retention: RevocationRetention(
            maxTokenLifetimeSeconds: sidecarSettings.maxTokenLifetimeSeconds,
            clockSkewSeconds: sidecarSettings.tokenClockSkewSeconds))
    let metrics = SidecarMetrics.shared
    let router = makeSidecarRouter(runtime: runtime, mode: sidecarSettings.mode)
    let sidecar: Sidecar
    let server: HTTPServerBuilder
    do {
        sidecar = try Sidecar(
            settings: sidecarSettings, httpClient: httpClient.client, revocations: revocations, metrics: metrics,
            overrides: overrides, logger: logger)
        sidecar.addRoutes(to: router)
        server = try sidecar.server(http: settings.http)
    } catch {
        httpClient.shutdownWithoutRunning()
        throw error
    }
    let listener = RevocationListener(
        kafka: runtime.kafka, admin: runtime.kafkaAdmin,
        topic: LatchkeyEventType.clientRevoked.topic(prefix: settings.topicPrefix),
        tokenTopic: LatchkeyEventType.tokenRevoked.topic(prefix: settings.topicPrefix),
        userTopic: LatchkeyEventType.userDisabled.topic(prefix: settings.topicPrefix),
        revocations: revocations, metrics: metrics, logger: logger)
    let gauges = CacheGaugeReporter(
        replayCache: sidecar.replayCache, tokenCache: sidecar.tokenCache, revocations: revocations,
        metrics: metrics, interval: overrides.gaugeInterval, logger: logger)
    return runtime.makeApplication(
        router: router, server: server,
        readiness: [ReadinessCheck("revocations") { revocations.isLoaded }],
        services: [httpClient, listener, gauges])
}

/// The services' router without the per-request HTTP metrics: the sidecar counts its requests itself
/// (`latchkey_dpop_requests_total`, `latchkey_dpop_verification_duration_seconds`). Nothing of the sidecar's own
/// is served here but check mode's `/check`: health, metrics and the OpenAPI document are on the management
/// port, so every path of the API behind the proxy stays reachable. Proxy mode streams bodies of any size to
/// the upstream, so the 64 KiB body limit applies in check mode only.
func makeSidecarRouter(runtime: ServiceRuntime, mode: SidecarSettings.Mode) -> Router<LatchkeyRequestContext> {
    runtime.makeRouter(limitBodies: mode == .check, requestMetrics: false, servesOpenAPIDocument: false)
}
