import Hummingbird
import LatchkeyCore
import LatchkeyKafka
import LatchkeyPersistence
import LatchkeyServer
import Logging

extension ServiceDescriptor {
    /// `audit-consumer`, port 8084 by default.
    static let auditConsumer = ServiceDescriptor(
        name: "audit-consumer", defaultPort: 8084, needsSystemDatabase: true, resources: .module)
}

/// Builds the audit-consumer application; `Main` and the tests call this.
func buildApplication(
    settings: ServiceSettings, audit: AuditSettings = AuditSettings(), logger: Logger
) throws -> some ApplicationProtocol {
    try AuditService(settings: settings, audit: audit, logger: logger).makeApplication()
}

/// Every part of the audit consumer: ingestion (consumer, dead-letter producer, lag monitor,
/// ingestor) and the admin query API, over the shared runtime.
struct AuditService: Sendable {
    let runtime: ServiceRuntime
    let audit: AuditSettings
    let consumer: KafkaConsumer
    let producer: KafkaProducer
    let ingestor: AuditIngestor
    let lagMonitor: AuditLagMonitor
    let metrics: AuditMetrics
    let reader: AuditLogReader

    init(
        settings: ServiceSettings, audit: AuditSettings, logger: Logger, clock: any WallClock = SystemWallClock(),
        hooks: AuditIngestor.Hooks = AuditIngestor.Hooks()
    ) throws {
        // Metrics handlers made before the bootstrap would bind to the no-op backend.
        LatchkeyMetrics.bootstrap()
        let runtime = try ServiceRuntime(settings: settings, logger: logger)
        guard let systemDatabase = runtime.systemDatabase else {
            throw ConfigurationError("DATABASE_SYSTEM_URL is required for audit ingestion")
        }
        var consumerConfiguration = runtime.kafka
        consumerConfiguration.properties.merge([
            "session.timeout.ms": String(audit.sessionTimeoutMilliseconds),
            "heartbeat.interval.ms": String(audit.heartbeatIntervalMilliseconds),
            // An idle topic must not hold a fetch for long: it bounds event → audit row delay.
            "fetch.wait.max.ms": "100",
        ]) { configured, _ in configured }
        let topics = LatchkeyEventType.allTopics(prefix: settings.topicPrefix)
        let consumer = try KafkaConsumer(
            configuration: consumerConfiguration, groupID: audit.groupID, subscription: .topics(topics), logger: logger)
        let producer = try KafkaProducer(configuration: runtime.kafka, logger: logger)
        let metrics = AuditMetrics()
        self.runtime = runtime
        self.audit = audit
        self.consumer = consumer
        self.producer = producer
        self.metrics = metrics
        self.reader = AuditLogReader(database: runtime.database)
        self.ingestor = AuditIngestor(
            consumer: consumer,
            decoder: AuditEventDecoder(validator: try EventSchemaValidator(), topicPrefix: settings.topicPrefix),
            store: AuditBatchStore(database: systemDatabase, clock: clock),
            deadLetters: DeadLetterPublisher(producer: producer, topicPrefix: settings.topicPrefix),
            settings: audit, metrics: metrics, hooks: hooks, logger: logger)
        self.lagMonitor = AuditLagMonitor(
            consumer: consumer, admin: runtime.kafkaAdmin, topics: topics, interval: audit.lagInterval,
            maximumLag: audit.readyMaximumLag, metrics: metrics, logger: logger)
    }

    func makeApplication() -> some ApplicationProtocol {
        let monitor = lagMonitor
        let router = runtime.makeRouter()
        let verifier = AdminTokenVerifier(
            keys: TenantSigningKeyStore(database: runtime.database), issuerBase: audit.tokenServicePublicURL,
            platformTenant: audit.platformTenant, audiences: audit.adminAudiences)
        AuditQueryController(reader: reader, verifier: verifier, tenants: TenantDirectory(database: runtime.database))
            .addRoutes(to: router)
        // Shutdown runs in reverse: the ingestor stops first, the consumer closes last.
        return runtime.makeApplication(
            router: router, readiness: [ReadinessCheck("lag") { monitor.isCaughtUp }],
            services: [consumer, producer, lagMonitor, ingestor])
    }
}
