import Logging
import Shared

/// Settings for building a service application in tests: the test databases and a given Kafka.
public enum TestServiceSettings {
    public static func make(_ descriptor: ServiceDescriptor, kafkaBrokers: String) async throws -> ServiceSettings {
        try await TestDatabase.prepare()
        return ServiceSettings(
            serviceName: descriptor.name, host: "127.0.0.1", port: 0, database: try TestEnvironment.appDatabase(),
            systemDatabase: descriptor.needsSystemDatabase ? try TestEnvironment.systemDatabase() : nil,
            kafkaBrokers: kafkaBrokers, logLevel: .warning)
    }

    public static var logger: Logger { TestEnvironment.logger }
}
