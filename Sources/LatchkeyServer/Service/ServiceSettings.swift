import Configuration
import Foundation
import LatchkeyCore
import LatchkeyKafka
import LatchkeyPersistence
import Logging
import ServiceLifecycle

/// Settings every Latchkey service reads (environment first, then defaults; listed in docs/configuration.md).
public struct ServiceSettings: Sendable {
    public var serviceName: String
    public var host: String
    public var port: Int
    /// Where `/healthz`, `/readyz`, `/metrics` and `/openapi.json` are served, apart from the service's
    /// own port so that a public ingress never exposes them.
    public var managementHost: String
    /// 0 binds an ephemeral port (tests).
    public var managementPort: Int
    /// The tenant-scoped role (`DATABASE_URL`); nil for a service without a database.
    public var database: DatabaseConfiguration?
    /// Cross-tenant role for the outbox relay and audit work; nil where a service needs none.
    public var systemDatabase: DatabaseConfiguration?
    public var kafkaBrokers: String
    /// Protocol, SASL credentials and TLS files of the Kafka connections (`KAFKA_SECURITY_PROTOCOL`, …).
    public var kafkaSecurity: KafkaSecurity = .plaintext
    public var topicPrefix: String
    /// Header and idle deadlines and the connection cap of the HTTP server.
    public var http = HTTPServerSettings()
    /// The service is the whole process (set by `ServiceMain`): it exits at once when the schema is not at
    /// the expected version, and when stopping takes longer than `shutdownGrace`. In-process tests keep it
    /// off and get the error thrown instead.
    public var ownsProcess = false
    /// How long stopping may take, from a signal or a failed service to the end of the process.
    public var shutdownGrace: Duration = .seconds(10)
    /// The service target's resources, holding its OpenAPI document (``ServiceDescriptor/resources``);
    /// without them the service serves no `/openapi.json`.
    public var resources: Bundle?
    /// Readiness reports a Kafka outage as degraded, not as unready (``ServiceDescriptor/kafkaOutageDegrades``).
    public var kafkaOutageDegrades = false
    /// The span exporter when tracing is on (``DistributedTracing``, started by `ServiceMain`): the
    /// application runs it and adds request spans; nil, the default, leaves tracing out entirely.
    public var traceExport: (any Service)?

    public init(
        serviceName: String, host: String = "127.0.0.1", port: Int, database: DatabaseConfiguration?,
        systemDatabase: DatabaseConfiguration?, kafkaBrokers: String,
        topicPrefix: String = LatchkeyEventType.defaultTopicPrefix,
        managementHost: String? = nil, managementPort: Int? = nil,
        resources: Bundle? = nil
    ) {
        self.serviceName = serviceName
        self.host = host
        self.port = port
        self.managementHost = managementHost ?? host
        self.managementPort = managementPort ?? Self.defaultManagementPort(servicePort: port)
        self.database = database
        self.systemDatabase = systemDatabase
        self.kafkaBrokers = kafkaBrokers
        self.topicPrefix = topicPrefix
        self.resources = resources
    }

    /// The service port + 1000 (8081 → 9081); an ephemeral service port gets an ephemeral one.
    public static func defaultManagementPort(servicePort: Int) -> Int {
        servicePort == 0 ? 0 : servicePort + 1000
    }

    /// Reads `HTTP_HOST`, `HTTP_PORT`, `MANAGEMENT_HOST`, `MANAGEMENT_PORT`, `DATABASE_URL` (unless the
    /// service has no database), `DATABASE_SYSTEM_URL`, `KAFKA_BROKERS`, `KAFKA_TOPIC_PREFIX`, the Kafka
    /// security settings (``KafkaSecurity/init(_:)``), `LOG_LEVEL`, `LOG_FORMAT`, `OTEL_TRACES_EXPORTER`, `OTEL_SDK_DISABLED`, `SHUTDOWN_GRACE_SECONDS` and the server limits of ``HTTPServerSettings``.
    public init(reader: ConfigReader, descriptor: ServiceDescriptor) throws {
        let serviceName = descriptor.name
        let env = SettingsReader(reader)
        var database: DatabaseConfiguration?
        if descriptor.needsDatabase {
            let url = try env.required(
                "database.url", secret: true, example: "postgres://latchkey_app:…@host:5432/latchkey")
            database = try DatabaseConfiguration(url: url)
            database?.applicationName = serviceName
        }
        var systemDatabase: DatabaseConfiguration?
        if descriptor.needsSystemDatabase {
            let url = try env.required(
                "database.system.url", secret: true, example: "the latchkey_system role, for the outbox relay")
            systemDatabase = try DatabaseConfiguration(url: url)
            systemDatabase?.applicationName = "\(serviceName)-system"
        }
        let brokers = try env.required("kafka.brokers", example: "host:port[,host:port…]")
        // `ServiceMain` sets the logger's level and format; a misspelt one still stops the service here.
        _ = try Self.logLevel(env)
        _ = try Self.logFormat(env)
        if try DistributedTracing.exporter(env) == .otlp { _ = try DistributedTracing.exportHeaders(env) }
        let host = env.text("http.host", default: "127.0.0.1")
        let port = try env.int("http.port", default: descriptor.defaultPort, range: 0...65535)
        let managementPort = try env.int(
            "management.port", default: Self.defaultManagementPort(servicePort: port), range: 0...65535)
        guard managementPort != port || port == 0 else {
            throw ConfigurationError(
                "MANAGEMENT_PORT must differ from HTTP_PORT (\(port)): the management endpoints stay off the public port"
            )
        }
        self.init(
            serviceName: serviceName, host: host, port: port,
            database: database, systemDatabase: systemDatabase, kafkaBrokers: brokers,
            topicPrefix: env.text("kafka.topic.prefix", default: LatchkeyEventType.defaultTopicPrefix),
            managementHost: env.text("management.host", default: host),
            managementPort: managementPort, resources: descriptor.resources)
        kafkaOutageDegrades = descriptor.kafkaOutageDegrades
        kafkaSecurity = try KafkaSecurity(env)
        http = try HTTPServerSettings(reader: reader)
        shutdownGrace = try env.seconds("shutdown.grace.seconds", default: 10, range: 1...600)
    }

    /// `LOG_FORMAT` (default `text`).
    static func logFormat(_ env: SettingsReader) throws -> LogFormat {
        try env.parse("log.format", default: .text, expected: "text or json") { LogFormat(rawValue: $0.lowercased()) }
    }

    /// `LOG_LEVEL` (default `info`).
    static func logLevel(_ env: SettingsReader) throws -> Logger.Level {
        try env.parse(
            "log.level", default: .info, expected: "one of trace, debug, info, notice, warning, error, critical"
        ) {
            Logger.Level(rawValue: $0.lowercased())
        }
    }
}
