import AsyncHTTPClient
import Hummingbird
import HummingbirdCore
import LatchkeyCore
import LatchkeyServer
import Logging
import NIOPosix

extension ServiceDescriptor {
    /// `dpop-verifier`, port 8083 by default.
    static let dpopVerifier = ServiceDescriptor(name: "dpop-verifier", defaultPort: 8083, needsSystemDatabase: false, resources: .module)
}

/// Builds the dpop-verifier application; `Main` and the tests call this.
func buildApplication(settings: ServiceSettings, sidecar sidecarSettings: SidecarSettings, logger: Logger,
                      overrides: SidecarOverrides = SidecarOverrides()) throws -> some ApplicationProtocol {
    let runtime = try ServiceRuntime(settings: settings, logger: logger)
    let httpClient = HTTPClient(eventLoopGroup: .singletonMultiThreadedEventLoopGroup, configuration: IssuerKeyFetcher.clientConfiguration)
    let revocations = RevokedClients(retention: RevocationRetention(
        maxTokenLifetimeSeconds: sidecarSettings.maxTokenLifetimeSeconds, clockSkewSeconds: sidecarSettings.tokenClockSkewSeconds))
    let metrics = SidecarMetrics.shared
    let router = makeSidecarRouter(limitBodies: sidecarSettings.mode == .check)
    let sidecar: Sidecar
    let server: HTTPServerBuilder
    do {
        sidecar = try Sidecar(settings: sidecarSettings, httpClient: httpClient, revocations: revocations, metrics: metrics,
                              overrides: overrides, logger: logger)
        sidecar.addRoutes(to: router)
        server = try sidecar.server(http: settings.http)
    } catch {
        // AsyncHTTPClient traps when a client is released without its shutdown.
        try? httpClient.syncShutdown()
        throw error
    }
    let listener = RevocationListener(
        kafka: runtime.kafka, admin: runtime.kafkaAdmin,
        topic: LatchkeyEventType.clientRevoked.topic(prefix: settings.topicPrefix),
        tokenTopic: LatchkeyEventType.tokenRevoked.topic(prefix: settings.topicPrefix),
        userTopic: LatchkeyEventType.userDisabled.topic(prefix: settings.topicPrefix),
        revocations: revocations, metrics: metrics, logger: logger)
    let gauges = CacheGaugeReporter(replayCache: sidecar.replayCache, tokenCache: sidecar.tokenCache, revocations: revocations,
                                    metrics: metrics, interval: overrides.gaugeInterval)
    return runtime.makeApplication(router: router, server: server,
                                   readiness: [ReadinessCheck("revocations") { revocations.isLoaded }],
                                   services: [HTTPClientService(client: httpClient), listener, gauges])
}

/// The standard router of `ServiceRuntime.makeRouter` (request id, access log, JSON errors) without
/// Hummingbird's per-request `MetricsMiddleware`: it wraps every response body in a closure, which turns
/// Hummingbird's single write of head + body + end into three socket writes on the hot path, and the
/// sidecar counts its requests itself (`latchkey_dpop_requests_total`,
/// `latchkey_dpop_verification_duration_seconds`). Nothing of the sidecar's own is served here but check
/// mode's `/check`: health, metrics and the OpenAPI document are on the management port, so every path of
/// the API behind the proxy stays reachable. Proxy mode streams bodies of any size to the upstream, so the
/// 64 KiB body limit applies in check mode only.
func makeSidecarRouter(limitBodies: Bool) -> Router<LatchkeyRequestContext> {
    let router = Router(context: LatchkeyRequestContext.self)
    router.add(middleware: RequestIDMiddleware())
    router.add(middleware: AccessLogMiddleware())
    router.add(middleware: ErrorMiddleware())
    if limitBodies { router.add(middleware: BodyLimitMiddleware()) }
    return router
}
