import Configuration
import Logging

/// Settings every Latchkey service reads (environment first, then defaults; see the README table).
public struct ServiceSettings: Sendable {
    public var serviceName: String
    public var host: String
    public var port: Int
    public var database: DatabaseConfiguration
    /// Cross-tenant role for the outbox relay and audit work; nil where a service needs none.
    public var systemDatabase: DatabaseConfiguration?
    public var kafkaBrokers: String
    public var topicPrefix: String
    public var logLevel: Logger.Level
    /// Header and idle deadlines and the connection cap of the HTTP server.
    public var http = HTTPServerSettings()
    /// The process exits at once when the schema is not at the expected version (set by `ServiceMain`;
    /// in-process tests keep it off and get the error thrown instead).
    public var exitsOnSchemaMismatch = false

    public init(
        serviceName: String, host: String = "127.0.0.1", port: Int, database: DatabaseConfiguration,
        systemDatabase: DatabaseConfiguration?, kafkaBrokers: String, topicPrefix: String = LatchkeyEventType.defaultTopicPrefix,
        logLevel: Logger.Level = .info
    ) {
        self.serviceName = serviceName
        self.host = host
        self.port = port
        self.database = database
        self.systemDatabase = systemDatabase
        self.kafkaBrokers = kafkaBrokers
        self.topicPrefix = topicPrefix
        self.logLevel = logLevel
    }

    /// Reads `HTTP_HOST`, `HTTP_PORT`, `DATABASE_URL`, `DATABASE_SYSTEM_URL`, `KAFKA_BROKERS`,
    /// `KAFKA_TOPIC_PREFIX`, `LOG_LEVEL` and the server limits of ``HTTPServerSettings``.
    public init(reader: ConfigReader, descriptor: ServiceDescriptor) throws {
        let serviceName = descriptor.name
        guard let databaseURL = reader.string(forKey: "database.url", isSecret: true), !databaseURL.isEmpty else {
            throw ConfigurationError("DATABASE_URL is required (postgres://latchkey_app:…@host:5432/latchkey)")
        }
        var systemDatabase: DatabaseConfiguration?
        if descriptor.needsSystemDatabase {
            guard let url = reader.string(forKey: "database.system.url", isSecret: true), !url.isEmpty else {
                throw ConfigurationError("DATABASE_SYSTEM_URL is required (the latchkey_system role, for the outbox relay)")
            }
            systemDatabase = try DatabaseConfiguration(url: url)
            systemDatabase?.applicationName = "\(serviceName)-system"
        }
        guard let brokers = reader.string(forKey: "kafka.brokers"), !brokers.isEmpty else {
            throw ConfigurationError("KAFKA_BROKERS is required (host:port[,host:port…])")
        }
        var database = try DatabaseConfiguration(url: databaseURL)
        database.applicationName = serviceName
        let levelName = reader.string(forKey: "log.level", default: "info")
        guard let level = Logger.Level(rawValue: levelName.lowercased()) else {
            throw ConfigurationError("LOG_LEVEL must be one of trace, debug, info, notice, warning, error, critical")
        }
        self.init(
            serviceName: serviceName,
            host: reader.string(forKey: "http.host", default: "127.0.0.1"),
            port: reader.int(forKey: "http.port", default: descriptor.defaultPort),
            database: database, systemDatabase: systemDatabase, kafkaBrokers: brokers,
            topicPrefix: reader.string(forKey: "kafka.topic.prefix", default: LatchkeyEventType.defaultTopicPrefix),
            logLevel: level)
        http = try HTTPServerSettings(reader: reader)
    }
}
