import Foundation
import Hummingbird
import HummingbirdCore
import LatchkeyCore
import LatchkeyKafka
import LatchkeyPersistence
import Logging
import Metrics
import PostgresNIO
import ServiceLifecycle

/// What every service process holds: its pools, its Kafka settings and the standard HTTP pieces.
public struct ServiceRuntime: Sendable {
    public let settings: ServiceSettings
    public let logger: Logger
    /// The pool on `DATABASE_URL` and the schema check; nil for a service without a database.
    public let primary: PrimaryDatabase?
    /// Cross-tenant pool (`latchkey_system`), present when the service runs an outbox relay or audit work.
    public let systemPostgres: PostgresClient?
    public let systemDatabase: Database?
    public let kafka: KafkaConfiguration
    /// One admin client for readiness probes and topic checks, created once.
    public let kafkaAdmin: KafkaAdmin

    public init(settings: ServiceSettings, logger: Logger) throws {
        self.settings = settings
        self.logger = logger
        if let configuration = settings.database {
            let pools = EventLoopPools(configuration: configuration, logger: logger)
            self.primary = PrimaryDatabase(
                client: pools.clients[0], database: Database(pools: pools, logger: logger),
                migrator: try Migrator(logger: logger))
        } else {
            self.primary = nil
        }
        if let system = settings.systemDatabase {
            let client = system.makeClient(logger: logger)
            self.systemPostgres = client
            self.systemDatabase = Database(client: client, logger: logger)
        } else {
            self.systemPostgres = nil
            self.systemDatabase = nil
        }
        var kafka = KafkaConfiguration(bootstrapServers: settings.kafkaBrokers, clientID: settings.serviceName)
        kafka.security = settings.kafkaSecurity
        self.kafka = kafka
        self.kafkaAdmin = try KafkaAdmin(configuration: kafka, logger: logger)
        Self.reportKafkaLibrary(service: settings.serviceName, security: settings.kafkaSecurity, logger: logger)
    }

    /// The librdkafka actually loaded (the image's build, or one `LD_LIBRARY_PATH` chose), so that an operator and
    /// the real-broker CI job see which client version talks to the brokers: logged once and kept as the gauge
    /// `latchkey_kafka_library_info{service,version} 1`. The connection's security is logged by its description,
    /// which leaves the passwords out.
    static func reportKafkaLibrary(service: String, security: KafkaSecurity, logger: Logger) {
        let version = KafkaLibrary.version
        logger.info(
            "Kafka client library",
            metadata: ["service": "\(service)", "librdkafka": "\(version)", "kafka_security": "\(security)"])
        Gauge(label: "latchkey_kafka_library_info", dimensions: [("service", service), ("version", version)]).record(1)
    }

    /// A service's own database: its pool, its queries and the check of its schema.
    public struct PrimaryDatabase: Sendable {
        /// The first of the database's pools (schema checks, `LISTEN`).
        public let client: PostgresClient
        public let database: Database
        public let migrator: Migrator
    }

    /// The pool of a service with a database; a service declared without one that reaches for it is a
    /// programming error, caught by its first start.
    public var postgres: PostgresClient { requirePrimary().client }
    public var database: Database { requirePrimary().database }
    public var migrator: Migrator { requirePrimary().migrator }

    private func requirePrimary() -> PrimaryDatabase {
        guard let primary else {
            preconditionFailure(
                "\(settings.serviceName) is declared without a database (ServiceDescriptor.needsDatabase)")
        }
        return primary
    }

    /// The wake-up of this process's outbox relay, shared by the relay and ``outboxWriter``.
    private let outboxWakeup = RelayWakeup()

    /// The writer of this service's events; rows it writes in one-statement grants wake the relay of
    /// ``makeOutboxServices(configuration:)`` directly.
    public var outboxWriter: OutboxWriter {
        OutboxWriter(topicPrefix: settings.topicPrefix, relayWakeup: outboxWakeup)
    }

    /// The Kafka producer and the outbox relay that feeds it (relay on the cross-tenant pool).
    public func makeOutboxServices(configuration: OutboxRelayConfiguration = .init()) throws -> [any Service] {
        guard let systemDatabase else {
            throw ConfigurationError("DATABASE_SYSTEM_URL is required for the outbox relay")
        }
        let producer = try KafkaProducer(configuration: kafka, logger: logger)
        let relay = OutboxRelay(
            database: systemDatabase, publisher: KafkaOutboxPublisher(producer: producer),
            configuration: configuration, wakeup: outboxWakeup, logger: logger)
        // Order matters: shutdown runs in reverse, so the relay stops before the producer flushes.
        return [producer, relay]
    }

    /// The pools and their keep-alive checks, to add to the application's service group (they must run before
    /// any query; each check comes after its pool, so it stops first).
    public var services: [any Service] {
        var pools: [(PostgresClient, String, DatabaseConfiguration)] = []
        if let primary {
            let app = primary.database.pools
            pools += zip(app.clients, app.shares).map { ($0, "app", $1) }
        }
        if let systemPostgres, let configuration = settings.systemDatabase {
            pools.append((systemPostgres, "system", configuration))
        }
        return pools.flatMap { client, name, configuration -> [any Service] in
            [ConnectionPoolService(client, logger: logger)]
                + [ConnectionKeepAlive(client: client, pool: name, configuration: configuration, logger: logger)]
                .compactMap { $0 }
        }
    }

    /// Postgres reachable with a schema this build works with (`N (build B)` when it is newer than the
    /// build's), and Kafka answering a metadata request (only degraded when the service's outbox absorbs
    /// an outage). A service without a database has no database checks.
    public func readinessChecks(_ extra: [ReadinessCheck] = []) -> [ReadinessCheck] {
        let admin = self.kafkaAdmin
        var checks: [ReadinessCheck] = []
        if let primary {
            checks.append(ReadinessCheck("postgres") { await primary.database.isReachable() })
            checks.append(
                ReadinessCheck("schema") {
                    guard let state = try? await primary.migrator.checkSchema(client: primary.client) else {
                        return .failed
                    }
                    return .passed(state.summary)
                })
        }
        checks.append(
            ReadinessCheck("kafka", isRequired: !settings.kafkaOutageDegrades) {
                (try? await admin.metadata(timeout: .seconds(2))) != nil
            })
        return checks + extra
    }

    /// The router of every service: a span per request when tracing is on, request id, access log and JSON
    /// errors, then, unless turned off, the 64 KiB body limit, per-request metrics and `GET /openapi.json`. Health, readiness and
    /// metrics are on the management port (`makeManagementApplication(router:)`).
    public func makeRouter(
        limitBodies: Bool = true, requestMetrics: Bool = true, servesOpenAPIDocument: Bool = true
    ) -> Router<LatchkeyRequestContext> {
        let router = Router(context: LatchkeyRequestContext.self)
        // First, so that the request's span (continuing the caller's `traceparent`) covers everything else;
        // only with tracing on, so that the hot paths pay nothing for it otherwise.
        if settings.traceExport != nil {
            router.add(
                middleware: TracingMiddleware(redactingQueryParameters: DistributedTracing.redactedQueryParameters))
        }
        router.add(middleware: RequestIDMiddleware())
        router.add(middleware: AccessLogMiddleware())
        router.add(middleware: ErrorMiddleware())
        if limitBodies { router.add(middleware: BodyLimitMiddleware()) }
        if requestMetrics { router.add(middleware: RequestMetricsMiddleware()) }
        if servesOpenAPIDocument { registerOpenAPIDocument(on: router) }
        return router
    }

    /// Adds `GET /openapi.json` with this service's bundled document (a missing resource is a packaging
    /// error: logged, and the route is absent, which the OpenAPI route tests catch).
    public func registerOpenAPIDocument(on router: Router<LatchkeyRequestContext>) {
        do {
            try openAPIDocument().register(on: router)
        } catch {
            logger.error(
                "OpenAPI document missing", metadata: ["service": "\(settings.serviceName)", "reason": "\(error)"])
        }
    }

    /// This service's OpenAPI document, from the resources its settings carry.
    func openAPIDocument() throws -> OpenAPIDocument {
        guard let resources = settings.resources else { throw OpenAPIDocument.Missing(service: settings.serviceName) }
        return try OpenAPIDocument(service: settings.serviceName, bundle: resources)
    }

    /// Compares the router with the bundled OpenAPI document: gauge `latchkey_openapi_routes{service,state}`
    /// (`undocumented`: served but not in the document; `unregistered`: documented but not served, e.g.
    /// the sidecar's `/check` in proxy mode), and an error log naming every undocumented route.
    func reportOpenAPICoverage(of routers: [Router<LatchkeyRequestContext>]) {
        guard let document = try? openAPIDocument() else { return }
        let comparison = document.compare(with: routers)
        let service = settings.serviceName
        Gauge(label: "latchkey_openapi_routes", dimensions: [("service", service), ("state", "undocumented")])
            .record(comparison.undocumented.count)
        Gauge(label: "latchkey_openapi_routes", dimensions: [("service", service), ("state", "unregistered")])
            .record(comparison.unregistered.count)
        if !comparison.undocumented.isEmpty {
            logger.error(
                "routes missing from the OpenAPI document",
                metadata: ["service": "\(service)", "routes": "\(comparison.undocumented.joined(separator: ", "))"])
        }
    }

    /// Builds the application; refuses to start on a schema this build does not work with.
    /// `readiness` adds the service's own checks to `/readyz` on the management port.
    public func makeApplication<Builder: HTTPResponderBuilder>(
        router: Builder, server: HTTPServerBuilder? = nil, readiness: [ReadinessCheck] = [],
        services extra: [any Service] = []
    ) -> Application<Builder.Responder> where Builder.Responder.Context == LatchkeyRequestContext {
        let listener = ListenerState()
        let managementRouter = makeManagementRouter(readiness: readiness, listener: listener)
        let management = makeManagementApplication(router: managementRouter)
        // Last, so that the group tells it first when the application stops.
        // First, so that it stops last and exports the spans of the final requests.
        let traceExport: [any Service] = settings.traceExport.map { [$0] } ?? []
        let shutdownDeadline: [any Service] =
            settings.ownsProcess ? [ShutdownDeadline(grace: settings.shutdownGrace, logger: logger)] : []
        var app = Application(
            router: router, server: server ?? .latchkey(settings.http),
            configuration: .init(
                address: .hostname(settings.host, port: settings.port), serverName: settings.serviceName,
                availableConnectionsDelegate: settings.http.connectionLimit),
            services: traceExport + services + extra + [management] + shutdownDeadline,
            onServerRunning: { _ in listener.markListening() },
            logger: logger)
        reportOpenAPICoverage(of: [managementRouter] + ((router as? Router<LatchkeyRequestContext>).map { [$0] } ?? []))
        guard let primary else { return app }
        let logger = self.logger
        let name = settings.serviceName
        let ownsProcess = settings.ownsProcess
        app.beforeServerStarts {
            do {
                let state = try await primary.migrator.checkSchema(client: primary.client)
                if state.databaseVersion != state.buildVersion {
                    logger.notice(
                        "database schema is newer than this build and declared compatible with it",
                        metadata: ["schema": "\(state.databaseVersion)", "build": "\(state.buildVersion)"])
                }
            } catch {
                logger.critical(
                    "refusing to start", metadata: ["service": "\(name)", "reason": "\(error.logDescription)"])
                // Nothing has been served or produced yet, so there is nothing to drain: exit now instead of
                // waiting for every background service's graceful shutdown (slow on a loaded machine).
                if ownsProcess { terminateProcess(status: 1) }
                throw error
            }
        }
        return app
    }
}
