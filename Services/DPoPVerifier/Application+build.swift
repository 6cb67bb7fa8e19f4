import AsyncHTTPClient
import Configuration
import Hummingbird
import Logging
import NIOPosix
import Shared

/// Builds the dpop-verifier application from configuration; tests call this too.
func buildApplication(reader: ConfigReader, logger: Logger) async throws -> some ApplicationProtocol {
    let settings = try ServiceSettings(
        reader: reader, serviceName: "dpop-verifier", defaultPort: 8083, needsSystemDatabase: false)
    return try buildApplication(settings: settings, sidecar: SidecarSettings(reader: reader), logger: logger)
}

func buildApplication(settings: ServiceSettings, sidecar sidecarSettings: SidecarSettings, logger: Logger,
                      overrides: SidecarOverrides = SidecarOverrides()) throws -> some ApplicationProtocol {
    let runtime = try ServiceRuntime(settings: settings, logger: logger)
    let httpClient = HTTPClient(eventLoopGroup: .singletonMultiThreadedEventLoopGroup,
                                configuration: UpstreamProxy.clientConfiguration(for: sidecarSettings.upstream))
    let revocations = RevokedClients()
    let metrics = SidecarMetrics.shared
    let sidecar = try Sidecar(settings: sidecarSettings, httpClient: httpClient, revocations: revocations, metrics: metrics,
                              overrides: overrides, logger: logger)
    // Proxy mode streams bodies of any size to the upstream, so the 64 KiB limit is off there.
    let router = runtime.makeRouter(
        readiness: [ReadinessCheck("revocations") { revocations.isLoaded }], limitBodies: sidecarSettings.mode == .check)
    try sidecar.addRoutes(to: router)
    let listener = RevocationListener(
        kafka: runtime.kafka, admin: runtime.kafkaAdmin,
        topic: LatchkeyEventType.clientRevoked.topic(prefix: settings.topicPrefix),
        revocations: revocations, metrics: metrics, logger: logger)
    let gauges = CacheGaugeReporter(replayCache: sidecar.replayCache, tokenCache: sidecar.tokenCache, revocations: revocations,
                                    metrics: metrics, interval: overrides.gaugeInterval)
    return runtime.makeApplication(router: router, services: [HTTPClientService(client: httpClient), listener, gauges])
}
