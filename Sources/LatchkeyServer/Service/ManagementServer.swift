import Hummingbird
import HummingbirdCore
import Logging
import Synchronization

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
    /// `listener`, when given, holds `/healthz` and `/readyz` at 503 until the service's own port listens.
    public func makeManagementRouter(
        readiness: [ReadinessCheck], listener: ListenerState? = nil
    ) -> Router<LatchkeyRequestContext> {
        let router = Router(context: LatchkeyRequestContext.self)
        router.add(middleware: RequestIDMiddleware())
        router.add(middleware: ErrorMiddleware())
        HealthRoutes<LatchkeyRequestContext>(
            checks: readinessChecks(readiness), isListening: { listener?.isListening ?? true }
        ).register(on: router)
        registerOpenAPIDocument(on: router)
        return router
    }
}

/// Whether a service's own listener accepts connections yet. The management listener is one of the
/// application's services and may answer before the application has checked the schema and bound its
/// port.
public final class ListenerState: Sendable {
    private let listening = Atomic(false)

    public init() {}

    public var isListening: Bool { listening.load(ordering: .acquiring) }

    /// Called from the application's `onServerRunning`.
    public func markListening() { listening.store(true, ordering: .releasing) }
}
