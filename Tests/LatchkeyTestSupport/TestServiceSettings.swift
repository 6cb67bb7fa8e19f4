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
        // A service without a database gets none, so its tests show it needs none.
        var app: DatabaseConfiguration?
        var system: DatabaseConfiguration?
        if descriptor.needsDatabase {
            try await TestDatabase.prepare()
            app = try TestEnvironment.appDatabase()
            if descriptor.needsSystemDatabase { system = try TestEnvironment.systemDatabase() }
            if let database {
                app?.database = database
                system?.database = database
            }
        }
        var settings = ServiceSettings(
            serviceName: descriptor.name, host: "127.0.0.1", port: 0, database: app, systemDatabase: system,
            kafkaBrokers: kafkaBrokers, managementPort: ServiceProcess.freePort(),
            resources: descriptor.resources)
        settings.kafkaOutageDegrades = descriptor.kafkaOutageDegrades
        return settings
    }

    public static var logger: Logger { TestEnvironment.logger }
}
