import Configuration
import Hummingbird
import Logging
import Shared

/// Builds the audit-consumer application from configuration; tests call this too.
func buildApplication(reader: ConfigReader, logger: Logger) async throws -> some ApplicationProtocol {
    let settings = try ServiceSettings(
        reader: reader, serviceName: "audit-consumer", defaultPort: 8084, needsSystemDatabase: true)
    return try buildApplication(settings: settings, logger: logger)
}

func buildApplication(settings: ServiceSettings, logger: Logger) throws -> some ApplicationProtocol {
    let runtime = try ServiceRuntime(settings: settings, logger: logger)
    let router = runtime.makeRouter()
    return runtime.makeApplication(router: router)
}
