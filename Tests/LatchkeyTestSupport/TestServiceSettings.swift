import LatchkeyPersistence
import LatchkeyServer
import Logging

/// Settings for building a service application in tests: the test databases and a given Kafka.
public enum TestServiceSettings {
    /// Settings on the shared test database, or on `database` (a scratch database's name) when given; the
    /// management port is a free one, so tests reach it with ``ManagementClient``.
    public static func make(
        _ descriptor: ServiceDescriptor, kafkaBrokers: String, database: String? = nil
    ) async throws -> ServiceSettings {
        try await TestDatabase.prepare()
        var app = try TestEnvironment.appDatabase()
        var system = try TestEnvironment.systemDatabase()
        if let database {
            app.database = database
            system.database = database
        }
        var settings = ServiceSettings(
            serviceName: descriptor.name, host: "127.0.0.1", port: 0, database: app,
            systemDatabase: descriptor.needsSystemDatabase ? system : nil,
            kafkaBrokers: kafkaBrokers, managementPort: ServiceProcess.freePort(),
            resources: descriptor.resources)
        settings.kafkaOutageDegrades = descriptor.kafkaOutageDegrades
        return settings
    }

    public static var logger: Logger { TestEnvironment.logger }
}
