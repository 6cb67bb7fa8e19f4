import Hummingbird
import HummingbirdCore
import Logging

extension ServiceRuntime {
    /// The management listener: `/healthz`, `/readyz`, `/metrics` and `/openapi.json` on
    /// `MANAGEMENT_HOST:MANAGEMENT_PORT`. Probes and Prometheus reach the service there, and the public
    /// port (behind an ingress, or the sidecar's proxy port in front of an API) never answers those paths.
    /// It runs as one more service of the application, so it starts and stops with it.
    func makeManagementApplication(router: Router<LatchkeyRequestContext>) -> some ApplicationProtocol {
        Application(
            router: router, server: .latchkey(settings.http),
            configuration: .init(
                address: .hostname(settings.managementHost, port: settings.managementPort),
                serverName: settings.serviceName, availableConnectionsDelegate: settings.http.connectionLimit),
            logger: logger)
    }

    /// The management routes, without an access log: probes every few seconds would drown the requests
    /// that matter.
    public func makeManagementRouter(readiness: [ReadinessCheck]) -> Router<LatchkeyRequestContext> {
        let router = Router(context: LatchkeyRequestContext.self)
        router.add(middleware: RequestIDMiddleware())
        router.add(middleware: ErrorMiddleware())
        HealthRoutes<LatchkeyRequestContext>(checks: readinessChecks(readiness)).register(on: router)
        registerOpenAPIDocument(on: router)
        return router
    }
}
